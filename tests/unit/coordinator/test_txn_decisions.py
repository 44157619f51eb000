"""The pure decisions of the transaction coordinator, row by row (Kafka's TransactionCoordinator order)."""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Callable

import pytest

from minikafka.coordinator.transaction import decisions as d
from minikafka.coordinator.transaction.decisions import Reply, Transition
from minikafka.coordinator.transaction.state import (
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    IllegalTransition,
    TxnMetadata,
    TxnState,
)
from minikafka.protocol.errors import ErrorCode
from minikafka.protocol.types import TopicPartition

pytestmark = pytest.mark.unit

S, Err = TxnState, ErrorCode
TXN = "txn-1"
PID = 42
NEW_PID = 1000
NOW = 50_000
START = 10_000
TIMEOUT = 60_000
MAX_TIMEOUT = 900_000
T0, T1, U0 = TopicPartition("t", 0), TopicPartition("t", 1), TopicPartition("u", 0)


def meta(state: TxnState = S.EMPTY, *, pid: int = PID, epoch: int = 4, last: int = NO_PRODUCER_EPOCH,
         previous: int = NO_PRODUCER_ID, partitions: frozenset[TopicPartition] | None = None,
         start: int | None = None, update: int = START, timeout: int = TIMEOUT) -> TxnMetadata:
    in_txn = state in (S.ONGOING, S.PREPARE_COMMIT, S.PREPARE_ABORT)
    if partitions is None:
        partitions = frozenset({T0, T1}) if in_txn else frozenset()
    if start is None:
        start = START if in_txn or state in (S.COMPLETE_COMMIT, S.COMPLETE_ABORT) else -1
    return TxnMetadata(transactional_id=TXN, producer_id=pid, previous_producer_id=previous, producer_epoch=epoch,
                       last_producer_epoch=last, timeout_ms=timeout, state=state, partitions=partitions,
                       start_ms=start, last_update_ms=update)


def counter(start: int = NEW_PID) -> Callable[[], int]:
    it = itertools.count(start)
    return lambda: next(it)


# ================================================================================ InitProducerId
@dataclasses.dataclass(frozen=True)
class InitRow:
    name: str
    meta: TxnMetadata | None
    expected: tuple[int, int] = (NO_PRODUCER_ID, NO_PRODUCER_EPOCH)
    timeout: int = 30_000
    pending: bool = False
    txn_id: str = TXN
    # outcome: an error for a Reply; or the target of a Transition
    error: ErrorCode = Err.none
    state: TxnState | None = None  # None: a Reply is expected
    pid: int | None = None
    epoch: int | None = None
    last: int = NO_PRODUCER_EPOCH
    previous: int | None = None  # None: the producer id before the transition (Kafka's prepareTransitionTo)
    markers: bool = False


EXHAUSTED = 32766  # Short.MAX_VALUE - 1

