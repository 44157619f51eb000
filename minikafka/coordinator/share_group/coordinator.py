"""ShareGroups: the async shell of share group membership (KIP-932) around decisions.py.

Decide -> persist -> apply, as the consumer and streams rooms do; one step more: the
share-partitions a heartbeat finds without state are initialized in `__share_group_state` (the
share coordinator) before the group records that name them initialized are appended, so the log
never claims state that is not there.

The classic GroupCoordinator is the door, as for the other modern groups: it replays records of
types 10-15 here, lists, describes and deletes share groups, refuses offset commits and fetches
for them ("not a consumer group"), and drives the session timers.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping
from dataclasses import replace

from minikafka.coordinator.group_room import CommitCheck, GroupRoom, with_entry
from minikafka.coordinator.ports import RecordLog
from minikafka.coordinator.share_group import decisions
from minikafka.coordinator.share_group import records as rec
from minikafka.coordinator.share_group.decisions import HeartbeatReply, HeartbeatRequest, ShareGroupConfig, Topics
from minikafka.coordinator.share_group.share_coordinator import ShareCoordinator
from minikafka.coordinator.share_group.state import (
    InitializedTopic,
    ShareGroup,
    ShareGroupMember,
    TopicIdPartition,
    by_topic,
    from_topics,
)
from minikafka.protocol.errors import ErrorCode

class ShareGroups(GroupRoom[ShareGroup, ShareGroupConfig]):
    kind = "share_group"
    # GROUP resource config -> the ShareGroupConfig field it overrides (Kafka's GroupConfig).
    group_configs = {"share.session.timeout.ms": "session_timeout_ms",
                     "share.heartbeat.interval.ms": "heartbeat_interval_ms",
                     "share.delivery.count.limit": "delivery_count_limit",
                     "share.record.lock.duration.ms": "record_lock_duration_ms",
                     "share.partition.max.record.locks": "partition_max_record_locks"}
    text_configs = {"share.auto.offset.reset": "auto_offset_reset", "share.isolation.level": "isolation_level"}

    def __init__(self, records: RecordLog, config: ShareGroupConfig, topics: Topics,
                 share_state: ShareCoordinator) -> None:
        super().__init__(records, config)
        self._topics = topics
        self.share_state = share_state

    def config_of(self, group_id: str) -> ShareGroupConfig:
        cfg = super().config_of(group_id)
        overrides = self.group_overrides(group_id) if self.group_overrides is not None else {}
        changes: dict[str, object] = {f: overrides[n] for n, f in self.text_configs.items() if n in overrides}
        if "share.renew.acknowledge.enable" in overrides:
            changes["renew_acknowledge_enable"] = overrides["share.renew.acknowledge.enable"].lower() == "true"
        return replace(cfg, **changes) if changes else cfg  # type: ignore[arg-type]

    # ------------------------------------------------------------------------------ heartbeat
    def invalid(self, req: HeartbeatRequest) -> HeartbeatReply | None:
        error = decisions.validate(req)
        return None if error is None else HeartbeatReply(error=error.code, message=error.message)

    async def heartbeat(self, req: HeartbeatRequest, now_ms: int) -> HeartbeatReply:
        async with self.lock(req.group_id):
            outcome = decisions.decide_heartbeat(self.groups.get(req.group_id), req, self.config_of(req.group_id),
                                                 self._topics, now_ms)
            if outcome.group is None:
                return outcome.reply
            if outcome.to_initialize:
                try:
                    await self.share_state.initialize([(req.group_id, tid, p) for tid, p in outcome.to_initialize],
                                                      outcome.state_epoch, now_ms)
                except OSError as exc:
                    self._events.warning("share_state_initialize_failed", group_id=req.group_id, reason=str(exc))
                    return HeartbeatReply(error=ErrorCode.coordinator_not_available)
            if not await self._write(req.group_id, outcome.records, outcome.group, now_ms):
                return HeartbeatReply(error=ErrorCode.not_coordinator)
            return outcome.reply

    # ------------------------------------------------------------------------------ timers
    def next_deadline(self) -> int | None:
        return min((t for g in self.groups.values() if (t := decisions.next_deadline(g)) is not None), default=None)

    async def expire(self, now_ms: int) -> list[str]:
        """Fence members whose session timed out (their acquired records wait for their locks)."""
        changed: list[str] = []
        for gid in [g for g, group in self.groups.items() if decisions.expired_members(group, now_ms)]:
            async with self.lock(gid):
                group = self.groups.get(gid)
                if group is None:
                    continue
                expired = decisions.expired_members(group, now_ms)
                group, records = decisions.fence(group, expired, self._topics)
                if records:
                    await self._log.append(self._partition_for(gid), records, now_ms)
                self._apply(gid, group)
                for mid in expired:
                    self._events.info("share_group_member_fenced", group_id=gid, member_id=mid,
                                      reason="session timeout expired")
                changed.append(gid)
        return changed

    # ------------------------------------------------------------------------------ replay
    def replay(self, key: bytes, value: bytes | None) -> None:
        """Fold one record of types 10-15 into the cache (start-up)."""
        t, gid, mid = rec.decode_key(key)
        v = None if value is None else rec.decode_value(t, value)
        group = self.groups.get(gid)
        if group is None:
            if v is None:
                return
            group = ShareGroup(group_id=gid)
        if t == rec.GROUP_METADATA:
            if v is None:
                self.groups.pop(gid, None)
                return
            assert isinstance(v, rec.GroupMetadata)
            group = replace(group, group_epoch=v.epoch, metadata_hash=v.metadata_hash)
        elif t == rec.MEMBER_METADATA:
            member = None
            if isinstance(v, rec.MemberMetadata):
                old = group.members.get(mid or "") or ShareGroupMember(member_id=mid or "")
                member = replace(old, rack_id=v.rack_id, client_id=v.client_id, client_host=v.client_host,
                                 subscribed_topic_names=v.subscribed_topic_names)
            group = replace(group, members=with_entry(group.members, mid, member))
        elif t == rec.TARGET_ASSIGNMENT_METADATA:
            if isinstance(v, rec.TargetAssignmentMetadata):
                group = replace(group, target_assignment_epoch=v.assignment_epoch,
                                assignment_timestamp_ms=v.assignment_timestamp_ms)
            else:
                group = replace(group, target_assignment_epoch=0, assignment_timestamp_ms=0)
        elif t == rec.TARGET_ASSIGNMENT_MEMBER:
            parts = None if v is None else from_topics(v.items())  # type: ignore[union-attr]
            group = replace(group, target_assignment=with_entry(group.target_assignment, mid, parts))
        elif t == rec.CURRENT_MEMBER_ASSIGNMENT:
            if isinstance(v, rec.CurrentMemberAssignment):
                old = group.members.get(mid or "") or ShareGroupMember(member_id=mid or "")
                member = replace(old, member_epoch=v.member_epoch, previous_member_epoch=v.previous_member_epoch,
                                 assigned=from_topics(v.assigned.items()))
                group = replace(group, members={**group.members, old.member_id: member})
        elif t == rec.STATE_PARTITION_METADATA:
            initialized: Mapping = {}
            if isinstance(v, rec.StatePartitionMetadata):
                initialized = {s.topic_id: InitializedTopic(s.name, frozenset(s.partitions)) for s in v.initialized}
            group = replace(group, initialized=initialized)
        self.groups[gid] = group

    def snapshot_records(self, group_id: str) -> list[rec.Record]:
        g = self.groups[group_id]
        out: list[rec.Record] = []
        for mid, m in sorted(g.members.items()):
            out.append(rec.member_metadata(group_id, mid, rack_id=m.rack_id, client_id=m.client_id,
                                           client_host=m.client_host, subscribed_topic_names=m.subscribed_topic_names))
        out.append(rec.group_metadata(group_id, g.group_epoch, g.metadata_hash))
        if g.initialized:
            out.append(decisions.state_partition_metadata(group_id, g.initialized))
        for mid, target in sorted(g.target_assignment.items()):
            out.append(rec.target_assignment_member(group_id, mid, by_topic(target)))
        out.append(rec.target_assignment_metadata(group_id, g.target_assignment_epoch, g.assignment_timestamp_ms))
        for mid, m in sorted(g.members.items()):
            out.append(decisions.current_member_assignment(group_id, m))
        return out

    # ------------------------------------------------------------------------------ offsets
    def validate_offset_commit(self, group_id: str, member_id: str, instance_id: str | None, member_epoch: int,
                               *, transactional: bool, api_version: int) -> CommitCheck:
        """A share group has no committed offsets (its progress is the share-partition state)."""
        return CommitCheck(ErrorCode.group_id_not_found, f"Group {group_id} is not a consumer group.")

    def validate_offset_fetch(self, group_id: str, member_id: str | None, member_epoch: int) -> ErrorCode:
        return ErrorCode.group_id_not_found

    # ------------------------------------------------------------------------------ admin
    def tombstones(self, group_id: str) -> list[rec.Record]:
        """Kafka's ShareGroup.createGroupTombstoneRecords, in its order."""
        mids = sorted(self.groups[group_id].members)
        out = [rec.tombstone(rec.CURRENT_MEMBER_ASSIGNMENT, group_id, mid) for mid in mids]
        out += [rec.tombstone(rec.TARGET_ASSIGNMENT_MEMBER, group_id, mid) for mid in mids]
        out.append(rec.tombstone(rec.TARGET_ASSIGNMENT_METADATA, group_id))
        out += [rec.tombstone(rec.MEMBER_METADATA, group_id, mid) for mid in mids]
        out += [rec.tombstone(rec.STATE_PARTITION_METADATA, group_id), rec.tombstone(rec.GROUP_METADATA, group_id)]
        return out

    async def alter_offsets(self, group_id: str, start_offsets: Mapping[TopicIdPartition, int],
                            names: Mapping[uuid.UUID, str], now_ms: int) -> ErrorCode:
        """AlterShareGroupOffsets (kafka-share-groups.sh --reset-offsets): only an empty group;
        each share-partition starts over at its offset and counts as initialized (record 15). As
        in Kafka, a group id nobody used yet becomes an empty share group."""
        async with self.lock(group_id):
            group = self.groups.get(group_id)
            if group is not None and group.members:
                return ErrorCode.non_empty_group
            if not start_offsets:
                return ErrorCode.none
            records: list[rec.Record] = []
            if group is None:
                group = ShareGroup(group_id=group_id)
                records.append(rec.group_metadata(group_id, group.group_epoch, 0))
            merged = {tid: set(t.partitions) for tid, t in group.initialized.items()}
            for tid, p in start_offsets:
                merged.setdefault(tid, set()).add(p)
            initialized = {tid: InitializedTopic(names[tid], frozenset(ps)) for tid, ps in merged.items()}
            records.append(decisions.state_partition_metadata(group_id, initialized))
            await self.share_state.reset({(group_id, tid, p): o for (tid, p), o in start_offsets.items()}, now_ms)
            ok = await self._write(group_id, records, replace(group, initialized=initialized), now_ms)
            return ErrorCode.none if ok else ErrorCode.not_coordinator

    async def delete_offsets(self, group_id: str, topic_ids: Iterable[uuid.UUID], now_ms: int) -> ErrorCode:
        """DeleteShareGroupOffsets: only an empty group; the topics' share-partition state goes
        (tombstones in `__share_group_state`) and they leave the initialized ones (record 15)."""
        async with self.lock(group_id):
            group = self.groups.get(group_id)
            if group is None:
                return ErrorCode.none
            if group.members:
                return ErrorCode.non_empty_group
            doomed = set(topic_ids)
            initialized = {tid: t for tid, t in group.initialized.items() if tid not in doomed}
            await self.share_state.delete([k for k in self.share_state.keys_of(group_id) if k[1] in doomed], now_ms)
            ok = await self._write(group_id, [decisions.state_partition_metadata(group_id, initialized)],
                                   replace(group, initialized=initialized), now_ms)
            return ErrorCode.none if ok else ErrorCode.not_coordinator

    def subscribed_topics(self, group_id: str) -> frozenset[str]:
        return self.groups[group_id].subscribed_topic_names()
