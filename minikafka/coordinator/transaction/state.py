"""Transaction state: the eight states, the events that move between them, and the metadata.

Theory of operation
- One TxnMetadata per transactional id, immutable; every change is a new value produced by
  `transition()`, which looks the (state, event) pair up in TRANSITIONS. A pair that is not in
  the table is a bug in the coordinator and raises IllegalTransition.
- The coordinator decides (pure functions in decisions.py), persists the new value to
  __transaction_state, and only then applies it to its cache. While the append is in flight the
  id is "pending" and every other request for it gets CONCURRENT_TRANSACTIONS.
- State ids are Kafka's on-disk TransactionStatus values, so the log decodes with Kafka's tools.
- PREPARE_EPOCH_FENCE is never written: fencing an open transaction (InitProducerId from a new
  instance, or a timeout) bumps the epoch and goes straight on to PREPARE_ABORT with that epoch.

Lifecycle: EMPTY --add partitions--> ONGOING --EndTxn(commit)--> PREPARE_COMMIT --markers-->
COMPLETE_COMMIT --add partitions--> ONGOING ... ; ONGOING --EndTxn(abort) or fence--> PREPARE_ABORT
--markers--> COMPLETE_ABORT; EMPTY/COMPLETE_* --InitProducerId--> EMPTY (epoch + 1);
EMPTY/COMPLETE_* --expiry--> DEAD (a tombstone in the log). Under transactions v2 every EndTxn
moves to PREPARE_* with the epoch + 1 (a new producer id once the markers are written, when the
epoch is exhausted), and EndTxn(abort) from EMPTY/COMPLETE_* does too, with no partition to mark.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, Final

from minikafka.protocol.types import TopicPartition

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
MAX_EPOCH = 32767

# The transaction.version a request speaks (KIP-890 part 2): TV2 clients end every transaction with
# an epoch bump and add partitions implicitly (Produce v12+, TxnOffsetCommit v5+, EndTxn v5+).
TV_2 = 2


class TxnState(enum.Enum):
    """Coordinator-side state of one transactional id. Values are Kafka's TransactionStatus ids."""

    EMPTY = 0
    ONGOING = 1
    PREPARE_COMMIT = 2
    PREPARE_ABORT = 3
    COMPLETE_COMMIT = 4
    COMPLETE_ABORT = 5
    DEAD = 6
    PREPARE_EPOCH_FENCE = 7

    @property
    def kafka_name(self) -> str:
        return _KAFKA_NAMES[self]


# Kafka's names of the states (PrepareCommit), made once: the listeners and log lines ask for
# them on every transition.
_KAFKA_NAMES = {s: "".join(w.capitalize() for w in s.name.split("_")) for s in TxnState}


class TxnEvent(enum.Enum):
    INIT_PRODUCER_ID = enum.auto()   # a new or bumped epoch (or a new producer id)
    ADD_PARTITIONS = enum.auto()     # AddPartitionsToTxn, AddOffsetsToTxn
    END_COMMIT = enum.auto()         # EndTxn(commit)
    END_ABORT = enum.auto()          # EndTxn(abort)
    FENCE = enum.auto()              # InitProducerId or timeout while ONGOING: bump the epoch
    ABORT_FENCED = enum.auto()       # the abort that follows a fence
    MARKERS_WRITTEN = enum.auto()    # every partition has its marker
    EXPIRED = enum.auto()            # transactional.id.expiration.ms


