"""The `__consumer_offsets` records of streams groups (KIP-1071), in Kafka's schemas, so that a restart
(and `kafka-dump-log --offsets-decoder`) sees the group as it was.

Schemas: `group-coordinator/src/main/resources/common/message/StreamsGroup*.json`. Same framing as
the consumer group records (../consumer_group/records.py): a key is an int16 record type and the
non-flexible key struct; a value is an int16 version (always 0) and a flexible struct (compact
strings and arrays, a tagged-field section after every struct). A null value is a tombstone.

  type  key                                   value (v0)
  17    StreamsGroupMetadata(group)           Epoch int32, MetadataHash int64;
                                              tag 0 ValidatedTopologyEpoch int32 (default -1),
                                              tag 1 LastAssignmentConfigs [{Key, Value}]? (see below)
  19    StreamsGroupMemberMetadata(group, member)   InstanceId?, RackId?, ClientId, ClientHost,
                                              RebalanceTimeoutMs int32, TopologyEpoch int32,
                                              ProcessId, UserEndpoint {Host, Port uint16}?,
                                              ClientTags [{Key, Value}] (sorted by key)
  20    StreamsGroupTargetAssignmentMetadata(group) AssignmentEpoch int32;
                                              tag 0 AssignmentTimestamp int64 (default 0)
  21    StreamsGroupTargetAssignmentMember(group, member)  ActiveTasks, StandbyTasks, WarmupTasks:
                                              [{SubtopologyId, Partitions [int32]}]
  22    StreamsGroupCurrentMemberAssignment(group, member)  MemberEpoch int32, PreviousMemberEpoch
                                              int32, State int8, ActiveTasks, StandbyTasks,
                                              WarmupTasks, ActiveTasksPendingRevocation,
                                              StandbyTasksPendingRevocation,
                                              WarmupTasksPendingRevocation:
                                              [{SubtopologyId, Partitions [int32];
                                                tag 0 AssignmentEpochs [int32]}]
  23    StreamsGroupTopology(group)           Epoch int32, Subtopologies [{SubtopologyId,
                                              SourceTopics [string], SourceTopicRegex [string],
                                              StateChangelogTopics [TopicInfo],
                                              RepartitionSinkTopics [string],
                                              RepartitionSourceTopics [TopicInfo],
                                              CopartitionGroups [{SourceTopics [int16],
                                                SourceTopicRegex [int16],
                                                RepartitionSourceTopics [int16]}]}]
                                              TopicInfo = {Name, Partitions int32,
                                                ReplicationFactor int16, TopicConfigs [{key, value}]}

Details that decide the bytes, as Kafka 4.3.1 writes them:

- Task lists (types 21, 22) go by subtopology id in string order, partitions ascending.
- AssignmentEpochs (type 22) is set on every active entry (assigned and pending revocation), one
  epoch per partition, and never on standby or warm-up entries. Its schema default is null, but
  Kafka's generator treats a JSON-null default of an array as the empty array: an empty or absent
  list is left out, and only an explicit null would be written (as tag 0, size 1, 0x00).
- LastAssignmentConfigs (type 17) likewise: an empty tuple is left out (and reads back as ()),
  None is written as an explicit null (tag 1, size 1, 0x00; reads back as None). Kafka's
  coordinator always passes its current configs (a sorted map, today just
  `num.standby.replicas`), so callers should pass the configs; they are written sorted by key.
- UserEndpoint (type 19) is a nullable struct in the body: a presence byte (-1 null, 1 present).
- Client tags (type 19) are written sorted by key; the topology (type 23) keeps the order the
  member declared it in (subtopologies, topics, configs, copartition groups: nothing is sorted).
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from minikafka.coordinator.streams_group.state import (
    by_subtopology,
    CopartitionGroup,
    MemberState,
    StreamsGroupMember,
    Subtopology,
    TaskId,
    TasksTuple,
    TopicInfo,
    Topology,
)
from minikafka.protocol.binary import Reader
from minikafka.protocol.wire_write import (
    array_length,
    compact_int32s,
    coordinator_key,
    nullable_string,
    string,
    tagged_fields,
)

GROUP_METADATA = 17
MEMBER_METADATA = 19
TARGET_ASSIGNMENT_METADATA = 20
TARGET_ASSIGNMENT_MEMBER = 21
CURRENT_MEMBER_ASSIGNMENT = 22
TOPOLOGY = 23
RECORD_TYPES = frozenset({GROUP_METADATA, MEMBER_METADATA, TARGET_ASSIGNMENT_METADATA,
                          TARGET_ASSIGNMENT_MEMBER, CURRENT_MEMBER_ASSIGNMENT, TOPOLOGY})
# The record types whose key carries a member id after the group id.
_MEMBER_KEYED = frozenset({MEMBER_METADATA, TARGET_ASSIGNMENT_MEMBER, CURRENT_MEMBER_ASSIGNMENT})

Record = tuple[bytes, bytes | None]
_H, _I, _Q = struct.Struct(">h"), struct.Struct(">i"), struct.Struct(">q")
_PORT = struct.Struct(">H")
_VERSION_0 = _H.pack(0)
_NO_TAGS = b"\x00"
_NULL = b"\x00"          # a null compact array
_ABSENT, _PRESENT = b"\xff", b"\x01"   # a nullable struct's presence byte


class CorruptStreamsGroupRecord(Exception):
    """A streams group record that does not parse under Kafka's schemas."""