INIT_ROWS = [
    # new transactional ids
    InitRow("new id -> new pid, epoch 0", None, state=S.EMPTY, pid=NEW_PID, epoch=0),
    InitRow("new id with KIP-360 pid/epoch -> new pid, epoch 0", None, expected=(7, 3),
            state=S.EMPTY, pid=NEW_PID, epoch=0),
    # a new instance of a known id (no expected pid): epoch + 1, last epoch forgotten
    InitRow("Empty -> epoch + 1", meta(S.EMPTY, epoch=4, last=3), state=S.EMPTY, pid=PID, epoch=5),
    InitRow("CompleteCommit -> epoch + 1", meta(S.COMPLETE_COMMIT), state=S.EMPTY, pid=PID, epoch=5),
    InitRow("CompleteAbort -> epoch + 1", meta(S.COMPLETE_ABORT), state=S.EMPTY, pid=PID, epoch=5),
    InitRow("first epoch of a metadata with none", meta(S.EMPTY, epoch=NO_PRODUCER_EPOCH),
            state=S.EMPTY, pid=PID, epoch=0),
    InitRow("epoch 32765 still bumps in place", meta(S.EMPTY, epoch=EXHAUSTED - 1),
            state=S.EMPTY, pid=PID, epoch=EXHAUSTED),
    # KIP-360
    InitRow("KIP-360 expected == current -> bump, remember last", meta(S.EMPTY, epoch=4), expected=(PID, 4),
            state=S.EMPTY, pid=PID, epoch=5, last=4),
    InitRow("KIP-360 on CompleteAbort", meta(S.COMPLETE_ABORT, epoch=4), expected=(PID, 4),
            state=S.EMPTY, pid=PID, epoch=5, last=4),
    InitRow("KIP-360 expected == last -> retry, same epoch", meta(S.EMPTY, epoch=5, last=4), expected=(PID, 4),
            error=Err.none, pid=PID, epoch=5),
    InitRow("KIP-360 older epoch -> fenced", meta(S.EMPTY, epoch=5, last=4), expected=(PID, 3),
            error=Err.producer_fenced),
    InitRow("KIP-360 newer epoch -> fenced", meta(S.EMPTY, epoch=5, last=4), expected=(PID, 6),
            error=Err.producer_fenced),
    InitRow("KIP-360 other pid -> fenced", meta(S.EMPTY, epoch=5), expected=(PID + 1, 5),
            error=Err.producer_fenced),
    InitRow("KIP-360 other pid while Ongoing -> fenced, no abort", meta(S.ONGOING), expected=(PID + 1, 4),
            error=Err.producer_fenced),
    InitRow("KIP-360 previous pid with an unexhausted epoch -> fenced",
            meta(S.EMPTY, pid=NEW_PID, epoch=0, previous=PID), expected=(PID, 100), error=Err.producer_fenced),
    # open transactions (P-12)
    InitRow("Ongoing -> fence: PrepareAbort at epoch + 1, CONCURRENT_TRANSACTIONS", meta(S.ONGOING, epoch=4),
            error=Err.concurrent_transactions, state=S.PREPARE_ABORT, pid=PID, epoch=5, markers=True),
    InitRow("Ongoing with KIP-360 current pid/epoch -> fence", meta(S.ONGOING, epoch=4), expected=(PID, 4),
            error=Err.concurrent_transactions, state=S.PREPARE_ABORT, pid=PID, epoch=5, markers=True),
    InitRow("PrepareCommit -> CONCURRENT_TRANSACTIONS", meta(S.PREPARE_COMMIT), error=Err.concurrent_transactions),
    InitRow("PrepareAbort -> CONCURRENT_TRANSACTIONS", meta(S.PREPARE_ABORT), error=Err.concurrent_transactions),
    # request checks
    InitRow("timeout 0", meta(S.EMPTY), timeout=0, error=Err.invalid_transaction_timeout),
    InitRow("negative timeout", meta(S.EMPTY), timeout=-1, error=Err.invalid_transaction_timeout),
    InitRow("timeout above max", meta(S.EMPTY), timeout=MAX_TIMEOUT + 1, error=Err.invalid_transaction_timeout),
    InitRow("timeout above max, new id", None, timeout=MAX_TIMEOUT + 1, error=Err.invalid_transaction_timeout),
    InitRow("timeout == max is valid", meta(S.EMPTY), timeout=MAX_TIMEOUT, state=S.EMPTY, pid=PID, epoch=5),
    InitRow("empty transactional id", None, txn_id="", error=Err.invalid_request),
    InitRow("pending -> CONCURRENT_TRANSACTIONS", meta(S.EMPTY), pending=True, error=Err.concurrent_transactions),
    InitRow("pending before the pid check", meta(S.EMPTY), pending=True, expected=(PID + 1, 4),
            error=Err.concurrent_transactions),
    # epochs run out: a new producer id (Kafka's prepareProducerIdRotation)
    InitRow("exhausted epoch -> new pid, epoch 0", meta(S.COMPLETE_COMMIT, epoch=EXHAUSTED),
            state=S.EMPTY, pid=NEW_PID, epoch=0, previous=PID),
    InitRow("exhausted epoch, KIP-360 current -> new pid, last epoch recorded",
            meta(S.EMPTY, epoch=EXHAUSTED), expected=(PID, EXHAUSTED),
            state=S.EMPTY, pid=NEW_PID, epoch=0, last=EXHAUSTED, previous=PID),
    InitRow("retry of a rotation (previous pid, exhausted epoch) -> the new pid again",
            meta(S.EMPTY, pid=NEW_PID, epoch=0, last=EXHAUSTED, previous=PID), expected=(PID, EXHAUSTED),
            error=Err.none, pid=NEW_PID, epoch=0),
]


