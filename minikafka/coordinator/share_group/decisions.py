"""Pure decisions of share group membership (KIP-932): (group, request, topics, now_ms) -> the
next group value, the `__consumer_offsets` records that make it durable (types 10-15), the
share-partitions whose state must be initialized first, and the reply.

Mirrors Kafka 4.3's GroupCoordinatorService.throwIfShareGroupHeartbeatRequestIsInvalid and
GroupMetadataManager.shareGroupHeartbeat / shareGroupLeave / the session timeout, with the same
error codes. A heartbeat, in order:

1. validate the request (INVALID_REQUEST);
2. find the group (a first heartbeat, epoch 0, creates it) and the member (a new one on epoch 0;
   otherwise its epoch must be its current or, after a lost answer, its previous one);
3. update the member from the request; a changed subscription or a change of the subscribed
   topics' ids and partitions (the metadata hash) bumps the group epoch;
4. subscribed partitions without share-partition state are initialized (the caller writes their
   state to `__share_group_state` before these records; see `Outcome.to_initialize`);
5. a group epoch ahead of the target assignment gets a new target from the simple assignor, over
   the initialized partitions only;
6. the member takes its target at once (nothing to revoke: partitions are shared) and its epoch
   becomes the target's;
7. the answer carries the assignment when it changed or the member joined.

One difference from Kafka, on purpose: Kafka initializes a new partition's state asynchronously
and assigns it one heartbeat later (the first records of a new group arrive after one heartbeat
interval, 5 s by default); on one node the initialization is a local append, so it happens inside
the heartbeat and the first answer already carries the partitions. The records are Kafka's.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, replace

from minikafka.coordinator.group_room import GroupDraft, DecisionError as _Error, blank as _blank
from minikafka.coordinator.metadata_hash import topics_hash
from minikafka.coordinator.share_group import assignor
from minikafka.coordinator.share_group import records as rec
from minikafka.coordinator.share_group.state import (
    JOIN_GROUP_MEMBER_EPOCH,
    LEAVE_GROUP_MEMBER_EPOCH,
    MEMBER_STATE_STABLE,
    InitializedTopic,
    Partitions,
    ShareGroup,
    ShareGroupMember,
    TopicIdPartition,
    by_topic,
)
from minikafka.protocol.errors import ErrorCode

# topic name -> (topic id, partitions): the broker's topics, as the coordinator sees them
Topics = Mapping[str, tuple[uuid.UUID, int]]


@dataclass(frozen=True, slots=True, kw_only=True)
class ShareGroupConfig:
    """Kafka's GroupCoordinatorConfig / ShareGroupConfig names: group.share.*; the share.* group
    configs override them per group (IncrementalAlterConfigs on a GROUP resource)."""

    session_timeout_ms: int = 45_000
    heartbeat_interval_ms: int = 5_000
    max_size: int = 200
    delivery_count_limit: int = 5
    record_lock_duration_ms: int = 30_000
    partition_max_record_locks: int = 2_000
    auto_offset_reset: str = "latest"
    isolation_level: str = "read_uncommitted"
    renew_acknowledge_enable: bool = True


@dataclass(frozen=True, slots=True, kw_only=True)
class HeartbeatRequest:
    group_id: str
    member_id: str
    member_epoch: int
    rack_id: str | None = None
    subscribed_topic_names: tuple[str, ...] | None = None   # None: unchanged since the last heartbeat
    client_id: str = ""
    client_host: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class HeartbeatReply:
    error: ErrorCode = ErrorCode.none
    message: str | None = None
    member_id: str | None = None
    member_epoch: int = 0
    heartbeat_interval_ms: int = 0
    assignment: Partitions | None = None   # None: unchanged, not sent


@dataclass(frozen=True, slots=True, kw_only=True)
class Outcome:
    reply: HeartbeatReply
    group: ShareGroup | None = None
    records: tuple[rec.Record, ...] = ()
    # Share-partitions whose state the caller must initialize (in `__share_group_state`, at the
    # given state epoch) before it appends `records`, which name them initialized.
    to_initialize: tuple[TopicIdPartition, ...] = ()
    state_epoch: int = 0


class _Draft(GroupDraft[ShareGroup]):
    def member_tombstones(self, group_id: str, member_id: str) -> list[rec.Record]:
        """Kafka's order, as a leave wrote it in Kafka 4.3.1: 14, 13, 10."""
        return [rec.tombstone(rec.CURRENT_MEMBER_ASSIGNMENT, group_id, member_id),
                rec.tombstone(rec.TARGET_ASSIGNMENT_MEMBER, group_id, member_id),
                rec.tombstone(rec.MEMBER_METADATA, group_id, member_id)]

    def bump(self, metadata_hash: int) -> None:
        g = self.group
        self.records.append(rec.group_metadata(g.group_id, g.group_epoch + 1, metadata_hash))
        self.group = replace(g, group_epoch=g.group_epoch + 1, metadata_hash=metadata_hash)


