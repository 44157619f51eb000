"""Classic members in a consumer group (KIP-848's online migration): JoinGroup, SyncGroup, Heartbeat
and LeaveGroup of a consumer that speaks the classic protocol, against a group of the new one; and
the two conversions, a live classic group into a consumer group (upgrade) and a consumer group whose
last consumer-protocol member left into a classic group (downgrade).

Kafka: GroupMetadataManager.classicGroupJoinToConsumerGroup, classicGroupSyncToConsumerGroup,
classicGroupHeartbeatToConsumerGroup, classicGroupLeaveToConsumerGroup, convertToConsumerGroup
(ConsumerGroup.fromClassicGroup), convertToClassicGroup (ClassicGroup.fromConsumerGroup),
group.consumer.migration.policy.

A classic member takes part in the coordinator's assignment like any other: its JoinGroup is its
heartbeat with a full subscription (topics and owned partitions from the embedded consumer
protocol), answered at once with its member epoch as the generation; SyncGroup hands it its
assigned partitions, encoded as ConsumerProtocolAssignment. Whenever the target moves on, its
Heartbeat answers REBALANCE_IN_PROGRESS so that it joins again, and it has its rebalance timeout to
do so (then to sync) before it is fenced.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from minikafka.coordinator.consumer_group import embedded
from minikafka.coordinator.consumer_group import records as rec
from minikafka.coordinator.consumer_group.decisions import (
    ConsumerGroupConfig,
    Topics,
    _Draft,
    _maybe_assign,
    _reconcile,
    fence,
    fenced_instance_message,
    group_metadata_hash,
)
from minikafka.coordinator.consumer_group.state import (
    Assignment,
    ClassicMemberMetadata,
    ConsumerGroup,
    ConsumerGroupMember,
    MemberState,
    by_topic,
)
from minikafka.protocol.errors import ErrorCode

CONSUMER_PROTOCOL_TYPE = "consumer"


@dataclass(frozen=True, slots=True, kw_only=True)
class ClassicJoin:
    group_id: str
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    session_timeout_ms: int
    rebalance_timeout_ms: int
    protocol_type: str
    protocols: tuple[tuple[str, bytes], ...]
    require_known_member_id: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class ClassicJoinOutcome:
    error: ErrorCode
    message: str | None = None
    member_id: str = ""
    generation_id: int = -1
    protocol_name: str | None = None
    group: ConsumerGroup | None = None
    records: tuple[rec.Record, ...] = ()


def _supports(group: ConsumerGroup, protocol_type: str, names: Sequence[str]) -> bool:
    """ConsumerGroup.supportsClassicProtocols: a protocol every classic member offers."""
    if protocol_type != CONSUMER_PROTOCOL_TYPE:
        return False
    classic = [m.classic for m in group.members.values() if m.classic is not None]
    if not classic:
        return bool(names)
    return any(all(name in {p for p, _ in c.protocols} for c in classic) for name in names)


def owned_from(subscription: embedded.Subscription, topics: Topics) -> Assignment:
    return frozenset((topics[t][0], p) for t, parts in subscription.owned.items() if t in topics for p in parts)


def decide_join(group: ConsumerGroup, req: ClassicJoin, cfg: ConsumerGroupConfig, topics: Topics, now_ms: int,
                new_member_id: str) -> ClassicJoinOutcome:
    gid = group.group_id
    unknown = req.member_id == ""
    member_id = new_member_id if unknown else req.member_id
    if unknown and req.group_instance_id is None and req.require_known_member_id:
        return ClassicJoinOutcome(error=ErrorCode.member_id_required, member_id=member_id)
    if len(group.members) >= cfg.max_size and member_id not in group.members:
        return ClassicJoinOutcome(error=ErrorCode.group_max_size_reached, member_id=req.member_id,
                                  message=f"The consumer group has reached its maximum capacity of {cfg.max_size} "
                                          f"members.")
    if not _supports(group, req.protocol_type, [n for n, _ in req.protocols]):
        return ClassicJoinOutcome(error=ErrorCode.inconsistent_group_protocol, member_id=req.member_id,
                                  message=f"Member {member_id}'s protocols are not supported.")
    try:
        subscription = embedded.decode_subscription(req.protocols[0][1])
    except embedded.MalformedConsumerProtocol:
        return ClassicJoinOutcome(error=ErrorCode.inconsistent_group_protocol, member_id=req.member_id)
    d = _Draft(group)
    if req.group_instance_id is None:
        member = group.members.get(member_id) or ConsumerGroupMember(member_id=member_id)
    else:
        existing_id = group.static_member_id(req.group_instance_id)
        if existing_id is None:
            member = group.members.get(member_id) or ConsumerGroupMember(member_id=member_id)
        elif unknown:
            member = d.replace_static(group.members[existing_id], member_id)
        elif existing_id != member_id:
            return ClassicJoinOutcome(error=ErrorCode.fenced_instance_id, member_id=req.member_id,
                                      message=fenced_instance_message(member_id, req.group_instance_id, existing_id))
        else:
            member = group.members[existing_id]
    updated = replace(
        member, instance_id=req.group_instance_id if req.group_instance_id is not None else member.instance_id,
        rack_id=subscription.rack_id if subscription.rack_id is not None else member.rack_id,
        rebalance_timeout_ms=req.rebalance_timeout_ms if req.rebalance_timeout_ms != -1 else member.rebalance_timeout_ms,
        subscribed_topic_names=tuple(sorted(set(subscription.topics))), subscribed_topic_regex=None,
        client_id=req.client_id, client_host=req.client_host,
        classic=ClassicMemberMetadata(req.session_timeout_ms, req.protocols))
    names_changed = d.put_metadata(member, updated)
    d.bump_epoch(names_changed, topics)
    _maybe_assign(d, topics, cfg, now_ms)
    updated = d.group.members[member_id]
    reconciled = _reconcile(d.group, updated, owned_from(subscription, topics), topics, names_changed)
    if reconciled.assignment_key() != updated.assignment_key():
        d.records.append(rec.current_assignment(gid, reconciled))
        reconciled = replace(reconciled, rebalance_deadline_ms=None)
    reconciled = replace(reconciled, join_deadline_ms=None, sync_deadline_ms=now_ms + reconciled.rebalance_timeout_ms,
                         session_deadline_ms=now_ms + req.session_timeout_ms)
    d.put_member(reconciled)
    return ClassicJoinOutcome(error=ErrorCode.none, member_id=member_id, generation_id=reconciled.member_epoch,
                              protocol_name=req.protocols[0][0], group=d.group, records=tuple(d.records))


def _member(group: ConsumerGroup, member_id: str, instance_id: str | None) -> tuple[ConsumerGroupMember | None,
                                                                                    ErrorCode, str | None]:
    """Kafka's validateConsumerGroupMember and throwIfMemberDoesNotUseClassicProtocol."""
    gid = group.group_id
    if instance_id is None:
        member = group.members.get(member_id)
        if member is None:
            return None, ErrorCode.unknown_member_id, f"Member {member_id} is not a member of group {gid}."
    else:
        sid = group.static_member_id(instance_id)
        if sid is None:
            return None, ErrorCode.unknown_member_id, (f"Member with instance id {instance_id} is not a member of "
                                                       f"group {gid}.")
        member = group.members[sid]
        if member.member_id != member_id:
            return None, ErrorCode.fenced_instance_id, fenced_instance_message(member_id, instance_id, member.member_id)
    if member.classic is None:
        return None, ErrorCode.unknown_member_id, f"Member {member.member_id} does not use the classic protocol."
    return member, ErrorCode.none, None