def _init(row: InitRow, new_pid: Callable[[], int] | None = None) -> d.Decision:
    return d.decide_init_producer_id(
        row.meta, transactional_id=row.txn_id, timeout_ms=row.timeout, expected_producer_id=row.expected[0],
        expected_epoch=row.expected[1], pending=row.pending, now_ms=NOW, max_timeout_ms=MAX_TIMEOUT,
        new_producer_id=new_pid or counter())


@pytest.mark.parametrize("row", INIT_ROWS, ids=lambda r: r.name)
def test_init_producer_id(row: InitRow) -> None:
    decision = _init(row)
    if row.state is None:
        assert isinstance(decision, Reply)
        assert decision.error is row.error
        if row.pid is not None:  # a retry answers the current pid/epoch
            assert decision.meta is not None
            assert (decision.meta.producer_id, decision.meta.producer_epoch) == (row.pid, row.epoch)
        return
    assert isinstance(decision, Transition)
    t = decision.target
    assert decision.reply_error is row.error
    assert decision.write_markers is row.markers
    assert (t.transactional_id, t.state, t.producer_id, t.producer_epoch) == (row.txn_id, row.state, row.pid,
                                                                              row.epoch)
    assert t.last_update_ms == NOW
    if row.state is S.EMPTY:
        before = row.meta.producer_id if row.meta is not None else row.pid
        assert (t.last_producer_epoch, t.previous_producer_id) == (row.last, before if row.previous is None
                                                                   else row.previous)
        assert (t.partitions, t.start_ms, t.timeout_ms) == (frozenset(), -1, row.timeout)
    else:  # the fence keeps the transaction to abort it
        assert row.meta is not None
        assert (t.partitions, t.start_ms, t.timeout_ms) == (row.meta.partitions, row.meta.start_ms,
                                                             row.meta.timeout_ms)


def test_invalid_timeout_allocates_no_producer_id() -> None:
    calls: list[int] = []

    def new_pid() -> int:
        calls.append(1)
        return NEW_PID

    _init(InitRow("x", None, timeout=0), new_pid)
    assert calls == []


def test_rotation_then_retry_returns_the_new_pid() -> None:
    """A rotation whose reply was lost: the retry carries the old pid and the exhausted epoch."""
    first = _init(InitRow("x", meta(S.COMPLETE_ABORT, epoch=EXHAUSTED), expected=(PID, EXHAUSTED)))
    assert isinstance(first, Transition)
    retry = _init(InitRow("x", first.target, expected=(PID, EXHAUSTED)))
    assert isinstance(retry, Reply) and retry.error is Err.none and retry.meta is not None
    assert (retry.meta.producer_id, retry.meta.producer_epoch) == (NEW_PID, 0)


def test_bump_then_retry_then_new_instance_fences_the_retry() -> None:
    """KIP-360: a new instance (no expected pid) forgets the last epoch, so the old retry is fenced."""
    bumped = _init(InitRow("x", meta(S.EMPTY, epoch=4), expected=(PID, 4)))
    assert isinstance(bumped, Transition) and bumped.target.producer_epoch == 5
    other = _init(InitRow("x", bumped.target))
    assert isinstance(other, Transition) and other.target.producer_epoch == 6
    late_retry = _init(InitRow("x", other.target, expected=(PID, 4)))
    assert isinstance(late_retry, Reply) and late_retry.error is Err.producer_fenced


# ================================================================================ AddPartitionsToTxn
@dataclasses.dataclass(frozen=True)
class AddRow:
    name: str
    meta: TxnMetadata | None
    partitions: frozenset[TopicPartition] = frozenset({U0})
    pid: int = PID
    epoch: int = 4
    pending: bool = False
    error: ErrorCode = Err.none
    transition: bool = False
    start: int | None = None  # expected start_ms of the target