_S, _E = TxnState, TxnEvent
TRANSITIONS: Final[Mapping[tuple[TxnState, TxnEvent], TxnState]] = MappingProxyType({
    # from EMPTY / COMPLETE_*: a new epoch, a new transaction, or expiry
    (_S.EMPTY, _E.INIT_PRODUCER_ID): _S.EMPTY,
    (_S.COMPLETE_COMMIT, _E.INIT_PRODUCER_ID): _S.EMPTY,
    (_S.COMPLETE_ABORT, _E.INIT_PRODUCER_ID): _S.EMPTY,
    (_S.EMPTY, _E.ADD_PARTITIONS): _S.ONGOING,
    (_S.COMPLETE_COMMIT, _E.ADD_PARTITIONS): _S.ONGOING,
    (_S.COMPLETE_ABORT, _E.ADD_PARTITIONS): _S.ONGOING,
    (_S.EMPTY, _E.EXPIRED): _S.DEAD,
    (_S.COMPLETE_COMMIT, _E.EXPIRED): _S.DEAD,
    (_S.COMPLETE_ABORT, _E.EXPIRED): _S.DEAD,
    # from ONGOING
    (_S.ONGOING, _E.ADD_PARTITIONS): _S.ONGOING,
    (_S.ONGOING, _E.END_COMMIT): _S.PREPARE_COMMIT,
    (_S.ONGOING, _E.END_ABORT): _S.PREPARE_ABORT,
    (_S.ONGOING, _E.FENCE): _S.PREPARE_EPOCH_FENCE,
    # TV2 (KIP-890 part 2): EndTxn(abort) with no transaction open still bumps the epoch
    (_S.EMPTY, _E.END_ABORT): _S.PREPARE_ABORT,
    (_S.COMPLETE_COMMIT, _E.END_ABORT): _S.PREPARE_ABORT,
    (_S.COMPLETE_ABORT, _E.END_ABORT): _S.PREPARE_ABORT,
    (_S.PREPARE_EPOCH_FENCE, _E.ABORT_FENCED): _S.PREPARE_ABORT,
    # markers done
    (_S.PREPARE_COMMIT, _E.MARKERS_WRITTEN): _S.COMPLETE_COMMIT,
    (_S.PREPARE_ABORT, _E.MARKERS_WRITTEN): _S.COMPLETE_ABORT,
})


def _allowed_previous() -> Mapping[TxnState, frozenset[TxnState]]:
    prev: dict[TxnState, set[TxnState]] = {s: set() for s in TxnState}
    for (src, _event), dst in TRANSITIONS.items():
        prev[dst].add(src)
    return MappingProxyType({s: frozenset(v) for s, v in prev.items()})


# Derived from TRANSITIONS; a unit test compares it with Kafka's TransactionState.validPreviousStates.
ALLOWED_PREVIOUS: Final = _allowed_previous()
# A transaction is open (its partitions may hold records without a marker) in these states.
OPEN_STATES: Final = frozenset({TxnState.ONGOING, TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT,
                                TxnState.PREPARE_EPOCH_FENCE})


class IllegalTransition(Exception):
    def __init__(self, state: TxnState, event: TxnEvent) -> None:
        super().__init__(f"no transition from {state.name} on {event.name}")
        self.state = state
        self.event = event


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class TxnMetadata:
    transactional_id: str
    producer_id: int
    previous_producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = NO_PRODUCER_EPOCH
    last_producer_epoch: int = NO_PRODUCER_EPOCH  # memory only, as in Kafka (retry detection)
    timeout_ms: int
    state: TxnState = TxnState.EMPTY
    partitions: frozenset[TopicPartition] = frozenset()
    start_ms: int = -1
    last_update_ms: int
    # transaction.version of the client that last changed it (0/1: v1 semantics; 2: every EndTxn
    # bumps the epoch), and the producer id an exhausted epoch hands over to once the markers are
    # written (TV2); both are tagged fields of TransactionLogValue v1.
    client_transaction_version: int = 0
    next_producer_id: int = NO_PRODUCER_ID

    @property
    def epoch_exhausted(self) -> bool:
        # Kafka's TransactionMetadata.isEpochExhausted: the last epoch a fence could still bump.
        return self.producer_epoch >= MAX_EPOCH - 1


def transition(meta: TxnMetadata, event: TxnEvent, **changes: Any) -> TxnMetadata:
    """The metadata after `event`. Raises IllegalTransition for a pair not in TRANSITIONS.

    Checks Kafka's invariants for a completed transition: the epoch stays, grows by one, or a new
    producer id starts; partitions only grow while ONGOING.
    """
    target = TRANSITIONS.get((meta.state, event))
    if target is None:
        raise IllegalTransition(meta.state, event)
    # Kafka's prepareTransitionTo: the previous producer id is the one held before this transition
    # (so equal to the producer id unless the id rotates), and every TransactionLogValue v1 carries it.
    changes.setdefault("previous_producer_id", meta.producer_id)
    new = dataclasses.replace(meta, state=target, **changes)
    if new.producer_id == meta.producer_id and new.producer_epoch not in (meta.producer_epoch, meta.producer_epoch + 1) \
            and meta.producer_epoch != NO_PRODUCER_EPOCH:
        raise IllegalTransition(meta.state, event)
    if target is TxnState.ONGOING and meta.state is TxnState.ONGOING and not meta.partitions <= new.partitions:
        raise IllegalTransition(meta.state, event)
    return new
