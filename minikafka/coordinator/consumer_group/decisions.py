"""Pure decisions of the consumer protocol (KIP-848): (group, request, topics, now_ms) -> the next
group value, the `__consumer_offsets` records that make it durable, and the reply.

Mirrors Kafka 4.3's `GroupCoordinatorService.throwIfConsumerGroupHeartbeatRequestIsInvalid` and
`GroupMetadataManager.consumerGroupHeartbeat` / `consumerGroupLeave` / the session and rebalance
timeouts, with the same error codes and messages. A heartbeat, in order:

1. validate the request (INVALID_REQUEST, UNSUPPORTED_ASSIGNOR);
2. find the group (a first heartbeat, epoch 0, creates it) and the member: a new one, a static
   member taking over the instance id a previous incarnation released (epoch -2), or an existing
   one whose epoch must be its current or, after a lost answer, its previous one;
3. update the member from the non-null fields; a changed subscription, a newly resolved regex or a
   change of the subscribed topics' ids and partitions (the metadata hash) bumps the group epoch;
4. a group epoch ahead of the target assignment gets a new target from the assignor (at most once
   per `group.consumer.assignment.interval.ms`);
5. reconcile the member one step toward its target (reconcile.py);
6. answer with the member's epoch and, when it changed or the request was a full one, its
   assignment.

No I/O, no clock, no randomness: topics and time are passed in, a new member id too.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Final

from minikafka.coordinator.consumer_group import records as rec
from minikafka.coordinator.consumer_group.assignors import ASSIGNORS
from minikafka.coordinator.consumer_group.reconcile import UnknownMemberState, reconcile
from minikafka.coordinator.consumer_group.state import (
    JOIN_GROUP_MEMBER_EPOCH,
    LEAVE_GROUP_MEMBER_EPOCH,
    LEAVE_GROUP_STATIC_MEMBER_EPOCH,
    Assignment,
    ConsumerGroup,
    ConsumerGroupMember,
    MemberState,
)
from minikafka.coordinator.group_room import GroupDraft, DecisionError as _Error, blank as _blank
from minikafka.coordinator.metadata_hash import topics_hash
from minikafka.protocol.errors import ErrorCode

# topic name -> (topic id, partitions): the broker's topics, as the coordinator sees them
Topics = Mapping[str, tuple[uuid.UUID, int]]

CONSUMER_GENERATED_MEMBER_ID_REQUIRED_VERSION: Final = 1  # ConsumerGroupHeartbeat v1 (KIP-1082)
REGEX_BATCH_REFRESH_MIN_INTERVAL_MS: Final = 10_000       # GroupMetadataManager's constant


@dataclass(frozen=True, slots=True, kw_only=True)
class ConsumerGroupConfig:
    """Kafka's GroupCoordinatorConfig names: group.consumer.*."""

    session_timeout_ms: int = 45_000
    heartbeat_interval_ms: int = 5_000
    max_size: int = 2**31 - 1
    assignors: tuple[str, ...] = ("uniform", "range")
    assignment_interval_ms: int = 1_000
    migration_policy: str = "bidirectional"   # group.consumer.migration.policy (lower case)


@dataclass(frozen=True, slots=True, kw_only=True)
class HeartbeatRequest:
    group_id: str
    member_id: str
    member_epoch: int
    instance_id: str | None = None
    rack_id: str | None = None
    rebalance_timeout_ms: int = -1
    subscribed_topic_names: tuple[str, ...] | None = None
    subscribed_topic_regex: str | None = None
    server_assignor: str | None = None
    owned: Assignment | None = None    # TopicPartitions; None = unchanged since the last heartbeat
    client_id: str = ""
    client_host: str = ""
    api_version: int = 1


@dataclass(frozen=True, slots=True, kw_only=True)
class HeartbeatReply:
    error: ErrorCode = ErrorCode.none
    message: str | None = None
    member_id: str | None = None
    member_epoch: int = 0
    heartbeat_interval_ms: int = 0
    assignment: Assignment | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Outcome:
    """`group` is the next value (None: nothing changes); `records` make it durable and are
    written, as one batch, before it is applied and before the reply is sent."""

    reply: HeartbeatReply
    group: ConsumerGroup | None = None
    records: tuple[rec.Record, ...] = ()


