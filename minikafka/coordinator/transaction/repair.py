"""Repair of transactional ids rebuilt from a damaged `__transaction_state` partition.

Theory of operation
- A salvaging start cuts an unreadable batch out of `__transaction_state` (storage/partition_log.py)
  and the coordinator rebuilds each id from the records left. Every record is a whole TxnMetadata,
  so an id is at most as old as its last readable record: a PrepareCommit or CompleteCommit that
  was in the lost batch leaves it ONGOING, an AddPartitions that was lost leaves it COMPLETE_*.
- Left alone, the first would be aborted by its timeout (a completed transaction re-opened and
  its producer fenced) and the second would leave data with no marker to come (a hanging
  transaction holding the last stable offset back for ever).
- The data partitions know better, because the coordinator writes the markers before it writes a
  completion, and a producer's open transaction is in every partition's producer state. This
  module reads that evidence (`classify`) and maps it to an action through REPAIRS; the
  coordinator persists the action as an ordinary transition, so the log says what happened.
- A marker counts for the rebuilt transaction only if its epoch is not older and it was written
  no earlier than the transaction's last update: the previous transaction's markers were written
  before this one began. Two transactions of one producer within one millisecond could still be
  mistaken for each other; a repair is only ever attempted after damage.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Final

from minikafka.coordinator.ports import MarkerSeen, OpenTransaction
from minikafka.coordinator.transaction.decisions import Transition, fence_and_abort
from minikafka.coordinator.transaction.state import TxnEvent, TxnMetadata, TxnState, transition
from minikafka.protocol.types import TopicPartition


class Evidence(enum.Enum):
    NONE = "nothing in the data partitions contradicts the rebuilt state"
    COMMIT_MARKERS = "COMMIT markers of this transaction are in its partitions"
    ABORT_MARKERS = "ABORT markers of this transaction are in its partitions"
    CONFLICTING_MARKERS = "both COMMIT and ABORT markers of this transaction were found"
    OPEN_ELSEWHERE = "the producer has open data in partitions the rebuilt transaction does not list"
    OPEN_DATA = "the producer has open transactional data the rebuilt state does not know of"


class Action(enum.Enum):
    KEEP = enum.auto()            # the rebuilt state stands
    FINISH_COMMIT = enum.auto()   # PREPARE_COMMIT: the remaining markers, then COMPLETE_COMMIT
    FINISH_ABORT = enum.auto()    # PREPARE_ABORT (bumped epoch if the markers carry it)
    ADD_PARTITIONS = enum.auto()  # ONGOING again, listing the partitions that hold its data


_IDLE_STATES = (TxnState.EMPTY, TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT)

# (rebuilt state, evidence) -> action; a pair not listed keeps the rebuilt state. PREPARE_* is
# never repaired: its markers are written again at start, which finishes it whatever was lost.
REPAIRS: Final[Mapping[tuple[TxnState, Evidence], Action]] = MappingProxyType({
    (TxnState.ONGOING, Evidence.COMMIT_MARKERS): Action.FINISH_COMMIT,
    (TxnState.ONGOING, Evidence.ABORT_MARKERS): Action.FINISH_ABORT,
    (TxnState.ONGOING, Evidence.OPEN_ELSEWHERE): Action.ADD_PARTITIONS,
    **{(state, Evidence.OPEN_DATA): Action.ADD_PARTITIONS for state in _IDLE_STATES},
})


@dataclasses.dataclass(frozen=True, slots=True)
class Repair:
    evidence: Evidence
    action: Action
    transition: Transition | None  # None for KEEP


def open_partitions(meta: TxnMetadata, open_txns: Sequence[OpenTransaction]) -> frozenset[TopicPartition]:
    """Partitions where this id's producer, at its current epoch, has data no marker ended."""
    return frozenset(TopicPartition(o.topic, o.partition) for o in open_txns
                     if o.producer_id == meta.producer_id and o.producer_epoch == meta.producer_epoch)


def classify(meta: TxnMetadata, open_parts: frozenset[TopicPartition],
             markers: Mapping[TopicPartition, MarkerSeen | None]) -> Evidence:
    """What the data partitions say of a rebuilt id (markers: the producer's newest marker in each
    partition the rebuilt transaction lists)."""
    if meta.state in _IDLE_STATES:
        return Evidence.OPEN_DATA if open_parts else Evidence.NONE
    if meta.state is not TxnState.ONGOING:
        return Evidence.NONE
    ours = [m for m in markers.values() if m is not None and m.producer_epoch >= meta.producer_epoch
            and m.timestamp_ms >= meta.last_update_ms]
    commits = any(m.commit for m in ours)
    aborts = any(not m.commit for m in ours)
    if commits and aborts:
        return Evidence.CONFLICTING_MARKERS
    if commits:
        return Evidence.COMMIT_MARKERS
    if aborts:
        return Evidence.ABORT_MARKERS
    return Evidence.OPEN_ELSEWHERE if open_parts - meta.partitions else Evidence.NONE


def decide_repair(meta: TxnMetadata, open_txns: Sequence[OpenTransaction],
                  markers: Mapping[TopicPartition, MarkerSeen | None], now_ms: int) -> Repair:
    open_parts = open_partitions(meta, open_txns)
    evidence = classify(meta, open_parts, markers)
    action = REPAIRS.get((meta.state, evidence), Action.KEEP)
    partitions = meta.partitions | open_parts
    if action is Action.FINISH_COMMIT:
        target = transition(meta, TxnEvent.END_COMMIT, partitions=partitions, last_update_ms=now_ms)
        return Repair(evidence, action, Transition(target, write_markers=True))
    if action is Action.FINISH_ABORT:
        bumped = any(m is not None and not m.commit and m.producer_epoch > meta.producer_epoch
                     for m in markers.values())
        widened = dataclasses.replace(meta, partitions=partitions)
        if bumped:  # the lost record was a fence: finish it with the epoch its markers carry
            return Repair(evidence, action, fence_and_abort(widened, now_ms))
        target = transition(widened, TxnEvent.END_ABORT, last_update_ms=now_ms)
        return Repair(evidence, action, Transition(target, write_markers=True))
    if action is Action.ADD_PARTITIONS:
        start = meta.start_ms if meta.state is TxnState.ONGOING else now_ms
        target = transition(meta, TxnEvent.ADD_PARTITIONS, partitions=partitions, start_ms=start,
                            last_update_ms=now_ms)
        return Repair(evidence, action, Transition(target))
    return Repair(evidence, Action.KEEP, None)


def hanging(open_txns: Sequence[OpenTransaction], cache: Mapping[str, TxnMetadata]) -> list[OpenTransaction]:
    """Open data no transactional id accounts for (its id was lost whole): a hanging transaction
    for `kafka-transactions.sh find-hanging` / `abort` to end."""
    claimed = {(m.producer_id, tp) for m in cache.values()
               if m.state in (TxnState.ONGOING, TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT)
               for tp in m.partitions}
    return [o for o in open_txns if (o.producer_id, TopicPartition(o.topic, o.partition)) not in claimed]