def _generation_error(member: ConsumerGroupMember, generation_id: int) -> tuple[ErrorCode, str] | None:
    if member.member_epoch != generation_id:
        return ErrorCode.illegal_generation, (f"The request generation id {generation_id} is not equal to the member "
                                              f"epoch {member.member_epoch} of member {member.member_id}.")
    return None


def _ask_to_rejoin(member: ConsumerGroupMember, now_ms: int) -> ConsumerGroupMember:
    """scheduleConsumerGroupJoinTimeoutIfAbsent: it has its rebalance timeout to join again."""
    if member.join_deadline_ms is not None:
        return member
    return replace(member, join_deadline_ms=now_ms + member.rebalance_timeout_ms)


@dataclass(frozen=True, slots=True, kw_only=True)
class ClassicSyncOutcome:
    error: ErrorCode
    message: str | None = None
    assignment: bytes = b""
    group: ConsumerGroup | None = None


def decide_sync(group: ConsumerGroup, member_id: str, instance_id: str | None, generation_id: int,
                protocol_type: str | None, protocol_name: str | None, topic_names: dict[object, str],
                now_ms: int) -> ClassicSyncOutcome:
    member, code, message = _member(group, member_id, instance_id)
    if member is None:
        return ClassicSyncOutcome(error=code, message=message)
    assert member.classic is not None
    gen = _generation_error(member, generation_id)
    if gen is not None:
        return ClassicSyncOutcome(error=gen[0], message=gen[1])
    ours = member.classic.protocol_name()
    if protocol_type is not None and protocol_type != CONSUMER_PROTOCOL_TYPE:
        return ClassicSyncOutcome(error=ErrorCode.inconsistent_group_protocol, message=(
            f"The protocol type {protocol_type} from member {member.member_id} request is not equal to the group "
            f"protocol type {CONSUMER_PROTOCOL_TYPE}."))
    if protocol_name is not None and protocol_name != ours:
        return ClassicSyncOutcome(error=ErrorCode.inconsistent_group_protocol, message=(
            f"The protocol name {protocol_name} from member {member.member_id} request is not equal to the protocol "
            f"name {ours} returned in the join response."))
    if group.target_assignment_epoch > member.member_epoch and member.state is not MemberState.UNREVOKED_PARTITIONS:
        rejoin = _ask_to_rejoin(member, now_ms)
        return ClassicSyncOutcome(error=ErrorCode.rebalance_in_progress, message=(
            f"A new rebalance is triggered in group {group.group_id} and member {member.member_id} should rejoin to "
            f"catch up."), group=_put(group, rejoin))
    partitions = {topic_names[tid]: parts for tid, parts in by_topic(member.assigned).items() if tid in topic_names}
    done = replace(member, sync_deadline_ms=None,
                   session_deadline_ms=now_ms + member.classic.session_timeout_ms)
    return ClassicSyncOutcome(error=ErrorCode.none, group=_put(group, done),
                              assignment=embedded.encode_assignment(partitions,
                                                                    embedded.version_of(member.classic.metadata())))


