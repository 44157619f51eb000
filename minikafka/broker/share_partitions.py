"""The share-partition manager (KIP-932; Kafka's SharePartitionManager): the broker's side of
ShareFetch and ShareAcknowledge, the one door between those handlers and the share-group cores.

Theory of operation
- One SharePartition (coordinator/share_group/share_partition.py, pure) per (share group, topic
  partition), made on the first ShareFetch that names it: its state is read from the share
  coordinator (`__share_group_state`); a state never fetched (start offset -1) starts where the
  group's `share.auto.offset.reset` says: latest (the high watermark, Kafka's default), earliest
  (the log start), or by_duration:<ISO-8601> (the first offset at or after now - duration).
- Acquire: the log is read from the partition's next fetch offset up to the high watermark, or up
  to the last stable offset under `share.isolation.level=read_committed`, where data batches of
  aborted transactions are archived and never delivered (Kafka's
  maybeFilterAbortedTransactionalAcquiredRecords). The raw batches go back with the ranges the
  member acquired; the client delivers only records inside them.
- Every change an acknowledgement, a lock expiry or a member's release makes is written to the
  share coordinator before it is answered: the start offset, the delivery-complete count and the
  batches whose persisted state changed. An acquisition is never written (Kafka never persists
  ACQUIRED), so after a crash what a member held is AVAILABLE again and redelivered; nothing
  ACCEPTed is.
- Share sessions (sessions.py) hold the epochs; a session that closes (epoch -1, its connection
  gone, or replaced by a new epoch 0) releases what its member held.
- Locks are expired by a timer (`expire_locks`, on the broker's clock, so virtual time drives it);
  a release or an expiry wakes ShareFetches parked on the partition.
"""

from __future__ import annotations

import asyncio
import datetime
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import structlog

from minikafka.broker.services import BrokerServices
from minikafka.coordinator.share_group.coordinator import ShareGroups
from minikafka.coordinator.share_group.decisions import ShareGroupConfig
from minikafka.coordinator.share_group.sessions import ShareSessions
from minikafka.coordinator.share_group.share_coordinator import UNINITIALIZED_START_OFFSET, compress
from minikafka.coordinator.share_group.share_partition import (
    AckBatch,
    AcquiredRecords,
    LogBatch,
    ShareConfig,
    SharePartition,
)
from minikafka.group_config import duration_seconds
from minikafka.protocol import records
from minikafka.protocol.errors import CorruptRecord, ErrorCode
from minikafka.protocol.types import TopicPartition
from minikafka.storage.errors import OffsetOutOfRange

log = structlog.get_logger("minikafka.broker.share")

Key = tuple[str, TopicPartition]  # (share group, partition)


@dataclass(frozen=True, slots=True)
class Acquired:
    """What one partition of a ShareFetch got: raw batches and the ranges acquired from them."""

    error: ErrorCode = ErrorCode.none
    data: bytes = b""
    ranges: tuple[AcquiredRecords, ...] = ()


def _share_config(cfg: ShareGroupConfig) -> ShareConfig:
    return ShareConfig(delivery_count_limit=cfg.delivery_count_limit, max_record_locks=cfg.partition_max_record_locks,
                       lock_duration_ms=cfg.record_lock_duration_ms)