def is_streams_record_type(record_type: int) -> bool:
    return record_type in RECORD_TYPES


# ---------------------------------------------------------------------------------------- writer
def _strings(values: Iterable[str]) -> bytes:
    vs = list(values)
    return array_length(len(vs), True) + b"".join(string(v, True) for v in vs)



def _int16s(values: Iterable[int]) -> bytes:
    vs = list(values)
    return array_length(len(vs), True) + struct.pack(f">{len(vs)}h", *vs)


def _key_values(pairs: Iterable[tuple[str, str]]) -> bytes:
    """[{Key, Value}] (LastAssignmentConfig, KeyValue, TopicConfig: the same shape)."""
    ps = list(pairs)
    return array_length(len(ps), True) + b"".join(string(k, True) + string(v, True) + _NO_TAGS for k, v in ps)


def _task_ids(tasks: Iterable[TaskId], epochs: Mapping[TaskId, int] | None = None, default_epoch: int = 0) -> bytes:
    """[TaskIds]: by subtopology id, partitions ascending; with AssignmentEpochs when `epochs` is given
    (a task missing from it gets `default_epoch`)."""
    grouped = by_subtopology(tasks)
    out = bytearray(array_length(len(grouped), True))
    for sub, ps in grouped.items():
        out += string(sub, True) + compact_int32s(ps)
        if epochs is None:
            out += _NO_TAGS
        else:
            out += tagged_fields([(0, compact_int32s(epochs.get((sub, p), default_epoch) for p in ps))])
    return bytes(out)


def group_metadata(group_id: str, epoch: int, metadata_hash: int, validated_topology_epoch: int = -1,
                   last_assignment_configs: tuple[tuple[str, str], ...] | None = None) -> Record:
    tags: list[tuple[int, bytes]] = []
    if validated_topology_epoch != -1:
        tags.append((0, _I.pack(validated_topology_epoch)))
    if last_assignment_configs is None:
        tags.append((1, _NULL))
    elif last_assignment_configs:
        tags.append((1, _key_values(sorted(last_assignment_configs))))
    value = _VERSION_0 + _I.pack(epoch) + _Q.pack(metadata_hash) + tagged_fields(tags)
    return coordinator_key(GROUP_METADATA, group_id), value


def group_metadata_tombstone(group_id: str) -> Record:
    return coordinator_key(GROUP_METADATA, group_id), None


def _topic_info(t: TopicInfo) -> bytes:
    return (string(t.name, True) + _I.pack(t.partitions) + _H.pack(t.replication_factor)
            + _key_values(t.configs) + _NO_TAGS)


def _topic_infos(ts: Iterable[TopicInfo]) -> bytes:
    ts = list(ts)
    return array_length(len(ts), True) + b"".join(_topic_info(t) for t in ts)