ADD_ROWS = [
    AddRow("unknown id", None, error=Err.invalid_producer_id_mapping),
    AddRow("other producer id", meta(S.ONGOING), pid=PID + 1, error=Err.invalid_producer_id_mapping),
    AddRow("older epoch", meta(S.ONGOING), epoch=3, error=Err.producer_fenced),
    AddRow("newer epoch", meta(S.ONGOING), epoch=5, error=Err.producer_fenced),
    AddRow("wrong epoch before PrepareCommit", meta(S.PREPARE_COMMIT), epoch=3, error=Err.producer_fenced),
    AddRow("PrepareCommit", meta(S.PREPARE_COMMIT), error=Err.concurrent_transactions),
    AddRow("PrepareAbort", meta(S.PREPARE_ABORT), error=Err.concurrent_transactions),
    AddRow("pending", meta(S.ONGOING), pending=True, error=Err.concurrent_transactions),
    AddRow("subset while Ongoing -> no transition", meta(S.ONGOING), partitions=frozenset({T0})),
    AddRow("same set while Ongoing -> no transition", meta(S.ONGOING), partitions=frozenset({T0, T1})),
    AddRow("new partition while Ongoing keeps the start", meta(S.ONGOING), transition=True, start=START),
    AddRow("from Empty starts now", meta(S.EMPTY), transition=True, start=NOW),
    AddRow("from CompleteCommit starts now", meta(S.COMPLETE_COMMIT), transition=True, start=NOW),
    AddRow("from CompleteAbort starts now", meta(S.COMPLETE_ABORT), transition=True, start=NOW),
]


@pytest.mark.parametrize("row", ADD_ROWS, ids=lambda r: r.name)
def test_add_partitions(row: AddRow) -> None:
    decision = d.decide_add_partitions(row.meta, producer_id=row.pid, epoch=row.epoch, partitions=row.partitions,
                                       pending=row.pending, now_ms=NOW)
    if not row.transition:
        assert decision == Reply(row.error)
        return
    assert row.meta is not None
    assert isinstance(decision, Transition)
    t = decision.target
    assert (t.state, t.producer_id, t.producer_epoch) == (S.ONGOING, PID, 4)
    assert t.partitions == row.meta.partitions | row.partitions
    assert (t.start_ms, t.last_update_ms) == (row.start, NOW)
    assert (decision.reply_error, decision.write_markers) == (Err.none, False)


# ================================================================================ EndTxn
# Every state x commit/abort (Kafka's TransactionCoordinator.endTransaction, transactions v1).
END_ROWS: list[tuple[TxnState, bool, ErrorCode | TxnState]] = [
    (S.EMPTY, True, Err.invalid_txn_state),
    (S.EMPTY, False, Err.invalid_txn_state),
    (S.ONGOING, True, S.PREPARE_COMMIT),
    (S.ONGOING, False, S.PREPARE_ABORT),
    (S.PREPARE_COMMIT, True, Err.concurrent_transactions),
    (S.PREPARE_COMMIT, False, Err.invalid_txn_state),
    (S.PREPARE_ABORT, True, Err.invalid_txn_state),
    (S.PREPARE_ABORT, False, Err.concurrent_transactions),
    (S.COMPLETE_COMMIT, True, Err.none),
    (S.COMPLETE_COMMIT, False, Err.invalid_txn_state),
    (S.COMPLETE_ABORT, True, Err.invalid_txn_state),
    (S.COMPLETE_ABORT, False, Err.none),
    # never cached (DEAD is removed, the fence is not persisted); Kafka treats them as fatal
    (S.DEAD, True, Err.invalid_txn_state),
    (S.DEAD, False, Err.invalid_txn_state),
    (S.PREPARE_EPOCH_FENCE, True, Err.invalid_txn_state),
    (S.PREPARE_EPOCH_FENCE, False, Err.invalid_txn_state),
]


def test_end_rows_cover_every_state_and_result() -> None:
    assert {(s, c) for s, c, _ in END_ROWS} == set(itertools.product(TxnState, (True, False)))


@pytest.mark.parametrize(("state", "commit", "outcome"), END_ROWS,
                         ids=[f"{s.name}-{'commit' if c else 'abort'}" for s, c, _ in END_ROWS])
