"""`__share_group_state` records in Kafka's own schemas (the share coordinator's log, KIP-932), so
Kafka's tools read minikafka's files (`kafka-dump-log --share-group-state-decoder`) and a data dir
moves between the two. Pure.

Layouts, as Apache Kafka 4.3.1 writes them (checked byte for byte against its log on this machine,
tests/unit/coordinator/test_share_state_log.py):
- key: int16 record type (0 ShareSnapshot, 1 ShareUpdate) | GroupId int16-length string |
  TopicId uuid | Partition int32 (not flexible);
- ShareSnapshotValue v0 (flexible): SnapshotEpoch int32 | StateEpoch int32 | LeaderEpoch int32 |
  StartOffset int64 | CreateTimestamp int64 | WriteTimestamp int64 | StateBatches compact array |
  tagged fields (tag 0: DeliveryCompleteCount int32, written when not -1);
- ShareUpdateValue v0 (flexible): SnapshotEpoch int32 | LeaderEpoch int32 | StartOffset int64 |
  StateBatches | tagged fields (tag 0: DeliveryCompleteCount);
- a state batch: FirstOffset int64 | LastOffset int64 | DeliveryState int8 (0 available,
  2 acknowledged, 4 archived; never 1, an acquisition is not persisted) | DeliveryCount int16 |
  its own (empty) tagged fields.
Kafka writes a snapshot when a share-partition's state is first initialized (StartOffset -1 until
the first fetch sets it) and after every `share.coordinator.snapshot.update.records.per.snapshot`
(500) updates; in between, an update carries only the batches that changed.
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Sequence
from dataclasses import dataclass

from minikafka.coordinator.share_group.share_partition import RecordState, StateBatch
from minikafka.protocol.binary import Reader
from minikafka.protocol.wire_write import array_length, coordinator_key, tagged_fields

TOPIC = "__share_group_state"
SNAPSHOT, UPDATE = 0, 1  # the key's record type
VALUE_VERSION = 0
NO_DELIVERY_COMPLETE_COUNT = -1

_H, _I, _Q = struct.Struct(">h"), struct.Struct(">i"), struct.Struct(">q")
_BATCH = struct.Struct(">qqbh")


class CorruptShareStateRecord(ValueError):
    """A `__share_group_state` record that cannot be read."""


@dataclass(frozen=True, slots=True)
class ShareStateKey:
    record_type: int
    group_id: str
    topic_id: uuid.UUID
    partition: int


@dataclass(frozen=True, slots=True)
class ShareSnapshot:
    snapshot_epoch: int
    state_epoch: int
    leader_epoch: int
    start_offset: int
    create_timestamp_ms: int
    write_timestamp_ms: int
    state_batches: tuple[StateBatch, ...] = ()
    delivery_complete_count: int = NO_DELIVERY_COMPLETE_COUNT


@dataclass(frozen=True, slots=True)
class ShareUpdate:
    snapshot_epoch: int
    leader_epoch: int
    start_offset: int
    state_batches: tuple[StateBatch, ...] = ()
    delivery_complete_count: int = NO_DELIVERY_COMPLETE_COUNT


def encode_key(record_type: int, group_id: str, topic_id: uuid.UUID, partition: int) -> bytes:
    return coordinator_key(record_type, group_id) + topic_id.bytes + _I.pack(partition)


def _batches(batches: Sequence[StateBatch]) -> bytes:
    return array_length(len(batches), True) + b"".join(
        _BATCH.pack(b.first_offset, b.last_offset, int(b.delivery_state), b.delivery_count) + tagged_fields([])
        for b in batches)


def _tags(delivery_complete_count: int) -> bytes:
    """Tag 0, DeliveryCompleteCount, written only when it is not its default (-1)."""
    return tagged_fields([] if delivery_complete_count == NO_DELIVERY_COMPLETE_COUNT
                         else [(0, _I.pack(delivery_complete_count))])


def encode_snapshot(v: ShareSnapshot) -> bytes:
    return (_H.pack(VALUE_VERSION) + _I.pack(v.snapshot_epoch) + _I.pack(v.state_epoch) + _I.pack(v.leader_epoch)
            + _Q.pack(v.start_offset) + _Q.pack(v.create_timestamp_ms) + _Q.pack(v.write_timestamp_ms)
            + _batches(v.state_batches) + _tags(v.delivery_complete_count))


def encode_update(v: ShareUpdate) -> bytes:
    return (_H.pack(VALUE_VERSION) + _I.pack(v.snapshot_epoch) + _I.pack(v.leader_epoch) + _Q.pack(v.start_offset)
            + _batches(v.state_batches) + _tags(v.delivery_complete_count))


def decode_key(data: bytes) -> ShareStateKey:
    r = Reader(data, CorruptShareStateRecord)
    record_type = r.i16()
    if record_type not in (SNAPSHOT, UPDATE):
        raise CorruptShareStateRecord(f"unknown __share_group_state record type {record_type}")
    try:
        group_id = r.string()
    except UnicodeDecodeError:
        raise CorruptShareStateRecord("the group id is not UTF-8") from None
    topic_id = uuid.UUID(bytes=r.take(16))
    return ShareStateKey(record_type, group_id, topic_id, r.i32())


def _read_batches(r: Reader) -> tuple[StateBatch, ...]:
    out = []
    for _ in range(r.compact_len()):
        first, last, state, count = r.i64(), r.i64(), r.i8(), r.i16()
        r.tags()
        try:
            delivery_state = RecordState(state)
        except ValueError:
            raise CorruptShareStateRecord(f"unknown delivery state {state}") from None
        if first > last:
            raise CorruptShareStateRecord(f"state batch {first}-{last} ends before it starts")
        out.append(StateBatch(first, last, delivery_state, count))
    return tuple(out)


def _delivery_complete_count(r: Reader) -> int:
    raw = r.tags().get(0)
    if raw is None:
        return NO_DELIVERY_COMPLETE_COUNT
    if len(raw) != 4:
        raise CorruptShareStateRecord(f"DeliveryCompleteCount has {len(raw)} bytes, not 4")
    return int(_I.unpack(raw)[0])


def decode_value(record_type: int, data: bytes) -> ShareSnapshot | ShareUpdate:
    r = Reader(data, CorruptShareStateRecord)
    version = r.i16()
    if version != VALUE_VERSION:
        raise CorruptShareStateRecord(f"share state value v{version} is not supported")
    if record_type == SNAPSHOT:
        snapshot_epoch, state_epoch, leader_epoch = r.i32(), r.i32(), r.i32()
        start, created, written = r.i64(), r.i64(), r.i64()
        batches = _read_batches(r)
        return ShareSnapshot(snapshot_epoch, state_epoch, leader_epoch, start, created, written, batches,
                             _delivery_complete_count(r))
    snapshot_epoch, leader_epoch, start = r.i32(), r.i32(), r.i64()
    batches = _read_batches(r)
    return ShareUpdate(snapshot_epoch, leader_epoch, start, batches, _delivery_complete_count(r))
