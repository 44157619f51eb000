"""StreamsGroups: the async shell of the streams protocol (KIP-1071) around decisions.py.

Decide -> persist -> apply, as ConsumerGroups does: a heartbeat decides on the cached group under
the group's lock, the records go to the group's `__consumer_offsets` partition as one batch, and
only then is the new value swapped in. The internal topics a heartbeat finds missing are returned
to the broker, which creates them (Kafka's KafkaApis does the same with the coordinator's answer).

The classic GroupCoordinator is the door, as for consumer groups: it replays the records of types
17-23 here, asks `validate_offset_commit` / `validate_offset_fetch` for streams groups, lists,
describes and deletes them, and drives the timers.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import structlog

from minikafka.coordinator.ports import RecordLog
from minikafka.coordinator.streams_group import decisions
from minikafka.coordinator.streams_group import records as rec
from minikafka.coordinator.streams_group import topology as topo
from minikafka.coordinator.streams_group.decisions import HeartbeatReply, HeartbeatRequest, StreamsGroupConfig, Topics
from minikafka.coordinator.streams_group.state import (
    METADATA_FIELDS,
    StreamsGroup,
    StreamsGroupMember,
    TopicInfo,
)
from minikafka.coordinator.group_room import CommitCheck, GroupRoom, with_entry
from minikafka.protocol.errors import ErrorCode

log = structlog.get_logger("minikafka.coordinator.streams_group")


@dataclass(frozen=True, slots=True)
class HeartbeatResult:
    reply: HeartbeatReply
    topics_to_create: tuple[TopicInfo, ...] = ()


class StreamsGroups(GroupRoom[StreamsGroup, StreamsGroupConfig]):
    kind = "streams_group"
    # GROUP resource config -> the StreamsGroupConfig field it overrides (Kafka's GroupConfig).
    group_configs = {"streams.session.timeout.ms": "session_timeout_ms",
                     "streams.heartbeat.interval.ms": "heartbeat_interval_ms",
                     "streams.num.standby.replicas": "num_standby_replicas",
                     "streams.initial.rebalance.delay.ms": "initial_rebalance_delay_ms",
                     "streams.assignment.interval.ms": "assignment_interval_ms"}

    def __init__(self, records: RecordLog, config: StreamsGroupConfig, topics: Topics) -> None:
        super().__init__(records, config)
        self._topics = topics

    # ------------------------------------------------------------------------------ heartbeat
    def invalid(self, req: HeartbeatRequest) -> HeartbeatReply | None:
        error = decisions.validate(req)
        return None if error is None else HeartbeatReply(error=error.code, message=error.message)

    async def heartbeat(self, req: HeartbeatRequest, now_ms: int,
                        replaced_classic: Sequence[rec.Record] = ()) -> HeartbeatResult:
        async with self.lock(req.group_id):
            outcome = decisions.decide_heartbeat(self.groups.get(req.group_id), req, self.config_of(req.group_id),
                                                 self._topics, now_ms)
            if outcome.group is None:
                return HeartbeatResult(outcome.reply)
            if not await self._write(req.group_id, [*replaced_classic, *outcome.records], outcome.group, now_ms):
                return HeartbeatResult(HeartbeatReply(error=ErrorCode.not_coordinator))
            return HeartbeatResult(outcome.reply, outcome.topics_to_create)

    # ------------------------------------------------------------------------------ timers
    def next_deadline(self) -> int | None:
        return min((t for g in self.groups.values() if (t := decisions.next_deadline(g)) is not None), default=None)

    async def expire(self, now_ms: int) -> list[str]:
        """Fence members whose session or rebalance timeout passed; compute the first target
        assignment of groups whose initial rebalance delay is over."""
        changed: list[str] = []
        for gid in [g for g, group in self.groups.items()
                    if decisions.expired_members(group, now_ms) or decisions.initial_delay_over(group, now_ms)]:
            async with self.lock(gid):
                group = self.groups.get(gid)
                if group is None:
                    continue
                records: list[rec.Record] = []
                expired = decisions.expired_members(group, now_ms)
                if expired:
                    group, fenced = decisions.fence(group, expired)
                    records += fenced
                if decisions.initial_delay_over(group, now_ms):
                    group, assigned = decisions.delayed_target_assignment(group, self.config_of(gid), now_ms)
                    records += assigned
                if records:
                    await self._log.append(self._partition_for(gid), records, now_ms)
                self._apply(gid, group)
                for mid in expired:
                    log.info("streams_group_member_fenced", group_id=gid, member_id=mid,
                             reason="session or rebalance timeout expired")
                changed.append(gid)
        return changed

    # ------------------------------------------------------------------------------ replay
    def replay(self, key: bytes, value: bytes | None) -> None:
        """Fold one record of types 17-23 into the cache (start-up)."""
        parsed = rec.parse(key, value)
        gid, mid, v = parsed.group_id, parsed.member_id, parsed.value
        group = self.groups.get(gid)
        if group is None:
            if v is None:
                return
            group = StreamsGroup(group_id=gid)
        t = parsed.record_type
        if t == rec.GROUP_METADATA:
            if v is None:
                self.groups.pop(gid, None)
                return
            group = replace(group, group_epoch=v.epoch, metadata_hash=v.metadata_hash,
                            validated_topology_epoch=v.validated_topology_epoch,
                            last_assignment_configs=v.last_assignment_configs)
        elif t == rec.TOPOLOGY:
            group = replace(group, topology=v, configured=None)
        elif t == rec.MEMBER_METADATA:
            member = None
            if v is not None:
                old = group.members.get(mid)
                member = v if old is None else replace(old, **{f: getattr(v, f) for f in METADATA_FIELDS})
            group = replace(group, members=with_entry(group.members, mid, member))
        elif t == rec.TARGET_ASSIGNMENT_METADATA:
            if v is None:
                group = replace(group, target_assignment_epoch=0, assignment_timestamp_ms=0)
            else:
                group = replace(group, target_assignment_epoch=v.assignment_epoch,
                                assignment_timestamp_ms=v.assignment_timestamp_ms)
        elif t == rec.TARGET_ASSIGNMENT_MEMBER:
            group = replace(group, target_assignment=with_entry(group.target_assignment, mid, v))
        elif t == rec.CURRENT_MEMBER_ASSIGNMENT:
            if v is not None:
                old = group.members.get(mid) or StreamsGroupMember(member_id=mid)
                member = replace(old, member_epoch=v.member_epoch, previous_member_epoch=v.previous_member_epoch,
                                 state=v.state, assigned=v.assigned, pending_revocation=v.pending_revocation,
                                 active_epochs=v.active_epochs)
                group = replace(group, members={**group.members, mid: member})
        self.groups[gid] = group

    def snapshot_records(self, group_id: str) -> list[rec.Record]:
        g = self.groups[group_id]
        out: list[rec.Record] = [rec.group_metadata(group_id, g.group_epoch, g.metadata_hash,
                                                    g.validated_topology_epoch, g.last_assignment_configs)]
        if g.topology is not None:
            out.append(rec.topology(group_id, g.topology))
        for mid, m in sorted(g.members.items()):
            out.append(rec.member_metadata(group_id, m))
        for mid, target in sorted(g.target_assignment.items()):
            out.append(rec.target_assignment_member(group_id, mid, target))
        out.append(rec.target_assignment_metadata(group_id, g.target_assignment_epoch, g.assignment_timestamp_ms))
        for mid, m in sorted(g.members.items()):
            out.append(rec.current_member_assignment(group_id, m))
        return out

    # ------------------------------------------------------------------------------ offsets
    def _check_member_commit(self, group: StreamsGroup, member: StreamsGroupMember, member_epoch: int,
                             transactional: bool, api_version: int) -> CommitCheck:
        """Kafka's StreamsGroup.validateOffsetCommit after the member is found: an older member
        epoch is accepted for a task the member got at or before it."""
        if not transactional and api_version < 9:
            return CommitCheck(ErrorCode.unsupported_version, "OffsetCommit version 9 or above must be used by "
                                                              "members using the streams group protocol")
        if member_epoch == member.member_epoch:
            return CommitCheck()
        if member_epoch > member.member_epoch:
            return CommitCheck(ErrorCode.stale_member_epoch, f"Received member epoch {member_epoch} is newer than "
                                                             f"current member epoch {member.member_epoch}.")
        if group.topology is None:
            return CommitCheck(ErrorCode.stale_member_epoch, "Topology is not available for offset commit validation.")
        subtopology_of = topo.source_topic_subtopologies(group.topology)

        def partition_error(topic: str, partition: int) -> ErrorCode:
            sub = subtopology_of.get(topic)
            epoch = None if sub is None else member.active_epochs.get((sub, partition))
            if epoch is None or member_epoch < epoch:
                return ErrorCode.stale_member_epoch
            return ErrorCode.none

        return CommitCheck(partition_error=partition_error)

    # ------------------------------------------------------------------------------ admin
    def tombstones(self, group_id: str) -> list[rec.Record]:
        """Kafka's StreamsGroup.createGroupTombstoneRecords, in its order."""
        g = self.groups[group_id]
        mids = sorted(g.members)
        out = [rec.current_member_assignment_tombstone(group_id, mid) for mid in mids]
        out += [rec.target_assignment_member_tombstone(group_id, mid) for mid in mids]
        out.append(rec.target_assignment_metadata_tombstone(group_id))
        out += [rec.member_metadata_tombstone(group_id, mid) for mid in mids]
        out += [rec.group_metadata_tombstone(group_id), rec.topology_tombstone(group_id)]
        return out

    def subscribed_topics(self, group_id: str) -> frozenset[str]:
        """Topics whose offsets OffsetDelete must keep (a non-empty group reads them)."""
        g = self.groups[group_id]
        if not g.members or g.topology is None:
            return frozenset()
        return frozenset(topo.source_topic_subtopologies(g.topology))