def test_end_txn(state: TxnState, commit: bool, outcome: ErrorCode | TxnState) -> None:
    m = meta(state)
    decision = d.decide_end_txn(m, producer_id=PID, epoch=4, commit=commit, pending=False, now_ms=NOW)
    if isinstance(outcome, ErrorCode):
        assert decision == Reply(outcome)
        return
    assert isinstance(decision, Transition)
    t = decision.target
    assert (t.state, t.producer_id, t.producer_epoch) == (outcome, PID, 4)
    assert (t.partitions, t.start_ms, t.last_update_ms) == (m.partitions, m.start_ms, NOW)
    assert (decision.reply_error, decision.write_markers) == (Err.none, True)


@pytest.mark.parametrize(("m", "pid", "epoch", "pending", "error"), [
    (None, PID, 4, False, Err.invalid_producer_id_mapping),
    (meta(S.ONGOING), PID + 1, 4, False, Err.invalid_producer_id_mapping),
    (meta(S.ONGOING), PID, 3, False, Err.producer_fenced),
    (meta(S.ONGOING), PID, 5, False, Err.producer_fenced),
    (meta(S.ONGOING), PID, 4, True, Err.concurrent_transactions),
    (meta(S.ONGOING), PID, 3, True, Err.producer_fenced),  # the epoch is checked before pending
    (meta(S.COMPLETE_COMMIT), PID, 3, False, Err.producer_fenced),  # a fenced retry is not NONE
], ids=["unknown", "other-pid", "older-epoch", "newer-epoch", "pending", "fenced-and-pending",
        "fenced-retry"])
@pytest.mark.parametrize("commit", [True, False], ids=["commit", "abort"])
def test_end_txn_producer_checks(m: TxnMetadata | None, pid: int, epoch: int, pending: bool, error: ErrorCode,
                                 commit: bool) -> None:
    assert d.decide_end_txn(m, producer_id=pid, epoch=epoch, commit=commit, pending=pending, now_ms=NOW) \
        == Reply(error)


# ================================================================================ markers written
@pytest.mark.parametrize(("state", "target"), [(S.PREPARE_COMMIT, S.COMPLETE_COMMIT),
                                               (S.PREPARE_ABORT, S.COMPLETE_ABORT)])
def test_complete_clears_partitions(state: TxnState, target: TxnState) -> None:
    t = d.decide_complete(meta(state), NOW).target
    assert (t.state, t.partitions, t.producer_epoch, t.start_ms, t.last_update_ms) == (target, frozenset(), 4,
                                                                                       START, NOW)


@pytest.mark.parametrize("state", [S.EMPTY, S.ONGOING, S.COMPLETE_COMMIT, S.COMPLETE_ABORT])
def test_complete_outside_prepare_is_illegal(state: TxnState) -> None:
    with pytest.raises(IllegalTransition):
        d.decide_complete(meta(state), NOW)


# ================================================================================ timeout
@pytest.mark.parametrize(("state", "now", "aborts"), [
    (S.ONGOING, START + TIMEOUT - 1, False),
    (S.ONGOING, START + TIMEOUT, False),  # Kafka: txnStartTimestamp + txnTimeoutMs < now
    (S.ONGOING, START + TIMEOUT + 1, True),
    (S.EMPTY, START + 10 * TIMEOUT, False),
    (S.PREPARE_COMMIT, START + 10 * TIMEOUT, False),
    (S.PREPARE_ABORT, START + 10 * TIMEOUT, False),
    (S.COMPLETE_COMMIT, START + 10 * TIMEOUT, False),
    (S.COMPLETE_ABORT, START + 10 * TIMEOUT, False),
])
def test_timeout(state: TxnState, now: int, aborts: bool) -> None:
    m = meta(state, epoch=4)
    decision = d.decide_timeout(m, now)
    if not aborts:
        assert decision is None
        return
    assert decision is not None
    t = decision.target
    # KIP-588: the timed-out producer's epoch is remembered so InitProducerId(pid, 4) recovers.
    assert (t.state, t.producer_id, t.producer_epoch, t.last_producer_epoch) == (S.PREPARE_ABORT, PID, 5, 4)
    assert (t.partitions, t.start_ms, t.last_update_ms) == (m.partitions, START, now)
    assert (decision.reply_error, decision.write_markers) == (Err.none, True)


