"""GroupCoordinator: the async shell around decisions.py, the group and offset caches, and the
`__consumer_offsets` log (through the RecordLog port).

Decide -> persist -> apply: every operation takes a synchronous decision on the cached group; when
the decision must be durable (GroupMetadata after a join phase that emptied the group, after the
leader's SyncGroup, after a static member's id replacement; offset commits; deletions) the records
are appended first and the cache is swapped only afterwards. The only await between a decision and
its application is that append. JoinGroup and SyncGroup requests that must wait are parked on
futures keyed by (group id, member id) and answered when a later step (another member's request or
the timer calling `expire`) produces their result.

State is a replay of the log: `load()` folds every record of `__consumer_offsets` through the same
apply functions the live path uses. Transactional offset commits (TxnOffsetCommit) are kept per
producer id until `complete_transaction` sees the COMMIT/ABORT marker; replay does the same with
transactional batches and control records. Every offset remembers the offset of its record, so a
committed transaction's offsets replace only older commits (Kafka's recordOffset rule).
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import structlog

from minikafka.coordinator.consumer_group import records as consumer_records
from minikafka.coordinator.consumer_group.classic_members import ClassicJoin, ClassicMemberImage
from minikafka.coordinator.consumer_group.coordinator import ConsumerGroups
from minikafka.coordinator.consumer_group.embedded import MalformedConsumerProtocol
from minikafka.coordinator.consumer_group.decisions import ConsumerGroupConfig, HeartbeatReply, HeartbeatRequest
from minikafka.coordinator.group import decisions, offsets_log
from minikafka.coordinator.group.decisions import (
    CONSUMER_PROTOCOL_TYPE,
    GroupConfig,
    JoinRequest,
    JoinResult,
    Step,
    SyncRequest,
    SyncResult,
)
from minikafka.coordinator.group.state import Group, GroupEvent, GroupState, OffsetAndMetadata, next_state
from minikafka.coordinator.group_room import CommitCheck
from minikafka.coordinator.ports import LogRecord, RecordLog, TransactionalRecords
from minikafka.coordinator.streams_group import decisions as streams_decisions
from minikafka.coordinator.streams_group import records as streams_records
from minikafka.coordinator.streams_group.coordinator import HeartbeatResult, StreamsGroups
from minikafka.coordinator.share_group import decisions as share_decisions
from minikafka.coordinator.share_group.coordinator import ShareGroups
from minikafka.coordinator.share_group.records import CorruptShareGroupRecord, is_share_record_type
from minikafka.coordinator.share_group.share_coordinator import ShareCoordinator
from minikafka.protocol.errors import ErrorCode
from minikafka.protocol.types import TopicPartition

log = structlog.get_logger("minikafka.coordinator.group")

OFFSET_METADATA_MAX_BYTES = 4096  # Kafka's offset.metadata.max.bytes default
CONTROL_ABORT, CONTROL_COMMIT = 0, 1


@dataclass(frozen=True, slots=True, kw_only=True)
class OffsetCommitEntry:
    offset: int
    leader_epoch: int = -1
    metadata: str | None = ""


def _accept_offsets(offsets: Mapping[TopicPartition, OffsetCommitEntry], now_ms: int,
                    topics: Mapping[str, tuple[uuid.UUID, int]]
                    ) -> tuple[dict[TopicPartition, ErrorCode], dict[TopicPartition, OffsetAndMetadata]]:
    """Per-partition answers and the offsets to record (metadata over the limit is refused), each
    with its topic's id when the topic exists (OffsetCommitValue v4 records it, as Kafka 4.x)."""
    results: dict[TopicPartition, ErrorCode] = {}
    accepted: dict[TopicPartition, OffsetAndMetadata] = {}
    for tp, e in offsets.items():
        metadata = e.metadata or ""
        if len(metadata.encode()) > OFFSET_METADATA_MAX_BYTES:
            results[tp] = ErrorCode.offset_metadata_too_large
            continue
        known = topics.get(tp.topic)
        accepted[tp] = OffsetAndMetadata(offset=e.offset, leader_epoch=e.leader_epoch, metadata=metadata,
                                         commit_timestamp_ms=now_ms, topic_id=None if known is None else known[0])
        results[tp] = ErrorCode.none
    return results, accepted


@dataclass(frozen=True, slots=True)
class ListedGroup:
    group_id: str
    protocol_type: str
    state: str
    group_type: str   # "classic", "consumer", "streams" or "share"


@dataclass(frozen=True, slots=True, kw_only=True)
class FetchedOffset:
    tp: TopicPartition
    offset: int
    leader_epoch: int
    metadata: str
    error: ErrorCode


def _default_member_id(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4()}"