def decide_heartbeat(group: ConsumerGroup, member_id: str, instance_id: str | None, generation_id: int,
                     now_ms: int) -> tuple[ErrorCode, ConsumerGroup | None]:
    member, code, _message = _member(group, member_id, instance_id)
    if member is None:
        return code, None
    assert member.classic is not None
    gen = _generation_error(member, generation_id)
    if gen is not None:
        return gen[0], None
    member = replace(member, session_deadline_ms=now_ms + member.classic.session_timeout_ms)
    behind = (member.member_epoch < group.target_assignment_epoch
              or member.state is MemberState.UNREVOKED_PARTITIONS
              or member.state is MemberState.UNRELEASED_PARTITIONS and not _waiting_on_unreleased(group, member))
    if behind:
        return ErrorCode.rebalance_in_progress, _put(group, _ask_to_rejoin(member, now_ms))
    return ErrorCode.none, _put(group, member)


def _waiting_on_unreleased(group: ConsumerGroup, member: ConsumerGroupMember) -> bool:
    owners = group.partition_owners(excluding=member.member_id)
    return any(tp not in member.assigned and tp in owners for tp in group.target_of(member.member_id))


def _put(group: ConsumerGroup, member: ConsumerGroupMember) -> ConsumerGroup:
    return replace(group, members={**group.members, member.member_id: member})


