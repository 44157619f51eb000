"""The `__consumer_offsets` records of share groups, in Kafka's schemas, byte for byte as Apache
Kafka 4.3.1 writes them (checked against its log on this machine: tests/unit/coordinator/
test_share_group_records.py). Pure.

Keys as the consumer groups' (an int16 record type, then int16-length strings); values v0,
flexible (compact strings and arrays, a tagged-field section after every struct):

  type  key                                          value (v0)
  10    ShareGroupMemberMetadata(group, member)      RackId?, ClientId, ClientHost, SubscribedTopicNames [string]
  11    ShareGroupMetadata(group)                    Epoch int32, MetadataHash int64
  12    ShareGroupTargetAssignmentMetadata(group)    AssignmentEpoch int32; tag 0 AssignmentTimestamp int64
  13    ShareGroupTargetAssignmentMember(group, member)  TopicPartitions [{TopicId uuid, Partitions [int32]}]
  14    ShareGroupCurrentMemberAssignment(group, member) MemberEpoch int32, PreviousMemberEpoch int32,
                                                     State int8, AssignedPartitions [{TopicId, Partitions}]
  15    ShareGroupStatePartitionMetadata(group)      InitializingTopics, InitializedTopics:
                                                     [{TopicId, TopicName, Partitions [int32]}]; DeletingTopics

What Kafka writes, in order, when a member joins a group of one new topic: 10, 11 (epoch 2), 13 and
12 and 14 with an empty assignment, 15 with the topic initializing (its share-partition state is
being written to `__share_group_state`), 15 with it initialized, 11 (epoch 3), then 13, 12, 14 with
the partitions; when it leaves: tombstones of 14, 13, 10 and 11 with the next epoch and hash 0.
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from minikafka.protocol.binary import Reader
from minikafka.protocol.wire_write import (
    array_length,
    compact_int32s,
    coordinator_key,
    nullable_string,
    string,
    tagged_fields,
)

MEMBER_METADATA = 10
GROUP_METADATA = 11
TARGET_ASSIGNMENT_METADATA = 12
TARGET_ASSIGNMENT_MEMBER = 13
CURRENT_MEMBER_ASSIGNMENT = 14
STATE_PARTITION_METADATA = 15

Record = tuple[bytes, bytes | None]
TopicPartitions = Mapping[uuid.UUID, Sequence[int]]
_H, _I, _Q, _B = struct.Struct(">h"), struct.Struct(">i"), struct.Struct(">q"), struct.Struct(">b")
_NO_TAGS = b"\x00"
_V0 = _H.pack(0)


class CorruptShareGroupRecord(ValueError):
    """A share group record that does not parse under Kafka's schemas."""


@dataclass(frozen=True, slots=True)
class ShareTopic:
    """A topic of ShareGroupStatePartitionMetadata: id, name, partitions."""

    topic_id: uuid.UUID
    name: str
    partitions: tuple[int, ...]


# ---------------------------------------------------------------------------------------- writer
def _topic_partitions(parts: TopicPartitions) -> bytes:
    out = bytearray(array_length(len(parts), True))
    for topic_id in parts:  # in the order given: Kafka keeps its map's order
        out += topic_id.bytes + compact_int32s(parts[topic_id]) + _NO_TAGS
    return bytes(out)


def _share_topics(topics: Sequence[ShareTopic]) -> bytes:
    return array_length(len(topics), True) + b"".join(
        t.topic_id.bytes + string(t.name, True) + compact_int32s(t.partitions) + _NO_TAGS for t in topics)


def member_metadata(group_id: str, member_id: str, *, rack_id: str | None, client_id: str, client_host: str,
                    subscribed_topic_names: Iterable[str]) -> Record:
    topics = list(subscribed_topic_names)
    value = (_V0 + nullable_string(rack_id, True) + string(client_id, True) + string(client_host, True)
             + array_length(len(topics), True) + b"".join(string(t, True) for t in topics) + _NO_TAGS)
    return coordinator_key(MEMBER_METADATA, group_id, member_id), value


def group_metadata(group_id: str, epoch: int, metadata_hash: int) -> Record:
    return coordinator_key(GROUP_METADATA, group_id), _V0 + _I.pack(epoch) + _Q.pack(metadata_hash) + _NO_TAGS


def target_assignment_metadata(group_id: str, epoch: int, timestamp_ms: int) -> Record:
    tags = [(0, _Q.pack(timestamp_ms))] if timestamp_ms else []
    return coordinator_key(TARGET_ASSIGNMENT_METADATA, group_id), _V0 + _I.pack(epoch) + tagged_fields(tags)


def target_assignment_member(group_id: str, member_id: str, parts: TopicPartitions) -> Record:
    return coordinator_key(TARGET_ASSIGNMENT_MEMBER, group_id, member_id), _V0 + _topic_partitions(parts) + _NO_TAGS


def current_member_assignment(group_id: str, member_id: str, *, member_epoch: int, previous_member_epoch: int,
                              state: int, assigned: TopicPartitions) -> Record:
    value = (_V0 + _I.pack(member_epoch) + _I.pack(previous_member_epoch) + _B.pack(state)
             + _topic_partitions(assigned) + _NO_TAGS)
    return coordinator_key(CURRENT_MEMBER_ASSIGNMENT, group_id, member_id), value