def validate(req: HeartbeatRequest) -> _Error | None:
    """GroupCoordinatorService.throwIfShareGroupHeartbeatRequestIsInvalid, check for check."""
    invalid = ErrorCode.invalid_request
    if not req.member_id or _blank(req.member_id):
        return _Error(invalid, "MemberId can't be empty.")
    if _blank(req.group_id):
        return _Error(invalid, "GroupId can't be empty.")
    if _blank(req.rack_id):
        return _Error(invalid, "RackId can't be empty.")
    if req.member_epoch == JOIN_GROUP_MEMBER_EPOCH:
        if not req.subscribed_topic_names:
            return _Error(invalid, "SubscribedTopicNames must be set in first request.")
    elif req.member_epoch < LEAVE_GROUP_MEMBER_EPOCH:
        return _Error(invalid, f"MemberEpoch is {req.member_epoch}, but must be greater than or equal to -1.")
    return None


def decide_heartbeat(group: ShareGroup | None, req: HeartbeatRequest, cfg: ShareGroupConfig, topics: Topics,
                     now_ms: int) -> Outcome:
    error = validate(req)
    if error is None:
        try:
            if req.member_epoch == LEAVE_GROUP_MEMBER_EPOCH:
                return _leave(group, req, topics)
            return _heartbeat(group, req, cfg, topics, now_ms)
        except _Error as exc:
            error = exc
    return Outcome(reply=HeartbeatReply(error=error.code, message=error.message))


def _check_epoch(member: ShareGroupMember, received: int) -> None:
    """Kafka's throwIfShareGroupMemberEpochIsInvalid; a known member's epoch 0 is a rejoin."""
    if received == JOIN_GROUP_MEMBER_EPOCH:
        return
    if received > member.member_epoch:
        raise _Error(ErrorCode.fenced_member_epoch, f"The share group member has a greater member epoch "
                                                    f"({received}) than the one known by the group coordinator "
                                                    f"({member.member_epoch}). The member must abandon all its "
                                                    f"partitions and rejoin.")
    if received < member.member_epoch and received != member.previous_member_epoch:
        raise _Error(ErrorCode.fenced_member_epoch, f"The share group member has a smaller member epoch "
                                                    f"({received}) than the one known by the group coordinator "
                                                    f"({member.member_epoch}). The member must abandon all its "
                                                    f"partitions and rejoin.")


def subscribed_partitions(names: frozenset[str], topics: Topics) -> set[TopicIdPartition]:
    out: set[TopicIdPartition] = set()
    for name in names:
        entry = topics.get(name)
        if entry is not None:
            out.update((entry[0], p) for p in range(entry[1]))
    return out


