"""Transactional offsets complete per __consumer_offsets partition (Kafka's handleTxnCompletion):
a marker on one partition never commits or drops the producer's pending offsets of groups that
live on another partition, live or on replay."""

from __future__ import annotations

import pytest
from fakes import InMemoryRecordLog

from minikafka.coordinator.group.coordinator import GroupCoordinator, OffsetCommitEntry
from minikafka.coordinator.group.decisions import GroupConfig
from minikafka.coordinator.ports import LogRecord
from minikafka.protocol.errors import ErrorCode
from minikafka.protocol.records import CONTROL_COMMIT
from minikafka.protocol.types import TopicPartition

pytestmark = pytest.mark.unit

T0 = 1_700_000_000_000
PID = 7
TP = TopicPartition("src", 0)


def _coordinator(log: InMemoryRecordLog) -> GroupCoordinator:
    c = GroupCoordinator(log, GroupConfig(min_session_timeout_ms=10, initial_rebalance_delay_ms=0),
                         offsets_retention_ms=60_000, offsets_retention_check_interval_ms=1000)
    c.load(T0)
    return c


def _two_groups_on_two_partitions(c: GroupCoordinator) -> tuple[str, str]:
    names = [f"g{i}" for i in range(200)]
    a = names[0]
    b = next(n for n in names if c.partition_for(n) != c.partition_for(a))
    return a, b


def _offset(c: GroupCoordinator, group: str) -> tuple[int, ErrorCode]:
    (fetched,) = c.fetch_offsets(group, [TP], require_stable=True)
    return fetched.offset, fetched.error


async def test_marker_completes_only_its_partition_live_and_on_replay() -> None:
    log = InMemoryRecordLog(partition_count=50)
    c = _coordinator(log)
    a, b = _two_groups_on_two_partitions(c)
    for group, offset in ((a, 10), (b, 20)):
        await c.commit_transactional_offsets(group, producer_id=PID, producer_epoch=0, member_id="",
                                             group_instance_id=None, generation_id=-1,
                                             offsets={TP: OffsetCommitEntry(offset=offset)}, now_ms=T0)
    # The COMMIT marker reaches b's partition only.
    c.complete_transaction(c.partition_for(b), PID, True)
    assert _offset(c, b) == (20, ErrorCode.none)
    assert _offset(c, a) == (-1, ErrorCode.unstable_offset_commit)  # still pending

    # Replay reads partition after partition: the same marker must not complete a's offsets.
    log.inject(LogRecord(partition=c.partition_for(b), offset=0, key=b"\x00\x00\x00\x01", value=None,
                         producer_id=PID, transactional=True, control_type=CONTROL_COMMIT))
    replayed = _coordinator(log)
    assert _offset(replayed, b) == (20, ErrorCode.none)
    assert _offset(replayed, a) == (-1, ErrorCode.unstable_offset_commit)

    # An ABORT on a's partition drops a's offsets and nothing else.
    c.complete_transaction(c.partition_for(a), PID, False)
    assert _offset(c, a) == (-1, ErrorCode.none)
    assert _offset(c, b) == (20, ErrorCode.none)
