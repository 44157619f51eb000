"""The `__consumer_offsets` records of consumer groups, in Kafka's schemas, so that a restart (and
`kafka-dump-log --offsets-decoder`) sees the group as it was.

Schemas: `group-coordinator/src/main/resources/common/message/ConsumerGroup*.json`. A key is an
int16 record type and the key struct (non-flexible: int16-length strings); a value is an int16
version (always 0) and the struct, flexible: compact strings and arrays (length + 1 as an unsigned
varint), a tagged-field section after every struct, tagged fields written only when they differ
from their default, as Kafka's generated code does. A null value is a tombstone.

  type  key                                   value (v0)
  3     ConsumerGroupMetadata(group)          Epoch int32; tag 0 MetadataHash int64
  4     ConsumerGroupPartitionMetadata(group) (before Kafka 4.1; only tombstones are written now)
  5     ConsumerGroupMemberMetadata(group, member)   InstanceId?, RackId?, ClientId, ClientHost,
                                              SubscribedTopicNames [string], SubscribedTopicRegex?,
                                              RebalanceTimeoutMs int32, ServerAssignor?;
                                              tag 0 ClassicMemberMetadata (mixed groups only)
  6     ConsumerGroupTargetAssignmentMetadata(group) AssignmentEpoch int32; tag 0 AssignmentTimestamp int64
  7     ConsumerGroupTargetAssignmentMember(group, member) TopicPartitions [{TopicId uuid, Partitions [int32]}]
  8     ConsumerGroupCurrentMemberAssignment(group, member) MemberEpoch int32, PreviousMemberEpoch int32,
                                              State int8, AssignedPartitions, PartitionsPendingRevocation:
                                              [{TopicId, Partitions [int32]; tag 0 AssignmentEpochs [int32]}]
  16    ConsumerGroupRegularExpression(group, regex) Topics [string], Version int64, Timestamp int64
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from minikafka.coordinator.consumer_group.state import (
    ClassicMemberMetadata,
    by_topic,
    ConsumerGroupMember,
    MemberState,
    TopicIdPartition,
)
from minikafka.protocol.binary import Reader
from minikafka.protocol.wire_write import (
    array_length,
    compact_int32s,
    coordinator_key,
    nullable_string,
    string,
    tagged_fields,
    uvarint,
)

GROUP_METADATA = 3
PARTITION_METADATA = 4
MEMBER_METADATA = 5
TARGET_ASSIGNMENT_METADATA = 6
TARGET_ASSIGNMENT_MEMBER = 7
CURRENT_MEMBER_ASSIGNMENT = 8
REGULAR_EXPRESSION = 16
RECORD_TYPES = frozenset({GROUP_METADATA, PARTITION_METADATA, MEMBER_METADATA, TARGET_ASSIGNMENT_METADATA,
                          TARGET_ASSIGNMENT_MEMBER, CURRENT_MEMBER_ASSIGNMENT, REGULAR_EXPRESSION})

Record = tuple[bytes, bytes | None]
_H, _I, _Q = struct.Struct(">h"), struct.Struct(">i"), struct.Struct(">q")
_NO_TAGS = b"\x00"
# A member of the consumer protocol has ClassicMemberMetadata explicitly null, which Kafka's
# generated code writes (one tag: tag 0, size 1, the null marker) rather than leaving out.
_CLASSIC_MEMBER_METADATA_NULL = b"\x01\x00\x01\x00"


class CorruptConsumerGroupRecord(Exception):
    """A consumer group record that does not parse under Kafka's schemas."""


# ---------------------------------------------------------------------------------------- writer

def _topic_partitions(parts: Iterable[TopicIdPartition], epochs: Mapping[TopicIdPartition, int] | None = None) -> bytes:
    grouped = by_topic(parts)
    out = bytearray(array_length(len(grouped), True))
    for tid, ps in grouped.items():
        out += tid.bytes + compact_int32s(ps)
        if epochs is None:
            out += _NO_TAGS
        else:
            out += tagged_fields([(0, compact_int32s(epochs.get((tid, p), 0) for p in ps))])
    return bytes(out)


def group_epoch(group_id: str, epoch: int, metadata_hash: int) -> Record:
    tags = [(0, _Q.pack(metadata_hash))] if metadata_hash else []
    return coordinator_key(GROUP_METADATA, group_id), _H.pack(0) + _I.pack(epoch) + tagged_fields(tags)


