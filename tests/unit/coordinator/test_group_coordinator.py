"""GroupCoordinator orchestration over an in-memory RecordLog, and the __consumer_offsets schemas."""

from __future__ import annotations

import asyncio
import struct
import uuid
from collections.abc import Iterator, Sequence

import pytest

from minikafka.coordinator.group import offsets_log
from minikafka.coordinator.group.coordinator import GroupCoordinator, OffsetCommitEntry
from minikafka.coordinator.group.decisions import GroupConfig, JoinRequest, SyncRequest
from minikafka.coordinator.group.state import Group, GroupState, Member, OffsetAndMetadata
from minikafka.coordinator.ports import LogRecord
from minikafka.protocol.errors import ErrorCode
from minikafka.protocol.types import TopicPartition

pytestmark = pytest.mark.unit

T0 = 1_700_000_000_000


class InMemoryRecordLog:
    def __init__(self, partitions: int = 3) -> None:
        self.partitions = partitions
        self.records: list[LogRecord] = []
        self.fail = False
        self.created = False

    @property
    def partition_count(self) -> int:
        return self.partitions

    def ensure_created(self, now_ms: int) -> None:
        self.created = True

    async def append(self, partition: int, records: Sequence[tuple[bytes, bytes | None]], now_ms: int, *,
                     producer_id: int = -1, producer_epoch: int = -1) -> int:
        if self.fail:
            raise OSError("disk full")
        base = len(self.records)
        for i, (k, v) in enumerate(records):
            self.records.append(LogRecord(partition, base + i, k, v, producer_id, producer_id >= 0))
        return base

    def add(self, rec: LogRecord) -> None:
        self.records.append(rec)

    def replay(self) -> Iterator[LogRecord]:
        for p in range(self.partitions):
            yield from (r for r in self.records if r.partition == p)


def coordinator(log: InMemoryRecordLog, retention_ms: int = 60_000) -> GroupCoordinator:
    ids = iter(range(1000))
    c = GroupCoordinator(log, GroupConfig(min_session_timeout_ms=10, initial_rebalance_delay_ms=0),
                         offsets_retention_ms=retention_ms, offsets_retention_check_interval_ms=1000,
                         member_id=lambda prefix: f"{prefix}-{next(ids)}")
    c.load(T0)
    return c


def join(group: str, member_id: str = "", instance: str | None = None) -> JoinRequest:
    return JoinRequest(group_id=group, member_id=member_id, group_instance_id=instance, client_id="cli",
                       client_host="/127.0.0.1", session_timeout_ms=10_000, rebalance_timeout_ms=20_000,
                       protocols=(("range", b"\x00\x00\x00\x00\x00\x01\x00\x01t"),))


async def stable_group(c: GroupCoordinator, group: str, n: int) -> list[str]:
    ids = []
    tasks = []
    for _ in range(n):
        first = await c.join_group(join(group), T0)
        assert first.error is ErrorCode.member_id_required
        ids.append(first.member_id)
        tasks.append(asyncio.create_task(c.join_group(join(group, first.member_id), T0)))
    await asyncio.sleep(0)
    await c.expire(T0)               # the initial delay (0 ms) is over
    results = await asyncio.wait_for(asyncio.gather(*tasks), 1)
    gen = results[0].generation_id
    leader = results[0].leader_id
    syncs = [asyncio.create_task(c.sync_group(SyncRequest(
        group_id=group, generation_id=gen, member_id=m,
        assignments={x: x.encode() for x in ids} if m == leader else {}), T0)) for m in ids]
    done = await asyncio.wait_for(asyncio.gather(*syncs), 1)
    assert [s.assignment for s in done] == [m.encode() for m in ids]
    return ids


async def test_replay_rebuilds_groups_and_offsets() -> None:
    log = InMemoryRecordLog()
    c = coordinator(log)
    ids = await stable_group(c, "g1", 2)
    g = c.groups["g1"]
    tp = TopicPartition("t", 0)
    codes = await c.commit_offsets("g1", ids[0], None, g.generation_id,
                                   {tp: OffsetCommitEntry(offset=42, leader_epoch=0, metadata="m")}, T0 + 5)
    assert codes == {tp: ErrorCode.none}
    await c.commit_offsets("simple", "", None, -1, {tp: OffsetCommitEntry(offset=7)}, T0 + 6)

    again = coordinator(log)
    r = again.groups["g1"]
    assert (r.state, r.generation_id, r.leader_id, r.protocol_name) == (GroupState.STABLE, g.generation_id,
                                                                          g.leader_id, "range")
    assert {m: x.assignment for m, x in r.members.items()} == {m: m.encode() for m in ids}
    assert again.offsets == c.offsets
    assert again.groups["simple"].state is GroupState.EMPTY
    fetched = again.fetch_offsets("g1", [tp, TopicPartition("t", 1)], require_stable=True)
    assert [(f.offset, f.metadata, f.leader_epoch) for f in fetched] == [(42, "m", 0), (-1, "", -1)]