def _subtopology(s: Subtopology) -> bytes:
    groups = b"".join(_int16s(g.source_topics) + _int16s(g.source_topic_regex)
                      + _int16s(g.repartition_source_topics) + _NO_TAGS for g in s.copartition_groups)
    return (string(s.subtopology_id, True) + _strings(s.source_topics) + _strings(s.source_topic_regex)
            + _topic_infos(s.state_changelog_topics) + _strings(s.repartition_sink_topics)
            + _topic_infos(s.repartition_source_topics)
            + array_length(len(s.copartition_groups), True) + groups + _NO_TAGS)


def topology(group_id: str, topology: Topology) -> Record:
    value = (_VERSION_0 + _I.pack(topology.epoch) + array_length(len(topology.subtopologies), True)
             + b"".join(_subtopology(s) for s in topology.subtopologies) + _NO_TAGS)
    return coordinator_key(TOPOLOGY, group_id), value


def topology_tombstone(group_id: str) -> Record:
    return coordinator_key(TOPOLOGY, group_id), None


def member_metadata(group_id: str, member: StreamsGroupMember) -> Record:
    m = member
    if m.user_endpoint is None:
        endpoint = _ABSENT
    else:
        host, port = m.user_endpoint
        endpoint = _PRESENT + string(host, True) + _PORT.pack(port) + _NO_TAGS
    value = (_VERSION_0 + nullable_string(m.instance_id, True) + nullable_string(m.rack_id, True)
             + string(m.client_id, True) + string(m.client_host, True) + _I.pack(m.rebalance_timeout_ms)
             + _I.pack(m.topology_epoch) + string(m.process_id, True) + endpoint
             + _key_values(sorted(m.client_tags)) + _NO_TAGS)
    return coordinator_key(MEMBER_METADATA, group_id, m.member_id), value


def member_metadata_tombstone(group_id: str, member_id: str) -> Record:
    return coordinator_key(MEMBER_METADATA, group_id, member_id), None


def target_assignment_metadata(group_id: str, assignment_epoch: int, assignment_timestamp_ms: int) -> Record:
    tags = [(0, _Q.pack(assignment_timestamp_ms))] if assignment_timestamp_ms else []
    return coordinator_key(TARGET_ASSIGNMENT_METADATA, group_id), _VERSION_0 + _I.pack(assignment_epoch) + tagged_fields(tags)


def target_assignment_metadata_tombstone(group_id: str) -> Record:
    return coordinator_key(TARGET_ASSIGNMENT_METADATA, group_id), None


def target_assignment_member(group_id: str, member_id: str, tasks: TasksTuple) -> Record:
    value = (_VERSION_0 + _task_ids(tasks.active) + _task_ids(tasks.standby) + _task_ids(tasks.warmup) + _NO_TAGS)
    return coordinator_key(TARGET_ASSIGNMENT_MEMBER, group_id, member_id), value


def target_assignment_member_tombstone(group_id: str, member_id: str) -> Record:
    return coordinator_key(TARGET_ASSIGNMENT_MEMBER, group_id, member_id), None


def current_member_assignment(group_id: str, member: StreamsGroupMember) -> Record:
    m = member
    assigned, pending = m.assigned, m.pending_revocation
    value = (_VERSION_0 + _I.pack(m.member_epoch) + _I.pack(m.previous_member_epoch)
             + struct.pack(">b", int(m.state))
             + _task_ids(assigned.active, m.active_epochs, m.member_epoch)
             + _task_ids(assigned.standby) + _task_ids(assigned.warmup)
             + _task_ids(pending.active, m.active_epochs, m.member_epoch)
             + _task_ids(pending.standby) + _task_ids(pending.warmup) + _NO_TAGS)
    return coordinator_key(CURRENT_MEMBER_ASSIGNMENT, group_id, m.member_id), value


def current_member_assignment_tombstone(group_id: str, member_id: str) -> Record:
    return coordinator_key(CURRENT_MEMBER_ASSIGNMENT, group_id, member_id), None


