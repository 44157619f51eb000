"""Pure decisions of the classic group coordinator: (group, request fields, now_ms) -> next group,
the reply, and the answers owed to parked requests.

Mirrors the classic-group paths of Kafka's `GroupMetadataManager.java` (classicGroupJoin,
classicGroupSync, classicGroupHeartbeat, classicGroupLeave, the join/sync/heartbeat timeouts) and
`ClassicGroup.validateOffsetCommit` / `validateOffsetDelete`. No I/O, no clock, no randomness: the
new member id is passed in, time is `now_ms`. Error codes are values.

A `Step` carries the next group value (or None when the group leaves the cache), whether a
GroupMetadata record of it must be persisted before it is applied, and the answers to deliver to
parked JoinGroup / SyncGroup requests once applied.
"""

from __future__ import annotations

import dataclasses
import struct
from typing import Any
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field

from minikafka.coordinator.group.state import Group, GroupEvent, GroupState, Member, OffsetAndMetadata, next_state
from minikafka.protocol.errors import ErrorCode
from minikafka.protocol.types import TopicPartition

CONSUMER_PROTOCOL_TYPE = "consumer"


@dataclass(frozen=True, slots=True, kw_only=True)
class GroupConfig:
    """Broker settings the decisions depend on (Kafka's GroupCoordinatorConfig names)."""

    min_session_timeout_ms: int = 6000
    max_session_timeout_ms: int = 1800000
    initial_rebalance_delay_ms: int = 3000
    max_size: int = 2**31 - 1
    new_member_join_timeout_ms: int = 300000   # Kafka's classicGroupNewMemberJoinTimeoutMs


@dataclass(frozen=True, slots=True, kw_only=True)
class JoinRequest:
    group_id: str
    member_id: str
    group_instance_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    session_timeout_ms: int
    rebalance_timeout_ms: int
    protocol_type: str = CONSUMER_PROTOCOL_TYPE
    protocols: tuple[tuple[str, bytes], ...]
    require_known_member_id: bool = True   # JoinGroup v4+ (KIP-394)
    supports_skip_assignment: bool = True  # JoinGroup v9+ (KIP-814)


@dataclass(frozen=True, slots=True, kw_only=True)
class JoinResult:
    error: ErrorCode
    member_id: str = ""
    generation_id: int = -1
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader_id: str = ""
    skip_assignment: bool = False
    members: tuple[tuple[str, str | None, bytes], ...] = ()  # (member id, instance id, metadata), leader only


@dataclass(frozen=True, slots=True, kw_only=True)
class SyncRequest:
    group_id: str
    generation_id: int
    member_id: str
    group_instance_id: str | None = None
    protocol_type: str | None = None
    protocol_name: str | None = None
    assignments: Mapping[str, bytes] = field(default_factory=dict)


@dataclass(frozen=True, slots=True, kw_only=True)
class SyncResult:
    error: ErrorCode
    assignment: bytes = b""
    protocol_type: str | None = None
    protocol_name: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Step:
    group: Group | None
    persist: bool = False
    joins: Mapping[str, JoinResult] = field(default_factory=dict)
    syncs: Mapping[str, SyncResult] = field(default_factory=dict)


@dataclass(frozen=True, slots=True, kw_only=True)
class JoinDecision:
    step: Step
    reply: JoinResult | None   # None: the request is parked under `member_id`
    member_id: str


@dataclass(frozen=True, slots=True, kw_only=True)
class SyncDecision:
    step: Step
    reply: SyncResult | None   # None: parked until the leader's assignment is stored