class SharePartitionManager:
    def __init__(self, svc: BrokerServices, groups: ShareGroups, *, max_sessions: int = 2000) -> None:
        self.svc = svc
        self.groups = groups
        self.sessions = ShareSessions(max_sessions)
        self.partitions: dict[Key, SharePartition] = {}
        # The topic id each share-partition was loaded for: a topic deleted and created again under
        # the same name is another topic, whose share-partition starts afresh.
        self._topic_ids: dict[Key, uuid.UUID] = {}
        self._locks: dict[Key, asyncio.Lock] = {}

    def config_of(self, group_id: str) -> ShareGroupConfig:
        return self.groups.config_of(group_id)

    def lock(self, key: Key) -> asyncio.Lock:
        return self._locks.setdefault(key, asyncio.Lock())

    def topic_id(self, topic: str) -> uuid.UUID | None:
        info = self.svc.logs.topics.get(topic)
        return None if info is None else info.topic_id

    # ------------------------------------------------------------------------------ partitions
    def _partition(self, group_id: str, tp: TopicPartition) -> SharePartition | None:
        """The share-partition, loaded from its persisted state on first use; None when the topic
        partition does not exist."""
        key = (group_id, tp)
        sp = self._cached(key)
        if sp is not None:
            return sp
        plog = self.svc.logs.get(tp)
        topic_id = self.topic_id(tp.topic)
        if plog is None or topic_id is None:
            return None
        cfg = self.config_of(group_id)
        state = self.groups.share_state.read((group_id, topic_id, tp.partition))
        start = UNINITIALIZED_START_OFFSET if state is None else state.start_offset
        if start == UNINITIALIZED_START_OFFSET:
            start = self._reset_offset(cfg.auto_offset_reset, plog)
        sp = SharePartition(_share_config(cfg), max(start, plog.log_start_offset),
                            () if state is None else state.batches)
        self.partitions[key] = sp
        self._topic_ids[key] = topic_id
        log.info("share_partition_loaded", group_id=group_id, topic=tp.topic, partition=tp.partition,
                 start_offset=sp.start_offset, in_flight=sp.in_flight)
        return sp

    def _cached(self, key: Key) -> SharePartition | None:
        """The loaded share-partition, unless its topic is gone or was created again since."""
        sp = self.partitions.get(key)
        if sp is not None and self._topic_ids.get(key) != self.topic_id(key[1].topic):
            self._forget([key])
            return None
        return sp

    def _reset_offset(self, strategy: str, plog: object) -> int:
        """share.auto.offset.reset for a share-partition never fetched before."""
        if strategy == "earliest":
            return plog.log_start_offset  # type: ignore[attr-defined, no-any-return]
        if strategy.startswith("by_duration:"):
            seconds = duration_seconds(strategy[len("by_duration:"):]) or 0.0
            found = plog.offset_for_timestamp(self.svc.clock.now_ms() - int(seconds * 1000))  # type: ignore[attr-defined]
            return plog.high_watermark if found is None else found[0]  # type: ignore[attr-defined, no-any-return]
        return plog.high_watermark  # type: ignore[attr-defined, no-any-return]

    async def _persist(self, group_id: str, tp: TopicPartition, sp: SharePartition, start_before: int) -> ErrorCode:
        """WriteShareGroupState for what the last operation changed. As Kafka's, the write carries
        the start offset from before the operation moved it, and the delivery-complete count from
        there (the lag, high watermark - start - count, is the same either way; a restart moves
        the start over the completed records again). A failed write is COORDINATOR_NOT_AVAILABLE
        for the request (Kafka's mapping of persister errors); the in-memory state stands, as
        Kafka's does after a lock timeout."""
        changes = sp.take_changes()
        topic_id = self._topic_ids.get((group_id, tp))
        if topic_id is None or topic_id != self.topic_id(tp.topic):
            return ErrorCode.unknown_topic_or_partition   # the topic went: so does its state
        key = (group_id, topic_id, tp.partition)
        state = self.groups.share_state.read(key)
        if not changes and state is not None and state.start_offset == start_before:
            return ErrorCode.none
        complete = (sp.start_offset - start_before) + sum(1 for r in sp.records.values() if r.state.final)
        try:
            await self.groups.share_state.write(key, start_offset=start_before, batches=compress(changes),
                                                delivery_complete_count=complete, now_ms=self.svc.clock.now_ms())
        except OSError as exc:
            log.warning("share_state_write_failed", group_id=group_id, topic=tp.topic, partition=tp.partition,
                        reason=str(exc))
            return ErrorCode.coordinator_not_available
        return ErrorCode.none

    # ------------------------------------------------------------------------------ fetch
    async def acquire(self, group_id: str, member_id: str, tp: TopicPartition, *, max_records: int,
                      max_bytes: int) -> Acquired:
        async with self.lock((group_id, tp)):
            sp = self._partition(group_id, tp)
            plog = self.svc.logs.get(tp)
            if sp is None or plog is None:
                return Acquired(ErrorCode.unknown_topic_or_partition)
            sp.log_start_moved(plog.log_start_offset)
            if not sp.can_acquire():
                return Acquired()
            read_committed = self.config_of(group_id).isolation_level == "read_committed"
            upper = plog.last_stable_offset if read_committed else plog.high_watermark
            offset = sp.next_fetch_offset()
            if offset >= upper:
                return Acquired()
            try:
                data, end = plog.read_range(offset, max(max_bytes, 1), upper_offset=upper, min_one=True)
            except OffsetOutOfRange:
                return Acquired()   # the log start passed it: the next fetch starts there
            except CorruptRecord as exc:
                log.warning("corrupt_batch_not_shared", topic=tp.topic, partition=tp.partition, offset=offset,
                            reason=str(exc))
                return Acquired(ErrorCode.corrupt_message)
            data = bytes(data)
            aborted = plog.collect_aborted(offset, end) if read_committed and data else []
            batches = _log_batches(data, [(a.producer_id, a.first_offset) for a in aborted])
            ranges = sp.acquire(member_id, batches, max_records=max(max_records, 1), now_ms=self.svc.clock.now_ms())
            if not ranges:
                return Acquired()
            return Acquired(ErrorCode.none, data, tuple(ranges))

    # ------------------------------------------------------------------------------ acknowledge
    async def acknowledge(self, group_id: str, member_id: str, tp: TopicPartition,
                          batches: Sequence[AckBatch]) -> ErrorCode:
        async with self.lock((group_id, tp)):
            sp = self._cached((group_id, tp))
            if sp is None:
                # Nothing was ever acquired here since this broker started: nothing the member holds.
                return ErrorCode.invalid_record_state if self.svc.logs.get(tp) is not None \
                    else ErrorCode.unknown_topic_or_partition
            start = sp.start_offset
            code = sp.acknowledge(member_id, batches, self.svc.clock.now_ms())
            if code is not ErrorCode.none:
                return code
            code = await self._persist(group_id, tp, sp, start)
            self.svc.purgatory.notify(tp)  # released records may be acquired by a parked fetch
            return code

    # ------------------------------------------------------------------------------ release
    async def release_member(self, group_id: str, member_id: str) -> None:
        """The member's share session ended: what it holds is AVAILABLE again (and persisted)."""
        for (gid, tp), sp in list(self.partitions.items()):
            if gid != group_id:
                continue
            async with self.lock((gid, tp)):
                start = sp.start_offset
                if sp.release_member(member_id):
                    await self._persist(gid, tp, sp, start)
                    self.svc.purgatory.notify(tp)

    async def close_session(self, group_id: str, member_id: str) -> None:
        self.sessions.close(group_id, member_id)
        await self.release_member(group_id, member_id)

    def connection_closed(self, conn_id: int) -> None:
        """Kafka's ShareSessionCache on a disconnect: the sessions that connection opened end."""
        gone = [k for k, s in self.sessions.sessions.items() if s.conn_id == conn_id]
        for group_id, member_id in gone:
            asyncio.get_running_loop().create_task(self.close_session(group_id, member_id))

    async def expire_locks(self) -> None:
        """Acquisition locks that ran out: their records go back (or are archived at the
        delivery limit), persisted, and parked fetches wake."""
        now = self.svc.clock.now_ms()
        for (gid, tp), sp in list(self.partitions.items()):
            deadline = sp.next_lock_deadline()
            if deadline is None or deadline > now:
                continue
            async with self.lock((gid, tp)):
                start = sp.start_offset
                if sp.expire_locks(now):
                    log.info("share_locks_expired", group_id=gid, topic=tp.topic, partition=tp.partition)
                    await self._persist(gid, tp, sp, start)
                    self.svc.purgatory.notify(tp)

    def forget_group(self, group_id: str) -> None:
        """The group was deleted: its share-partitions go from memory (their state was deleted)."""
        self._forget([k for k in self.partitions if k[0] == group_id])

    def forget_partitions(self, group_id: str, partitions: Iterable[tuple[uuid.UUID, int]]) -> None:
        """AlterShareGroupOffsets reset them: the next fetch loads the new state."""
        wanted = set(partitions)
        self._forget([k for k in self.partitions if k[0] == group_id
                      and (self._topic_ids.get(k), k[1].partition) in wanted])

    def forget_topics(self, group_id: str, topic_ids: Iterable[uuid.UUID]) -> None:
        """DeleteShareGroupOffsets deleted their state."""
        doomed = set(topic_ids)
        self._forget([k for k in self.partitions if k[0] == group_id and self._topic_ids.get(k) in doomed])

    def _forget(self, keys: Iterable[Key]) -> None:
        for key in list(keys):   # (its lock stays: a request may hold it right now)
            self.partitions.pop(key, None)
            self._topic_ids.pop(key, None)

    def lock_duration(self, group_id: str) -> datetime.timedelta:
        return datetime.timedelta(milliseconds=self.config_of(group_id).record_lock_duration_ms)


def _log_batches(data: bytes, aborted: Sequence[tuple[int, int]]) -> list[LogBatch]:
    """The batches a read returned, each marked when it must not be delivered: a control batch,
    or data of an aborted transaction (Kafka's walk: an aborted transaction is active from its
    first offset until its producer's ABORT marker)."""
    pending = sorted(aborted, key=lambda a: a[1])
    active: set[int] = set()
    out: list[LogBatch] = []
    for pos, h in records.split_batches(data):
        while pending and pending[0][1] <= h.last_offset:
            active.add(pending.pop(0)[0])
        if h.is_control:
            if h.producer_id in active and records.control_type(data, pos) == 0:
                active.discard(h.producer_id)
            # A marker is nothing a consumer delivers: archived here rather than acquired and
            # left for the client to acknowledge as a GAP (Kafka's way; the outcome is the same).
            out.append(LogBatch(h.base_offset, h.last_offset, aborted=True))
            continue
        out.append(LogBatch(h.base_offset, h.last_offset, aborted=h.is_transactional and h.producer_id in active))
    return out