async def test_failed_append_leaves_offsets_unchanged() -> None:
    log = InMemoryRecordLog()
    c = coordinator(log)
    log.fail = True
    # Kafka's group coordinator answers a storage failure with NOT_COORDINATOR (clients retry).
    result = await c.commit_offsets("g", "", None, -1, {TopicPartition("t", 0): OffsetCommitEntry(offset=1)}, T0)
    assert result == {TopicPartition("t", 0): ErrorCode.not_coordinator}
    assert c.offsets == {} and "g" not in c.groups


async def test_failed_sync_append_keeps_the_group_completing() -> None:
    log = InMemoryRecordLog()
    c = coordinator(log)
    first = await c.join_group(join("g"), T0)
    task = asyncio.create_task(c.join_group(join("g", first.member_id), T0))
    await asyncio.sleep(0)
    await c.expire(T0)
    joined = await asyncio.wait_for(task, 1)
    log.fail = True
    with pytest.raises(OSError):
        await c.sync_group(SyncRequest(group_id="g", generation_id=joined.generation_id,
                                       member_id=joined.member_id, assignments={joined.member_id: b"x"}), T0)
    assert c.groups["g"].state is GroupState.COMPLETING_REBALANCE


async def test_delete_group_tombstones_and_replays_away() -> None:
    log = InMemoryRecordLog()
    c = coordinator(log)
    await c.commit_offsets("g", "", None, -1, {TopicPartition("t", 0): OffsetCommitEntry(offset=1)}, T0)
    assert await c.delete_groups(["g", "nope", ""], T0) == {
        "g": ErrorCode.none, "nope": ErrorCode.group_id_not_found, "": ErrorCode.invalid_group_id}
    assert log.records[-1].value is None
    again = coordinator(log)
    assert again.groups == {} and again.offsets == {}


async def test_offsets_of_empty_groups_expire_and_the_group_goes() -> None:
    log = InMemoryRecordLog()
    c = coordinator(log, retention_ms=1000)
    await c.commit_offsets("g", "", None, -1, {TopicPartition("t", 0): OffsetCommitEntry(offset=1)}, T0)
    await c.expire(T0 + 999)
    assert "g" in c.offsets
    await c.expire(T0 + 1000)
    assert c.offsets == {} and "g" not in c.groups
    assert coordinator(log).offsets == {}


async def test_session_expiry_via_timer_rebalances_survivor() -> None:
    log = InMemoryRecordLog()
    c = coordinator(log)
    a, b = await stable_group(c, "g", 2)
    gen = c.groups["g"].generation_id
    deadline = c.next_deadline()
    assert deadline is not None and deadline <= T0 + 10_000
    assert c.heartbeat("g", a, None, gen, T0 + 9_000) is ErrorCode.none
    await c.expire(T0 + 10_000)                       # b never heartbeated
    assert set(c.groups["g"].members) == {a}
    assert c.groups["g"].state is GroupState.PREPARING_REBALANCE
    assert c.heartbeat("g", a, None, gen, T0 + 10_001) is ErrorCode.rebalance_in_progress
    rejoin = await asyncio.wait_for(c.join_group(join("g", a), T0 + 10_002), 1)
    assert rejoin.error is ErrorCode.none and rejoin.generation_id == gen + 1


async def test_pending_transactional_offsets_are_unstable_until_commit_marker() -> None:
    log = InMemoryRecordLog(partitions=1)
    tp = TopicPartition("t", 0)
    om = OffsetAndMetadata(offset=9, commit_timestamp_ms=T0)
    log.add(LogRecord(0, 0, offsets_log.offset_commit_key("g", tp), offsets_log.offset_commit_value(om),
                      producer_id=77, transactional=True))
    c = coordinator(log)
    assert c.fetch_offsets("g", [tp], require_stable=True)[0].error is ErrorCode.unstable_offset_commit
    assert c.fetch_offsets("g", [tp], require_stable=False)[0].offset == -1
    log.add(LogRecord(0, 1, b"\x00\x00\x00\x01", b"", producer_id=77, transactional=True, control_type=1))
    c = coordinator(log)
    fetched = c.fetch_offsets("g", [tp], require_stable=True)[0]
    assert (fetched.error, fetched.offset) == (ErrorCode.none, 9)