# ================================================================================ expiry
EXPIRATION = 7 * 24 * 3600 * 1000


@pytest.mark.parametrize(("state", "now", "expires"), [
    (S.EMPTY, START + EXPIRATION - 1, False),
    (S.EMPTY, START + EXPIRATION, True),  # Kafka: txnLastUpdateTimestamp <= now - expiration
    (S.COMPLETE_COMMIT, START + EXPIRATION, True),
    (S.COMPLETE_ABORT, START + EXPIRATION, True),
    (S.COMPLETE_ABORT, START + EXPIRATION - 1, False),
    (S.ONGOING, START + 10 * EXPIRATION, False),
    (S.PREPARE_COMMIT, START + 10 * EXPIRATION, False),
    (S.PREPARE_ABORT, START + 10 * EXPIRATION, False),
])
def test_expire(state: TxnState, now: int, expires: bool) -> None:
    decision = d.decide_expire(meta(state, update=START), now, EXPIRATION)
    if not expires:
        assert decision is None
        return
    assert decision is not None
    assert (decision.target.state, decision.target.producer_id) == (S.DEAD, PID)
    assert decision.write_markers is False


# ================================================================================ KIP-890 verification
@pytest.mark.parametrize(("m", "pid", "epoch", "tp", "error"), [
    (meta(S.ONGOING), PID, 4, T0, Err.none),
    (meta(S.ONGOING), PID, 4, U0, Err.invalid_txn_state),  # not added to the transaction
    (meta(S.EMPTY), PID, 4, T0, Err.invalid_txn_state),
    (meta(S.COMPLETE_COMMIT), PID, 4, T0, Err.invalid_txn_state),
    (meta(S.COMPLETE_ABORT), PID, 4, T0, Err.invalid_txn_state),
    (meta(S.COMPLETE_COMMIT, partitions=frozenset({T0})), PID, 4, T0, Err.invalid_txn_state),
    (meta(S.ONGOING), PID, 3, T0, Err.invalid_producer_epoch),
    (meta(S.COMPLETE_COMMIT), PID, 3, T0, Err.invalid_producer_epoch),
    (None, PID, 4, T0, Err.invalid_producer_id_mapping),
    (meta(S.ONGOING), PID + 1, 4, T0, Err.invalid_producer_id_mapping),
    (meta(S.ONGOING), PID, 5, T0, Err.invalid_producer_epoch),  # any epoch mismatch, as Kafka
    (meta(S.PREPARE_COMMIT, partitions=frozenset({T0})), PID, 4, T0, Err.concurrent_transactions),
    (meta(S.PREPARE_ABORT, partitions=frozenset({T0})), PID, 4, T0, Err.concurrent_transactions),
], ids=["added", "not-added", "empty", "complete-commit", "complete-abort", "completed-stale-partitions",
        "older-epoch", "older-epoch-completed", "unknown", "other-pid", "newer-epoch", "prepare-commit",
        "prepare-abort"])
def test_verify_partition(m: TxnMetadata | None, pid: int, epoch: int, tp: TopicPartition,
                          error: ErrorCode) -> None:
    assert d.verify_partition(m, producer_id=pid, epoch=epoch, tp=tp) is error


# ================================================================================ tables
def test_end_txn_reply_table() -> None:
    assert dict(d.END_TXN_REPLY_WITHOUT_TRANSITION) == {
        (S.COMPLETE_COMMIT, True): Err.none,
        (S.COMPLETE_ABORT, False): Err.none,
        (S.PREPARE_COMMIT, True): Err.concurrent_transactions,
        (S.PREPARE_ABORT, False): Err.concurrent_transactions,
    }


@pytest.mark.parametrize(("timeout", "valid"), [(-1, False), (0, False), (1, True), (MAX_TIMEOUT, True),
                                                (MAX_TIMEOUT + 1, False)])
def test_valid_timeout(timeout: int, valid: bool) -> None:
    assert d.valid_timeout(timeout, MAX_TIMEOUT) is valid