def _fail(code: ErrorCode, message: str | None) -> Outcome:
    return Outcome(reply=HeartbeatReply(error=code, message=message))


# ------------------------------------------------------------------------------------- validation
def validate(req: HeartbeatRequest, cfg: ConsumerGroupConfig) -> _Error | None:
    """GroupCoordinatorService.throwIfConsumerGroupHeartbeatRequestIsInvalid, check for check."""
    invalid = ErrorCode.invalid_request
    if (req.api_version >= CONSUMER_GENERATED_MEMBER_ID_REQUIRED_VERSION or req.member_epoch > 0
            or req.member_epoch == LEAVE_GROUP_MEMBER_EPOCH) and _blank(req.member_id):
        return _Error(invalid, "MemberId can't be empty.")
    if _blank(req.group_id):
        return _Error(invalid, "GroupId can't be empty.")
    if _blank(req.instance_id):
        return _Error(invalid, "InstanceId can't be empty.")
    if _blank(req.rack_id):
        return _Error(invalid, "RackId can't be empty.")
    if req.member_epoch == JOIN_GROUP_MEMBER_EPOCH:
        if req.rebalance_timeout_ms == -1:
            return _Error(invalid, "RebalanceTimeoutMs must be provided in first request.")
        if req.owned is None or req.owned:
            return _Error(invalid, "TopicPartitions must be empty when (re-)joining.")
        if req.subscribed_topic_names is None and req.subscribed_topic_regex is None:
            return _Error(invalid, "Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when "
                                   "(re-)joining.")
    elif req.member_epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
        if req.instance_id is None:
            return _Error(invalid, "InstanceId can't be null.")
    elif req.member_epoch < LEAVE_GROUP_STATIC_MEMBER_EPOCH:
        return _Error(invalid, "MemberEpoch is invalid.")
    if req.server_assignor is not None and req.server_assignor not in cfg.assignors:
        return _Error(ErrorCode.unsupported_assignor,
                      f"ServerAssignor {req.server_assignor} is not supported. Supported assignors: "
                      f"{', '.join(cfg.assignors)}.")
    return None


def resolve_regex(regex: str, topics: Topics) -> frozenset[str]:
    """The topics a regex matches whole. Kafka compiles with RE2/J; Python's `re` accepts the same
    syntax for the patterns topic subscriptions use (classes, alternation, repetition, anchors).
    Raises _Error (INVALID_REGULAR_EXPRESSION) for one that does not compile."""
    try:
        compiled = re.compile(regex)
    except re.error as exc:
        raise _Error(ErrorCode.invalid_regular_expression,
                     f"SubscribedTopicRegex `{regex}` is not a valid regular expression: {exc.msg}.") from None
    return frozenset(name for name in topics if compiled.fullmatch(name))


# ------------------------------------------------------------------------------------- heartbeat
def decide_heartbeat(group: ConsumerGroup | None, req: HeartbeatRequest, cfg: ConsumerGroupConfig, topics: Topics,
                     now_ms: int, new_member_id: str) -> Outcome:
    error = validate(req, cfg)
    if error is not None:
        return _fail(error.code, error.message)
    try:
        if req.member_epoch in (LEAVE_GROUP_MEMBER_EPOCH, LEAVE_GROUP_STATIC_MEMBER_EPOCH):
            return _leave(group, req, topics)
        return _heartbeat(group, req, cfg, topics, now_ms, new_member_id)
    except _Error as exc:
        return _fail(exc.code, exc.message)


def _member_or_fail(group: ConsumerGroup, member_id: str) -> ConsumerGroupMember:
    member = group.members.get(member_id)
    if member is None:
        raise _Error(ErrorCode.unknown_member_id, f"Member {member_id} is not a member of group {group.group_id}.")
    return member


def _check_epoch(member: ConsumerGroupMember, received: int, owned: Assignment | None) -> None:
    """Kafka's throwIfConsumerGroupMemberEpochIsInvalid: 0 rejoins; the previous epoch is accepted
    from a member that missed the answer which bumped it (its owned partitions show it)."""
    if received == JOIN_GROUP_MEMBER_EPOCH:
        return
    if received > member.member_epoch:
        raise _Error(ErrorCode.fenced_member_epoch,
                     f"The consumer group member has a greater member epoch ({received}) than the one known by the "
                     f"group coordinator ({member.member_epoch}). The member must abandon all its partitions and "
                     f"rejoin.")
    if received < member.member_epoch and (received != member.previous_member_epoch or owned is None
                                           or not owned <= member.assigned):
        raise _Error(ErrorCode.fenced_member_epoch,
                     f"The consumer group member has a smaller member epoch ({received}) than the one known by the "
                     f"group coordinator ({member.member_epoch}). The member must abandon all its partitions and "
                     f"rejoin.")


