"""The share coordinator (issue 23): `__share_group_state` written and replayed as Kafka's
ShareCoordinatorShard does (snapshot, updates merged newest-wins, a new snapshot every N updates,
tombstones on delete). Pure, over an in-memory log."""

from __future__ import annotations

import asyncio
import uuid

import pytest
from fakes import InMemoryRecordLog

from minikafka.coordinator.share_group import state_log as sl
from minikafka.coordinator.share_group.share_coordinator import ShareCoordinator, merge_batches
from minikafka.coordinator.share_group.share_partition import RecordState, StateBatch

pytestmark = pytest.mark.unit

T = uuid.UUID(int=7)
KEY = ("g", T, 0)
AV, ACK, ARC = RecordState.AVAILABLE, RecordState.ACKNOWLEDGED, RecordState.ARCHIVED


def run(coro):
    return asyncio.run(coro)


def test_merge_newer_wins_and_drops_what_lies_below_the_start():
    older = [StateBatch(0, 9, AV, 1)]
    newer = [StateBatch(3, 4, ACK, 1), StateBatch(8, 12, ARC, 2)]
    assert merge_batches(older, newer, 2) == (StateBatch(2, 2, AV, 1), StateBatch(3, 4, ACK, 1),
                                              StateBatch(5, 7, AV, 1), StateBatch(8, 12, ARC, 2))


def test_initialize_write_and_replay_give_the_same_state():
    log = InMemoryRecordLog(3)
    sc = ShareCoordinator(log, snapshot_every=3)
    run(sc.initialize([KEY], state_epoch=2, now_ms=100))
    assert sc.read(KEY).start_offset == -1 and sc.read(KEY).state_epoch == 2
    run(sc.write(KEY, start_offset=0, batches=[StateBatch(0, 3, ACK, 1)], delivery_complete_count=4, now_ms=200))
    run(sc.write(KEY, start_offset=4, batches=[StateBatch(6, 6, AV, 1)], delivery_complete_count=0, now_ms=300))
    kinds = [sl.decode_key(k).record_type for k, _v in log.records()]
    assert kinds == [sl.SNAPSHOT, sl.UPDATE, sl.UPDATE]
    # the third write after the snapshot is a new snapshot with everything merged
    run(sc.write(KEY, start_offset=4, batches=[StateBatch(5, 5, ARC, 3)], delivery_complete_count=1, now_ms=400))
    k, v = log.records()[-1]
    snap = sl.decode_value(sl.decode_key(k).record_type, v)
    assert isinstance(snap, sl.ShareSnapshot) and snap.snapshot_epoch == 1
    assert snap.state_batches == (StateBatch(5, 5, ARC, 3), StateBatch(6, 6, AV, 1))
    again = ShareCoordinator(log, snapshot_every=3)
    again.load()
    assert again.read(KEY) is not None
    assert (again.read(KEY).start_offset, again.read(KEY).batches) == (4, snap.state_batches)
    assert again.partition_for(KEY) == sc.partition_for(KEY) and sc.partition_for(KEY) in range(3)


def test_an_initialized_key_keeps_its_state_at_the_same_state_epoch_and_delete_leaves_tombstones():
    log = InMemoryRecordLog(1)
    sc = ShareCoordinator(log)
    run(sc.initialize([KEY], state_epoch=2, now_ms=1))
    run(sc.write(KEY, start_offset=5, batches=[], delivery_complete_count=0, now_ms=2))
    run(sc.initialize([KEY], state_epoch=2, now_ms=3))
    assert sc.read(KEY).start_offset == 5
    run(sc.delete(sc.keys_of("g"), now_ms=4))
    assert sc.read(KEY) is None and [v for _k, v in log.records()][-2:] == [None, None]
    again = ShareCoordinator(log)
    again.load()
    assert again.read(KEY) is None
