"""`__consumer_offsets` records in Kafka's own schemas, so Kafka's tools read minikafka's files
(`kafka-dump-log --offsets-decoder`).

Schemas: `group-coordinator/src/main/resources/common/message/` (OffsetCommitKey, OffsetCommitValue,
GroupMetadataKey, GroupMetadataValue); see shared/reference/protocol.md section 9. Every key and
value starts with an int16 version; the key version selects the record type; a null value is a
tombstone. Kafka 4.3.1 writes OffsetCommitKey v1 + OffsetCommitValue v4 (its first flexible
version: a compact metadata string and the topic id as tagged field 0, written when the topic
exists) and GroupMetadataKey v2 + GroupMetadataValue v3, and so does minikafka. Decoding accepts
the older value versions (0-3) too.

The partition of a group is `abs(javaStringHashCode(group_id)) % partitions`
(`GroupMetadataManager.partitionFor`, Kafka's `Utils.abs` maps Integer.MIN_VALUE to 0).
"""

from __future__ import annotations

import struct
import uuid
from dataclasses import dataclass

from minikafka.coordinator.group.state import Group, GroupState, Member, OffsetAndMetadata
from minikafka.protocol.binary import Reader
from minikafka.protocol.wire_write import string, tagged_fields
from minikafka.protocol.types import TopicPartition

OFFSET_COMMIT_KEY_VERSION = 1
OFFSET_COMMIT_VALUE_VERSION = 4  # flexible: a compact metadata string and a tagged TopicId (Kafka 4.x)
GROUP_METADATA_KEY_VERSION = 2
GROUP_METADATA_VALUE_VERSION = 3

_H = struct.Struct(">h")
_I = struct.Struct(">i")
_Q = struct.Struct(">q")


TOPIC = "__consumer_offsets"


class CorruptOffsetsRecord(Exception):
    """A `__consumer_offsets` record that does not parse under Kafka's schemas."""


def java_string_hash(s: str) -> int:
    """Java's String.hashCode over UTF-16 code units, as a signed 32-bit int."""
    data = s.encode("utf-16-be")
    h = 0
    for (unit,) in struct.iter_unpack(">H", data):
        h = (31 * h + unit) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def partition_for(group_id: str, partitions: int) -> int:
    h = java_string_hash(group_id)
    return (0 if h == -(1 << 31) else abs(h)) % partitions


# ---------------------------------------------------------------------------------------- writer
def _str(s: str) -> bytes:
    b = s.encode()
    return _H.pack(len(b)) + b


def _nstr(s: str | None) -> bytes:
    return _H.pack(-1) if s is None else _str(s)


def _bytes(b: bytes) -> bytes:
    return _I.pack(len(b)) + b


def offset_commit_key(group_id: str, tp: TopicPartition) -> bytes:
    return _H.pack(OFFSET_COMMIT_KEY_VERSION) + _str(group_id) + _str(tp.topic) + _I.pack(tp.partition)


def offset_commit_value(om: OffsetAndMetadata) -> bytes:
    if om.expire_timestamp_ms is not None:
        # v1 is the only version with an expire timestamp (MetadataVersion.offsetCommitValueVersion).
        return (_H.pack(1) + _Q.pack(om.offset) + _str(om.metadata) + _Q.pack(om.commit_timestamp_ms)
                + _Q.pack(om.expire_timestamp_ms))
    # Tag 0 is the TopicId, written only when known (its default is the zero uuid).
    tags = [] if om.topic_id is None else [(0, om.topic_id.bytes)]
    return (_H.pack(OFFSET_COMMIT_VALUE_VERSION) + _Q.pack(om.offset) + _I.pack(om.leader_epoch)
            + string(om.metadata, True) + _Q.pack(om.commit_timestamp_ms) + tagged_fields(tags))


def group_metadata_key(group_id: str) -> bytes:
    return _H.pack(GROUP_METADATA_KEY_VERSION) + _str(group_id)