class _Draft:
    """A mutable copy of a Group used while one decision is computed; frozen again by `step()`."""

    def __init__(self, group: Group, cfg: GroupConfig, now_ms: int) -> None:
        self.g = group
        self.members: dict[str, Member] = dict(group.members)
        self.pending: dict[str, int] = dict(group.pending_members)
        self.cfg = cfg
        self.now = now_ms
        self.joins: dict[str, JoinResult] = {}
        self.syncs: dict[str, SyncResult] = {}
        self.persist = False

    # -- plumbing
    def set(self, **changes: object) -> None:
        self.g = dataclasses.replace(self.g, **changes)  # type: ignore[arg-type]

    def freeze(self) -> Group:
        self.g = dataclasses.replace(self.g, members=dict(self.members), pending_members=dict(self.pending))
        return self.g

    def step(self) -> Step:
        g = self.freeze()
        return Step(group=None if g.state is GroupState.DEAD else g, persist=self.persist,
                    joins=dict(self.joins), syncs=dict(self.syncs))

    def rebalance_timeout_ms(self) -> int:
        """The group's rebalance timeout: the largest among its (draft) members."""
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0)

    def transition(self, event: GroupEvent) -> None:
        target = next_state(self.g.state, event)
        if target is not self.g.state:
            self.set(state=target, state_timestamp_ms=self.now)

    def update(self, member_id: str, **changes: object) -> Member:
        m = dataclasses.replace(self.members[member_id], **changes)  # type: ignore[arg-type]
        self.members[member_id] = m
        return m

    # -- group operations (Kafka: ClassicGroup + GroupMetadataManager helpers)
    def add_member(self, req: JoinRequest, member_id: str) -> None:
        if self.g.state is GroupState.PREPARING_REBALANCE and self.g.initial_delay_deadline_ms is not None:
            self.set(new_member_added=True)
        self.members[member_id] = Member(
            member_id=member_id, group_instance_id=req.group_instance_id, client_id=req.client_id,
            client_host=req.client_host, rebalance_timeout_ms=req.rebalance_timeout_ms,
            session_timeout_ms=req.session_timeout_ms, protocol_type=req.protocol_type,
            protocols=req.protocols, awaiting_join=True, is_new=True,
            heartbeat_deadline_ms=self.now + self.cfg.new_member_join_timeout_ms)
        if self.g.leader_id is None:
            self.set(leader_id=member_id)
        if not self.g.protocol_type:
            self.set(protocol_type=req.protocol_type)
        self.pending.pop(member_id, None)

    def update_member(self, member_id: str, req: JoinRequest) -> None:
        self.update(member_id, protocols=req.protocols, rebalance_timeout_ms=req.rebalance_timeout_ms,
                    session_timeout_ms=req.session_timeout_ms, awaiting_join=True)

    def remove_member(self, member_id: str, error: ErrorCode) -> None:
        m = self.members.pop(member_id)
        if m.awaiting_join:
            self.joins[member_id] = JoinResult(error=error, member_id=member_id)
        if m.awaiting_sync:
            self.syncs[member_id] = SyncResult(error=error)
        self.set(pending_sync=self.g.pending_sync - {member_id})
        if self.g.leader_id == member_id:
            self.set(leader_id=next(iter(self.members), None))

    def rebalance_or_complete_join(self, event: GroupEvent) -> None:
        """Kafka's maybePrepareRebalanceOrCompleteJoin."""
        if self.g.state is GroupState.PREPARING_REBALANCE:
            self.transition(event)
            self.maybe_complete_join()
        elif self.g.state in (GroupState.STABLE, GroupState.COMPLETING_REBALANCE, GroupState.EMPTY):
            self.prepare_rebalance(event)

    def prepare_rebalance(self, event: GroupEvent) -> None:
        if self.g.state is GroupState.COMPLETING_REBALANCE:
            # The leader may have computed an assignment for the old membership: drop it.
            for mid, m in list(self.members.items()):
                if m.awaiting_sync:
                    self.syncs[mid] = SyncResult(error=ErrorCode.rebalance_in_progress)
                    self.update(mid, awaiting_sync=False)
        was_empty = self.g.state is GroupState.EMPTY
        self.transition(event)
        timeout = self.rebalance_timeout_ms()
        self.set(pending_sync=frozenset(), sync_deadline_ms=None, join_deadline_ms=self.now + timeout,
                 new_member_added=False,
                 initial_delay_deadline_ms=(self.now + min(self.cfg.initial_rebalance_delay_ms, timeout))
                 if was_empty else None)
        if not was_empty:
            self.maybe_complete_join()

    def maybe_complete_join(self, *, timed_out: bool = False) -> None:
        g = self.g
        if g.state is not GroupState.PREPARING_REBALANCE:
            return
        if g.initial_delay_deadline_ms is not None and not timed_out:
            if self.now < g.initial_delay_deadline_ms:
                return
            remaining = (g.join_deadline_ms or self.now) - self.now
            if g.new_member_added and remaining > 0:
                # InitialDelayedJoin: new members keep arriving, wait one more delay.
                self.set(new_member_added=False, initial_delay_deadline_ms=self.now + min(
                    self.cfg.initial_rebalance_delay_ms, remaining))
                return
            self.complete_join()
            return
        members_view = Group(group_id=g.group_id, members=self.members, pending_members=self.pending)
        if timed_out or members_view.all_members_joined():
            self.complete_join()

    def complete_join(self) -> None:
        """Kafka's onCompleteJoin: drop dynamic members that did not rejoin, bump the generation,
        answer every parked JoinGroup (the leader gets everyone's metadata)."""
        for mid, m in list(self.members.items()):
            if not m.awaiting_join and m.group_instance_id is None:
                self.remove_member(mid, ErrorCode.unknown_member_id)
        if not self.members:
            self.set(generation_id=self.g.generation_id + 1, protocol_name=None, leader_id=None,
                     join_deadline_ms=None, initial_delay_deadline_ms=None, new_member_added=False)
            self.transition(GroupEvent.JOIN_COMPLETED_EMPTY)
            self.persist = True
            return
        leader = self.members.get(self.g.leader_id or "")
        if leader is None or not leader.awaiting_join:
            joined = [mid for mid, m in self.members.items() if m.awaiting_join]
            if not joined:
                # Only static members that did not rejoin remain: open another join phase.
                self.set(join_deadline_ms=self.now + self.rebalance_timeout_ms(),
                         initial_delay_deadline_ms=None)
                return
            self.set(leader_id=joined[0])
        self.freeze()
        protocol = self.g.select_protocol()
        generation = self.g.generation_id + 1
        self.set(generation_id=generation, protocol_name=protocol, join_deadline_ms=None,
                 initial_delay_deadline_ms=None, new_member_added=False,
                 pending_sync=frozenset(self.members),
                 sync_deadline_ms=self.now + self.rebalance_timeout_ms())
        self.transition(GroupEvent.JOIN_COMPLETED)
        leader_id = self.g.leader_id or ""
        everyone = tuple((m.member_id, m.group_instance_id, m.metadata_for(protocol))
                         for m in self.members.values())
        for mid, m in list(self.members.items()):
            if m.awaiting_join:
                self.joins[mid] = JoinResult(
                    error=ErrorCode.none, member_id=mid, generation_id=generation,
                    protocol_type=self.g.protocol_type, protocol_name=protocol, leader_id=leader_id,
                    members=everyone if mid == leader_id else ())
            self.update(mid, awaiting_join=False, is_new=False,
                        heartbeat_deadline_ms=self.now + m.session_timeout_ms)

    def current_join_result(self, member_id: str, *, members: bool, skip: bool = False,
                            leader: str | None = None) -> JoinResult:
        g = self.g
        everyone = tuple((m.member_id, m.group_instance_id, m.metadata_for(g.protocol_name))
                         for m in self.members.values()) if members else ()
        return JoinResult(error=ErrorCode.none, member_id=member_id, generation_id=g.generation_id,
                          protocol_type=g.protocol_type, protocol_name=g.protocol_name,
                          leader_id=(g.leader_id or "") if leader is None else leader,
                          skip_assignment=skip, members=everyone)