# ------------------------------------------------------------------------------ record schemas
def test_offset_commit_record_bytes_match_kafka_schema() -> None:
    key = offsets_log.offset_commit_key("grp", TopicPartition("topic", 3))
    assert key == struct.pack(">h", 1) + b"\x00\x03grp" + b"\x00\x05topic" + struct.pack(">i", 3)
    value = offsets_log.offset_commit_value(OffsetAndMetadata(offset=5, leader_epoch=2, metadata="md",
                                                              commit_timestamp_ms=123))
    # v4, the first flexible version: a compact string, then an empty tagged-field section.
    assert value == struct.pack(">hqi", 4, 5, 2) + b"\x03md" + struct.pack(">q", 123) + b"\x00"
    assert offsets_log.decode_offset_value(value) == OffsetAndMetadata(offset=5, leader_epoch=2, metadata="md",
                                                                        commit_timestamp_ms=123)
    assert offsets_log.decode_key(key) == offsets_log.OffsetKey("grp", TopicPartition("topic", 3))


# An OffsetCommitValue Apache Kafka 4.3.1 wrote on this machine (librdkafka's commit of offset 3,
# metadata "", for a topic that exists): the topic id is tagged field 0.
KAFKA_431_OFFSET_VALUE = bytes.fromhex("00040000000000000003ffffffff01000001a221bea354"
                                       "010010bb979db0dfc541bea9b31bfb788c5bc1")


def test_an_offset_commit_value_kafka_wrote_reads_and_writes_back_the_same() -> None:
    om = offsets_log.decode_offset_value(KAFKA_431_OFFSET_VALUE)
    assert (om.offset, om.leader_epoch, om.metadata, om.commit_timestamp_ms, om.expire_timestamp_ms) == \
        (3, -1, "", 0x01A221BEA354, None)
    assert om.topic_id == uuid.UUID("bb979db0-dfc5-41be-a9b3-1bfb788c5bc1")
    assert offsets_log.offset_commit_value(om) == KAFKA_431_OFFSET_VALUE


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_older_offset_commit_values_still_read(version: int) -> None:
    body = struct.pack(">q", 7) + (struct.pack(">i", 1) if version >= 3 else b"") + b"\x00\x01m" \
        + struct.pack(">q", 99) + (struct.pack(">q", 1000) if version == 1 else b"")
    om = offsets_log.decode_offset_value(struct.pack(">h", version) + body)
    assert (om.offset, om.metadata, om.commit_timestamp_ms, om.topic_id) == (7, "m", 99, None)
    assert om.expire_timestamp_ms == (1000 if version == 1 else None)


def test_group_metadata_round_trip() -> None:
    m = Member(member_id="m-1", group_instance_id="inst", client_id="c", client_host="/127.0.0.1",
               rebalance_timeout_ms=300, session_timeout_ms=100, protocols=(("range", b"sub"),), assignment=b"asg")
    g = Group(group_id="g", state=GroupState.STABLE, generation_id=4, protocol_type="consumer",
              protocol_name="range", leader_id="m-1", members={"m-1": m}, state_timestamp_ms=55)
    value = offsets_log.group_metadata_value(g)
    assert value[:2] == b"\x00\x03"
    back = offsets_log.decode_group_value("g", value, now_ms=1000)
    assert (back.state, back.generation_id, back.protocol_name, back.leader_id, back.state_timestamp_ms) == \
        (GroupState.STABLE, 4, "range", "m-1", 55)
    bm = back.members["m-1"]
    assert (bm.group_instance_id, bm.assignment, bm.metadata_for("range"), bm.heartbeat_deadline_ms) == \
        ("inst", b"asg", b"sub", 1100)
    assert offsets_log.decode_key(offsets_log.group_metadata_key("g")) == offsets_log.GroupKey("g")
    assert offsets_log.decode_key(b"\x00\x05anything") is None


@pytest.mark.parametrize(("text", "expected"), [
    ("", 0), ("hello", 99162322), ("polygenelubricants", -(2**31)), ("ü€", 252 * 31 + 0x20AC),
])
def test_java_string_hash(text: str, expected: int) -> None:
    assert offsets_log.java_string_hash(text) == expected


def test_partition_for_maps_min_int_to_zero() -> None:
    assert offsets_log.partition_for("polygenelubricants", 50) == 0
    assert offsets_log.partition_for("hello", 50) == 99162322 % 50