def _static_member(group: ConsumerGroup, instance_id: str) -> ConsumerGroupMember | None:
    mid = group.static_member_id(instance_id)
    return None if mid is None else group.members[mid]


def fenced_instance_message(member_id: str, instance_id: str, owner: str) -> str:
    """FENCED_INSTANCE_ID's message (Kafka's throwIfInstanceIdIsFenced), for every protocol."""
    return f"Static member {member_id} with instance id {instance_id} was fenced by member {owner}."


def _fence_static(member: ConsumerGroupMember | None, group_id: str, member_id: str, instance_id: str) -> ConsumerGroupMember:
    if member is None:
        raise _Error(ErrorCode.unknown_member_id, f"Instance id {instance_id} is unknown.")
    if member.member_id != member_id:
        raise _Error(ErrorCode.fenced_instance_id, fenced_instance_message(member_id, instance_id, member.member_id))
    return member


class _Draft(GroupDraft[ConsumerGroup]):
    def member_tombstones(self, group_id: str, member_id: str) -> list[rec.Record]:
        return [rec.current_assignment_tombstone(group_id, member_id),
                rec.target_assignment_member_tombstone(group_id, member_id),
                rec.member_metadata_tombstone(group_id, member_id)]

    def put_metadata(self, before: ConsumerGroupMember, updated: ConsumerGroupMember) -> bool:
        """The member with what its request told (a MemberMetadata record when that changed, or
        when it is new); True when its subscribed topic names changed (Kafka's
        hasMemberSubscriptionChanged, which bumps the group epoch)."""
        names_changed = False
        if updated.member_id not in self.group.members or updated.metadata_key() != before.metadata_key():
            self.records.append(rec.member_metadata(self.group.group_id, updated))
            names_changed = updated.subscribed_topic_names != before.subscribed_topic_names
        self.put_member(updated)
        return names_changed

    def bump_epoch(self, bump: bool, topics: Topics) -> None:
        """A new group epoch when asked, or when the subscribed topics' metadata hash changed."""
        metadata_hash = group_metadata_hash(self.group, topics)
        if bump or metadata_hash != self.group.metadata_hash:
            epoch = self.group.group_epoch + 1
            self.records.append(rec.group_epoch(self.group.group_id, epoch, metadata_hash))
            self.group = replace(self.group, group_epoch=epoch, metadata_hash=metadata_hash)

    def replace_static(self, existing: ConsumerGroupMember, member_id: str) -> ConsumerGroupMember:
        """Kafka's replaceMember: a new incarnation of a static member (a new member id, epoch 0)
        takes over the old one's assignment and target, so its return causes no rebalance."""
        gid = self.group.group_id
        member = replace(existing, member_id=member_id, member_epoch=0, previous_member_epoch=0,
                         rebalance_deadline_ms=None)
        old_target = self.group.target_of(existing.member_id)
        self.remove_member(existing.member_id)
        self.records += [rec.member_metadata(gid, member), rec.target_assignment_member(gid, member_id, old_target),
                         rec.current_assignment(gid, member)]
        self.put_member(member)
        self.group = replace(self.group, target_assignment={**self.group.target_assignment, member_id: old_target})
        return member