def validate_member(group: Group, member_id: str, group_instance_id: str | None) -> ErrorCode:
    """Kafka's ClassicGroup.validateMember: static members are checked by instance id first."""
    if group_instance_id is not None:
        existing = group.static_member_id(group_instance_id)
        if existing is None:
            return ErrorCode.unknown_member_id
        if existing != member_id:
            return ErrorCode.fenced_instance_id
        return ErrorCode.none
    return ErrorCode.none if member_id in group.members else ErrorCode.unknown_member_id


def _join_error(code: ErrorCode, member_id: str) -> JoinResult:
    return JoinResult(error=code, member_id=member_id)


def decide_join(group: Group | None, req: JoinRequest, cfg: GroupConfig, now_ms: int,
                new_member_id: str) -> JoinDecision:
    """JoinGroup. `new_member_id` is used when the request has no member id."""
    def reply(code: ErrorCode, g: Group | None = group) -> JoinDecision:
        return JoinDecision(step=Step(group=g), reply=_join_error(code, req.member_id), member_id=req.member_id)

    if not (cfg.min_session_timeout_ms <= req.session_timeout_ms <= cfg.max_session_timeout_ms):
        return reply(ErrorCode.invalid_session_timeout)
    if group is None:
        if req.member_id:
            return reply(ErrorCode.unknown_member_id)
        group = Group(group_id=req.group_id, state=GroupState.EMPTY, state_timestamp_ms=now_ms)
    if group.state is GroupState.DEAD:
        return reply(ErrorCode.coordinator_not_available)
    names = tuple(name for name, _ in req.protocols)
    if not group.supports_protocols(req.protocol_type, names):
        return reply(ErrorCode.inconsistent_group_protocol)
    d = _Draft(group, cfg, now_ms)

    if not req.member_id:
        if req.group_instance_id is not None:
            existing = group.static_member_id(req.group_instance_id)
            if existing is not None:
                return _rejoin_static(d, req, existing, new_member_id)
        elif req.require_known_member_id:
            # KIP-394: hand out an id and have the client come back with it.
            if len(group.members) + len(group.pending_members) >= cfg.max_size:
                return reply(ErrorCode.group_max_size_reached)
            d.pending[new_member_id] = now_ms + req.session_timeout_ms
            return JoinDecision(step=d.step(), member_id=new_member_id,
                                reply=_join_error(ErrorCode.member_id_required, new_member_id))
        if len(group.members) >= cfg.max_size:
            return reply(ErrorCode.group_max_size_reached)
        d.add_member(req, new_member_id)
        d.rebalance_or_complete_join(GroupEvent.MEMBER_JOINED)
        return JoinDecision(step=d.step(), reply=None, member_id=new_member_id)

    if req.member_id in group.pending_members:
        d.add_member(req, req.member_id)
        d.rebalance_or_complete_join(GroupEvent.MEMBER_JOINED)
        return JoinDecision(step=d.step(), reply=None, member_id=req.member_id)
    code = validate_member(group, req.member_id, req.group_instance_id)
    if code is not ErrorCode.none:
        return reply(code)
    member = group.members[req.member_id]
    mid = req.member_id
    state = group.state
    if state is GroupState.PREPARING_REBALANCE:
        d.update_member(mid, req)
        d.rebalance_or_complete_join(GroupEvent.MEMBER_JOINED)
        return JoinDecision(step=d.step(), reply=None, member_id=mid)
    if state is GroupState.COMPLETING_REBALANCE:
        if member.protocols == req.protocols:
            # The member lost its JoinGroup answer: give it the current generation again.
            return JoinDecision(step=Step(group=group), member_id=mid,
                                reply=d.current_join_result(mid, members=mid == group.leader_id))
        d.update_member(mid, req)
        d.prepare_rebalance(GroupEvent.MEMBER_JOINED)
        return JoinDecision(step=d.step(), reply=None, member_id=mid)
    if state is GroupState.STABLE:
        if mid == group.leader_id or member.protocols != req.protocols:
            # A leader rejoin forces a rebalance (it may have seen metadata changes).
            d.update_member(mid, req)
            d.prepare_rebalance(GroupEvent.MEMBER_JOINED)
            return JoinDecision(step=d.step(), reply=None, member_id=mid)
        return JoinDecision(step=Step(group=group), member_id=mid,
                            reply=d.current_join_result(mid, members=False))
    return reply(ErrorCode.unknown_member_id)  # EMPTY: the member must reset and rejoin