def group_epoch_tombstone(group_id: str) -> Record:
    return coordinator_key(GROUP_METADATA, group_id), None


def partition_metadata_tombstone(group_id: str) -> Record:
    return coordinator_key(PARTITION_METADATA, group_id), None


def member_metadata(group_id: str, m: ConsumerGroupMember) -> Record:
    value = (_H.pack(0) + nullable_string(m.instance_id, True) + nullable_string(m.rack_id, True)
             + string(m.client_id, True) + string(m.client_host, True)
             + array_length(len(m.subscribed_topic_names), True)
             + b"".join(string(t, True) for t in sorted(m.subscribed_topic_names))
             + nullable_string(m.subscribed_topic_regex, True) + _I.pack(m.rebalance_timeout_ms)
             + nullable_string(m.server_assignor, True) + _classic_member_metadata(m.classic))
    return coordinator_key(MEMBER_METADATA, group_id, m.member_id), value


def _classic_member_metadata(classic: ClassicMemberMetadata | None) -> bytes:
    """The tagged ClassicMemberMetadata (tag 0): a nullable struct, so a presence byte first."""
    if classic is None:
        return _CLASSIC_MEMBER_METADATA_NULL
    struct_bytes = (_I.pack(classic.session_timeout_ms) + array_length(len(classic.protocols), True)
                    + b"".join(string(name, True) + uvarint(len(meta) + 1) + meta + _NO_TAGS
                               for name, meta in classic.protocols) + _NO_TAGS)
    return tagged_fields([(0, b"\x01" + struct_bytes)])


def member_metadata_tombstone(group_id: str, member_id: str) -> Record:
    return coordinator_key(MEMBER_METADATA, group_id, member_id), None


def target_assignment_metadata(group_id: str, epoch: int, timestamp_ms: int) -> Record:
    tags = [(0, _Q.pack(timestamp_ms))] if timestamp_ms else []
    return coordinator_key(TARGET_ASSIGNMENT_METADATA, group_id), _H.pack(0) + _I.pack(epoch) + tagged_fields(tags)


def target_assignment_metadata_tombstone(group_id: str) -> Record:
    return coordinator_key(TARGET_ASSIGNMENT_METADATA, group_id), None


def target_assignment_member(group_id: str, member_id: str, parts: Iterable[TopicIdPartition]) -> Record:
    return coordinator_key(TARGET_ASSIGNMENT_MEMBER, group_id, member_id), _H.pack(0) + _topic_partitions(parts) + _NO_TAGS


def target_assignment_member_tombstone(group_id: str, member_id: str) -> Record:
    return coordinator_key(TARGET_ASSIGNMENT_MEMBER, group_id, member_id), None


def current_assignment(group_id: str, m: ConsumerGroupMember) -> Record:
    value = (_H.pack(0) + _I.pack(m.member_epoch) + _I.pack(m.previous_member_epoch) + bytes([m.state.value & 0xFF])
             + _topic_partitions(m.assigned, m.assignment_epochs)
             + _topic_partitions(m.pending_revocation, m.assignment_epochs) + _NO_TAGS)
    return coordinator_key(CURRENT_MEMBER_ASSIGNMENT, group_id, m.member_id), value


def current_assignment_tombstone(group_id: str, member_id: str) -> Record:
    return coordinator_key(CURRENT_MEMBER_ASSIGNMENT, group_id, member_id), None


def regular_expression(group_id: str, regex: str, topics: Iterable[str], version: int, timestamp_ms: int) -> Record:
    names = sorted(topics)
    value = (_H.pack(0) + array_length(len(names), True) + b"".join(string(t, True) for t in names)
             + _Q.pack(version) + _Q.pack(timestamp_ms) + _NO_TAGS)
    return coordinator_key(REGULAR_EXPRESSION, group_id, regex), value


def regular_expression_tombstone(group_id: str, regex: str) -> Record:
    return coordinator_key(REGULAR_EXPRESSION, group_id, regex), None


# ---------------------------------------------------------------------------------------- reader
def _reader(data: bytes) -> Reader:
    return Reader(data, CorruptConsumerGroupRecord)