def decide_leave(group: ConsumerGroup, leaving: Sequence[tuple[str, str | None]], topics: Topics
                 ) -> tuple[list[ErrorCode], ConsumerGroup | None, list[rec.Record]]:
    """LeaveGroup of classic members: every member found is fenced (all at once)."""
    codes: list[ErrorCode] = []
    found: list[str] = []
    for member_id, instance_id in leaving:
        if instance_id is None:
            if member_id in group.members:
                codes.append(ErrorCode.none)
                found.append(member_id)
            else:
                codes.append(ErrorCode.unknown_member_id)
            continue
        sid = group.static_member_id(instance_id)
        if sid is None or (member_id != "" and sid != member_id):
            codes.append(ErrorCode.unknown_member_id if sid is None else ErrorCode.fenced_instance_id)
            continue
        codes.append(ErrorCode.none)
        found.append(sid)
    if not found:
        return codes, None, []
    next_group, records = fence(group, sorted(set(found)), topics)
    return codes, next_group, records


# ------------------------------------------------------------------------------------- conversions
@dataclass(frozen=True, slots=True)
class ClassicMemberImage:
    """A classic group's member, as the conversions read and write it."""

    member_id: str
    instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    protocols: tuple[tuple[str, bytes], ...]
    assignment: bytes


def from_classic(group_id: str, generation: int, protocol_name: str | None, members: Sequence[ClassicMemberImage],
                 topics: Topics, now_ms: int) -> tuple[ConsumerGroup, list[rec.Record]]:
    """Kafka's ConsumerGroup.fromClassicGroup + createConsumerGroupRecords: every member keeps its
    last assignment as its target, Stable at the generation, which becomes the epochs; its classic
    session restarts now. Raises MalformedConsumerProtocol when a member's embedded metadata does
    not parse."""
    consumer_members: dict[str, ConsumerGroupMember] = {}
    target: dict[str, Assignment] = {}
    for m in members:
        metadata = next((meta for name, meta in m.protocols if name == protocol_name), b"")
        subscription = embedded.decode_subscription(metadata)
        assigned = frozenset((topics[t][0], p) for t, parts in embedded.decode_assignment(m.assignment).items()
                             if t in topics for p in parts)
        consumer_members[m.member_id] = ConsumerGroupMember(
            member_id=m.member_id, instance_id=m.instance_id, rack_id=subscription.rack_id, client_id=m.client_id,
            client_host=m.client_host, subscribed_topic_names=tuple(sorted(set(subscription.topics))),
            rebalance_timeout_ms=m.rebalance_timeout_ms, classic=ClassicMemberMetadata(m.session_timeout_ms, m.protocols),
            member_epoch=generation, previous_member_epoch=generation, state=MemberState.STABLE, assigned=assigned,
            assignment_epochs={tp: generation for tp in assigned}, session_deadline_ms=now_ms + m.session_timeout_ms)
        target[m.member_id] = assigned
    group = ConsumerGroup(group_id=group_id, group_epoch=generation, members=consumer_members,
                          target_assignment_epoch=generation, target_assignment=target)
    group = replace(group, metadata_hash=group_metadata_hash(group, topics))
    records = [rec.member_metadata(group_id, m) for m in consumer_members.values()]
    records.append(rec.group_epoch(group_id, group.group_epoch, group.metadata_hash))
    records += [rec.target_assignment_member(group_id, mid, target[mid]) for mid in consumer_members]
    records.append(rec.target_assignment_metadata(group_id, generation, 0))
    records += [rec.current_assignment(group_id, m) for m in consumer_members.values()]
    return group, records


def all_classic(group: ConsumerGroup) -> bool:
    return bool(group.members) and all(m.classic is not None for m in group.members.values())


def to_classic(group: ConsumerGroup, topic_names: dict[object, str]) -> list[ClassicMemberImage]:
    """The members of the classic group a consumer group becomes (ClassicGroup.fromConsumerGroup),
    each with its target assignment encoded in its own protocol version."""
    out = []
    for m in group.members.values():
        assert m.classic is not None
        partitions = {topic_names[tid]: parts for tid, parts in by_topic(group.target_of(m.member_id)).items()
                      if tid in topic_names}
        out.append(ClassicMemberImage(m.member_id, m.instance_id, m.client_id, m.client_host, m.rebalance_timeout_ms,
                                      m.classic.session_timeout_ms, m.classic.protocols,
                                      embedded.encode_assignment(partitions, embedded.version_of(m.classic.metadata()))))
    return out