def _rejoin_static(d: _Draft, req: JoinRequest, old_id: str, new_id: str) -> JoinDecision:
    """A known group.instance.id with an unknown member id (a restarted static member): the new
    member id replaces the old one; in Stable without a protocol change there is no rebalance
    (KIP-345), only the GroupMetadata record with the new id is persisted."""
    group = d.g
    previous_leader = group.leader_id or ""
    old = d.members.pop(old_id)
    if old.awaiting_join:
        d.joins[old_id] = JoinResult(error=ErrorCode.fenced_instance_id, member_id=old_id)
    if old.awaiting_sync:
        d.syncs[old_id] = SyncResult(error=ErrorCode.fenced_instance_id)
    d.members[new_id] = dataclasses.replace(
        old, member_id=new_id, protocols=req.protocols, rebalance_timeout_ms=req.rebalance_timeout_ms,
        session_timeout_ms=req.session_timeout_ms, client_id=req.client_id, client_host=req.client_host,
        awaiting_sync=False, heartbeat_deadline_ms=d.now + req.session_timeout_ms)
    if group.leader_id == old_id:
        d.set(leader_id=new_id)
    if old_id in group.pending_sync:
        d.set(pending_sync=(group.pending_sync - {old_id}) | {new_id})
    if group.state is GroupState.STABLE:
        d.freeze()
        if d.g.select_protocol() == group.protocol_name:
            d.persist = True
            is_leader = d.g.leader_id == new_id
            if req.supports_skip_assignment:
                result = d.current_join_result(new_id, members=is_leader, skip=is_leader)
            else:
                result = d.current_join_result(new_id, members=False, leader=previous_leader)
            return JoinDecision(step=d.step(), reply=result, member_id=new_id)
        d.update(new_id, awaiting_join=True)
        d.prepare_rebalance(GroupEvent.MEMBER_JOINED)
        return JoinDecision(step=d.step(), reply=None, member_id=new_id)
    d.update(new_id, awaiting_join=True)
    if group.state is GroupState.COMPLETING_REBALANCE:
        d.prepare_rebalance(GroupEvent.MEMBER_JOINED)
    else:
        d.maybe_complete_join()
    return JoinDecision(step=d.step(), reply=None, member_id=new_id)