class GroupCoordinator:
    def __init__(self, records: RecordLog, config: GroupConfig, *, offsets_retention_ms: int,
                 offsets_retention_check_interval_ms: int,
                 member_id: Callable[[str], str] = _default_member_id, consumer: ConsumerGroups | None = None,
                 streams: StreamsGroups | None = None, share: ShareGroups | None = None,
                 topics: Mapping[str, tuple[uuid.UUID, int]] | None = None) -> None:
        self._log = records
        self.topics = topics if topics is not None else {}  # name -> (topic id, partitions)
        self.config = config
        self.offsets_retention_ms = offsets_retention_ms
        self.retention_check_interval_ms = offsets_retention_check_interval_ms
        self._new_member_id = member_id
        self.groups: dict[str, Group] = {}
        self.offsets: dict[str, dict[TopicPartition, OffsetAndMetadata]] = {}
        # producer id -> group -> partition -> offset, until the transaction's marker
        self.pending_txn_offsets: dict[int, dict[str, dict[TopicPartition, OffsetAndMetadata]]] = {}
        self._pending_epochs: dict[int, int] = {}  # producer id -> epoch of its pending offsets
        self._join_waiters: dict[tuple[str, str], list[asyncio.Future[JoinResult]]] = {}
        self._sync_waiters: dict[tuple[str, str], list[asyncio.Future[SyncResult]]] = {}
        self._next_retention_check_ms: int | None = None
        self.on_deadlines_changed: Callable[[], None] | None = None
        self._closed = False
        # The consumer protocol's groups (KIP-848), a room of its own: this coordinator owns
        # `__consumer_offsets` and the offsets of both group types and is its door (replay,
        # offset validation, listing, deletion, compaction, timers, migration between the types).
        self.consumer = consumer if consumer is not None else ConsumerGroups(records, ConsumerGroupConfig(), {})
        # Its session deadlines drive the same timer task as the classic ones.
        self.consumer.on_deadlines_changed = self._changed
        # The streams protocol's groups (KIP-1071), a room of the same kind behind the same door.
        self.streams = streams if streams is not None else StreamsGroups(
            records, streams_decisions.StreamsGroupConfig(), {})
        self.streams.on_deadlines_changed = self._changed
        # Share groups (KIP-932): membership here; their share-partitions' state has its own topic.
        self.share = share if share is not None else ShareGroups(
            records, share_decisions.ShareGroupConfig(), {}, ShareCoordinator(records))
        self.share.on_deadlines_changed = self._changed

    # ------------------------------------------------------------------------------ lifecycle
    def load(self, now_ms: int) -> None:
        """Rebuild groups and offsets from `__consumer_offsets` (the log is the truth)."""
        groups_loaded = offsets_loaded = 0
        for rec in self._log.replay():
            try:
                kind = self._replay_one(rec, now_ms)
            except offsets_log.CorruptOffsetsRecord as exc:
                log.warning("offsets_record_skipped", partition=rec.partition, offset=rec.offset, reason=str(exc))
                continue
            groups_loaded += kind == "group"
            offsets_loaded += kind == "offset"
        for gid in list(self.offsets):
            if self.offsets[gid]:
                self._offsets_only_group(gid, -1)
        self.consumer.loaded(now_ms)
        self.streams.loaded(now_ms)
        self.share.loaded(now_ms)
        self._next_retention_check_ms = now_ms + self.retention_check_interval_ms
        log.info("groups_loaded", groups=len(self.groups), group_records=groups_loaded,
                 offset_records=offsets_loaded)

    def report_damage(self, partitions: Iterable[int]) -> list[str]:
        """After `__consumer_offsets` partitions lost unreadable records at startup: one warning per
        group living there (its membership or committed offsets may be older than they were)."""
        damaged = set(partitions)
        affected = sorted(g for g in set(self.groups) | set(self.offsets) if self.partition_for(g) in damaged)
        for gid in affected:
            log.warning("group_state_possibly_lost", group_id=gid, partition=self.partition_for(gid),
                        committed_offsets=len(self.offsets.get(gid, {})),
                        hint="records of this group were in an unreadable batch; offsets may be older")
        return affected

    def _replay_one(self, rec: LogRecord, now_ms: int) -> str:
        if rec.control_type is not None:
            self.complete_transaction(rec.partition, rec.producer_id, rec.control_type == CONTROL_COMMIT)
            return "control"
        if rec.key is None:
            return "none"
        record_type = int.from_bytes(rec.key[:2], "big", signed=True) if len(rec.key) >= 2 else -1
        if is_share_record_type(record_type):
            try:
                self.share.replay(rec.key, rec.value)
            except CorruptShareGroupRecord as exc:
                raise offsets_log.CorruptOffsetsRecord(str(exc)) from None
            return "group"
        if streams_records.is_streams_record_type(record_type):
            try:
                self.streams.replay(rec.key, rec.value)
            except streams_records.CorruptStreamsGroupRecord as exc:
                raise offsets_log.CorruptOffsetsRecord(str(exc)) from None
            return "group"
        consumer_key = consumer_records.decode_key(rec.key)
        if consumer_key is not None:
            try:
                self.consumer.replay(consumer_key, rec.value)
            except consumer_records.CorruptConsumerGroupRecord as exc:
                raise offsets_log.CorruptOffsetsRecord(str(exc)) from None
            return "group"
        key = offsets_log.decode_key(rec.key)
        if isinstance(key, offsets_log.OffsetKey):
            om = None if rec.value is None else replace(offsets_log.decode_offset_value(rec.value),
                                                         record_offset=rec.offset)
            if rec.transactional:
                if om is not None:
                    self.add_pending_transactional_offsets(rec.producer_id, rec.producer_epoch, key.group_id,
                                                           {key.tp: om})
            else:
                self._apply_offset(key.group_id, key.tp, om)
            return "offset"
        if isinstance(key, offsets_log.GroupKey):
            if rec.value is None:
                self.groups.pop(key.group_id, None)
            else:
                self.groups[key.group_id] = offsets_log.decode_group_value(key.group_id, rec.value, now_ms=now_ms)
            return "group"
        return "other"

    def _apply_offset(self, group_id: str, tp: TopicPartition, om: OffsetAndMetadata | None) -> None:
        if om is None:
            offsets = self.offsets.get(group_id)
            if offsets is not None:
                offsets.pop(tp, None)
                if not offsets:
                    del self.offsets[group_id]
            # A tombstone also drops the partition's pending transactional offsets (Kafka's
            # OffsetMetadataManager.replay): a later COMMIT marker must not bring it back.
            for by_group in self.pending_txn_offsets.values():
                pending = by_group.get(group_id)
                if pending is not None:
                    pending.pop(tp, None)
                    if not pending:
                        del by_group[group_id]
        else:
            self.offsets.setdefault(group_id, {})[tp] = om

    def shutdown(self) -> None:
        """Answer parked requests so their connections can close (Kafka: NOT_COORDINATOR on unload);
        later JoinGroup/SyncGroup requests are answered NOT_COORDINATOR at once."""
        self._closed = True
        for futs in self._join_waiters.values():
            for f in futs:
                if not f.done():
                    f.set_result(JoinResult(error=ErrorCode.not_coordinator))
        for sfuts in self._sync_waiters.values():
            for s in sfuts:
                if not s.done():
                    s.set_result(SyncResult(error=ErrorCode.not_coordinator))
        self._join_waiters.clear()
        self._sync_waiters.clear()

    def partition_for(self, group_id: str) -> int:
        return offsets_log.partition_for(group_id, self._log.partition_count)

    def ensure_offsets_topic(self, now_ms: int) -> None:
        self._log.ensure_created(now_ms)

    def complete_offsets_topic(self, now_ms: int) -> None:
        """At startup: finish a creation of `__consumer_offsets` that a crash cut short."""
        self._log.complete_rebuilt(now_ms)

    # ------------------------------------------------------------------------------ timers
    def next_deadline(self) -> int | None:
        times = [t for g in self.groups.values() if (t := decisions.next_deadline(g)) is not None]
        for room in (self.consumer, self.streams, self.share):
            if (t := room.next_deadline()) is not None:
                times.append(t)
        if self._next_retention_check_ms is not None:
            times.append(self._next_retention_check_ms)
        return min(times, default=None)

    async def expire(self, now_ms: int) -> None:
        for gid in list(self.groups):
            group = self.groups.get(gid)
            if group is None:
                continue
            step = decisions.expire(group, self.config, now_ms)
            if step is not None:
                await self._commit(gid, step, now_ms)
        for gid in await self.consumer.expire(now_ms):
            await self._maybe_downgrade(gid, now_ms)
        await self.streams.expire(now_ms)
        await self.share.expire(now_ms)
        if self._next_retention_check_ms is not None and now_ms >= self._next_retention_check_ms:
            self._next_retention_check_ms = now_ms + self.retention_check_interval_ms
            await self.expire_offsets(now_ms)

    async def expire_offsets(self, now_ms: int) -> int:
        """offsets.retention.minutes: tombstone expired offsets; an empty group left without
        offsets is deleted too (Kafka's cleanupGroupMetadata, alike for both group types)."""
        expired_total = 0
        for gid in [*self.groups, *self.consumer.groups, *self.streams.groups]:
            expired_total += await self._expire_group_offsets(gid, now_ms)
        return expired_total

    async def _expire_group_offsets(self, gid: str, now_ms: int) -> int:
        room = self._modern_room(gid)
        group = None if room is not None else self.groups.get(gid)
        if room is not None and not room.is_empty(gid) or room is None and group is None:
            return 0
        offsets = self.offsets.get(gid, {})
        # A consumer group's offsets expire from their commit (Kafka's ConsumerGroup
        # offsetExpirationCondition); a classic group's from when it became Empty.
        expired = decisions.expired_offsets(group, offsets, now_ms, self.offsets_retention_ms,
                                            pending=self._pending_partitions(gid))
        empty = room is not None or group is not None and group.state is GroupState.EMPTY
        drop_group = empty and len(expired) == len(offsets) and not self._has_pending(gid)
        records: list[tuple[bytes, bytes | None]] = [(offsets_log.offset_commit_key(gid, tp), None) for tp in expired]
        if drop_group:
            records += self._group_tombstones(gid)
        if not records:
            return 0
        await self._log.append(self.partition_for(gid), records, now_ms)
        for tp in expired:
            self._apply_offset(gid, tp, None)
        if drop_group:
            self._forget_group(gid)
        log.info("offsets_expired", group_id=gid, partitions=len(expired), group_deleted=drop_group)
        return len(expired)

    def _changed(self) -> None:
        if self.on_deadlines_changed is not None:
            self.on_deadlines_changed()

    # ------------------------------------------------------------------------------ apply
    async def _commit(self, group_id: str, step: Step, now_ms: int) -> None:
        """Persist (when asked), then apply the step and answer parked requests."""
        if step.persist and step.group is not None:
            await self._log.append(self.partition_for(group_id), [
                (offsets_log.group_metadata_key(group_id), offsets_log.group_metadata_value(step.group))], now_ms)
        before = self.groups.get(group_id)
        if step.group is None:
            self.groups.pop(group_id, None)
        else:
            self.groups[group_id] = step.group
            if before is not None and before.state is not step.group.state:
                log.info("group_transition", group_id=group_id, from_state=before.state.value,
                         to_state=step.group.state.value, generation_id=step.group.generation_id,
                         members=len(step.group.members))
        for mid, jr in step.joins.items():
            for f in self._join_waiters.pop((group_id, mid), []):
                if not f.done():
                    f.set_result(jr)
        for mid, sr in step.syncs.items():
            for sf in self._sync_waiters.pop((group_id, mid), []):
                if not sf.done():
                    sf.set_result(sr)
        self._changed()

    # ------------------------------------------------------------------------------ membership
    async def join_group(self, req: JoinRequest, now_ms: int) -> JoinResult:
        if self._closed:
            return JoinResult(error=ErrorCode.not_coordinator, member_id=req.member_id)
        room = self._modern_room(req.group_id)
        if room is not None and not room.is_empty(req.group_id):
            if room is self.consumer:
                return await self._classic_join_to_consumer_group(req, now_ms)
            return JoinResult(error=ErrorCode.inconsistent_group_protocol, member_id="")  # Kafka's classicGroupJoin
        if room is not None:
            # An empty consumer or streams group becomes a classic group: its records go first.
            await self._log.append(self.partition_for(req.group_id), self._group_tombstones(req.group_id), now_ms)
            self._forget_group(req.group_id)
        group = self.groups.get(req.group_id)
        prefix = req.group_instance_id if req.group_instance_id is not None else req.client_id
        decision = decisions.decide_join(group, req, self.config, now_ms, self._new_member_id(prefix))
        created = decision.step.group
        if group is None and created is not None and not decision.step.persist:
            # Kafka 4.x's classicGroupJoin: a JoinGroup that creates the group and writes nothing
            # else (a member id handed out, a rebalance begun) writes the empty group, generation 0.
            empty = replace(created, generation_id=0, protocol_name=None, leader_id=None, members={})
            await self._log.append(self.partition_for(req.group_id), [
                (offsets_log.group_metadata_key(req.group_id), offsets_log.group_metadata_value(empty))], now_ms)
        return await self._commit_then_reply(self._join_waiters, (req.group_id, decision.member_id),
                                             req.group_id, decision.step, decision.reply, now_ms)

    async def sync_group(self, req: SyncRequest, now_ms: int) -> SyncResult:
        if self._closed:
            return SyncResult(error=ErrorCode.not_coordinator)
        if self._is_consumer_group(req.group_id):
            out = self.consumer.classic_sync(req.group_id, req.member_id, req.group_instance_id, req.generation_id,
                                             req.protocol_type, req.protocol_name, now_ms)
            return SyncResult(error=out.error, assignment=out.assignment, protocol_type=req.protocol_type,
                              protocol_name=req.protocol_name)
        decision = decisions.decide_sync(self.groups.get(req.group_id), req, self.config, now_ms)
        return await self._commit_then_reply(self._sync_waiters, (req.group_id, req.member_id),
                                             req.group_id, decision.step, decision.reply, now_ms)

    async def _commit_then_reply(self, waiters: dict[tuple[str, str], list[Any]], key: tuple[str, str],
                                 group_id: str, step: Any, reply: Any, now_ms: int) -> Any:
        """Apply the decided step; answer now if the decision has a reply, else park the member until
        the rebalance phase completes (JoinGroup and SyncGroup wait the same way)."""
        fut: asyncio.Future[Any] | None = None
        if reply is None:
            fut = asyncio.get_running_loop().create_future()
            waiters.setdefault(key, []).append(fut)
        try:
            await self._commit(group_id, step, now_ms)
        except BaseException:
            if fut is not None:
                self._discard(waiters, key, fut)
            raise
        if reply is not None:
            return reply
        assert fut is not None
        try:
            return await fut
        finally:
            self._discard(waiters, key, fut)

    @staticmethod
    def _discard(waiters: dict[tuple[str, str], list[Any]], key: tuple[str, str], fut: Any) -> None:
        futs = waiters.get(key)
        if futs and fut in futs:
            futs.remove(fut)
            if not futs:
                del waiters[key]

    def heartbeat(self, group_id: str, member_id: str, group_instance_id: str | None, generation_id: int,
                  now_ms: int) -> ErrorCode:
        if self._is_consumer_group(group_id):
            return self.consumer.classic_heartbeat(group_id, member_id, group_instance_id, generation_id, now_ms)
        group, code = decisions.decide_heartbeat(self.groups.get(group_id), member_id, group_instance_id,
                                                 generation_id, now_ms)
        if group is not None and group_id in self.groups:
            self.groups[group_id] = group
            self._changed()
        return code

    def _is_consumer_group(self, group_id: str) -> bool:
        return self.consumer.owns(group_id)

    def _modern_room(self, group_id: str) -> ConsumerGroups | StreamsGroups | ShareGroups | None:
        """The room (consumer, streams or share) holding the group id, None for classic/none."""
        if self.consumer.owns(group_id):
            return self.consumer
        if self.streams.owns(group_id):
            return self.streams
        if self.share.owns(group_id):
            return self.share
        return None

    async def share_group_heartbeat(self, req: share_decisions.HeartbeatRequest,
                                    now_ms: int) -> share_decisions.HeartbeatReply:
        """ShareGroupHeartbeat: the share room decides; a group id held by a group of another
        type is refused (Kafka: "Group X is not a share group.")."""
        if self._closed:
            return share_decisions.HeartbeatReply(error=ErrorCode.not_coordinator)
        if not self.share.owns(req.group_id) and self.group_type(req.group_id) is not None:
            return self.share.invalid(req) or share_decisions.HeartbeatReply(
                error=ErrorCode.group_id_not_found, message=f"Group {req.group_id} is not a share group.")
        self._log.ensure_created(now_ms)
        return await self.share.heartbeat(req, now_ms)

    async def streams_group_heartbeat(self, req: streams_decisions.HeartbeatRequest, now_ms: int) -> HeartbeatResult:
        """StreamsGroupHeartbeat: the streams room decides. A group id held by a consumer group or
        a non-empty classic group is refused; an empty classic group is replaced on a first
        heartbeat (its tombstone goes in the same batch), as Kafka's getOrCreateStreamsGroup."""
        if self._closed:
            return HeartbeatResult(streams_decisions.HeartbeatReply(error=ErrorCode.not_coordinator))
        classic = self.groups.get(req.group_id)
        live_classic = classic is not None and classic.state is not GroupState.DEAD
        if self._is_consumer_group(req.group_id) or self.share.owns(req.group_id) or live_classic and (
                req.member_epoch != 0 or classic.state is not GroupState.EMPTY):
            # A malformed request hears of that first, as Kafka validates before looking.
            return HeartbeatResult(self.streams.invalid(req) or streams_decisions.HeartbeatReply(
                error=ErrorCode.group_id_not_found, message=f"Group {req.group_id} is not a streams group."))
        replaced: list[tuple[bytes, bytes | None]] = []
        if live_classic:
            replaced = [(offsets_log.group_metadata_key(req.group_id), None)]
        self._log.ensure_created(now_ms)
        result = await self.streams.heartbeat(req, now_ms, replaced)
        if replaced and result.reply.error is ErrorCode.none:
            self._forget_classic(req.group_id)
        return result

    async def consumer_group_heartbeat(self, req: HeartbeatRequest, now_ms: int) -> HeartbeatReply:
        """ConsumerGroupHeartbeat: the consumer room decides; a group id taken by a classic group
        is refused, unless that group is empty and this is a first heartbeat: then the classic
        group is replaced (its GroupMetadata tombstone goes in the same batch) and keeps its
        offsets (Kafka: getOrMaybeCreateConsumerGroup, maybeDeleteEmptyClassicGroup)."""
        if self._closed:
            return HeartbeatReply(error=ErrorCode.not_coordinator)
        if self.streams.owns(req.group_id) or self.share.owns(req.group_id):
            return self.consumer.invalid(req) or HeartbeatReply(
                error=ErrorCode.group_id_not_found, message=f"Group {req.group_id} is not a consumer group.")
        classic = self.groups.get(req.group_id)
        replaced: list[tuple[bytes, bytes | None]] = []
        start = None
        if classic is not None and classic.state is not GroupState.DEAD:
            invalid = self.consumer.invalid(req)
            if invalid is not None:
                return invalid
            if req.member_epoch != 0:
                return HeartbeatReply(error=ErrorCode.group_id_not_found,
                                      message=f"Group {req.group_id} is not a consumer group.")
            replaced = [(offsets_log.group_metadata_key(req.group_id), None)]
            if classic.state is not GroupState.EMPTY:
                converted = self._upgrade(classic, now_ms)
                if isinstance(converted, HeartbeatReply):
                    return converted
                start, records = converted
                replaced += records
        self._log.ensure_created(now_ms)
        reply = await self.consumer.heartbeat(req, now_ms, replaced, start)
        if replaced and reply.error is ErrorCode.none:
            self._forget_classic(req.group_id)
        await self._maybe_downgrade(req.group_id, now_ms)
        return reply

    # ------------------------------------------------------------------------------ migration
    # KIP-848's online migration (group.consumer.migration.policy): a live classic group becomes a
    # consumer group when a member of the new protocol joins it; classic members may join a
    # consumer group; and a consumer group left with classic members only becomes a classic group
    # again. The consumer room decides; this door moves the group between the two caches.

    def _upgrade(self, classic: Group, now_ms: int) -> tuple[Any, list[tuple[bytes, bytes | None]]] | HeartbeatReply:
        """Kafka's validateOnlineUpgrade + convertToConsumerGroup."""
        gid = classic.group_id

        def refused(why: str) -> HeartbeatReply:
            return HeartbeatReply(error=ErrorCode.group_id_not_found,
                                  message=f"Cannot upgrade classic group {gid} to consumer group because {why}.")

        if self.consumer.config.migration_policy not in ("bidirectional", "upgrade"):
            return refused("online upgrade is disabled")
        if classic.protocol_type != CONSUMER_PROTOCOL_TYPE:
            return refused("the group does not use the consumer embedded protocol")
        if len(classic.members) > self.consumer.config.max_size:
            return refused("the group size exceeds the consumer group maximum size")
        images = [ClassicMemberImage(m.member_id, m.group_instance_id, m.client_id, m.client_host,
                                     m.rebalance_timeout_ms, m.session_timeout_ms, m.protocols, m.assignment)
                  for m in classic.members.values()]
        try:
            return self.consumer.convert_from_classic(gid, classic.generation_id, classic.protocol_name, images,
                                                      now_ms)
        except MalformedConsumerProtocol:
            return refused("the embedded consumer protocol is malformed")

    def _forget_classic(self, group_id: str) -> None:
        """The classic group became a consumer group: its parked members are told to rejoin."""
        self.groups.pop(group_id, None)
        for waiters, result in ((self._join_waiters, JoinResult(error=ErrorCode.rebalance_in_progress)),
                                (self._sync_waiters, SyncResult(error=ErrorCode.rebalance_in_progress))):
            for key in [k for k in waiters if k[0] == group_id]:
                for f in waiters.pop(key):
                    if not f.done():
                        f.set_result(result)

    async def _classic_join_to_consumer_group(self, req: JoinRequest, now_ms: int) -> JoinResult:
        if self.consumer.config.migration_policy == "disabled":
            return JoinResult(error=ErrorCode.inconsistent_group_protocol, member_id="")
        out = await self.consumer.classic_join(ClassicJoin(
            group_id=req.group_id, member_id=req.member_id, group_instance_id=req.group_instance_id,
            client_id=req.client_id, client_host=req.client_host, session_timeout_ms=req.session_timeout_ms,
            rebalance_timeout_ms=req.rebalance_timeout_ms, protocol_type=req.protocol_type, protocols=req.protocols,
            require_known_member_id=req.require_known_member_id), now_ms)
        if out.error is not ErrorCode.none:
            return JoinResult(error=out.error, member_id=out.member_id)
        return JoinResult(error=ErrorCode.none, member_id=out.member_id, generation_id=out.generation_id,
                          protocol_type=CONSUMER_PROTOCOL_TYPE, protocol_name=out.protocol_name, leader_id="")

    async def _maybe_downgrade(self, group_id: str, now_ms: int) -> None:
        """Kafka's convertToClassicGroup after members left: the remaining classic members form a
        classic group at the group epoch, with their target assignments, and rebalance."""
        if not self.consumer.downgradable(group_id):
            return
        images = self.consumer.classic_images(group_id)
        if len(images) > self.config.max_size:
            return
        generation = self.consumer.groups[group_id].group_epoch
        group = decisions.group_from_consumer_group(group_id, generation, images, now_ms)
        records = [*self.consumer.tombstones(group_id),
                   (offsets_log.group_metadata_key(group_id), offsets_log.group_metadata_value(group))]
        await self._log.append(self.partition_for(group_id), records, now_ms)
        self.consumer.forget(group_id)
        self.groups[group_id] = decisions.prepare_rebalance(group, self.config, now_ms)
        log.info("group_downgraded", group_id=group_id, generation_id=generation, members=len(images))
        self._changed()

    async def leave_group(self, group_id: str, members: Sequence[tuple[str, str | None]],
                          now_ms: int) -> tuple[ErrorCode, list[ErrorCode]]:
        if self._is_consumer_group(group_id):
            codes = await self.consumer.classic_leave(group_id, members, now_ms)
            await self._maybe_downgrade(group_id, now_ms)
            return ErrorCode.none, codes
        group = self.groups.get(group_id)
        step, top, codes = decisions.decide_leave(group, members, self.config, now_ms)
        if group is not None and top is ErrorCode.none:
            await self._commit(group_id, step, now_ms)
        return top, codes

    # ------------------------------------------------------------------------------ offsets
    async def _append_offsets(self, group_id: str, offsets: Mapping[TopicPartition, OffsetAndMetadata],
                              now_ms: int, *, producer_id: int = -1, producer_epoch: int = -1
                              ) -> dict[TopicPartition, OffsetAndMetadata]:
        """Offset commit records for the group's partition; transactional when a producer is given.
        Returns the offsets with the offsets of their records."""
        self._log.ensure_created(now_ms)
        base = await self._log.append(self.partition_for(group_id), [
            (offsets_log.offset_commit_key(group_id, tp), offsets_log.offset_commit_value(om))
            for tp, om in offsets.items()], now_ms, producer_id=producer_id, producer_epoch=producer_epoch)
        return {tp: replace(om, record_offset=base + i) for i, (tp, om) in enumerate(offsets.items())}

    def _refused_commits(self, group_id: str, member_id: str, group_instance_id: str | None, generation_id: int,
                         partitions: Iterable[TopicPartition], *, transactional: bool,
                         api_version: int) -> dict[TopicPartition, ErrorCode]:
        """The partitions of an offset commit the group refuses, with their error. A refusal is
        all or nothing, as in Kafka (the request fails and every partition gets the error); for a
        consumer group whose member sent an older epoch, every partition must have been given to
        it at or before that epoch (KIP-1251)."""
        tps = list(partitions)
        room = self._modern_room(group_id)
        if room is not None:
            check: CommitCheck = room.validate_offset_commit(
                group_id, member_id, group_instance_id, generation_id, transactional=transactional,
                api_version=api_version)
            code = check.error
            if code is ErrorCode.none and check.partition_error is not None:
                code = next((c for tp in tps if (c := check.partition_error(tp.topic, tp.partition))
                             is not ErrorCode.none), ErrorCode.none)
            if transactional and code is ErrorCode.stale_member_epoch:
                code = ErrorCode.illegal_generation  # TxnOffsetCommit's clients know this one
            return {} if code is ErrorCode.none else {tp: code for tp in tps}
        group = self.groups.get(group_id)
        if transactional:
            code = decisions.validate_txn_offset_commit(group, member_id, group_instance_id, generation_id)
        else:
            code = decisions.validate_offset_commit(group, member_id, group_instance_id, generation_id)
        return {} if code is ErrorCode.none else {tp: code for tp in tps}

    async def commit_offsets(self, group_id: str, member_id: str, group_instance_id: str | None,
                             generation_id: int, offsets: Mapping[TopicPartition, OffsetCommitEntry],
                             now_ms: int, *, api_version: int = 9) -> dict[TopicPartition, ErrorCode]:
        refused = self._refused_commits(group_id, member_id, group_instance_id, generation_id, offsets,
                                        transactional=False, api_version=api_version)
        results, accepted = _accept_offsets({tp: e for tp, e in offsets.items() if tp not in refused}, now_ms,
                                            self.topics)
        results.update(refused)
        if accepted:
            try:
                written = await self._append_offsets(group_id, accepted, now_ms)
            except OSError as exc:
                return self._append_failed(group_id, results, exc)
            for tp, om in written.items():
                self._apply_offset(group_id, tp, om)
            self._offsets_only_group(group_id, now_ms)
        return results

    def validate_offset_fetch(self, group_id: str, member_id: str | None, member_epoch: int) -> ErrorCode:
        """OffsetFetch v9+ names the member: a consumer group checks it (a classic group does not,
        as Kafka's ClassicGroup.validateOffsetFetch)."""
        room = self._modern_room(group_id)
        if room is None:
            return ErrorCode.none
        return room.validate_offset_fetch(group_id, member_id, member_epoch)

    def fetch_offsets(self, group_id: str, partitions: Iterable[TopicPartition] | None,
                      require_stable: bool) -> list[FetchedOffset]:
        """OffsetFetch. None means every partition with a committed offset. With require_stable,
        partitions with pending transactional offsets answer UNSTABLE_OFFSET_COMMIT (KIP-447)."""
        committed = self.offsets.get(group_id, {})
        tps = sorted(committed) if partitions is None else list(partitions)
        out = []
        for tp in tps:
            if require_stable and self._has_pending(group_id, tp):
                out.append(FetchedOffset(tp=tp, offset=-1, leader_epoch=-1, metadata="",
                                         error=ErrorCode.unstable_offset_commit))
                continue
            om = committed.get(tp)
            if om is None:
                out.append(FetchedOffset(tp=tp, offset=-1, leader_epoch=-1, metadata="", error=ErrorCode.none))
            else:
                out.append(FetchedOffset(tp=tp, offset=om.offset, leader_epoch=om.leader_epoch,
                                         metadata=om.metadata, error=ErrorCode.none))
        return out

    async def delete_offsets(self, group_id: str, partitions: Sequence[TopicPartition],
                             now_ms: int) -> tuple[ErrorCode, dict[TopicPartition, ErrorCode]]:
        topics = {tp.topic for tp in partitions}
        room = self._modern_room(group_id)
        if room is not None:
            subscribed = room.subscribed_topics(group_id)
            top, by_topic = ErrorCode.none, {t: ErrorCode.group_subscribed_to_topic if t in subscribed
                                              else ErrorCode.none for t in topics}
        else:
            top, by_topic = decisions.decide_offset_delete(self.groups.get(group_id), topics)
        if top is not ErrorCode.none:
            return top, {}
        results = {tp: by_topic[tp.topic] for tp in partitions}
        present = set(self._offset_partitions(group_id))
        doomed = [tp for tp, code in results.items() if code is ErrorCode.none and tp in present]
        if doomed:
            await self._log.append(self.partition_for(group_id),
                                   [(offsets_log.offset_commit_key(group_id, tp), None) for tp in doomed], now_ms)
            for tp in doomed:
                self._apply_offset(group_id, tp, None)
        return ErrorCode.none, results

    async def compact(self, now_ms: int) -> int:
        """Keep __consumer_offsets bounded: for each partition whose log rolled, write every live
        group and committed offset of that partition again and drop the older segments (see
        RecordLog.compact). Pending transactional offsets that would still replace a committed one
        are written again after it, in their producer's transaction, so that replay keeps their
        order; the older segments holding open transactions stay (they are above the LSO)."""
        compacted = 0
        for p in range(self._log.partition_count):
            if not self._log.needs_compaction(p):
                continue
            records: list[tuple[bytes, bytes | None]] = []
            for gid, group in self.groups.items():
                if self.partition_for(gid) == p and group.state is not GroupState.DEAD:
                    records.append((offsets_log.group_metadata_key(gid), offsets_log.group_metadata_value(group)))
            for room in (self.consumer, self.streams, self.share):
                for gid in sorted(room.groups):
                    if self.partition_for(gid) == p:
                        records.extend(room.snapshot_records(gid))
            committed = [(gid, tp, om) for gid, offsets in self.offsets.items() if self.partition_for(gid) == p
                         for tp, om in offsets.items()]
            records.extend((offsets_log.offset_commit_key(gid, tp), offsets_log.offset_commit_value(om))
                           for gid, tp, om in committed)
            pending = self._pending_rewrite(p)
            base = await self._log.compact(p, records, now_ms, [
                TransactionalRecords(pid, self._pending_epochs.get(pid, -1),
                                     [(offsets_log.offset_commit_key(gid, tp), offsets_log.offset_commit_value(om))
                                      for gid, tp, om in run])
                for pid, run in pending])
            # The cache follows the log: the rewritten records' offsets are the ones replay will see
            # (an entry replaced while the append ran keeps its own, newer record offset).
            offset = base + len(records) - len(committed)
            for gid, tp, om in committed:
                if self.offsets.get(gid, {}).get(tp) is om:
                    self.offsets[gid][tp] = replace(om, record_offset=offset)
                offset += 1
            for pid, run in pending:
                for gid, tp, om in run:
                    still = self.pending_txn_offsets.get(pid, {}).get(gid, {})
                    if still.get(tp) is om:
                        still[tp] = replace(om, record_offset=offset)
                    offset += 1
            compacted += 1
        return compacted

    def _pending_rewrite(self, partition: int) -> list[tuple[int, list[tuple[str, TopicPartition, OffsetAndMetadata]]]]:
        """The pending transactional offsets of groups on `partition` that would still win at their
        COMMIT marker (written after the committed offset), in log order, as runs of one producer."""
        entries = sorted(
            ((om.record_offset, pid, gid, tp, om) for pid, by_group in self.pending_txn_offsets.items()
             for gid, offsets in by_group.items() if self.partition_for(gid) == partition
             for tp, om in offsets.items()
             if tp not in self.offsets.get(gid, {}) or om.record_offset > self.offsets[gid][tp].record_offset),
            key=lambda e: e[0])
        runs: list[tuple[int, list[tuple[str, TopicPartition, OffsetAndMetadata]]]] = []
        for _ro, pid, gid, tp, om in entries:
            if not runs or runs[-1][0] != pid:
                runs.append((pid, []))
            runs[-1][1].append((gid, tp, om))
        return runs

    # ------------------------------------------------------------------------------ admin
    def list_groups(self, states: Iterable[str] = (), types: Iterable[str] = ()) -> list[ListedGroup]:
        """ListGroups: both group types, filtered by state and type (case-insensitive)."""
        wanted_states = {s.strip().lower() for s in states}
        wanted_types = {t.strip().lower() for t in types}
        listed: list[ListedGroup] = []
        if not wanted_types or "classic" in wanted_types:
            listed += [ListedGroup(g.group_id, g.protocol_type or "", g.state.value, "classic")
                       for g in self.groups.values()
                       if g.state is not GroupState.DEAD and (not wanted_states or g.state.value.lower() in wanted_states)]
        if not wanted_types or "consumer" in wanted_types:
            listed += [ListedGroup(g.group_id, CONSUMER_PROTOCOL_TYPE, g.state.value, "consumer")
                       for g in self.consumer.list_groups(wanted_states)]
        if not wanted_types or "streams" in wanted_types:
            listed += [ListedGroup(g.group_id, "streams", g.state.value, "streams")
                       for g in self.streams.list_groups(wanted_states)]
        if not wanted_types or "share" in wanted_types:
            listed += [ListedGroup(g.group_id, "share", g.state.value, "share")
                       for g in self.share.list_groups(wanted_states)]
        return sorted(listed, key=lambda g: g.group_id)

    def group_type(self, group_id: str) -> str | None:
        """"classic", "consumer", "streams", "share", or None when there is no such group."""
        if self._is_consumer_group(group_id):
            return "consumer"
        if self.streams.owns(group_id):
            return "streams"
        if self.share.owns(group_id):
            return "share"
        group = self.groups.get(group_id)
        return None if group is None or group.state is GroupState.DEAD else "classic"

    def describe_group(self, group_id: str) -> Group | None:
        return self.groups.get(group_id)

    async def delete_groups(self, group_ids: Sequence[str], now_ms: int) -> dict[str, ErrorCode]:
        results: dict[str, ErrorCode] = {}
        for gid in group_ids:
            if not gid:
                results[gid] = ErrorCode.invalid_group_id
                continue
            room = self._modern_room(gid)
            code = room.deletable(gid) if room is not None else decisions.decide_delete(self.groups.get(gid))
            results[gid] = code
            if code is not ErrorCode.none:
                continue
            tps = self._offset_partitions(gid)  # committed or pending: both are deleted
            records: list[tuple[bytes, bytes | None]] = [(offsets_log.offset_commit_key(gid, tp), None) for tp in tps]
            records += self._group_tombstones(gid)
            await self._log.append(self.partition_for(gid), records, now_ms)
            for tp in tps:
                self._apply_offset(gid, tp, None)
            share_keys = self.share.share_state.keys_of(gid) if self.share.owns(gid) else []
            self._forget_group(gid)
            if share_keys:   # its share-partitions' state goes too (DeleteShareGroupState)
                await self.share.share_state.delete(share_keys, now_ms)
            log.info("group_deleted", group_id=gid)
        return results

    def _offsets_only_group(self, group_id: str, now_ms: int) -> None:
        """Offsets committed for a group id no group holds (simple consumers, admin clients, a
        transaction's offsets) make an Empty classic group of it, as in Kafka; a group of either
        type that holds the id keeps it."""
        if group_id not in self.groups and self._modern_room(group_id) is None:
            self.groups[group_id] = Group(group_id=group_id, state=GroupState.EMPTY, state_timestamp_ms=now_ms)

    def _group_tombstones(self, group_id: str) -> list[tuple[bytes, bytes | None]]:
        """The records that delete a group of any type (not its offsets)."""
        room = self._modern_room(group_id)
        if room is not None:
            return room.tombstones(group_id)
        return [(offsets_log.group_metadata_key(group_id), None)]

    def _forget_group(self, group_id: str) -> None:
        """After its tombstones were written: the group leaves the cache."""
        room = self._modern_room(group_id)
        if room is not None:
            room.forget(group_id)
            return
        next_state(self.groups[group_id].state, GroupEvent.DELETED)
        del self.groups[group_id]

    # ------------------------------------------------------------------------------ transactions
    def _pending_partitions(self, group_id: str) -> set[TopicPartition]:
        return {tp for by_group in self.pending_txn_offsets.values() for tp in by_group.get(group_id, {})}

    def _offset_partitions(self, group_id: str) -> list[TopicPartition]:
        """Partitions with a committed or a pending transactional offset, in a stable order."""
        return sorted(set(self.offsets.get(group_id, {})) | self._pending_partitions(group_id))

    def _has_pending(self, group_id: str, tp: TopicPartition | None = None) -> bool:
        for by_group in self.pending_txn_offsets.values():
            offsets = by_group.get(group_id)
            if offsets and (tp is None or tp in offsets):
                return True
        return False

    async def commit_transactional_offsets(self, group_id: str, *, producer_id: int, producer_epoch: int,
                                           member_id: str, group_instance_id: str | None, generation_id: int,
                                           offsets: Mapping[TopicPartition, OffsetCommitEntry],
                                           now_ms: int, api_version: int = 5) -> dict[TopicPartition, ErrorCode]:
        """TxnOffsetCommit: append the offsets as a transactional batch of the producer; they stay
        pending (invisible to OffsetFetch) until the COMMIT marker reaches this partition."""
        refused = self._refused_commits(group_id, member_id, group_instance_id, generation_id, offsets,
                                        transactional=True, api_version=api_version)
        results, accepted = _accept_offsets({tp: e for tp, e in offsets.items() if tp not in refused}, now_ms,
                                            self.topics)
        results.update(refused)
        if accepted:
            try:
                written = await self._append_offsets(group_id, accepted, now_ms, producer_id=producer_id,
                                                     producer_epoch=producer_epoch)
            except OSError as exc:
                return self._append_failed(group_id, results, exc)
            self.add_pending_transactional_offsets(producer_id, producer_epoch, group_id, written)
        return results

    @staticmethod
    def _append_failed(group_id: str, results: Mapping[TopicPartition, ErrorCode],
                       exc: OSError) -> dict[TopicPartition, ErrorCode]:
        # Kafka's group coordinator turns a storage failure of its log into NOT_COORDINATOR
        # (GroupCoordinatorService: KAFKA_STORAGE_ERROR -> NOT_COORDINATOR): the client finds the
        # coordinator again and retries, which succeeds once the disk accepts writes.
        log.warning("offsets_append_failed", group_id=group_id, reason=str(exc))
        return {tp: ErrorCode.not_coordinator if code is ErrorCode.none else code for tp, code in results.items()}

    def add_pending_transactional_offsets(self, producer_id: int, producer_epoch: int, group_id: str,
                                          offsets: Mapping[TopicPartition, OffsetAndMetadata]) -> None:
        """For TxnOffsetCommit (after its transactional batch was appended): invisible to
        OffsetFetch until the COMMIT marker."""
        self.pending_txn_offsets.setdefault(producer_id, {}).setdefault(group_id, {}).update(offsets)
        self._pending_epochs[producer_id] = producer_epoch

    def complete_transaction(self, partition: int, producer_id: int, committed: bool) -> None:
        """Called for a COMMIT/ABORT marker on `__consumer_offsets` partition `partition` (live, and
        on replay): completes the producer's pending offsets of the groups that live on that
        partition only, as Kafka's handleTxnCompletion does; its offsets for groups on another
        partition wait for the marker there (replay reads one partition after another)."""
        by_group = self.pending_txn_offsets.get(producer_id, {})
        done = [gid for gid in by_group if self.partition_for(gid) == partition]
        for gid in done:
            offsets = by_group.pop(gid)
            if not committed:
                continue
            current = self.offsets.get(gid, {})
            applied = False
            for tp, om in offsets.items():
                # Kafka keeps the most recent commit of a mix of plain and transactional ones: a
                # plain OffsetCommit written after this TxnOffsetCommit stays.
                if tp not in current or om.record_offset > current[tp].record_offset:
                    self._apply_offset(gid, tp, om)
                    applied = True
            if applied:
                self._offsets_only_group(gid, -1)
        if not by_group:
            self.pending_txn_offsets.pop(producer_id, None)
            self._pending_epochs.pop(producer_id, None)
