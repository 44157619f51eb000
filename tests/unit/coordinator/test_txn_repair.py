"""Repairs of transactional ids rebuilt from a damaged __transaction_state (issue 14, item 3):
what the data partitions say, and what the coordinator does about it, row by row."""

from __future__ import annotations

import pytest

from minikafka.coordinator.ports import MarkerSeen, OpenTransaction
from minikafka.coordinator.transaction import repair
from minikafka.coordinator.transaction.repair import Action, Evidence
from minikafka.coordinator.transaction.state import TxnMetadata, TxnState
from minikafka.protocol.types import TopicPartition

pytestmark = pytest.mark.unit

S = TxnState
PID, EPOCH = 42, 3
START, UPDATED, NOW = 10_000, 10_500, 90_000
T0, T1, T2 = TopicPartition("t", 0), TopicPartition("t", 1), TopicPartition("t", 2)


def meta(state: TxnState, partitions: frozenset[TopicPartition] = frozenset({T0, T1})) -> TxnMetadata:
    in_txn = state in (S.ONGOING, S.PREPARE_COMMIT, S.PREPARE_ABORT)
    return TxnMetadata(transactional_id="txn", producer_id=PID, producer_epoch=EPOCH, timeout_ms=60_000,
                       state=state, partitions=partitions if in_txn else frozenset(),
                       start_ms=START if in_txn else -1, last_update_ms=UPDATED)


def open_in(*tps: TopicPartition, pid: int = PID, epoch: int = EPOCH) -> list[OpenTransaction]:
    return [OpenTransaction(tp.topic, tp.partition, pid, epoch, 100 + i) for i, tp in enumerate(tps)]


COMMIT = MarkerSeen(True, EPOCH, UPDATED + 5)
ABORT = MarkerSeen(False, EPOCH, UPDATED + 5)
OLD_COMMIT = MarkerSeen(True, EPOCH, START - 1)  # the previous transaction's marker


def test_ongoing_whose_completion_was_lost_is_finished_as_committed_not_reopened():
    # PrepareCommit and CompleteCommit were in the lost batch: every partition has its COMMIT marker.
    fix = repair.decide_repair(meta(S.ONGOING), [], {T0: COMMIT, T1: COMMIT}, NOW)
    assert (fix.evidence, fix.action) == (Evidence.COMMIT_MARKERS, Action.FINISH_COMMIT)
    assert fix.transition.target.state is S.PREPARE_COMMIT and fix.transition.write_markers
    assert fix.transition.target.producer_epoch == EPOCH  # the producer is not fenced


def test_commit_half_written_is_finished_as_commit():
    # The lost PrepareCommit had its marker written to t-0 only: t-1 is still open. Commit t-1 too.
    fix = repair.decide_repair(meta(S.ONGOING), open_in(T1), {T0: COMMIT, T1: None}, NOW)
    assert fix.action is Action.FINISH_COMMIT
    assert fix.transition.target.partitions == {T0, T1}


def test_lost_abort_is_finished_as_abort_and_a_lost_fence_keeps_its_bumped_epoch():
    fix = repair.decide_repair(meta(S.ONGOING), [], {T0: ABORT, T1: None}, NOW)
    assert (fix.action, fix.transition.target.state, fix.transition.target.producer_epoch) == \
        (Action.FINISH_ABORT, S.PREPARE_ABORT, EPOCH)
    fenced = MarkerSeen(False, EPOCH + 1, UPDATED + 5)
    fix = repair.decide_repair(meta(S.ONGOING), [], {T0: fenced, T1: fenced}, NOW)
    assert (fix.transition.target.state, fix.transition.target.producer_epoch) == (S.PREPARE_ABORT, EPOCH + 1)


def test_markers_of_the_previous_transaction_are_not_evidence():
    for old in (OLD_COMMIT, MarkerSeen(True, EPOCH - 1, UPDATED + 5)):
        fix = repair.decide_repair(meta(S.ONGOING), open_in(T0), {T0: None, T1: old}, NOW)
        assert (fix.evidence, fix.action, fix.transition) == (Evidence.NONE, Action.KEEP, None)


def test_conflicting_markers_keep_the_rebuilt_state():
    fix = repair.decide_repair(meta(S.ONGOING), [], {T0: COMMIT, T1: ABORT}, NOW)
    assert (fix.evidence, fix.action) == (Evidence.CONFLICTING_MARKERS, Action.KEEP)


def test_a_lost_add_partitions_is_restored_from_the_open_data():
    # CompleteCommit rebuilt, but the next transaction had begun: its data is open in t-2.
    fix = repair.decide_repair(meta(S.COMPLETE_COMMIT), open_in(T2), {}, NOW)
    assert (fix.evidence, fix.action) == (Evidence.OPEN_DATA, Action.ADD_PARTITIONS)
    target = fix.transition.target
    assert (target.state, target.partitions, target.start_ms, target.producer_epoch) == \
        (S.ONGOING, {T2}, NOW, EPOCH)
    # An ONGOING one that lost a later AddPartitions gets the partition back, keeping its start.
    fix = repair.decide_repair(meta(S.ONGOING), open_in(T0, T2), {T0: None, T1: None}, NOW)
    assert (fix.evidence, fix.transition.target.partitions, fix.transition.target.start_ms) == \
        (Evidence.OPEN_ELSEWHERE, {T0, T1, T2}, START)


def test_open_data_of_another_producer_or_epoch_is_not_ours():
    for other in (open_in(T2, pid=PID + 1), open_in(T2, epoch=EPOCH - 1)):
        assert repair.decide_repair(meta(S.COMPLETE_ABORT), other, {}, NOW).action is Action.KEEP


@pytest.mark.parametrize("state", [S.PREPARE_COMMIT, S.PREPARE_ABORT, S.EMPTY, S.COMPLETE_COMMIT])
def test_states_with_nothing_to_contradict_them_stay(state):
    assert repair.decide_repair(meta(state), [], {T0: COMMIT, T1: COMMIT}, NOW).action is Action.KEEP


def test_every_repair_is_a_transition_of_the_state_table():
    # REPAIRS only names moves the coordinator's own table allows (decide_repair goes through it).
    from minikafka.coordinator.transaction.state import TRANSITIONS
    reachable = {(src, dst) for (src, _e), dst in TRANSITIONS.items()}
    for (state, _evidence), action in repair.REPAIRS.items():
        to = {Action.FINISH_COMMIT: S.PREPARE_COMMIT, Action.FINISH_ABORT: S.PREPARE_ABORT,
              Action.ADD_PARTITIONS: S.ONGOING}[action]
        assert (state, to) in reachable


def test_hanging_is_open_data_no_id_claims():
    ongoing = meta(S.ONGOING)
    found = open_in(T0) + open_in(T2, pid=7)
    assert repair.hanging(found, {"txn": ongoing}) == [found[1]]
    assert repair.hanging(found, {"txn": meta(S.COMPLETE_COMMIT)}) == found