def decide_sync(group: Group | None, req: SyncRequest, cfg: GroupConfig, now_ms: int) -> SyncDecision:
    """SyncGroup. The leader's request stores the assignment (persist) and answers everyone."""
    def reply(code: ErrorCode) -> SyncDecision:
        return SyncDecision(step=Step(group=group), reply=SyncResult(error=code))

    if group is None:
        return reply(ErrorCode.unknown_member_id)
    if group.state is GroupState.DEAD:
        return reply(ErrorCode.coordinator_not_available)
    code = validate_member(group, req.member_id, req.group_instance_id)
    if code is not ErrorCode.none:
        return reply(code)
    if req.generation_id != group.generation_id:
        return reply(ErrorCode.illegal_generation)
    if (req.protocol_type is not None and req.protocol_type != group.protocol_type) or \
            (req.protocol_name is not None and req.protocol_name != group.protocol_name):
        return reply(ErrorCode.inconsistent_group_protocol)
    if group.state is GroupState.EMPTY:
        return reply(ErrorCode.unknown_member_id)
    if group.state is GroupState.PREPARING_REBALANCE:
        return reply(ErrorCode.rebalance_in_progress)
    d = _Draft(group, cfg, now_ms)
    mid = req.member_id
    pending_sync = group.pending_sync - {mid}
    d.set(pending_sync=pending_sync, sync_deadline_ms=group.sync_deadline_ms if pending_sync else None)
    if group.state is GroupState.STABLE:
        m = group.members[mid]
        return SyncDecision(step=d.step(), reply=SyncResult(
            error=ErrorCode.none, assignment=m.assignment, protocol_type=group.protocol_type,
            protocol_name=group.protocol_name))
    d.update(mid, awaiting_sync=True)
    if mid == group.leader_id:
        for other, m in list(d.members.items()):
            assignment = req.assignments.get(other, b"")
            d.update(other, assignment=assignment)
            if m.awaiting_sync or other == mid:
                d.syncs[other] = SyncResult(error=ErrorCode.none, assignment=assignment,
                                            protocol_type=group.protocol_type, protocol_name=group.protocol_name)
                d.update(other, awaiting_sync=False)
        d.transition(GroupEvent.ASSIGNMENT_STORED)
        d.persist = True
    return SyncDecision(step=d.step(), reply=None)


