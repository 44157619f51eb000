"""Pure decisions of the transaction coordinator: (metadata, request, now) -> Reply | Transition.

Each function checks in the order Kafka's TransactionCoordinator does, so that the same request
gets the same error code. Nothing here does I/O; the coordinator persists a Transition's target
before applying it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Final

from minikafka.coordinator.transaction.state import (
    MAX_EPOCH,
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    TV_2,
    TxnEvent,
    TxnMetadata,
    TxnState,
    transition,
)
from minikafka.protocol.errors import ErrorCode
from minikafka.protocol.types import TopicPartition


@dataclasses.dataclass(frozen=True, slots=True)
class Reply:
    """Answer the request without changing state."""

    error: ErrorCode
    meta: TxnMetadata | None = None


@dataclasses.dataclass(frozen=True, slots=True)
class Transition:
    """Persist `target`, then apply it and answer `reply_error`; `write_markers` starts the markers."""

    target: TxnMetadata
    reply_error: ErrorCode = ErrorCode.none
    write_markers: bool = False


Decision = Reply | Transition

# EndTxn on a state that needs no transition (Kafka's TransactionCoordinator.endTransaction).
END_TXN_REPLY_WITHOUT_TRANSITION: Final[Mapping[tuple[TxnState, bool], ErrorCode]] = MappingProxyType({
    (TxnState.COMPLETE_COMMIT, True): ErrorCode.none,                     # a retried commit
    (TxnState.COMPLETE_ABORT, False): ErrorCode.none,                     # a retried abort
    (TxnState.PREPARE_COMMIT, True): ErrorCode.concurrent_transactions,   # markers in flight
    (TxnState.PREPARE_ABORT, False): ErrorCode.concurrent_transactions,
})  # any other pair without a transition -> INVALID_TXN_STATE


def valid_timeout(timeout_ms: int, max_timeout_ms: int) -> bool:
    return 0 < timeout_ms <= max_timeout_ms


def decide_init_producer_id(
    meta: TxnMetadata | None,
    *,
    transactional_id: str,
    timeout_ms: int,
    expected_producer_id: int,
    expected_epoch: int,
    pending: bool,
    now_ms: int,
    max_timeout_ms: int,
    new_producer_id: Callable[[], int],
) -> Decision:
    if not transactional_id:
        return Reply(ErrorCode.invalid_request)
    if not valid_timeout(timeout_ms, max_timeout_ms):
        return Reply(ErrorCode.invalid_transaction_timeout)
    if meta is None:
        meta = TxnMetadata(transactional_id=transactional_id, producer_id=new_producer_id(),
                           timeout_ms=timeout_ms, state=TxnState.EMPTY, last_update_ms=now_ms)
    if pending:
        return Reply(ErrorCode.concurrent_transactions)
    has_expected = expected_producer_id != NO_PRODUCER_ID
    if has_expected and not (
        meta.producer_epoch == NO_PRODUCER_EPOCH
        or expected_producer_id == meta.producer_id
        or (expected_producer_id == meta.previous_producer_id and expected_epoch >= 32766)
    ):
        return Reply(ErrorCode.producer_fenced)

    state = meta.state
    if state in (TxnState.PREPARE_ABORT, TxnState.PREPARE_COMMIT):
        return Reply(ErrorCode.concurrent_transactions)
    if state in (TxnState.EMPTY, TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT):
        if meta.epoch_exhausted and (not has_expected or expected_epoch == meta.producer_epoch):
            # Epochs run out: continue under a new producer id (Kafka's prepareProducerIdRotation).
            target = transition(meta, TxnEvent.INIT_PRODUCER_ID, producer_id=new_producer_id(),
                                 previous_producer_id=meta.producer_id, producer_epoch=0,
                                 # recordLastEpoch: a retry of this rotation must be recognised
                                 last_producer_epoch=meta.producer_epoch if has_expected else NO_PRODUCER_EPOCH,
                                 timeout_ms=timeout_ms,
                                 partitions=frozenset(), start_ms=-1, last_update_ms=now_ms)
            return Transition(target)
        bumped = meta.producer_epoch + 1
        if not has_expected:
            epoch, last = bumped, NO_PRODUCER_EPOCH
        elif meta.producer_epoch == NO_PRODUCER_EPOCH or expected_epoch == meta.producer_epoch:
            epoch, last = bumped, meta.producer_epoch  # KIP-360: the same producer recovering
        elif expected_epoch == meta.last_producer_epoch:
            return Reply(ErrorCode.none, meta)  # a retry of a bump whose answer was lost
        else:
            return Reply(ErrorCode.producer_fenced)
        target = transition(meta, TxnEvent.INIT_PRODUCER_ID, producer_epoch=epoch, last_producer_epoch=last,
                            timeout_ms=timeout_ms, partitions=frozenset(), start_ms=-1, last_update_ms=now_ms)
        return Transition(target)
    if state is TxnState.ONGOING:
        # Fence the running instance: abort its transaction under a bumped epoch, and let the new
        # instance retry (it gets CONCURRENT_TRANSACTIONS until the abort completes). A TV2
        # transaction ends as TV2 ends: an exhausted epoch rotates the producer id.
        rotate = new_producer_id if meta.client_transaction_version >= TV_2 else None
        return fence_and_abort(meta, now_ms, reply_error=ErrorCode.concurrent_transactions, new_producer_id=rotate)
    raise AssertionError(f"transactional id {transactional_id} found in state {state.name}")


def fence_and_abort(meta: TxnMetadata, now_ms: int, reply_error: ErrorCode = ErrorCode.none, *,
                    keep_last_epoch: bool = False,
                    new_producer_id: Callable[[], int] | None = None) -> Transition:
    """ONGOING -> PREPARE_EPOCH_FENCE -> PREPARE_ABORT with epoch + 1 (the fence is not persisted).

    A new instance fencing the old one forgets the old epoch, so the zombie stays fenced. A
    timeout remembers it (KIP-588): the producer that timed out may recover with
    InitProducerId(pid, old epoch) and is handed the bumped epoch, as Kafka 4.x does. Under
    transactions v2 (`new_producer_id` given) a fenced epoch that is exhausted hands over to a new
    producer id once the markers are written, as an EndTxn does."""
    fenced = transition(meta, TxnEvent.FENCE, producer_epoch=meta.producer_epoch + 1,
                        last_producer_epoch=meta.producer_epoch if keep_last_epoch else NO_PRODUCER_EPOCH)
    next_id = new_producer_id() if new_producer_id is not None and fenced.epoch_exhausted else NO_PRODUCER_ID
    target = transition(fenced, TxnEvent.ABORT_FENCED, last_update_ms=now_ms, next_producer_id=next_id)
    return Transition(target, reply_error=reply_error, write_markers=True)


def _check_producer(meta: TxnMetadata | None, producer_id: int, epoch: int) -> ErrorCode | None:
    if meta is None or meta.producer_id != producer_id:
        return ErrorCode.invalid_producer_id_mapping
    if meta.producer_epoch != epoch:
        return ErrorCode.producer_fenced
    return None


def decide_add_partitions(meta: TxnMetadata | None, *, producer_id: int, epoch: int,
                          partitions: frozenset[TopicPartition], pending: bool, now_ms: int,
                          client_tv: int = 0) -> Decision:
    """AddPartitionsToTxn / AddOffsetsToTxn (client_tv 0), or a partition a TV2 Produce or
    TxnOffsetCommit adds implicitly (client_tv 2): the transaction records the version."""
    error = _check_producer(meta, producer_id, epoch)
    if error is not None:
        return Reply(error)
    assert meta is not None
    if pending or meta.state in (TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT):
        return Reply(ErrorCode.concurrent_transactions)
    if meta.state is TxnState.ONGOING and partitions <= meta.partitions:
        return Reply(ErrorCode.none)  # nothing new to record
    if meta.state not in (TxnState.EMPTY, TxnState.ONGOING, TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT):
        return Reply(ErrorCode.invalid_txn_state)
    start = meta.start_ms if meta.state is TxnState.ONGOING else now_ms
    target = transition(meta, TxnEvent.ADD_PARTITIONS, partitions=meta.partitions | partitions,
                        start_ms=start, last_update_ms=now_ms, client_transaction_version=client_tv)
    return Transition(target)


def decide_end_txn(meta: TxnMetadata | None, *, producer_id: int, epoch: int, commit: bool, pending: bool,
                   now_ms: int) -> Decision:
    error = _check_producer(meta, producer_id, epoch)
    if error is not None:
        return Reply(error)
    assert meta is not None
    if pending:
        return Reply(ErrorCode.concurrent_transactions)
    if meta.state is TxnState.ONGOING:
        event = TxnEvent.END_COMMIT if commit else TxnEvent.END_ABORT
        return Transition(transition(meta, event, last_update_ms=now_ms), write_markers=True)
    return Reply(END_TXN_REPLY_WITHOUT_TRANSITION.get((meta.state, commit), ErrorCode.invalid_txn_state))


def decide_end_txn_v2(meta: TxnMetadata | None, *, producer_id: int, epoch: int, commit: bool, pending: bool,
                      now_ms: int, new_producer_id: Callable[[], int]) -> Decision:
    """EndTxn v5+ (transactions v2, KIP-890 part 2): every commit or abort bumps the epoch, so
    the epoch of the transaction's own records can never write into the next one. Kafka's
    TransactionCoordinator.endTransaction for TV2: a retry is recognised by the epoch it carries
    (the one before the bump, or the last one of the producer id an exhausted epoch handed over
    from), not by the state alone; a retry of a completed commit or abort answers NONE with the
    current identity.

    State x request (Retry: epoch + 1 == the transaction's; Current: equal):
      ONGOING         commit/abort Current -> PREPARE_* (epoch + 1)
      EMPTY           abort Current -> PREPARE_ABORT (epoch + 1, nothing to mark); commit INVALID_TXN_STATE
      COMPLETE_COMMIT commit Retry NONE, Current INVALID_TXN_STATE; abort Retry INVALID_TXN_STATE,
                      Current PREPARE_ABORT
      COMPLETE_ABORT  abort Retry NONE, Current PREPARE_ABORT; commit INVALID_TXN_STATE
      PREPARE_*       the same result Retry CONCURRENT_TRANSACTIONS, the other INVALID_TXN_STATE
    Any other epoch is PRODUCER_FENCED."""
    if meta is None:
        return Reply(ErrorCode.invalid_producer_id_mapping)
    retry_on_overflow = (meta.previous_producer_id == producer_id and epoch == MAX_EPOCH - 1
                         and meta.producer_epoch == 0)
    retry_on_bump = meta.producer_epoch == epoch + 1
    state = meta.state
    if state in (TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT):
        valid = retry_on_bump
    elif state in (TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT):
        valid = retry_on_bump or retry_on_overflow or epoch == meta.producer_epoch
    else:
        valid = epoch == meta.producer_epoch
    if meta.producer_id != producer_id and not retry_on_overflow:
        return Reply(ErrorCode.invalid_producer_id_mapping)
    if not valid:
        return Reply(ErrorCode.producer_fenced)
    if pending:
        return Reply(ErrorCode.concurrent_transactions)
    if state is TxnState.ONGOING:
        return _prepare_end_v2(meta, commit, now_ms, new_producer_id)
    if state in (TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT):  # the markers are being written
        same = commit == (state is TxnState.PREPARE_COMMIT)
        return Reply(ErrorCode.concurrent_transactions if same else ErrorCode.invalid_txn_state)
    # EMPTY or COMPLETE_*; a retry is possible on COMPLETE_* only (EMPTY takes the current epoch alone)
    if retry_on_bump or retry_on_overflow:
        same = commit == (state is TxnState.COMPLETE_COMMIT)
        return Reply(ErrorCode.none, meta) if same else Reply(ErrorCode.invalid_txn_state)
    return Reply(ErrorCode.invalid_txn_state) if commit else _prepare_end_v2(meta, False, now_ms, new_producer_id)


def _prepare_end_v2(meta: TxnMetadata, commit: bool, now_ms: int, new_producer_id: Callable[[], int]) -> Transition:
    """PREPARE_* with the epoch + 1; an epoch that was already exhausted also reserves the
    producer id the transactional id moves to once the markers are written."""
    event = TxnEvent.END_COMMIT if commit else TxnEvent.END_ABORT
    next_id = new_producer_id() if meta.epoch_exhausted else NO_PRODUCER_ID
    target = transition(meta, event, producer_epoch=meta.producer_epoch + 1, last_producer_epoch=meta.producer_epoch,
                        next_producer_id=next_id, client_transaction_version=TV_2, last_update_ms=now_ms)
    return Transition(target, write_markers=True)


def identity_after(meta: TxnMetadata) -> tuple[int, int]:
    """The producer id and epoch a TV2 client goes on with after EndTxn: the bumped epoch, or the
    new producer id at epoch 0 when the old one's epochs ran out."""
    if meta.next_producer_id != NO_PRODUCER_ID:
        return meta.next_producer_id, 0
    return meta.producer_id, meta.producer_epoch


def decide_complete(meta: TxnMetadata, now_ms: int) -> Transition:
    """Every marker written: PREPARE_* -> COMPLETE_*, partitions cleared (Kafka's prepareComplete);
    a reserved next producer id takes over at epoch 0."""
    if meta.next_producer_id != NO_PRODUCER_ID:
        return Transition(transition(
            meta, TxnEvent.MARKERS_WRITTEN, partitions=frozenset(), last_update_ms=now_ms,
            producer_id=meta.next_producer_id, previous_producer_id=meta.producer_id, producer_epoch=0,
            last_producer_epoch=meta.producer_epoch, next_producer_id=NO_PRODUCER_ID))
    return Transition(transition(meta, TxnEvent.MARKERS_WRITTEN, partitions=frozenset(), last_update_ms=now_ms))


def decide_timeout(meta: TxnMetadata, now_ms: int,
                   new_producer_id: Callable[[], int] | None = None) -> Transition | None:
    """An ONGOING transaction older than its timeout is aborted under a bumped epoch (with the
    broker's transactions v2, `new_producer_id` given, an exhausted epoch rotates the id)."""
    if meta.state is TxnState.ONGOING and meta.start_ms + meta.timeout_ms < now_ms:
        return fence_and_abort(meta, now_ms, keep_last_epoch=True, new_producer_id=new_producer_id)
    return None


def decide_expire(meta: TxnMetadata, now_ms: int, expiration_ms: int) -> Transition | None:
    """An idle EMPTY/COMPLETE_* transactional id past transactional.id.expiration.ms becomes DEAD."""
    if meta.state in (TxnState.EMPTY, TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT) \
            and meta.last_update_ms + expiration_ms <= now_ms:
        return Transition(transition(meta, TxnEvent.EXPIRED, last_update_ms=now_ms))
    return None


def verify_partition(meta: TxnMetadata | None, *, producer_id: int, epoch: int, tp: TopicPartition) -> ErrorCode:
    """KIP-890 part 1: may this transactional batch be appended to tp?"""
    if meta is None or meta.producer_id != producer_id:
        return ErrorCode.invalid_producer_id_mapping
    if epoch != meta.producer_epoch:
        return ErrorCode.invalid_producer_epoch  # Kafka: PRODUCER_FENCED, answered to Produce as 47
    if meta.state in (TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT):
        return ErrorCode.concurrent_transactions  # retriable: the markers are being written
    if meta.state is not TxnState.ONGOING or tp not in meta.partitions:
        return ErrorCode.invalid_txn_state
    return ErrorCode.none
