"""ConsumerGroups: the async shell of the consumer protocol (KIP-848) around decisions.py.

Decide -> persist -> apply, as the classic coordinator does: a heartbeat takes a synchronous
decision on the cached group, the records it produced are appended to the group's
`__consumer_offsets` partition as one batch, and only then is the new group value swapped in and
the member answered. The only await between a decision and its application is that append, and it
is taken under the group's lock, so two heartbeats of one group never decide on the same value.

The classic GroupCoordinator owns `__consumer_offsets` (offsets are the same for both group types)
and is the door: it replays the records of consumer groups into `replay`, asks
`validate_offset_commit` / `validate_offset_fetch` for their groups, lists and deletes them, and
calls `heartbeat` with the tombstone of an empty classic group of the same id when one is replaced.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from dataclasses import replace

import structlog

from minikafka.coordinator.consumer_group import classic_members, decisions
from minikafka.coordinator.consumer_group import records as rec
from minikafka.coordinator.consumer_group.decisions import ConsumerGroupConfig, HeartbeatReply, HeartbeatRequest, Topics
from minikafka.coordinator.consumer_group.state import (
    METADATA_FIELDS,
    ConsumerGroup,
    ConsumerGroupMember,
)
from minikafka.coordinator.group_room import CommitCheck, GroupRoom, with_entry
from minikafka.coordinator.ports import RecordLog
from minikafka.protocol.errors import ErrorCode

log = structlog.get_logger("minikafka.coordinator.consumer_group")

def _new_member_id() -> str:
    return str(uuid.uuid4())


class ConsumerGroups(GroupRoom[ConsumerGroup, ConsumerGroupConfig]):
    kind = "consumer_group"
    # GROUP resource config -> the ConsumerGroupConfig field it overrides (Kafka's GroupConfig).
    group_configs = {"consumer.session.timeout.ms": "session_timeout_ms",
                     "consumer.heartbeat.interval.ms": "heartbeat_interval_ms",
                     "consumer.assignment.interval.ms": "assignment_interval_ms"}

    def __init__(self, records: RecordLog, config: ConsumerGroupConfig, topics: Topics, *,
                 new_member_id: Callable[[], str] = _new_member_id) -> None:
        super().__init__(records, config)
        self._topics = topics  # the broker's topics, read live (name -> (topic id, partitions))
        self._new_member_id = new_member_id

    # ------------------------------------------------------------------------------ heartbeat
    def invalid(self, req: HeartbeatRequest) -> HeartbeatReply | None:
        """The answer to a malformed request (checked before the group is looked at)."""
        error = decisions.validate(req, self.config)
        return None if error is None else HeartbeatReply(error=error.code, message=error.message)

    async def heartbeat(self, req: HeartbeatRequest, now_ms: int, replaced_classic: Sequence[rec.Record] = (),
                        start: ConsumerGroup | None = None) -> HeartbeatReply:
        """`replaced_classic`: records that go first in the same batch (the tombstone of an empty
        classic group, or a live one converted into `start`, the group the heartbeat meets)."""
        lock = self.lock(req.group_id)
        async with lock:
            group = start if start is not None else self.groups.get(req.group_id)
            outcome = decisions.decide_heartbeat(group, req, self.config_of(req.group_id),
                                                 self._topics, now_ms, self._new_member_id())
            if outcome.group is None:  # an error: nothing changes
                return outcome.reply
            if not await self._write(req.group_id, [*replaced_classic, *outcome.records], outcome.group, now_ms):
                return HeartbeatReply(error=ErrorCode.not_coordinator)
            return outcome.reply


    # ------------------------------------------------------------------------------ classic members
    async def classic_join(self, req: classic_members.ClassicJoin, now_ms: int) -> classic_members.ClassicJoinOutcome:
        async with self.lock(req.group_id):
            out = classic_members.decide_join(self.groups[req.group_id], req, self.config_of(req.group_id),
                                              self._topics, now_ms, self._new_member_id())
            if out.group is not None and not await self._write(req.group_id, out.records, out.group, now_ms):
                return replace(out, error=ErrorCode.not_coordinator, group=None, records=())
            return out

    def classic_sync(self, group_id: str, member_id: str, instance_id: str | None, generation_id: int,
                     protocol_type: str | None, protocol_name: str | None,
                     now_ms: int) -> classic_members.ClassicSyncOutcome:
        out = classic_members.decide_sync(self.groups[group_id], member_id, instance_id, generation_id, protocol_type,
                                          protocol_name, self.topic_names(), now_ms)
        if out.group is not None:
            self._apply(group_id, out.group)
        return out

    def classic_heartbeat(self, group_id: str, member_id: str, instance_id: str | None, generation_id: int,
                          now_ms: int) -> ErrorCode:
        code, group = classic_members.decide_heartbeat(self.groups[group_id], member_id, instance_id, generation_id,
                                                       now_ms)
        if group is not None:
            self._apply(group_id, group)
        return code

    async def classic_leave(self, group_id: str, members: Sequence[tuple[str, str | None]],
                            now_ms: int) -> list[ErrorCode]:
        async with self.lock(group_id):
            codes, group, records = classic_members.decide_leave(self.groups[group_id], members, self._topics)
            if group is not None and not await self._write(group_id, records, group, now_ms):
                return [ErrorCode.not_coordinator if c is ErrorCode.none else c for c in codes]
            return codes

    def topic_names(self) -> dict[object, str]:
        return {tid: name for name, (tid, _n) in self._topics.items()}

    def convert_from_classic(self, group_id: str, generation: int, protocol_name: str | None,
                             members: Sequence[classic_members.ClassicMemberImage],
                             now_ms: int) -> tuple[ConsumerGroup, list[rec.Record]]:
        """The consumer group a live classic group becomes (not applied: the heartbeat that asked
        for it applies it with its own records). Raises MalformedConsumerProtocol."""
        return classic_members.from_classic(group_id, generation, protocol_name, members, self._topics, now_ms)

    def downgradable(self, group_id: str) -> bool:
        """A consumer group whose members all speak the classic protocol, with downgrades allowed."""
        group = self.groups.get(group_id)
        return (group is not None and self.config.migration_policy in ("bidirectional", "downgrade")
                and classic_members.all_classic(group))

    def classic_images(self, group_id: str) -> list[classic_members.ClassicMemberImage]:
        return classic_members.to_classic(self.groups[group_id], self.topic_names())



    # ------------------------------------------------------------------------------ timers
    def next_deadline(self) -> int | None:
        return min((t for g in self.groups.values() if (t := decisions.next_deadline(g)) is not None), default=None)

    async def expire(self, now_ms: int) -> list[str]:
        """Fence the members whose session, rebalance, join or sync timeout passed; returns the
        groups that lost members."""
        changed: list[str] = []
        for gid in [g for g, group in self.groups.items() if decisions.expired_members(group, now_ms)]:
            async with self.lock(gid):  # a heartbeat may be mid-append
                group = self.groups.get(gid)
                if group is None:
                    continue
                expired = decisions.expired_members(group, now_ms)
                if not expired:
                    continue
                next_group, records = decisions.fence(group, expired, self._topics)
                # A refused append raises: the timer task logs it and tries again a moment later.
                await self._log.append(self._partition_for(gid), records, now_ms)
                self._apply(gid, next_group)
                for mid in expired:
                    log.info("consumer_group_member_fenced", group_id=gid, member_id=mid,
                             reason="session, rebalance, join or sync timeout expired")
                changed.append(gid)
        return changed

    # ------------------------------------------------------------------------------ replay
    def replay(self, key: rec.Key, value: bytes | None) -> None:
        """Fold one record into the cache (start-up; Kafka's GroupMetadataManager.replay)."""
        gid = key.group_id
        group = self.groups.get(gid)
        if group is None:
            if value is None:
                return
            group = ConsumerGroup(group_id=gid)
        t = key.record_type
        if t == rec.GROUP_METADATA:
            if value is None:
                self.groups.pop(gid, None)
                return
            epoch, metadata_hash = rec.decode_group_epoch(value)
            group = replace(group, group_epoch=epoch, metadata_hash=metadata_hash)
        elif t == rec.MEMBER_METADATA:
            member = None
            if value is not None:
                meta = rec.decode_member_metadata(key.member_id, value)
                old = group.members.get(key.member_id)
                member = meta if old is None else replace(old, **{f: getattr(meta, f) for f in METADATA_FIELDS})
            group = replace(group, members=with_entry(group.members, key.member_id, member))
        elif t == rec.TARGET_ASSIGNMENT_METADATA:
            if value is None:
                group = replace(group, target_assignment_epoch=0, assignment_timestamp_ms=0)
            else:
                epoch, ts = rec.decode_target_assignment_metadata(value)
                group = replace(group, target_assignment_epoch=epoch, assignment_timestamp_ms=ts)
        elif t == rec.TARGET_ASSIGNMENT_MEMBER:
            target = None if value is None else rec.decode_target_assignment_member(value)
            group = replace(group, target_assignment=with_entry(group.target_assignment, key.member_id, target))
        elif t == rec.CURRENT_MEMBER_ASSIGNMENT:
            if value is not None:
                ca = rec.decode_current_assignment(value)
                members = dict(group.members)
                old = members.get(key.member_id) or ConsumerGroupMember(member_id=key.member_id)
                epochs = {tp: ca.assignment_epochs.get(tp, max(ca.member_epoch, 0))
                          for tp in ca.assigned | ca.pending_revocation}
                members[key.member_id] = replace(
                    old, member_epoch=ca.member_epoch, previous_member_epoch=ca.previous_member_epoch, state=ca.state,
                    assigned=ca.assigned, pending_revocation=ca.pending_revocation, assignment_epochs=epochs)
                group = replace(group, members=members)
        elif t == rec.REGULAR_EXPRESSION:
            topics = None
            if value is not None:
                topics, _version, ts = rec.decode_regular_expression(value)
                group = replace(group, regex_refreshed_ms=max(group.regex_refreshed_ms, ts))
            group = replace(group, resolved_regexes=with_entry(group.resolved_regexes, key.member_id, topics))
        # PARTITION_METADATA (written before Kafka 4.1): the metadata hash replaces it.
        self.groups[gid] = group

    def loaded(self, now_ms: int) -> None:
        """After replay: every member's session starts now (Kafka schedules them on load)."""
        for gid, group in list(self.groups.items()):
            session_timeout_ms = self.config_of(gid).session_timeout_ms
            self.groups[gid] = replace(group, members={
                mid: replace(m, session_deadline_ms=now_ms + (m.classic.session_timeout_ms if m.classic is not None
                                                              else session_timeout_ms))
                for mid, m in group.members.items()})

    def snapshot_records(self, group_id: str) -> list[rec.Record]:
        """The records that rebuild the group as it is (a compaction of `__consumer_offsets`)."""
        g = self.groups[group_id]
        out: list[rec.Record] = [rec.group_epoch(group_id, g.group_epoch, g.metadata_hash)]
        for regex, topics in sorted(g.resolved_regexes.items()):
            out.append(rec.regular_expression(group_id, regex, topics, 0, g.regex_refreshed_ms))
        for mid, m in sorted(g.members.items()):
            out.append(rec.member_metadata(group_id, m))
        for mid, target in sorted(g.target_assignment.items()):
            out.append(rec.target_assignment_member(group_id, mid, target))
        out.append(rec.target_assignment_metadata(group_id, g.target_assignment_epoch, g.assignment_timestamp_ms))
        for mid, m in sorted(g.members.items()):
            out.append(rec.current_assignment(group_id, m))
        return out

    # ------------------------------------------------------------------------------ offsets
    def _check_member_commit(self, group: ConsumerGroup, member: ConsumerGroupMember, member_epoch: int,
                             transactional: bool, api_version: int) -> CommitCheck:
        """Kafka's ConsumerGroup.validateOffsetCommit after the member is found. A classic member of
        a mixed group commits with its generation: older versions are fine and a mismatch is
        ILLEGAL_GENERATION, as its client expects."""
        classic = member.uses_classic_protocol
        stale = self.stale_epoch_code(member)
        if not transactional and not classic and api_version < 9:
            return CommitCheck(ErrorCode.unsupported_version, "OffsetCommit version 9 or above must be used by "
                                                              "members using the consumer group protocol")
        if member_epoch == member.member_epoch:
            return CommitCheck()
        if member_epoch > member.member_epoch:
            return CommitCheck(stale, f"Received member epoch {member_epoch} is newer than current member epoch "
                                      f"{member.member_epoch}.")

        topics = self._topics

        def partition_error(topic: str, partition: int) -> ErrorCode:
            known = topics.get(topic)
            epoch = None if known is None else member.assignment_epochs.get((known[0], partition))
            if epoch is None or member_epoch < epoch:
                return stale
            return ErrorCode.none

        return CommitCheck(partition_error=partition_error)

    def stale_epoch_code(self, member: ConsumerGroupMember) -> ErrorCode:
        return ErrorCode.illegal_generation if member.uses_classic_protocol else ErrorCode.stale_member_epoch

    # ------------------------------------------------------------------------------ admin
    def tombstones(self, group_id: str) -> list[rec.Record]:
        """Kafka's ConsumerGroup.createGroupTombstoneRecords, in its order."""
        g = self.groups[group_id]
        mids = sorted(g.members)
        out = [rec.current_assignment_tombstone(group_id, mid) for mid in mids]
        out += [rec.target_assignment_member_tombstone(group_id, mid) for mid in mids]
        out.append(rec.target_assignment_metadata_tombstone(group_id))
        out += [rec.member_metadata_tombstone(group_id, mid) for mid in mids]
        out += [rec.regular_expression_tombstone(group_id, regex) for regex in sorted(g.resolved_regexes)]
        out += [rec.partition_metadata_tombstone(group_id), rec.group_epoch_tombstone(group_id)]
        return out

    def subscribed_topics(self, group_id: str) -> frozenset[str]:
        return self.groups[group_id].subscribed_topic_names()