def _heartbeat(group: ConsumerGroup | None, req: HeartbeatRequest, cfg: ConsumerGroupConfig, topics: Topics,
               now_ms: int, new_member_id: str) -> Outcome:
    gid = req.group_id
    joining = req.member_epoch == JOIN_GROUP_MEMBER_EPOCH
    if group is None:
        if not joining:
            raise _Error(ErrorCode.group_id_not_found, f"Consumer group {gid} not found.")
        group = ConsumerGroup(group_id=gid)
    static_known = req.instance_id is not None and group.static_member_id(req.instance_id) is not None
    if (len(group.members) >= cfg.max_size and not static_known
            and (not req.member_id or req.member_id not in group.members)):
        raise _Error(ErrorCode.group_max_size_reached,
                     f"The consumer group has reached its maximum capacity of {cfg.max_size} members.")
    member_id = req.member_id or new_member_id  # v0 lets the coordinator choose
    d = _Draft(group)

    # 2. the member
    if req.instance_id is None:
        member = group.members.get(member_id)
        if member is None:
            if not joining:
                _member_or_fail(group, member_id)
            member = ConsumerGroupMember(member_id=member_id)
        _check_epoch(member, req.member_epoch, req.owned)
    else:
        existing = _static_member(group, req.instance_id)
        if joining:
            if existing is None:
                member = group.members.get(member_id) or ConsumerGroupMember(member_id=member_id)
            else:
                # The instance id must have been released (epoch -2); a classic member's is taken
                # over at once, as a classic rejoin would.
                if existing.member_epoch != LEAVE_GROUP_STATIC_MEMBER_EPOCH and existing.classic is None:
                    raise _Error(ErrorCode.unreleased_instance_id,
                                 f"Static member {member_id} with instance id {req.instance_id} cannot join the "
                                 f"group because the instance id is owned by {existing.member_id} member.")
                member = d.replace_static(existing, member_id)
        else:
            member = _fence_static(existing, gid, member_id, req.instance_id)
            _check_epoch(member, req.member_epoch, req.owned)

    # 3. the member's new metadata; what bumps the group epoch
    updated = replace(
        member,
        instance_id=req.instance_id if req.instance_id is not None else member.instance_id,
        rack_id=req.rack_id if req.rack_id is not None else member.rack_id,
        rebalance_timeout_ms=req.rebalance_timeout_ms if req.rebalance_timeout_ms != -1 else member.rebalance_timeout_ms,
        server_assignor=req.server_assignor if req.server_assignor is not None else member.server_assignor,
        subscribed_topic_names=(tuple(sorted(set(req.subscribed_topic_names))) if req.subscribed_topic_names is not None
                                else member.subscribed_topic_names),
        subscribed_topic_regex=(req.subscribed_topic_regex or None) if req.subscribed_topic_regex is not None
        else member.subscribed_topic_regex,
        client_id=req.client_id, client_host=req.client_host, classic=None)
    names_changed = d.put_metadata(member, updated)
    regex_changed = updated.subscribed_topic_regex != member.subscribed_topic_regex
    bump = names_changed
    if regex_changed:  # resolved at once, so the change counts as one (Kafka: REGEX_UPDATED_AND_RESOLVED)
        _update_regexes(d, member.subscribed_topic_regex, updated.subscribed_topic_regex, topics, now_ms)
        bump = True
    bump |= _refresh_regexes(d, topics, now_ms)
    subscription_changed = names_changed or regex_changed
    d.bump_epoch(bump, topics)

    # 4. a new target assignment
    _maybe_assign(d, topics, cfg, now_ms)

    # 5. reconcile the member
    updated = d.group.members[member_id]
    reconciled = _reconcile(d.group, updated, req.owned, topics, subscription_changed)
    if reconciled.assignment_key() != updated.assignment_key():
        d.records.append(rec.current_assignment(gid, reconciled))
        if reconciled.state is MemberState.UNREVOKED_PARTITIONS:
            reconciled = replace(reconciled, rebalance_deadline_ms=now_ms + reconciled.rebalance_timeout_ms)
        else:
            reconciled = replace(reconciled, rebalance_deadline_ms=None)
    reconciled = replace(reconciled, session_deadline_ms=now_ms + cfg.session_timeout_ms)
    d.put_member(reconciled)

    # 6. the answer
    full = (req.rebalance_timeout_ms != -1 and req.owned is not None
            and (req.subscribed_topic_names is not None or req.subscribed_topic_regex is not None))
    changed = (reconciled.assigned != member.assigned
               or {tp: reconciled.assignment_epochs.get(tp) for tp in reconciled.assigned}
               != {tp: member.assignment_epochs.get(tp) for tp in member.assigned})
    reply = HeartbeatReply(member_id=member_id, member_epoch=reconciled.member_epoch,
                           heartbeat_interval_ms=cfg.heartbeat_interval_ms,
                           assignment=reconciled.assigned if joining or full or changed else None)
    return Outcome(reply=reply, group=d.group, records=tuple(d.records))


