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


# -- a mix of plain and transactional commits of one partition (Kafka's recordOffset rule) ------

GROUP = "g0"


async def _txn_commit(c: GroupCoordinator, offset: int, pid: int = PID) -> None:
    codes = await c.commit_transactional_offsets(GROUP, producer_id=pid, producer_epoch=3, member_id="",
                                                 group_instance_id=None, generation_id=-1,
                                                 offsets={TP: OffsetCommitEntry(offset=offset)}, now_ms=T0)
    assert codes == {TP: ErrorCode.none}


async def _plain_commit(c: GroupCoordinator, offset: int) -> None:
    codes = await c.commit_offsets(GROUP, "", None, -1, {TP: OffsetCommitEntry(offset=offset)}, now_ms=T0)
    assert codes == {TP: ErrorCode.none}


def _marker(log: InMemoryRecordLog, c: GroupCoordinator, commit: bool, pid: int = PID) -> None:
    """The marker as WriteTxnMarkers delivers it: into the log, and to the live coordinator."""
    log.inject(LogRecord(partition=c.partition_for(GROUP), offset=0, key=b"\x00\x00\x00\x01", value=None,
                         producer_id=pid, transactional=True, control_type=1 if commit else 0))
    c.complete_transaction(c.partition_for(GROUP), pid, commit)


def _committed(c: GroupCoordinator) -> int:
    """The committed offset as a read_uncommitted OffsetFetch sees it (pending ones not counted)."""
    (fetched,) = c.fetch_offsets(GROUP, [TP], require_stable=False)
    return fetched.offset


@pytest.mark.parametrize("compact_before_marker", [False, True], ids=["plain", "compacted"])
async def test_plain_commit_after_txn_offset_commit_wins(compact_before_marker: bool) -> None:
    """TxnOffsetCommit 5, then a plain OffsetCommit 9, then the COMMIT marker: 9 stays (it was written
    after the transaction's offset), live and on replay, also across a compaction of
    __consumer_offsets between the commits and the marker."""
    log = InMemoryRecordLog()
    c = _coordinator(log)
    await _plain_commit(c, 1)
    await _txn_commit(c, 5)
    await _plain_commit(c, 9)
    if compact_before_marker:
        log.compaction_wanted = True
        assert await c.compact(T0) == 50
        log.compaction_wanted = False
        assert _committed(_coordinator(log)) == 9
    _marker(log, c, commit=True)
    assert _offset(c, GROUP) == (9, ErrorCode.none)
    assert _offset(_coordinator(log), GROUP) == (9, ErrorCode.none)


@pytest.mark.parametrize("compact_before_marker", [False, True], ids=["plain", "compacted"])
async def test_txn_offset_commit_after_plain_commit_wins_at_commit_only(compact_before_marker: bool) -> None:
    """A plain commit 1, then TxnOffsetCommit 5: the COMMIT marker makes it 5, an ABORT keeps 1; a
    compaction in between (which writes the committed 1 again, after the pending 5) changes
    neither, live or on replay."""
    for commit, expected in ((True, 5), (False, 1)):
        log = InMemoryRecordLog()
        c = _coordinator(log)
        await _plain_commit(c, 1)
        await _txn_commit(c, 5)
        if compact_before_marker:
            log.compaction_wanted = True
            await c.compact(T0)
            log.compaction_wanted = False
            replayed = _coordinator(log)
            assert _offset(replayed, GROUP) == (-1, ErrorCode.unstable_offset_commit)
            assert replayed.pending_txn_offsets[PID][GROUP][TP].offset == 5
        _marker(log, c, commit=commit)
        assert _offset(c, GROUP) == (expected, ErrorCode.none), commit
        assert _offset(_coordinator(log), GROUP) == (expected, ErrorCode.none), commit


async def test_the_later_of_two_transactions_wins_whatever_the_marker_order() -> None:
    """Producer A's TxnOffsetCommit 5, then producer B's 7, B's COMMIT marker lands first: A's later
    marker does not take the partition back to 5 (Kafka compares record offsets)."""
    log = InMemoryRecordLog()
    c = _coordinator(log)
    await _txn_commit(c, 5, pid=PID)
    await _txn_commit(c, 7, pid=PID + 1)
    log.compaction_wanted = True
    await c.compact(T0)
    log.compaction_wanted = False
    _marker(log, c, commit=True, pid=PID + 1)
    _marker(log, c, commit=True, pid=PID)
    assert _offset(c, GROUP) == (7, ErrorCode.none)
    assert _offset(_coordinator(log), GROUP) == (7, ErrorCode.none)


# -- tombstones drop pending transactional offsets (Kafka's OffsetMetadataManager) ---------------


async def test_deleted_group_is_not_revived_by_a_later_commit_marker() -> None:
    log = InMemoryRecordLog()
    c = _coordinator(log)
    await _plain_commit(c, 1)
    await _txn_commit(c, 5)
    assert await c.delete_groups([GROUP], T0) == {GROUP: ErrorCode.none}
    _marker(log, c, commit=True)
    assert _committed(c) == -1
    assert c.describe_group(GROUP) is None
    assert _committed(_coordinator(log)) == -1


async def test_offset_delete_drops_a_pending_transactional_offset() -> None:
    log = InMemoryRecordLog()
    c = _coordinator(log)
    await _plain_commit(c, 1)
    await _txn_commit(c, 5)
    top, results = await c.delete_offsets(GROUP, [TP], T0)
    assert (top, results) == (ErrorCode.none, {TP: ErrorCode.none})
    _marker(log, c, commit=True)
    assert _committed(c) == -1
    assert _committed(_coordinator(log)) == -1


async def test_a_partition_with_a_pending_transactional_offset_does_not_expire() -> None:
    """Retention would expire the plain commit, but a TxnOffsetCommit of the partition is pending:
    Kafka keeps the offset until the transaction ends (else the marker would apply an older value)."""
    log = InMemoryRecordLog()
    c = _coordinator(log)
    await _txn_commit(c, 5)
    await _plain_commit(c, 9)
    assert await c.expire_offsets(T0 + 10 * 60_000) == 0
    _marker(log, c, commit=True)
    assert _committed(c) == 9
    assert await c.expire_offsets(T0 + 10 * 60_000) == 1
    assert _committed(c) == -1