def _initialize(d: _Draft, topics: Topics) -> list[TopicIdPartition]:
    """Step 4: the subscribed partitions without state join the initialized ones (record 15);
    topics that no longer exist leave them. Returns the partitions to initialize."""
    g = d.group
    wanted = subscribed_partitions(g.subscribed_topic_names(), topics)
    names = {tid: name for name, (tid, _n) in topics.items()}
    missing = sorted(tp for tp in wanted if not g.is_initialized(tp))
    kept = {tid: t for tid, t in g.initialized.items() if names.get(tid) == t.name}
    if not missing and len(kept) == len(g.initialized):
        return []
    merged: dict[uuid.UUID, set[int]] = {tid: set(t.partitions) for tid, t in kept.items()}
    for tid, p in missing:
        merged.setdefault(tid, set()).add(p)
    initialized = {tid: InitializedTopic(names[tid], frozenset(ps)) for tid, ps in merged.items()}
    d.records.append(state_partition_metadata(g.group_id, initialized))
    d.group = replace(g, initialized=initialized)
    return missing


def state_partition_metadata(group_id: str, initialized: Mapping[uuid.UUID, InitializedTopic]) -> rec.Record:
    return rec.state_partition_metadata(group_id, initialized=[
        rec.ShareTopic(tid, t.name, tuple(sorted(t.partitions))) for tid, t in sorted(initialized.items())])


def _heartbeat(group: ShareGroup | None, req: HeartbeatRequest, cfg: ShareGroupConfig, topics: Topics,
               now_ms: int) -> Outcome:
    gid = req.group_id
    joining = req.member_epoch == JOIN_GROUP_MEMBER_EPOCH
    if group is None:
        if not joining:
            raise _Error(ErrorCode.group_id_not_found, f"Share group {gid} not found.")
        group = ShareGroup(group_id=gid)
    member = group.members.get(req.member_id)
    if member is None:
        if not joining:
            raise _Error(ErrorCode.unknown_member_id, f"Member {req.member_id} is not a member of group {gid}.")
        if len(group.members) >= cfg.max_size:
            raise _Error(ErrorCode.group_max_size_reached,
                         f"The share group has reached its maximum capacity of {cfg.max_size} members.")
        member = ShareGroupMember(member_id=req.member_id)
    _check_epoch(member, req.member_epoch)
    d = _Draft(group)

    # 3. the member's metadata, and the group epoch
    updated = replace(member, rack_id=req.rack_id if req.rack_id is not None else member.rack_id,
                      client_id=req.client_id, client_host=req.client_host,
                      subscribed_topic_names=(tuple(sorted(set(req.subscribed_topic_names)))
                                              if req.subscribed_topic_names is not None
                                              else member.subscribed_topic_names))
    bump = False
    if req.member_id not in group.members or updated.metadata_key() != member.metadata_key():
        d.records.append(rec.member_metadata(gid, req.member_id, rack_id=updated.rack_id, client_id=updated.client_id,
                                             client_host=updated.client_host,
                                             subscribed_topic_names=updated.subscribed_topic_names))
        bump = updated.subscribed_topic_names != member.subscribed_topic_names or req.member_id not in group.members
    d.put_member(updated)

    # 4. share-partition state for what the group now reads
    missing = _initialize(d, topics)
    new_hash = topics_hash(d.group.subscribed_topic_names(), topics)
    if bump or missing or new_hash != group.metadata_hash:
        d.bump(new_hash)

    # 5. a new target assignment
    if d.group.target_assignment_epoch < d.group.group_epoch:
        compute_target_assignment(d, topics, now_ms)

    # 6. the member takes its target
    current = d.group.members[req.member_id]
    target = d.group.target_of(req.member_id)
    reconciled = current
    if current.member_epoch != d.group.target_assignment_epoch or current.assigned != target:
        reconciled = replace(current, member_epoch=d.group.target_assignment_epoch,
                             previous_member_epoch=current.member_epoch, assigned=target)
        d.records.append(current_member_assignment(gid, reconciled))
    d.put_member(replace(reconciled, session_deadline_ms=now_ms + cfg.session_timeout_ms))

    changed = reconciled.assigned != member.assigned or req.member_id not in group.members
    reply = HeartbeatReply(member_id=req.member_id, member_epoch=reconciled.member_epoch,
                           heartbeat_interval_ms=cfg.heartbeat_interval_ms,
                           assignment=reconciled.assigned if joining or changed else None)
    return Outcome(reply=reply, group=d.group, records=tuple(d.records), to_initialize=tuple(missing),
                   state_epoch=d.group.group_epoch)