def _subscribed_metadata(group: ConsumerGroup, topics: Topics) -> dict[str, tuple[uuid.UUID, int]]:
    return {name: topics[name] for name in group.subscribed_topic_names() if name in topics}


def group_metadata_hash(group: ConsumerGroup, topics: Topics) -> int:
    """ConsumerGroupMetadataValue.MetadataHash of the topics the group subscribes to now."""
    return topics_hash(group.subscribed_topic_names(), topics)


def _regex_subscribers(group: ConsumerGroup, regex: str) -> int:
    return sum(1 for m in group.members.values() if m.subscribed_topic_regex == regex)


def _update_regexes(d: _Draft, old: str | None, new: str | None, topics: Topics, now_ms: int) -> None:
    """The member changed its regex (the draft already has the new one). A regex nobody uses any
    more is dropped; a new one is resolved at once (Kafka resolves in the background and bumps the
    epoch when done: the result is the same, one step sooner)."""
    gid = d.group.group_id
    resolved = dict(d.group.resolved_regexes)
    if old and _regex_subscribers(d.group, old) == 0 and old in resolved:
        d.records.append(rec.regular_expression_tombstone(gid, old))
        del resolved[old]
    if new and new not in resolved:
        resolved[new] = resolve_regex(new, topics)
        d.records.append(rec.regular_expression(gid, new, resolved[new], 0, now_ms))
    d.group = replace(d.group, resolved_regexes=resolved, regex_refreshed_ms=now_ms if new else d.group.regex_refreshed_ms)


def _refresh_regexes(d: _Draft, topics: Topics, now_ms: int) -> bool:
    """Topics created or deleted since the last resolution change what a regex matches; Kafka
    re-resolves the group's regexes at most every 10 s. True when a resolution changed."""
    group = d.group
    if not group.resolved_regexes or now_ms <= group.regex_refreshed_ms + REGEX_BATCH_REFRESH_MIN_INTERVAL_MS:
        return False
    resolved = {regex: _resolve_known(regex, topics) for regex in group.resolved_regexes}
    changed = [regex for regex, names in resolved.items() if names != group.resolved_regexes[regex]]
    for regex in changed:
        d.records.append(rec.regular_expression(group.group_id, regex, resolved[regex], 0, now_ms))
    d.group = replace(group, resolved_regexes=resolved, regex_refreshed_ms=now_ms)
    return bool(changed)


def _resolve_known(regex: str, topics: Topics) -> frozenset[str]:
    """A regex already in the group (checked when it came, or replayed from a Kafka data dir in
    RE2/J syntax Python lacks): one that does not compile matches nothing, as Kafka's resolver
    skips it."""
    try:
        return resolve_regex(regex, topics)
    except _Error:
        return frozenset()


def preferred_assignor(group: ConsumerGroup, cfg: ConsumerGroupConfig) -> str:
    """The assignor most members ask for (ties: the one listed first in group.consumer.assignors);
    the first of the list when nobody asks."""
    counts: dict[str, int] = {}
    for m in group.members.values():
        if m.server_assignor is not None:
            counts[m.server_assignor] = counts.get(m.server_assignor, 0) + 1
    if not counts:
        return cfg.assignors[0]
    order = {name: i for i, name in enumerate(cfg.assignors)}
    return max(counts, key=lambda name: (counts[name], -order.get(name, len(order))))


def _maybe_assign(d: _Draft, topics: Topics, cfg: ConsumerGroupConfig, now_ms: int) -> None:
    group = d.group
    if group.target_assignment_epoch >= group.group_epoch:
        return
    if (group.assignment_timestamp_ms and cfg.assignment_interval_ms
            and now_ms < group.assignment_timestamp_ms + cfg.assignment_interval_ms):
        return  # group.consumer.assignment.interval.ms: the next heartbeat after it does it
    assignor = ASSIGNORS[preferred_assignor(group, cfg)]
    metadata = _subscribed_metadata(group, topics)
    subscriptions = {mid: frozenset(t for t in group.member_topics(m) if t in metadata)
                     for mid, m in group.members.items()}
    instance_ids = {mid: m.instance_id for mid, m in group.members.items()}
    target = assignor(subscriptions, metadata, group.target_assignment, instance_ids)
    gid = group.group_id
    for mid in sorted(target):
        if mid not in group.target_assignment or group.target_assignment[mid] != target[mid]:
            d.records.append(rec.target_assignment_member(gid, mid, target[mid]))
    d.records.append(rec.target_assignment_metadata(gid, group.group_epoch, now_ms))
    d.group = replace(group, target_assignment=target, target_assignment_epoch=group.group_epoch,
                      assignment_timestamp_ms=now_ms)