def _read_topic_partitions(r: Reader) -> tuple[list[TopicIdPartition], dict[TopicIdPartition, int]]:
    """A [TopicPartitions] array, with the AssignmentEpochs tag where present."""
    parts: list[TopicIdPartition] = []
    epochs: dict[TopicIdPartition, int] = {}
    for _ in range(r.compact_len()):
        tid = uuid.UUID(bytes=r.take(16))
        ps = r.compact_int32s()
        tags = r.tags()
        parts.extend((tid, p) for p in ps)
        if 0 in tags:
            es = _reader(tags[0]).compact_int32s()
            epochs.update(((tid, p), e) for p, e in zip(ps, es, strict=False))
    return parts, epochs


@dataclass(frozen=True, slots=True)
class Key:
    record_type: int
    group_id: str
    member_id: str = ""   # or the regular expression for type 16


def decode_key(key: bytes) -> Key | None:
    """None for a record type that is not a consumer group's."""
    r = _reader(key)
    record_type = r.i16()
    if record_type not in RECORD_TYPES:
        return None
    group_id = r.string()
    if record_type in (MEMBER_METADATA, TARGET_ASSIGNMENT_MEMBER, CURRENT_MEMBER_ASSIGNMENT, REGULAR_EXPRESSION):
        return Key(record_type, group_id, r.string())
    return Key(record_type, group_id)


def _value(value: bytes) -> Reader:
    r = _reader(value)
    version = r.i16()
    if version != 0:
        raise CorruptConsumerGroupRecord(f"value version {version} is not known")
    return r


def decode_group_epoch(value: bytes) -> tuple[int, int]:
    """(epoch, metadata hash)."""
    r = _value(value)
    epoch = r.i32()
    tags = r.tags()
    return epoch, _Q.unpack(tags[0])[0] if 0 in tags else 0


def decode_member_metadata(member_id: str, value: bytes) -> ConsumerGroupMember:
    r = _value(value)
    instance_id = r.compact_nstring()
    rack_id = r.compact_nstring()
    client_id = r.compact_string()
    client_host = r.compact_string()
    topics = tuple(r.compact_string() for _ in range(r.compact_len()))
    regex = r.compact_nstring()
    rebalance_timeout = r.i32()
    assignor = r.compact_nstring()
    tags = r.tags()
    classic = None
    if tags.get(0, b"\x00")[:1] == b"\x01":
        c = _reader(tags[0][1:])
        session = c.i32()
        protocols = []
        for _ in range(c.compact_len()):
            name = c.compact_string()
            meta = c.take(c.compact_len())
            c.tags()
            protocols.append((name, meta))
        classic = ClassicMemberMetadata(session, tuple(protocols))
    return ConsumerGroupMember(member_id=member_id, instance_id=instance_id, rack_id=rack_id, client_id=client_id,
                               client_host=client_host, subscribed_topic_names=topics, subscribed_topic_regex=regex,
                               rebalance_timeout_ms=rebalance_timeout, server_assignor=assignor, classic=classic)


def decode_target_assignment_metadata(value: bytes) -> tuple[int, int]:
    """(assignment epoch, assignment timestamp)."""
    r = _value(value)
    epoch = r.i32()
    tags = r.tags()
    return epoch, _Q.unpack(tags[0])[0] if 0 in tags else 0


def decode_target_assignment_member(value: bytes) -> frozenset[TopicIdPartition]:
    parts, _ = _read_topic_partitions(_value(value))
    return frozenset(parts)


@dataclass(frozen=True, slots=True)
class CurrentAssignment:
    member_epoch: int
    previous_member_epoch: int
    state: MemberState
    assigned: frozenset[TopicIdPartition]
    pending_revocation: frozenset[TopicIdPartition]
    assignment_epochs: Mapping[TopicIdPartition, int]


def decode_current_assignment(value: bytes) -> CurrentAssignment:
    r = _value(value)
    epoch = r.i32()
    previous = r.i32()
    raw_state = r.i8() & 0xFF
    assigned, e1 = _read_topic_partitions(r)
    pending, e2 = _read_topic_partitions(r)
    r.tags()
    try:
        state = MemberState(raw_state)
    except ValueError:
        state = MemberState.UNKNOWN
    return CurrentAssignment(epoch, previous, state, frozenset(assigned), frozenset(pending), {**e1, **e2})


def decode_regular_expression(value: bytes) -> tuple[frozenset[str], int, int]:
    """(topics, version, timestamp)."""
    r = _value(value)
    topics = frozenset(r.compact_string() for _ in range(r.compact_len()))
    return topics, r.i64(), r.i64()
