"""The share coordinator of one node: the share-partitions' persisted state in
`__share_group_state` (KIP-932), what Kafka's ShareCoordinatorShard keeps and its
Initialize/Read/Write/DeleteShareGroupState APIs do. On one node those are method calls; the
records and their meaning are Kafka's (state_log.py), so a restart, and Kafka's own tools, read
the same state.

- A key is (group, topic id, partition) and lives on partition
  abs(javaHash("group:topicId:partition")) % share.coordinator.state.topic.num.partitions.
- initialize writes a ShareSnapshot (snapshot epoch 0, the group's state epoch, start offset -1:
  not yet fetched, so share.auto.offset.reset decides where the first fetch starts).
- write carries the share-partition start offset, the delivery-complete count and only the state
  batches that changed; it is a ShareUpdate, or a new ShareSnapshot (next snapshot epoch, the whole
  merged state) once `snapshot_every` updates followed the last snapshot.
- Replay merges updates into their snapshot: the newer batch wins where ranges overlap, and
  batches below the start offset are dropped (Kafka's PersisterStateBatchCombiner).
- delete writes tombstones for the group's keys (DeleteShareGroupState).
Pure but for the RecordLog port it appends to; time is passed in.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

import structlog

from minikafka.coordinator.ports import RecordLog
from minikafka.coordinator.share_group import state_log as sl
from minikafka.coordinator.share_group.share_partition import RecordState, StateBatch
from minikafka.java_order import string_hash
from minikafka.protocol.types import kafka_uuid_str

log = structlog.get_logger("minikafka.coordinator.share_state")

Key = tuple[str, uuid.UUID, int]  # (group id, topic id, partition)
UNINITIALIZED_START_OFFSET = -1


@dataclass(frozen=True, slots=True)
class PersistedState:
    """What ReadShareGroupState answers for one share-partition, and what the next write needs."""

    snapshot_epoch: int
    state_epoch: int
    leader_epoch: int
    start_offset: int
    batches: tuple[StateBatch, ...] = ()
    delivery_complete_count: int = sl.NO_DELIVERY_COMPLETE_COUNT
    create_timestamp_ms: int = 0
    updates_since_snapshot: int = 0


def merge_batches(older: Iterable[StateBatch], newer: Iterable[StateBatch], start_offset: int) -> tuple[StateBatch, ...]:
    """Kafka's PersisterStateBatchCombiner: the newer batch wins where ranges overlap; offsets
    below the start offset go; neighbours of equal state and count are joined."""
    per: dict[int, tuple[RecordState, int]] = {}
    for b in (*older, *newer):
        value = (b.delivery_state, b.delivery_count)
        for o in range(max(b.first_offset, start_offset), b.last_offset + 1):
            per[o] = value
    return compress(per)


def compress(per: Mapping[int, tuple[RecordState, int]]) -> tuple[StateBatch, ...]:
    """Per-offset states as ranges of equal state and delivery count."""
    out: list[StateBatch] = []
    first = last = -1
    value: tuple[RecordState, int] | None = None
    for o in sorted(per):
        v = per[o]
        if o == last + 1 and v == value:
            last = o
            continue
        if value is not None:
            out.append(StateBatch(first, last, *value))
        first = last = o
        value = v
    if value is not None:
        out.append(StateBatch(first, last, *value))
    return tuple(out)


class ShareCoordinator:
    def __init__(self, records: RecordLog, *, snapshot_every: int = 500) -> None:
        """`snapshot_every`: share.coordinator.snapshot.update.records.per.snapshot."""
        self._log = records
        self.snapshot_every = max(snapshot_every, 1)
        self.states: dict[Key, PersistedState] = {}

    def partition_for(self, key: Key) -> int:
        group_id, topic_id, partition = key
        return abs(string_hash(f"{group_id}:{kafka_uuid_str(topic_id)}:{partition}")) % self._log.partition_count

    # ------------------------------------------------------------------------------ start-up
    def load(self) -> None:
        """Fold `__share_group_state` into the cache; an unreadable record is skipped with a
        warning (its share-partition's state is then what the records around it say)."""
        for r in self._log.replay():
            if r.key is None or r.control_type is not None:
                continue
            try:
                self.replay(r.key, r.value)
            except sl.CorruptShareStateRecord as exc:
                log.warning("share_state_record_skipped", partition=r.partition, offset=r.offset, reason=str(exc))
        log.info("share_state_loaded", share_partitions=len(self.states))

    def replay(self, key_bytes: bytes, value: bytes | None) -> None:
        k = sl.decode_key(key_bytes)
        key = (k.group_id, k.topic_id, k.partition)
        if value is None:
            self.states.pop(key, None)
            return
        v = sl.decode_value(k.record_type, value)
        if isinstance(v, sl.ShareSnapshot):
            self.states[key] = PersistedState(v.snapshot_epoch, v.state_epoch, v.leader_epoch, v.start_offset,
                                              v.state_batches, v.delivery_complete_count, v.create_timestamp_ms)
            return
        current = self.states.get(key)
        if current is None:
            return  # an update without its snapshot (Kafka ignores it too)
        start = v.start_offset if v.start_offset != -1 else current.start_offset
        self.states[key] = replace(
            current, leader_epoch=v.leader_epoch if v.leader_epoch != -1 else current.leader_epoch,
            start_offset=start, batches=merge_batches(current.batches, v.state_batches, start),
            delivery_complete_count=v.delivery_complete_count, updates_since_snapshot=current.updates_since_snapshot + 1)

    # ------------------------------------------------------------------------------ the APIs
    def read(self, key: Key) -> PersistedState | None:
        return self.states.get(key)

    async def initialize(self, keys: Sequence[Key], state_epoch: int, now_ms: int) -> None:
        """InitializeShareGroupState: a fresh snapshot per share-partition, start offset -1.
        A key already at this state epoch or a later one keeps its state."""
        by_partition: dict[int, list[tuple[Key, PersistedState]]] = {}
        for key in keys:
            current = self.states.get(key)
            if current is not None and current.state_epoch >= state_epoch:
                continue
            epoch = 0 if current is None else current.snapshot_epoch + 1
            st = PersistedState(epoch, state_epoch, 0, UNINITIALIZED_START_OFFSET, create_timestamp_ms=now_ms)
            by_partition.setdefault(self.partition_for(key), []).append((key, st))
        for p, entries in sorted(by_partition.items()):
            await self._log.append(p, [_snapshot_record(key, st, now_ms) for key, st in entries], now_ms)
            for key, st in entries:
                self.states[key] = st

    async def reset(self, start_offsets: Mapping[Key, int], now_ms: int) -> None:
        """AlterShareGroupOffsets: each share-partition starts over at the given offset, nothing
        in flight (a new snapshot, as Kafka's share coordinator writes for it)."""
        by_partition: dict[int, list[tuple[Key, PersistedState]]] = {}
        for key, start in start_offsets.items():
            current = self.states.get(key)
            st = PersistedState(0 if current is None else current.snapshot_epoch + 1,
                                0 if current is None else current.state_epoch, 0, start, (), 0, now_ms)
            by_partition.setdefault(self.partition_for(key), []).append((key, st))
        for p, entries in sorted(by_partition.items()):
            await self._log.append(p, [_snapshot_record(key, st, now_ms) for key, st in entries], now_ms)
            for key, st in entries:
                self.states[key] = st

    async def write(self, key: Key, *, start_offset: int, batches: Sequence[StateBatch],
                    delivery_complete_count: int, now_ms: int) -> PersistedState:
        """WriteShareGroupState: the changed batches; an update or, every `snapshot_every`
        updates, a new snapshot with the whole merged state."""
        current = self.states.get(key) or PersistedState(0, 0, 0, UNINITIALIZED_START_OFFSET, create_timestamp_ms=now_ms)
        merged = merge_batches(current.batches, batches, start_offset)
        if current.updates_since_snapshot + 1 >= self.snapshot_every or key not in self.states:
            st = replace(current, snapshot_epoch=current.snapshot_epoch + (key in self.states), start_offset=start_offset,
                         batches=merged, delivery_complete_count=delivery_complete_count, updates_since_snapshot=0)
            record = _snapshot_record(key, st, now_ms)
        else:
            st = replace(current, start_offset=start_offset, batches=merged,
                         delivery_complete_count=delivery_complete_count,
                         updates_since_snapshot=current.updates_since_snapshot + 1)
            update = sl.ShareUpdate(st.snapshot_epoch, st.leader_epoch, start_offset, tuple(batches),
                                    delivery_complete_count)
            record = (sl.encode_key(sl.UPDATE, *key), sl.encode_update(update))
        await self._log.append(self.partition_for(key), [record], now_ms)
        self.states[key] = st
        return st

    async def delete(self, keys: Iterable[Key], now_ms: int) -> None:
        """DeleteShareGroupState: tombstones for the keys' snapshots and updates."""
        by_partition: dict[int, list[Key]] = {}
        for key in keys:
            if key in self.states:
                by_partition.setdefault(self.partition_for(key), []).append(key)
        for p, ks in sorted(by_partition.items()):
            await self._log.append(p, [rec for k in ks for rec in ((sl.encode_key(sl.SNAPSHOT, *k), None),
                                                                     (sl.encode_key(sl.UPDATE, *k), None))], now_ms)
            for k in ks:
                self.states.pop(k, None)

    def keys_of(self, group_id: str) -> list[Key]:
        return sorted(k for k in self.states if k[0] == group_id)

    # ------------------------------------------------------------------------------ compaction
    def complete_topic(self, now_ms: int) -> None:
        """At startup: finish a creation of `__share_group_state` that a crash cut short."""
        self._log.complete_rebuilt(now_ms)

    async def compact(self, now_ms: int) -> int:
        """Keep `__share_group_state` bounded: a partition whose log rolled gets every live state
        of it written again as snapshots, and its older segments go (RecordLog.compact). The
        snapshots restart the count of updates since the last one."""
        compacted = 0
        for p in range(self._log.partition_count):
            if not self._log.needs_compaction(p):
                continue
            keys = sorted(k for k in self.states if self.partition_for(k) == p)
            for k in keys:
                self.states[k] = replace(self.states[k], updates_since_snapshot=0)
            await self._log.compact(p, [_snapshot_record(k, self.states[k], now_ms) for k in keys], now_ms)
            compacted += 1
        return compacted


def _snapshot_record(key: Key, st: PersistedState, now_ms: int) -> tuple[bytes, bytes]:
    snap = sl.ShareSnapshot(st.snapshot_epoch, st.state_epoch, st.leader_epoch, st.start_offset,
                            st.create_timestamp_ms or now_ms, now_ms, st.batches, st.delivery_complete_count)
    return sl.encode_key(sl.SNAPSHOT, *key), sl.encode_snapshot(snap)