def decide_heartbeat(group: Group | None, member_id: str, group_instance_id: str | None,
                     generation_id: int, now_ms: int) -> tuple[Group | None, ErrorCode]:
    if group is None:
        return None, ErrorCode.unknown_member_id
    if group.state is GroupState.DEAD:
        return group, ErrorCode.coordinator_not_available
    code = validate_member(group, member_id, group_instance_id)
    if code is not ErrorCode.none:
        return group, code
    if generation_id != group.generation_id:
        return group, ErrorCode.illegal_generation
    if group.state is GroupState.EMPTY:
        return group, ErrorCode.unknown_member_id
    m = group.members[member_id]
    members = dict(group.members)
    members[member_id] = dataclasses.replace(m, heartbeat_deadline_ms=now_ms + m.session_timeout_ms)
    updated = dataclasses.replace(group, members=members)
    if group.state is GroupState.PREPARING_REBALANCE:
        return updated, ErrorCode.rebalance_in_progress
    return updated, ErrorCode.none


def decide_leave(group: Group | None, leaving: Iterable[tuple[str, str | None]], cfg: GroupConfig,
                 now_ms: int) -> tuple[Step, ErrorCode, list[ErrorCode]]:
    """LeaveGroup (v3+ batches members; an empty member id with an instance id names a static
    member, as the admin client's removeMembersFromConsumerGroup does)."""
    leaving = list(leaving)
    if group is None:
        return Step(group=None), ErrorCode.unknown_member_id, [ErrorCode.unknown_member_id] * len(leaving)
    if group.state is GroupState.DEAD:
        return Step(group=group), ErrorCode.coordinator_not_available, []
    d = _Draft(group, cfg, now_ms)
    codes: list[ErrorCode] = []
    removed_member = removed_pending = False
    for member_id, instance_id in leaving:
        if instance_id is not None:
            current = Group(group_id=group.group_id, members=d.members)
            if member_id:
                code = validate_member(current, member_id, instance_id)
                target = member_id if code is ErrorCode.none else None
            else:
                target = current.static_member_id(instance_id)
                code = ErrorCode.none if target is not None else ErrorCode.unknown_member_id
            if target is None:
                codes.append(code)
                continue
            d.remove_member(target, ErrorCode.unknown_member_id)
            removed_member = True
        elif member_id in d.pending:
            del d.pending[member_id]
            removed_pending = True
        elif member_id in d.members:
            d.remove_member(member_id, ErrorCode.unknown_member_id)
            removed_member = True
        else:
            codes.append(ErrorCode.unknown_member_id)
            continue
        codes.append(ErrorCode.none)
    if removed_member:
        d.rebalance_or_complete_join(GroupEvent.MEMBER_REMOVED)
    elif removed_pending:
        d.maybe_complete_join()
    return d.step(), ErrorCode.none, codes


def next_deadline(group: Group) -> int | None:
    """The earliest time `expire` has something to do for this group."""
    times: list[int] = list(group.pending_members.values())
    for m in group.members.values():
        if m.is_new or not (m.awaiting_join or m.awaiting_sync):
            times.append(m.heartbeat_deadline_ms)
    if group.state is GroupState.PREPARING_REBALANCE:
        for t in (group.join_deadline_ms, group.initial_delay_deadline_ms):
            if t is not None:
                times.append(t)
    if group.pending_sync and group.sync_deadline_ms is not None:
        times.append(group.sync_deadline_ms)
    return min(times, default=None)