def state_partition_metadata(group_id: str, *, initializing: Sequence[ShareTopic] = (),
                             initialized: Sequence[ShareTopic] = (), deleting: Sequence[ShareTopic] = ()) -> Record:
    value = _V0 + _share_topics(initializing) + _share_topics(initialized) + _share_topics(deleting) + _NO_TAGS
    return coordinator_key(STATE_PARTITION_METADATA, group_id), value


def tombstone(record_type: int, group_id: str, member_id: str | None = None) -> Record:
    fields = (group_id,) if member_id is None else (group_id, member_id)
    return coordinator_key(record_type, *fields), None


# ---------------------------------------------------------------------------------------- reader
@dataclass(frozen=True, slots=True)
class MemberMetadata:
    rack_id: str | None
    client_id: str
    client_host: str
    subscribed_topic_names: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class GroupMetadata:
    epoch: int
    metadata_hash: int


@dataclass(frozen=True, slots=True)
class TargetAssignmentMetadata:
    assignment_epoch: int
    assignment_timestamp_ms: int


@dataclass(frozen=True, slots=True)
class CurrentMemberAssignment:
    member_epoch: int
    previous_member_epoch: int
    state: int
    assigned: dict[uuid.UUID, tuple[int, ...]]


@dataclass(frozen=True, slots=True)
class StatePartitionMetadata:
    initializing: tuple[ShareTopic, ...]
    initialized: tuple[ShareTopic, ...]
    deleting: tuple[ShareTopic, ...]


_MEMBER_KEYED = (MEMBER_METADATA, TARGET_ASSIGNMENT_MEMBER, CURRENT_MEMBER_ASSIGNMENT)
RECORD_TYPES = frozenset(range(MEMBER_METADATA, STATE_PARTITION_METADATA + 1))


def is_share_record_type(record_type: int) -> bool:
    return record_type in RECORD_TYPES


def decode_key(key: bytes) -> tuple[int, str, str | None]:
    """(record type, group id, member id or None) of a share group record's key."""
    r = Reader(key, CorruptShareGroupRecord)
    record_type = r.i16()
    if record_type not in RECORD_TYPES:
        raise CorruptShareGroupRecord(f"record type {record_type} is not a share group's")
    try:
        group_id = r.string()
        member_id = r.string() if record_type in _MEMBER_KEYED else None
    except UnicodeDecodeError:
        raise CorruptShareGroupRecord("a string is not UTF-8") from None
    return record_type, group_id, member_id


def _reader(value: bytes) -> Reader:
    r = Reader(value, CorruptShareGroupRecord)
    version = r.i16()
    if version != 0:
        raise CorruptShareGroupRecord(f"share group record value v{version} is not supported")
    return r


def _read_topic_partitions(r: Reader) -> dict[uuid.UUID, tuple[int, ...]]:
    out = {}
    for _ in range(r.compact_len()):
        topic_id = uuid.UUID(bytes=r.take(16))
        out[topic_id] = tuple(r.compact_int32s())
        r.tags()
    return out


def _read_share_topics(r: Reader) -> tuple[ShareTopic, ...]:
    out = []
    for _ in range(r.compact_len()):
        topic_id = uuid.UUID(bytes=r.take(16))
        name = r.compact_string()
        out.append(ShareTopic(topic_id, name, tuple(r.compact_int32s())))
        r.tags()
    return tuple(out)


def decode_value(record_type: int, value: bytes) -> object:
    """The value of a share group record (types 10-15) as a plain value; raises
    CorruptShareGroupRecord for bytes that do not parse (a bad UTF-8 string included)."""
    try:
        return _decode(record_type, value)
    except UnicodeDecodeError:
        raise CorruptShareGroupRecord("a string is not UTF-8") from None


def _decode(record_type: int, value: bytes) -> object:
    r = _reader(value)
    if record_type == MEMBER_METADATA:
        rack = r.compact_nstring()
        client_id, client_host = r.compact_string(), r.compact_string()
        topics = tuple(r.compact_string() for _ in range(r.compact_len()))
        r.tags()
        return MemberMetadata(rack, client_id, client_host, topics)
    if record_type == GROUP_METADATA:
        epoch, metadata_hash = r.i32(), r.i64()
        r.tags()
        return GroupMetadata(epoch, metadata_hash)
    if record_type == TARGET_ASSIGNMENT_METADATA:
        epoch = r.i32()
        raw = r.tags().get(0)
        return TargetAssignmentMetadata(epoch, 0 if raw is None else int(_Q.unpack(raw)[0]))
    if record_type == TARGET_ASSIGNMENT_MEMBER:
        parts = _read_topic_partitions(r)
        r.tags()
        return parts
    if record_type == CURRENT_MEMBER_ASSIGNMENT:
        epoch, previous, state = r.i32(), r.i32(), r.i8()
        assigned = _read_topic_partitions(r)
        r.tags()
        return CurrentMemberAssignment(epoch, previous, state, assigned)
    if record_type == STATE_PARTITION_METADATA:
        initializing, initialized, deleting = _read_share_topics(r), _read_share_topics(r), _read_share_topics(r)
        r.tags()
        return StatePartitionMetadata(initializing, initialized, deleting)
    raise CorruptShareGroupRecord(f"record type {record_type} is not a share group's")