def _topic_ids(group: ConsumerGroup, member: ConsumerGroupMember, topics: Topics) -> frozenset[uuid.UUID]:
    return frozenset(topics[name][0] for name in group.member_topics(member) if name in topics)


def _reconcile(group: ConsumerGroup, member: ConsumerGroupMember, owned: Assignment | None, topics: Topics,
               subscription_changed: bool) -> ConsumerGroupMember:
    if (not subscription_changed and member.state is MemberState.STABLE
            and member.member_epoch == group.target_assignment_epoch):
        return member
    owners = group.partition_owners(excluding=member.member_id)
    try:
        return reconcile(member, group.target_assignment_epoch, group.target_of(member.member_id), owners.__contains__,
                         owned, _topic_ids(group, member, topics), subscription_changed)
    except UnknownMemberState as exc:
        raise _Error(ErrorCode.fenced_member_epoch, str(exc)) from None


# ------------------------------------------------------------------------------------- leaving
def fence(group: ConsumerGroup, member_ids: list[str], topics: Topics) -> tuple[ConsumerGroup, list[rec.Record]]:
    """Kafka's consumerGroupFenceMembers: the members' records go, regexes nobody uses any more
    go, and the group epoch is bumped (with the metadata hash of what is left)."""
    d = _Draft(group)
    removed_regexes = {group.members[mid].subscribed_topic_regex for mid in member_ids if mid in group.members}
    for mid in member_ids:
        if mid in d.group.members:
            d.remove_member(mid)
    resolved = dict(d.group.resolved_regexes)
    for regex in sorted(r for r in removed_regexes if r):
        if _regex_subscribers(d.group, regex) == 0 and regex in resolved:
            d.records.append(rec.regular_expression_tombstone(group.group_id, regex))
            del resolved[regex]
    d.group = replace(d.group, resolved_regexes=resolved)
    d.bump_epoch(True, topics)
    return d.group, d.records


def _leave(group: ConsumerGroup | None, req: HeartbeatRequest, topics: Topics) -> Outcome:
    gid = req.group_id
    if group is None:
        raise _Error(ErrorCode.group_id_not_found, f"Group {gid} not found.")
    left = HeartbeatReply(member_id=req.member_id, member_epoch=req.member_epoch)
    if req.instance_id is None:
        member = _member_or_fail(group, req.member_id)
    else:
        member = _fence_static(_static_member(group, req.instance_id), gid, req.member_id, req.instance_id)
        if req.member_epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
            # The instance id is released for a restart: the assignment stays with it (nobody else
            # gets those partitions) until the session times out.
            staying = replace(member, member_epoch=LEAVE_GROUP_STATIC_MEMBER_EPOCH, pending_revocation=frozenset(),
                              assignment_epochs={tp: 0 for tp in member.assigned}, rebalance_deadline_ms=None)
            return Outcome(reply=replace(left, member_id=member.member_id),
                           group=replace(group, members={**group.members, member.member_id: staying}),
                           records=(rec.current_assignment(gid, staying),))
    next_group, records = fence(group, [member.member_id], topics)
    return Outcome(reply=left, group=next_group, records=tuple(records))


# ------------------------------------------------------------------------------------- timers
def next_deadline(group: ConsumerGroup) -> int | None:
    return min((t for m in group.members.values() for t in m.deadlines()), default=None)


def expired_members(group: ConsumerGroup, now_ms: int) -> list[str]:
    """Members whose session timed out, who did not revoke within their rebalance timeout (the
    deadline is cleared as the member leaves UNREVOKED_PARTITIONS), or, classic, did not rejoin
    or sync in time."""
    return sorted(m.member_id for m in group.members.values() if any(now_ms >= t for t in m.deadlines()))