def expire(group: Group, cfg: GroupConfig, now_ms: int) -> Step | None:
    """Session timeouts, the join and initial-delay deadlines and the pending-sync deadline.
    Returns None when nothing is due."""
    due = next_deadline(group)
    if due is None or due > now_ms:
        return None
    d = _Draft(group, cfg, now_ms)
    removed = False
    for mid, deadline in list(d.pending.items()):
        if deadline <= now_ms:   # MEMBER_ID_REQUIRED issued, never came back
            del d.pending[mid]
    for mid, m in list(d.members.items()):
        if (m.is_new or not (m.awaiting_join or m.awaiting_sync)) and m.heartbeat_deadline_ms <= now_ms:
            d.remove_member(mid, ErrorCode.unknown_member_id)
            removed = True
    if d.g.pending_sync and d.g.sync_deadline_ms is not None and d.g.sync_deadline_ms <= now_ms \
            and d.g.state in (GroupState.COMPLETING_REBALANCE, GroupState.STABLE):
        for mid in list(d.g.pending_sync):
            if mid in d.members:
                d.remove_member(mid, ErrorCode.rebalance_in_progress)
                removed = True
        d.set(pending_sync=frozenset(), sync_deadline_ms=None)
    if removed:
        d.rebalance_or_complete_join(GroupEvent.MEMBER_REMOVED)
    if d.g.state is GroupState.PREPARING_REBALANCE:
        jd = d.g.join_deadline_ms
        d.maybe_complete_join(timed_out=jd is not None and jd <= now_ms)
    return d.step()


def validate_offset_commit(group: Group | None, member_id: str, group_instance_id: str | None,
                           generation_id: int) -> ErrorCode:
    """Kafka's ClassicGroup.validateOffsetCommit (non-transactional). A missing group is created
    by the caller when this returns none for it (simple consumers, admin clients)."""
    if group is None:
        return ErrorCode.none if generation_id < 0 else ErrorCode.illegal_generation
    if group.state is GroupState.DEAD:
        return ErrorCode.coordinator_not_available
    if generation_id < 0 and group.state is GroupState.EMPTY:
        return ErrorCode.none
    if generation_id >= 0 or member_id or group_instance_id is not None:
        code = validate_member(group, member_id, group_instance_id)
        if code is not ErrorCode.none:
            return code
        if generation_id != group.generation_id:
            return ErrorCode.illegal_generation
    elif group.state is not GroupState.EMPTY:
        return ErrorCode.unknown_member_id
    if group.state is GroupState.COMPLETING_REBALANCE:
        return ErrorCode.rebalance_in_progress
    return ErrorCode.none


def validate_txn_offset_commit(group: Group | None, member_id: str, group_instance_id: str | None,
                               generation_id: int) -> ErrorCode:
    """Kafka's GroupCoordinator.doTxnCommitOffsets (KIP-447): member id and generation are checked
    only when the client sends them, so a producer with group-id-only metadata may commit."""
    if group is None:
        return ErrorCode.none
    if group.state is GroupState.DEAD:
        return ErrorCode.coordinator_not_available
    if group_instance_id is not None:
        static = group.static_member_id(group_instance_id)
        if static is not None and static != member_id:
            return ErrorCode.fenced_instance_id
    if member_id and member_id not in group.members:
        return ErrorCode.unknown_member_id
    if generation_id >= 0 and generation_id != group.generation_id:
        return ErrorCode.illegal_generation
    return ErrorCode.none


def decide_delete(group: Group | None) -> ErrorCode:
    """DeleteGroups: only an Empty group can be deleted."""
    if group is None or group.state is GroupState.DEAD:
        return ErrorCode.group_id_not_found
    if group.state is not GroupState.EMPTY:
        return ErrorCode.non_empty_group
    return ErrorCode.none