def group_metadata_value(group: Group) -> bytes:
    out = bytearray(_H.pack(GROUP_METADATA_VALUE_VERSION))
    out += _str(group.protocol_type or "")
    out += _I.pack(group.generation_id)
    out += _nstr(group.protocol_name)
    out += _nstr(group.leader_id)
    out += _Q.pack(group.state_timestamp_ms)
    out += _I.pack(len(group.members))
    for m in group.members.values():
        out += _str(m.member_id) + _nstr(m.group_instance_id) + _str(m.client_id) + _str(m.client_host)
        out += _I.pack(m.rebalance_timeout_ms) + _I.pack(m.session_timeout_ms)
        out += _bytes(m.metadata_for(group.protocol_name)) + _bytes(m.assignment)
    return bytes(out)


# ---------------------------------------------------------------------------------------- reader
def _reader(data: bytes) -> Reader:
    return Reader(data, CorruptOffsetsRecord)


@dataclass(frozen=True, slots=True)
class OffsetKey:
    group_id: str
    tp: TopicPartition


@dataclass(frozen=True, slots=True)
class GroupKey:
    group_id: str


def decode_key(key: bytes) -> OffsetKey | GroupKey | None:
    """None for record types a classic coordinator ignores (KIP-848 and share-group records).
    Raises CorruptOffsetsRecord."""
    r = _reader(key)
    version = r.i16()
    if version in (0, 1):
        group = r.string()
        topic = r.string()
        return OffsetKey(group, TopicPartition(topic, r.i32()))
    if version == 2:
        return GroupKey(r.string())
    return None


def decode_offset_value(value: bytes) -> OffsetAndMetadata:
    r = _reader(value)
    version = r.i16()
    if version > 4:
        raise CorruptOffsetsRecord(f"OffsetCommitValue v{version} is not supported")
    offset = r.i64()
    leader_epoch = r.i32() if version >= 3 else -1
    metadata = r.compact_string() if version >= 4 else r.string()
    commit_ts = r.i64()
    expire_ts = r.i64() if version == 1 else None
    topic_id = None
    if version >= 4:
        raw = r.tags().get(0)
        if raw is not None:
            if len(raw) != 16:
                raise CorruptOffsetsRecord(f"OffsetCommitValue's TopicId has {len(raw)} bytes, not 16")
            topic_id = uuid.UUID(bytes=raw) if any(raw) else None
    return OffsetAndMetadata(offset=offset, leader_epoch=leader_epoch, metadata=metadata,
                             commit_timestamp_ms=commit_ts,
                             expire_timestamp_ms=expire_ts if expire_ts is not None and expire_ts >= 0 else None,
                             topic_id=topic_id)


def decode_group_value(group_id: str, value: bytes, *, now_ms: int) -> Group:
    """The group as loaded: Stable with its members (their sessions restart now), or Empty."""
    r = _reader(value)
    version = r.i16()
    if version > 3:
        raise CorruptOffsetsRecord(f"GroupMetadataValue v{version} (flexible) is not supported")
    protocol_type = r.string()
    generation = r.i32()
    protocol = r.nstring()
    leader = r.nstring()
    state_ts = r.i64() if version >= 2 else -1
    members: dict[str, Member] = {}
    for _ in range(r.i32()):
        member_id = r.string()
        instance_id = r.nstring() if version >= 3 else None
        client_id = r.string()
        client_host = r.string()
        rebalance_timeout = r.i32() if version >= 1 else 0
        session_timeout = r.i32()
        subscription = r.nbytes() or b""
        assignment = r.nbytes() or b""
        if version == 0:
            rebalance_timeout = session_timeout
        members[member_id] = Member(
            member_id=member_id, group_instance_id=instance_id, client_id=client_id, client_host=client_host,
            rebalance_timeout_ms=rebalance_timeout, session_timeout_ms=session_timeout,
            protocol_type=protocol_type, protocols=((protocol or "", subscription),), assignment=assignment,
            heartbeat_deadline_ms=now_ms + session_timeout)
    return Group(group_id=group_id, state=GroupState.STABLE if members else GroupState.EMPTY,
                 generation_id=generation, protocol_type=protocol_type or None, protocol_name=protocol,
                 leader_id=leader if members else None, members=members, state_timestamp_ms=state_ts)
