"""Pure decisions of the streams protocol (KIP-1071): (group, request, topics, now_ms) -> the next
group value, the `__consumer_offsets` records that make it durable, the internal topics the broker
must create, and the reply.

Mirrors Kafka 4.3's GroupCoordinatorService (request validation, what 4.3 does not support yet)
and GroupMetadataManager.streamsGroupHeartbeat / streamsGroupLeave / the timers, with the same
error codes, messages and status codes. A heartbeat, in order:

1. validate (INVALID_REQUEST, STREAMS_INVALID_TOPOLOGY); 4.3 refuses static membership, task
   offsets, warm-up tasks and source topic regexes with INVALID_REQUEST;
2. find or create the group (epoch 0 joins) and the member; its epoch must be the current one or,
   after a lost answer, the previous one with owned tasks it was given;
3. update the member from the non-null fields: any change is a MemberMetadata record and bumps the
   group epoch;
4. the first member's topology becomes the group's; a later one must be equal ("Topology updates are
   not supported yet."), an older one is STALE_TOPOLOGY;
5. configure the topology against the topics (topology.py) whenever it is new, not configured yet
   or the required topics' metadata hash changed; a topology found valid for the first time, a
   new hash, or new assignment configs (num.standby.replicas) bump the group epoch;
6. a group epoch ahead of the target assignment gets a new target (assignor.py), unless the
   initial rebalance delay of a new group or the assignment interval holds it (ASSIGNMENT_DELAYED);
7. reconcile the member one step (reconcile.py); answer with its tasks when they changed.

No I/O, no clock, no randomness: topics and time are passed in.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Final

from minikafka.coordinator.group_room import GroupDraft, DecisionError as _Error, blank as _blank
from minikafka.coordinator.metadata_hash import topics_hash
from minikafka.coordinator.streams_group import records as rec
from minikafka.coordinator.streams_group import topology as topo
from minikafka.coordinator.streams_group.assignor import AssignorMember, assign
from minikafka.coordinator.streams_group.reconcile import UnknownMemberState, reconcile
from minikafka.coordinator.streams_group.state import (
    EMPTY_TASKS,
    JOIN_GROUP_MEMBER_EPOCH,
    LEAVE_GROUP_MEMBER_EPOCH,
    LEAVE_GROUP_STATIC_MEMBER_EPOCH,
    ConfiguredTopology,
    MemberState,
    StreamsGroup,
    StreamsGroupMember,
    TaskId,
    TasksTuple,
    by_subtopology,
    TopicInfo,
    Topology,
)
from minikafka.protocol.errors import ErrorCode

# topic name -> (topic id, partitions): the broker's topics, as the coordinator sees them
Topics = Mapping[str, tuple[uuid.UUID, int]]

NUM_STANDBY_REPLICAS: Final = "num.standby.replicas"


@dataclass(frozen=True, slots=True, kw_only=True)
class StreamsGroupConfig:
    """Kafka's group.streams.* broker configs (GroupCoordinatorConfig), 4.3.1's defaults."""

    session_timeout_ms: int = 45_000
    heartbeat_interval_ms: int = 5_000
    max_size: int = 2**31 - 1
    num_standby_replicas: int = 0
    initial_rebalance_delay_ms: int = 3_000
    assignment_interval_ms: int = 1_000


@dataclass(frozen=True, slots=True, kw_only=True)
class HeartbeatRequest:
    group_id: str
    member_id: str
    member_epoch: int
    endpoint_information_epoch: int = 0
    instance_id: str | None = None
    rack_id: str | None = None
    rebalance_timeout_ms: int = -1
    topology: Topology | None = None
    active: frozenset[TaskId] | None = None      # owned tasks; None: unchanged since the last heartbeat
    standby: frozenset[TaskId] | None = None
    warmup: frozenset[TaskId] | None = None
    process_id: str | None = None
    user_endpoint: tuple[str, int] | None = None
    client_tags: tuple[tuple[str, str], ...] | None = None
    task_offsets_set: bool = False               # TaskOffsets / TaskEndOffsets non-null (4.3: refused)
    shutdown_application: bool = False
    client_id: str = ""
    client_host: str = ""

    def owned(self) -> TasksTuple | None:
        if self.active is None or self.standby is None or self.warmup is None:
            return None
        return TasksTuple(self.active, self.standby, self.warmup)


@dataclass(frozen=True, slots=True, kw_only=True)
class EndpointPartitions:
    """PartitionsByUserEndpoint: the source topic partitions behind an endpoint's tasks."""

    endpoint: tuple[str, int]
    active: tuple[tuple[str, tuple[int, ...]], ...]
    standby: tuple[tuple[str, tuple[int, ...]], ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class HeartbeatReply:
    error: ErrorCode = ErrorCode.none
    message: str | None = None
    member_id: str | None = None
    member_epoch: int = 0
    heartbeat_interval_ms: int = 0
    tasks: TasksTuple | None = None               # None: unchanged, not sent
    status: tuple[tuple[int, str], ...] = ()
    endpoint_information_epoch: int = 0
    partitions_by_user_endpoint: tuple[EndpointPartitions, ...] | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Outcome:
    reply: HeartbeatReply
    group: StreamsGroup | None = None
    records: tuple[rec.Record, ...] = ()
    topics_to_create: tuple[TopicInfo, ...] = ()


def _fail(code: ErrorCode, message: str | None) -> Outcome:
    return Outcome(reply=HeartbeatReply(error=code, message=message))


# ------------------------------------------------------------------------------------- validation
def validate(req: HeartbeatRequest) -> _Error | None:
    """GroupCoordinatorService: the not-yet-supported features first, then the request's shape."""
    invalid = ErrorCode.invalid_request
    if req.instance_id is not None:
        return _Error(invalid, "Static membership is not yet supported.")
    if req.task_offsets_set:
        return _Error(invalid, "TaskOffsets are not supported yet.")
    if req.warmup:
        return _Error(invalid, "WarmupTasks are not supported yet.")
    if req.topology is not None and any(s.source_topic_regex for s in req.topology.subtopologies):
        return _Error(invalid, "Regular expressions for source topics are not supported yet.")
    if _blank(req.member_id):
        return _Error(invalid, "MemberId can't be empty.")
    if _blank(req.group_id):
        return _Error(invalid, "GroupId can't be empty.")
    if _blank(req.rack_id):
        return _Error(invalid, "RackId can't be empty.")
    if req.member_epoch == JOIN_GROUP_MEMBER_EPOCH:
        if req.rebalance_timeout_ms == -1:
            return _Error(invalid, "RebalanceTimeoutMs must be provided in first request.")
        for name, tasks in (("ActiveTasks", req.active), ("StandbyTasks", req.standby), ("WarmupTasks", req.warmup)):
            if tasks is None or tasks:   # Kafka wants them present and empty
                return _Error(invalid, f"{name} must be empty when (re-)joining.")
        if req.topology is None:
            return _Error(invalid, "Topology must be non-null when (re-)joining.")
        for s in req.topology.subtopologies:
            for info in s.state_changelog_topics:
                if info.partitions != 0:
                    return _Error(ErrorCode.streams_invalid_topology,
                                  f"Changelog topic {info.name} must have an undefined partition count, but it is set "
                                  f"to {info.partitions}.")
    elif req.member_epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
        return _Error(invalid, "InstanceId can't be null.")
    elif req.member_epoch < LEAVE_GROUP_STATIC_MEMBER_EPOCH:
        return _Error(invalid, f"MemberEpoch is {req.member_epoch}, but must be greater than or equal to -2.")
    sets = (req.active, req.standby, req.warmup)
    if any(s is not None for s in sets) and any(s is None for s in sets):
        return _Error(invalid, "If one task-type is non-null, all must be non-null.")
    if req.member_epoch != JOIN_GROUP_MEMBER_EPOCH and req.topology is not None:
        return _Error(invalid, "Topology can only be provided when (re-)joining.")
    return None


# ------------------------------------------------------------------------------------- heartbeat
def decide_heartbeat(group: StreamsGroup | None, req: HeartbeatRequest, cfg: StreamsGroupConfig, topics: Topics,
                     now_ms: int) -> Outcome:
    error = validate(req)
    if error is not None:
        return _fail(error.code, error.message)
    try:
        if req.member_epoch == LEAVE_GROUP_MEMBER_EPOCH:
            return _leave(group, req)
        return _heartbeat(group, req, cfg, topics, now_ms)
    except _Error as exc:
        return _fail(exc.code, exc.message)
    except topo.InvalidTopology as exc:
        return _fail(ErrorCode.streams_invalid_topology, str(exc))


def _check_epoch(member: StreamsGroupMember, received: int, owned: TasksTuple | None) -> None:
    """Kafka's throwIfStreamsGroupMemberEpochIsInvalid."""
    if received == JOIN_GROUP_MEMBER_EPOCH:
        return
    if received > member.member_epoch:
        raise _Error(ErrorCode.fenced_member_epoch,
                     f"The streams group member has a greater member epoch ({received}) than the one known by the "
                     f"group coordinator ({member.member_epoch}). The member must abandon all its partitions and "
                     f"rejoin.")
    if received < member.member_epoch:
        a = member.assigned
        # Null owned tasks prove nothing (Kafka's areOwnedTasksContained* answer false).
        contained = owned is not None and (owned.active <= a.active and owned.standby <= a.standby
                                           and owned.warmup <= a.warmup)
        if received != member.previous_member_epoch or not contained:
            raise _Error(ErrorCode.fenced_member_epoch,
                         f"The streams group member has a smaller member epoch ({received}) than the one known by "
                         f"the group coordinator ({member.member_epoch}). The member must abandon all its partitions "
                         f"and rejoin.")


def assignment_configs(cfg: StreamsGroupConfig) -> tuple[tuple[str, str], ...]:
    return ((NUM_STANDBY_REPLICAS, str(cfg.num_standby_replicas)),)


def metadata_hash(topology: Topology | None, topics: Topics) -> int:
    """StreamsGroupMetadataValue.MetadataHash: the required topics that exist."""
    return 0 if topology is None else topics_hash(topo.required_topics(topology), topics)


def _partitions(topics: Topics) -> dict[str, int]:
    return {name: n for name, (_tid, n) in topics.items()}


class _Draft(GroupDraft[StreamsGroup]):
    def member_tombstones(self, group_id: str, member_id: str) -> list[rec.Record]:
        """Kafka's removeStreamsMember."""
        return [rec.current_member_assignment_tombstone(group_id, member_id),
                rec.target_assignment_member_tombstone(group_id, member_id),
                rec.member_metadata_tombstone(group_id, member_id)]

    def bump(self, metadata_hash: int, validated: int, configs: tuple[tuple[str, str], ...] | None) -> None:
        g = self.group
        epoch = g.group_epoch + 1
        self.records.append(rec.group_metadata(g.group_id, epoch, metadata_hash, validated, configs))
        self.group = replace(g, group_epoch=epoch, metadata_hash=metadata_hash, validated_topology_epoch=validated,
                             last_assignment_configs=configs)


def _topology_from_request(d: _Draft, req: HeartbeatRequest) -> Topology:
    group = d.group
    if req.topology is not None:
        if group.topology is None:
            d.records.append(rec.topology(group.group_id, req.topology))
            d.group = replace(group, topology=req.topology)
            return req.topology
        if group.topology.epoch > req.topology.epoch:
            return group.topology
        if not same_topology(group.topology, req.topology):
            raise _Error(ErrorCode.invalid_request, "Topology updates are not supported yet.")
        return group.topology
    if group.topology is None:
        raise _Error(ErrorCode.unknown_server_error, "The topology is null and the group topology is also null.")
    return group.topology


def same_topology(a: Topology, b: Topology) -> bool:
    """Kafka's StreamsTopology.equals: the epoch and the subtopologies by id (their order aside)."""
    return a.epoch == b.epoch and ({s.subtopology_id: s for s in a.subtopologies}
                                   == {s.subtopology_id: s for s in b.subtopologies})


def _heartbeat(group: StreamsGroup | None, req: HeartbeatRequest, cfg: StreamsGroupConfig, topics: Topics,
               now_ms: int) -> Outcome:
    gid = req.group_id
    joining = req.member_epoch == JOIN_GROUP_MEMBER_EPOCH
    created = group is None
    if group is None:
        if not joining:
            raise _Error(ErrorCode.group_id_not_found, f"Streams group {gid} not found.")
        group = StreamsGroup(group_id=gid)
    if joining and len(group.members) >= cfg.max_size:
        raise _Error(ErrorCode.group_max_size_reached,
                     f"The streams group has reached its maximum capacity of {cfg.max_size} members.")
    was_empty = not group.members
    owned = req.owned()
    member = group.members.get(req.member_id)
    if member is None:
        if not joining:
            raise _Error(ErrorCode.unknown_member_id, f"Member {req.member_id} is not a member of group {gid}.")
        member = StreamsGroupMember(member_id=req.member_id)
    _check_epoch(member, req.member_epoch, owned)
    d = _Draft(group)
    status: list[tuple[int, str]] = []

    # 3. the member's metadata
    updated = replace(
        member,
        rack_id=req.rack_id if req.rack_id is not None else member.rack_id,
        rebalance_timeout_ms=req.rebalance_timeout_ms if req.rebalance_timeout_ms != -1 else member.rebalance_timeout_ms,
        topology_epoch=req.topology.epoch if req.topology is not None else member.topology_epoch,
        client_id=req.client_id, client_host=req.client_host,
        process_id=req.process_id if req.process_id is not None else member.process_id,
        client_tags=tuple(sorted(req.client_tags)) if req.client_tags is not None else member.client_tags,
        user_endpoint=req.user_endpoint if req.user_endpoint is not None else member.user_endpoint)
    bump = req.member_id not in group.members or updated.metadata_key() != member.metadata_key()
    if bump:
        d.records.append(rec.member_metadata(gid, updated))
    d.put_member(updated)

    # 4. the topology
    topology = _topology_from_request(d, req)
    if updated.topology_epoch < topology.epoch:
        status.append((topo.STALE_TOPOLOGY, f"The member's topology epoch {updated.topology_epoch} is behind the "
                                            f"group's topology epoch {topology.epoch}."))

    # 5. configure it against the topics
    new_hash = metadata_hash(topology, topics)
    configured = d.group.configured
    if (group.topology is None or configured is None or new_hash != group.metadata_hash
            or configured.topology_epoch != topology.epoch):
        if new_hash != group.metadata_hash:
            bump = True
        configured = topo.configure(topology, _partitions(topics))
        d.group = replace(d.group, configured=configured)
    validated = -1
    if configured.is_ready:
        validated = topology.epoch
        _check_owned_tasks(configured, owned)
    if validated != group.validated_topology_epoch:
        bump = True
    configs = assignment_configs(cfg)
    if not bump and configs != group.last_assignment_configs:
        bump = True
    if bump:
        d.bump(new_hash, validated, configs)

    # 6. a new target assignment
    delay_until = d.group.initial_delay_until_ms
    if was_empty and cfg.initial_rebalance_delay_ms > 0 and delay_until is None:
        delay_until = now_ms + cfg.initial_rebalance_delay_ms
        d.group = replace(d.group, initial_delay_until_ms=delay_until)
    if delay_until is not None and now_ms < delay_until:
        status.append((topo.ASSIGNMENT_DELAYED, "Assignment delayed due to the configured initial rebalance delay."))
        target_epoch, target = d.group.target_assignment_epoch, EMPTY_TASKS
    else:
        if d.group.target_assignment_epoch < d.group.group_epoch:
            if _can_assign(d.group, cfg, now_ms):
                compute_target_assignment(d, cfg, now_ms)
            else:
                status.append((topo.ASSIGNMENT_DELAYED,
                               "Assignment delayed due to the configured assignment interval."))
        target_epoch, target = d.group.target_assignment_epoch, d.group.target_of(req.member_id)

    # 7. reconcile the member
    updated = d.group.members[req.member_id]
    reconciled = _reconcile(d.group, updated, target_epoch, target, owned)
    if reconciled.assignment_key() != updated.assignment_key():
        d.records.append(rec.current_member_assignment(gid, reconciled))
        deadline = (now_ms + reconciled.rebalance_timeout_ms
                    if reconciled.state is MemberState.UNREVOKED_TASKS else None)
        reconciled = replace(reconciled, rebalance_deadline_ms=deadline)
    reconciled = replace(reconciled, session_deadline_ms=now_ms + cfg.session_timeout_ms)
    d.put_member(reconciled)
    if req.shutdown_application:
        d.group = replace(d.group, shutdown_request_member_id=req.member_id)

    # the answer
    # Kafka's hasAssignedTasksChanged: the assigned tasks and their epochs (not those being revoked).
    tasks_changed = (reconciled.assigned != member.assigned
                     or {t: reconciled.active_epochs.get(t) for t in reconciled.assigned.active}
                     != {t: member.active_epochs.get(t) for t in member.assigned.active})
    tasks = None
    if joining or tasks_changed:
        tasks = reconciled.assigned
        if reconciled.user_endpoint is not None:
            d.group = replace(d.group, endpoint_information_epoch=d.group.endpoint_information_epoch + 1)
    by_endpoint = None
    if d.group.endpoint_information_epoch != req.endpoint_information_epoch:
        by_endpoint = endpoint_partitions(d.group, reconciled, topics)
    topics_to_create: tuple[TopicInfo, ...] = ()
    if configured.error is not None:
        topics_to_create = configured.internal_topics_to_create
        status.append(configured.error)
    if d.group.shutdown_request_member_id is not None:
        status.append((topo.SHUTDOWN_APPLICATION,
                       f"Streams group member {d.group.shutdown_request_member_id} encountered a fatal error and "
                       f"requested a shutdown for the entire application."))
    reply = HeartbeatReply(member_id=req.member_id, member_epoch=reconciled.member_epoch,
                           heartbeat_interval_ms=cfg.heartbeat_interval_ms, tasks=tasks, status=tuple(status),
                           endpoint_information_epoch=0 if created else d.group.endpoint_information_epoch,
                           partitions_by_user_endpoint=by_endpoint)
    return Outcome(reply=reply, group=d.group, records=tuple(d.records), topics_to_create=topics_to_create)


def _check_owned_tasks(configured: ConfiguredTopology, owned: TasksTuple | None) -> None:
    """Kafka's throwIfRequestContainsInvalidTasks."""
    if owned is None:
        return
    for tasks in (owned.active, owned.standby, owned.warmup):
        for sub, p in sorted(tasks):
            n = configured.task_counts.get(sub)
            if n is None:
                raise _Error(ErrorCode.invalid_request, f"Subtopology {sub} does not exist in the topology.")
            if not 0 <= p < n:
                raise _Error(ErrorCode.invalid_request, f"Task {p} for subtopology {sub} is invalid. Number of tasks "
                                                        f"for this subtopology: {n}")


def _can_assign(group: StreamsGroup, cfg: StreamsGroupConfig, now_ms: int) -> bool:
    """Kafka's canComputeNextTargetAssignment."""
    if group.assignment_timestamp_ms == 0 or cfg.assignment_interval_ms == 0:
        return True
    return now_ms >= group.assignment_timestamp_ms + cfg.assignment_interval_ms


def compute_target_assignment(d: _Draft, cfg: StreamsGroupConfig, now_ms: int) -> None:
    """Kafka's streams TargetAssignmentBuilder: the assignor's answer for the group epoch (every
    member empty while the topology is not ready), a record per member whose target changed, then
    the target assignment metadata."""
    group = d.group
    configured = group.configured
    if configured is not None and configured.is_ready:
        members = {mid: AssignorMember(process_id=m.process_id, instance_id=m.instance_id, rack_id=m.rack_id,
                                       client_tags=m.client_tags, current=group.target_of(mid))
                   for mid, m in group.members.items()}
        standbys = int(dict(group.last_assignment_configs or ()).get(NUM_STANDBY_REPLICAS, cfg.num_standby_replicas))
        # Standby tasks only for subtopologies with state (changelog topics), as Kafka's assignor.
        stateful = [s.subtopology_id for s in group.topology.subtopologies if s.state_changelog_topics] \
            if group.topology is not None else []
        target = assign(members, configured.task_counts, standbys, stateful=stateful)
    else:
        target = {mid: EMPTY_TASKS for mid in group.members}
    gid = group.group_id
    for mid in sorted(target):
        if group.target_assignment.get(mid) != target[mid]:
            d.records.append(rec.target_assignment_member(gid, mid, target[mid]))
    d.records.append(rec.target_assignment_metadata(gid, group.group_epoch, now_ms))
    d.group = replace(group, target_assignment=target, target_assignment_epoch=group.group_epoch,
                      assignment_timestamp_ms=now_ms)


def _reconcile(group: StreamsGroup, member: StreamsGroupMember, target_epoch: int, target: TasksTuple,
               owned: TasksTuple | None) -> StreamsGroupMember:
    if member.state is MemberState.STABLE and member.member_epoch == target_epoch:
        return member
    active, standby = group.task_processes()
    try:
        return reconcile(member, target_epoch, target, active, standby, owned)
    except UnknownMemberState as exc:
        raise _Error(ErrorCode.fenced_member_epoch, str(exc)) from None


def endpoint_partitions(group: StreamsGroup, updated: StreamsGroupMember, topics: Topics) -> tuple[EndpointPartitions, ...]:
    """Every member's endpoint with the source partitions of its active and standby tasks (the
    updated member last, as Kafka lists it)."""
    if group.topology is None:
        return ()
    read_by = {s.subtopology_id: sorted(set(topo.sources(s))) for s in group.topology.subtopologies}

    def partitions(tasks: frozenset[TaskId]) -> tuple[tuple[str, tuple[int, ...]], ...]:
        # Task i reads partition i of each source topic; a topic with fewer partitions has no more.
        return tuple((topic, tuple(parts[:topics[topic][1] if topic in topics else 0]))
                     for sub, parts in by_subtopology(tasks).items() for topic in read_by.get(sub, ()))

    order = [m for mid, m in sorted(group.members.items()) if mid != updated.member_id] + [updated]
    return tuple(EndpointPartitions(endpoint=m.user_endpoint, active=partitions(m.assigned.active),
                                    standby=partitions(m.assigned.standby))
                 for m in order if m.user_endpoint is not None)


# ------------------------------------------------------------------------------------- leaving
def fence(group: StreamsGroup, member_ids: Sequence[str]) -> tuple[StreamsGroup, list[rec.Record]]:
    """Kafka's streamsGroupFenceMember, once per member (Kafka fences each in its own timer
    operation): the member's records go and the group epoch is bumped (the next heartbeat
    computes the new target)."""
    d = _Draft(group)
    for mid in member_ids:
        if mid in d.group.members:
            d.remove_member(mid)
            d.bump(group.metadata_hash, group.validated_topology_epoch, group.last_assignment_configs)
    if not d.group.members:
        d.group = replace(d.group, shutdown_request_member_id=None)
    return d.group, d.records


def _leave(group: StreamsGroup | None, req: HeartbeatRequest) -> Outcome:
    if group is None:   # Kafka's streamsGroup(groupId), not getStreamsGroupOrThrow: another message
        raise _Error(ErrorCode.group_id_not_found, f"Group {req.group_id} not found.")
    if req.member_id not in group.members:
        raise _Error(ErrorCode.unknown_member_id, f"Member {req.member_id} is not a member of group {group.group_id}.")
    if req.shutdown_application:
        group = replace(group, shutdown_request_member_id=req.member_id)
    next_group, records = fence(group, [req.member_id])
    return Outcome(reply=HeartbeatReply(member_id=req.member_id, member_epoch=req.member_epoch), group=next_group,
                   records=tuple(records))


# ------------------------------------------------------------------------------------- timers
def next_deadline(group: StreamsGroup) -> int | None:
    times = [t for m in group.members.values() for t in m.deadlines()]
    if group.initial_delay_until_ms is not None:
        times.append(group.initial_delay_until_ms)
    return min(times, default=None)


def expired_members(group: StreamsGroup, now_ms: int) -> list[str]:
    return sorted(m.member_id for m in group.members.values() if any(now_ms >= t for t in m.deadlines()))


def initial_delay_over(group: StreamsGroup, now_ms: int) -> bool:
    return group.initial_delay_until_ms is not None and now_ms >= group.initial_delay_until_ms


def delayed_target_assignment(group: StreamsGroup, cfg: StreamsGroupConfig,
                              now_ms: int) -> tuple[StreamsGroup, list[rec.Record]]:
    """Kafka's computeDelayedTargetAssignment, when the initial rebalance delay passes."""
    d = _Draft(replace(group, initial_delay_until_ms=None))
    if d.group.members and d.group.group_epoch > d.group.target_assignment_epoch and d.group.configured is not None:
        compute_target_assignment(d, cfg, now_ms)
    return d.group, d.records