def current_member_assignment(group_id: str, m: ShareGroupMember) -> rec.Record:
    return rec.current_member_assignment(group_id, m.member_id, member_epoch=m.member_epoch,
                                         previous_member_epoch=m.previous_member_epoch, state=MEMBER_STATE_STABLE,
                                         assigned=by_topic(m.assigned))


def compute_target_assignment(d: _Draft, topics: Topics, now_ms: int) -> None:
    """The simple assignor's answer for the group epoch over the initialized partitions: a record
    per member whose target changed (13), then the target assignment metadata (12)."""
    g = d.group
    counts: dict[str, int] = {}
    for name in g.subscribed_topic_names():
        entry = topics.get(name)
        if entry is not None:
            # Only a prefix of initialized partitions is assignable (partitions are added at the end).
            n = 0
            while n < entry[1] and g.is_initialized((entry[0], n)):
                n += 1
            counts[name] = n
    ids = {name: topics[name][0] for name in counts}
    names = {tid: name for name, tid in ids.items()}
    current = {mid: {(names[tid], p) for tid, p in parts if tid in names} for mid, parts in g.target_assignment.items()}
    by_name = assignor.assign({mid: m.subscribed_topic_names for mid, m in g.members.items()}, counts, current)
    target = {mid: frozenset((ids[t], p) for t, p in parts) for mid, parts in by_name.items()}
    for mid in sorted(target):
        if g.target_assignment.get(mid) != target[mid]:
            d.records.append(rec.target_assignment_member(g.group_id, mid, by_topic(target[mid])))
    d.records.append(rec.target_assignment_metadata(g.group_id, g.group_epoch, now_ms))
    d.group = replace(g, target_assignment=target, target_assignment_epoch=g.group_epoch,
                      assignment_timestamp_ms=now_ms)


# ------------------------------------------------------------------------------------- leaving
def fence(group: ShareGroup, member_ids: list[str], topics: Topics) -> tuple[ShareGroup, list[rec.Record]]:
    """Members leave (a leave heartbeat, a session timeout): their records go and the group epoch
    is bumped with the hash of what the rest subscribe to (0 for none), as Kafka 4.3.1 wrote it;
    the next heartbeat computes the new target."""
    d = _Draft(group)
    for mid in member_ids:
        if mid in d.group.members:
            d.remove_member(mid)
    if len(d.group.members) != len(group.members):
        names = d.group.subscribed_topic_names()
        d.bump(topics_hash(names, topics) if names else 0)
    return d.group, d.records


def _leave(group: ShareGroup | None, req: HeartbeatRequest, topics: Topics) -> Outcome:
    if group is None:
        raise _Error(ErrorCode.group_id_not_found, f"Group {req.group_id} not found.")
    if req.member_id not in group.members:
        raise _Error(ErrorCode.unknown_member_id, f"Member {req.member_id} is not a member of group {group.group_id}.")
    next_group, records = fence(group, [req.member_id], topics)
    return Outcome(reply=HeartbeatReply(member_id=req.member_id, member_epoch=LEAVE_GROUP_MEMBER_EPOCH),
                   group=next_group, records=tuple(records))


# ------------------------------------------------------------------------------------- timers
def next_deadline(group: ShareGroup) -> int | None:
    return min((m.session_deadline_ms for m in group.members.values() if m.session_deadline_ms is not None),
               default=None)


def expired_members(group: ShareGroup, now_ms: int) -> list[str]:
    return sorted(m.member_id for m in group.members.values()
                  if m.session_deadline_ms is not None and now_ms >= m.session_deadline_ms)