# ---------------------------------------------------------------------------------------- reader
@dataclass(frozen=True, slots=True)
class GroupMetadataValue:
    epoch: int
    metadata_hash: int
    validated_topology_epoch: int = -1
    # () when the record leaves the tag out, None when it holds an explicit null.
    last_assignment_configs: tuple[tuple[str, str], ...] | None = ()


@dataclass(frozen=True, slots=True)
class TargetAssignmentMetadataValue:
    assignment_epoch: int
    assignment_timestamp_ms: int = 0


ParsedValue = GroupMetadataValue | StreamsGroupMember | TargetAssignmentMetadataValue | TasksTuple | Topology


@dataclass(frozen=True, slots=True)
class ParsedStreamsRecord:
    record_type: int
    group_id: str
    member_id: str | None
    value: ParsedValue | None      # None: a tombstone


def _reader(data: bytes) -> Reader:
    return Reader(data, CorruptStreamsGroupRecord)


def _read_strings(r: Reader) -> tuple[str, ...]:
    return tuple(r.compact_string() for _ in range(r.compact_len()))



def _read_int16s(r: Reader) -> tuple[int, ...]:
    return tuple(r.i16() for _ in range(r.compact_len()))


def _read_key_value(r: Reader) -> tuple[str, str]:
    k, v = r.compact_string(), r.compact_string()
    r.tags()
    return k, v


def _read_key_values(r: Reader) -> tuple[tuple[str, str], ...]:
    return tuple(_read_key_value(r) for _ in range(r.compact_len()))


def _read_task_ids(r: Reader, member_epoch: int = 0,
                   epochs: dict[TaskId, int] | None = None) -> frozenset[TaskId]:
    """A [TaskIds] array. With `epochs`, each task's AssignmentEpochs entry goes into it (the member
    epoch when the tag is absent or not as long as Partitions, as Kafka's replay does)."""
    tasks: list[TaskId] = []
    for _ in range(r.compact_len()):
        sub = r.compact_string()
        ps = r.compact_int32s()
        tags = r.tags()
        tasks.extend((sub, p) for p in ps)
        if epochs is not None:
            es = _reader(tags[0]).compact_int32s() if 0 in tags else []
            if len(es) != len(ps):
                es = [member_epoch] * len(ps)
            epochs.update(((sub, p), e) for p, e in zip(ps, es, strict=True))
    return frozenset(tasks)


def _read_group_metadata(r: Reader) -> GroupMetadataValue:
    epoch = r.i32()
    metadata_hash = r.i64()
    tags = r.tags()
    validated = _reader(tags[0]).i32() if 0 in tags else -1
    configs: tuple[tuple[str, str], ...] | None = ()
    if 1 in tags:
        t = _reader(tags[1])
        n = t.uvarint()
        configs = None if n == 0 else tuple(_read_key_value(t) for _ in range(n - 1))
    return GroupMetadataValue(epoch, metadata_hash, validated, configs)


def _read_topic_info(r: Reader) -> TopicInfo:
    name = r.compact_string()
    partitions = r.i32()
    replication_factor = r.i16()
    configs = _read_key_values(r)
    r.tags()
    return TopicInfo(name, partitions, replication_factor, configs)


def _read_topic_infos(r: Reader) -> tuple[TopicInfo, ...]:
    return tuple(_read_topic_info(r) for _ in range(r.compact_len()))


def _read_copartition_group(r: Reader) -> CopartitionGroup:
    group = CopartitionGroup(_read_int16s(r), _read_int16s(r), _read_int16s(r))
    r.tags()
    return group


def _read_subtopology(r: Reader) -> Subtopology:
    sub = Subtopology(
        subtopology_id=r.compact_string(),
        source_topics=_read_strings(r),
        source_topic_regex=_read_strings(r),
        state_changelog_topics=_read_topic_infos(r),
        repartition_sink_topics=_read_strings(r),
        repartition_source_topics=_read_topic_infos(r),
        copartition_groups=tuple(_read_copartition_group(r) for _ in range(r.compact_len())),
    )
    r.tags()
    return sub