def subscribed_topics(group: Group) -> frozenset[str] | None:
    """Topics the members subscribe to, from ConsumerProtocolSubscription (version int16, topics
    [string], ...). None when the group does not use the consumer protocol."""
    if group.protocol_type != CONSUMER_PROTOCOL_TYPE or group.protocol_name is None:
        return None
    topics: set[str] = set()
    for m in group.members.values():
        meta = m.metadata_for(group.protocol_name)
        try:
            (n,) = struct.unpack_from(">i", meta, 2)
            pos = 6
            for _ in range(max(n, 0)):
                (length,) = struct.unpack_from(">h", meta, pos)
                pos += 2
                topics.add(meta[pos : pos + length].decode())
                pos += length
        except (struct.error, UnicodeDecodeError):
            return None
    return frozenset(topics)


def decide_offset_delete(group: Group | None, topics: Iterable[str]) -> tuple[ErrorCode, dict[str, ErrorCode]]:
    """OffsetDelete (KIP-496): an Empty group may drop any offset; a consumer group only offsets
    of topics none of its members subscribes to."""
    if group is None or group.state is GroupState.DEAD:
        return ErrorCode.group_id_not_found, {}
    if group.state is GroupState.EMPTY:
        return ErrorCode.none, {t: ErrorCode.none for t in topics}
    subscribed = subscribed_topics(group)
    if subscribed is None:
        return ErrorCode.non_empty_group, {}
    return ErrorCode.none, {t: ErrorCode.group_subscribed_to_topic if t in subscribed else ErrorCode.none
                            for t in topics}


def expired_offsets(group: Group | None, offsets: Mapping[TopicPartition, OffsetAndMetadata],
                    now_ms: int, retention_ms: int,
                    pending: Collection[TopicPartition] = ()) -> list[TopicPartition]:
    """offsets.retention.minutes (KIP-211): offsets of an Empty group expire `retention_ms` after
    the group became empty (or after their commit, for groups that never had members); an explicit
    expire timestamp (OffsetCommit v1 style) wins. Groups with members keep their offsets, and so
    does a partition with a pending transactional offset (Kafka waits for the transaction)."""
    if group is not None and group.state is not GroupState.EMPTY:
        return []
    out = []
    for tp, om in offsets.items():
        if tp in pending:
            continue
        if om.expire_timestamp_ms is not None:
            if now_ms >= om.expire_timestamp_ms:
                out.append(tp)
            continue
        base = om.commit_timestamp_ms
        if group is not None and group.protocol_type and group.state_timestamp_ms >= 0:
            base = group.state_timestamp_ms
        if now_ms - base >= retention_ms:
            out.append(tp)
    return out


def group_from_consumer_group(group_id: str, generation: int, members: Iterable[Any], now_ms: int) -> Group:
    """Kafka's ClassicGroup.fromConsumerGroup: the classic group a consumer group whose members all
    speak the classic protocol becomes. Stable at the group epoch, its members' assignments their
    target assignments, the leader the first member, the protocol the one they vote for; their
    sessions start now."""
    classic_members = {
        m.member_id: Member(member_id=m.member_id, group_instance_id=m.instance_id, client_id=m.client_id,
                            client_host=m.client_host, rebalance_timeout_ms=m.rebalance_timeout_ms,
                            session_timeout_ms=m.session_timeout_ms, protocol_type=CONSUMER_PROTOCOL_TYPE,
                            protocols=m.protocols, assignment=m.assignment,
                            heartbeat_deadline_ms=now_ms + m.session_timeout_ms)
        for m in members}
    group = Group(group_id=group_id, state=GroupState.STABLE, generation_id=generation,
                  protocol_type=CONSUMER_PROTOCOL_TYPE, leader_id=next(iter(classic_members), None),
                  members=classic_members, state_timestamp_ms=now_ms)
    return dataclasses.replace(group, protocol_name=group.select_protocol())


def prepare_rebalance(group: Group, cfg: GroupConfig, now_ms: int) -> Group:
    """Open a join phase (the members are told REBALANCE_IN_PROGRESS on their next heartbeat)."""
    d = _Draft(group, cfg, now_ms)
    d.prepare_rebalance(GroupEvent.MEMBER_REMOVED)
    return d.freeze()