def _read_topology(r: Reader) -> Topology:
    epoch = r.i32()
    subs = tuple(_read_subtopology(r) for _ in range(r.compact_len()))
    r.tags()
    return Topology(epoch, subs)


def _read_member_metadata(r: Reader, member_id: str) -> StreamsGroupMember:
    instance_id = r.compact_nstring()
    rack_id = r.compact_nstring()
    client_id = r.compact_string()
    client_host = r.compact_string()
    rebalance_timeout_ms = r.i32()
    topology_epoch = r.i32()
    process_id = r.compact_string()
    endpoint = None
    if r.i8() >= 0:
        host = r.compact_string()
        port = _PORT.unpack(r.take(2))[0]
        r.tags()
        endpoint = (host, port)
    client_tags = _read_key_values(r)
    r.tags()
    return StreamsGroupMember(member_id=member_id, instance_id=instance_id, rack_id=rack_id, client_id=client_id,
                              client_host=client_host, rebalance_timeout_ms=rebalance_timeout_ms,
                              topology_epoch=topology_epoch, process_id=process_id, user_endpoint=endpoint,
                              client_tags=client_tags)


def _read_target_assignment_metadata(r: Reader) -> TargetAssignmentMetadataValue:
    epoch = r.i32()
    tags = r.tags()
    return TargetAssignmentMetadataValue(epoch, _reader(tags[0]).i64() if 0 in tags else 0)


def _read_target_assignment_member(r: Reader) -> TasksTuple:
    tasks = TasksTuple(_read_task_ids(r), _read_task_ids(r), _read_task_ids(r))
    r.tags()
    return tasks


def _read_current_assignment(r: Reader, member_id: str) -> StreamsGroupMember:
    member_epoch = r.i32()
    previous = r.i32()
    raw_state = r.i8()
    epochs: dict[TaskId, int] = {}
    assigned = TasksTuple(_read_task_ids(r, member_epoch, epochs), _read_task_ids(r), _read_task_ids(r))
    pending = TasksTuple(_read_task_ids(r, member_epoch, epochs), _read_task_ids(r), _read_task_ids(r))
    r.tags()
    try:
        state = MemberState(raw_state)
    except ValueError:
        state = MemberState.UNKNOWN
    return StreamsGroupMember(member_id=member_id, member_epoch=member_epoch, previous_member_epoch=previous,
                              state=state, assigned=assigned, pending_revocation=pending, active_epochs=epochs)


def parse(key: bytes, value: bytes | None) -> ParsedStreamsRecord:
    """A streams group record; CorruptStreamsGroupRecord when it is not one or does not parse."""
    try:
        return _parse(key, value)
    except UnicodeDecodeError as e:
        raise CorruptStreamsGroupRecord("a string is not UTF-8") from e


def _parse(key: bytes, value: bytes | None) -> ParsedStreamsRecord:
    k = _reader(key)
    record_type = k.i16()
    if record_type not in RECORD_TYPES:
        raise CorruptStreamsGroupRecord(f"record type {record_type} is not a streams group record")
    group_id = k.string()
    member_id = k.string() if record_type in _MEMBER_KEYED else None
    if value is None:
        return ParsedStreamsRecord(record_type, group_id, member_id, None)
    r = _reader(value)
    version = r.i16()
    if version != 0:
        raise CorruptStreamsGroupRecord(f"value version {version} of record type {record_type} is not known")
    parsed: ParsedValue
    if record_type == GROUP_METADATA:
        parsed = _read_group_metadata(r)
    elif record_type == MEMBER_METADATA:
        parsed = _read_member_metadata(r, member_id or "")
    elif record_type == TARGET_ASSIGNMENT_METADATA:
        parsed = _read_target_assignment_metadata(r)
    elif record_type == TARGET_ASSIGNMENT_MEMBER:
        parsed = _read_target_assignment_member(r)
    elif record_type == CURRENT_MEMBER_ASSIGNMENT:
        parsed = _read_current_assignment(r, member_id or "")
    else:
        parsed = _read_topology(r)
    return ParsedStreamsRecord(record_type, group_id, member_id, parsed)
