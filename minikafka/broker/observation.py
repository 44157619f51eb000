"""The broker's side of the observe room's door (observe/ports.py): plain snapshots of partitions,
groups and transactions for the metrics and the console, and the console's two actions.

Every look copies what it needs into observe/model.py's frozen values and keeps no reference;
nothing here changes broker state except the two actions, which go through the same code as the
Kafka requests they stand for (WriteTxnMarkers' write_marker, OffsetCommit's commit_offsets).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence
from typing import Any

from minikafka.broker.handlers.write_txn_markers import write_marker
from minikafka.broker.server import KafkaServer
from minikafka.broker.services import BrokerServices
from minikafka.coordinator.consumer_group.embedded import decode_assignment
from minikafka.coordinator.group.coordinator import OffsetCommitEntry
from minikafka.coordinator.transaction import txn_log
from minikafka.coordinator.transaction.state import OPEN_STATES
from minikafka.observe.model import (
    BatchRow,
    BrokerSummary,
    GroupMember,
    GroupOffset,
    GroupState,
    PartitionState,
    PinningTxn,
    RecordPage,
    RecordRow,
    TransactionState,
    TxnLogEntry,
)
from minikafka.observe.ports import ActionRefused
from minikafka.protocol import records
from minikafka.protocol.errors import CorruptRecord, ErrorCode, InvalidRecord
from minikafka.protocol.types import TopicPartition
from minikafka.storage.errors import StorageError
from minikafka.storage.partition_log import PartitionLog

RECORD_PAGE_BYTES = 1 << 20     # one page of the record browser reads at most this much
# A timeline reads the newest records of its __transaction_state partition only, at most this many
# and this many bytes (the console refreshes it every 2 s, on the broker's event loop).
TXN_LOG_WINDOW_RECORDS = 20_000
TXN_LOG_WINDOW_BYTES = 4 << 20
_CONTROL = {0: "ABORT", 1: "COMMIT"}


class LiveView:
    """BrokerView and BrokerActions over the running broker's services."""

    def __init__(self, services: BrokerServices, server: KafkaServer) -> None:
        self._svc = services
        self._server = server
        self.meters = services.meters

    def now_ms(self) -> int:
        return self._svc.clock.now_ms()

    # ------------------------------------------------------------------------------ broker
    def summary(self) -> BrokerSummary:
        connections: dict[str, int] = {sec.listener.name: 0 for sec in self._server.listeners}
        for conn in self._server.connections:
            name = conn.session.listener.name
            connections[name] = connections.get(name, 0) + 1
        # Kafka's ReplicaManager ProducerIdCount: producer states over the partitions (a producer
        # writing to two partitions counts twice).
        producer_ids = sum(len(plog.producer_state.producers) for plog in self._svc.logs)
        txn_topic = self._svc.txn_topic
        return BrokerSummary(
            node_id=self._svc.node_id, cluster_id=self._svc.cluster_id,
            listeners=tuple((s.listener.name, s.listener.host, s.listener.port) for s in self._server.listeners),
            connections=connections, producer_ids=producer_ids,
            txn_log_partitions=0 if txn_topic is None else txn_topic.partition_count)

    # ------------------------------------------------------------------------------ partitions
    def partitions(self, topic: str | None = None) -> list[PartitionState]:
        logs = self._svc.logs
        names = sorted(logs.topics) if topic is None else ([topic] if topic in logs.topics else [])
        txn_ids = self._transactional_ids_by_producer()
        out = []
        for name in names:
            info = logs.topics[name]
            for p in range(info.partitions):
                plog = logs.get(TopicPartition(name, p))
                if plog is not None:
                    out.append(self._partition(plog, info.internal, txn_ids))
        return out

    def _partition(self, plog: PartitionLog, internal: bool, txn_ids: dict[int, str]) -> PartitionState:
        ongoing = plog.producer_state.ongoing_txns  # first offset -> producer id
        first = plog.producer_state.first_unstable_offset()  # the oldest: what the LSO waits for
        pinned = None if first is None else PinningTxn(producer_id=ongoing[first], first_offset=first,
                                                       transactional_id=txn_ids.get(ongoing[first]))
        return PartitionState(topic=plog.tp.topic, partition=plog.tp.partition, internal=internal,
                              log_start_offset=plog.log_start_offset, high_watermark=plog.high_watermark,
                              last_stable_offset=plog.last_stable_offset, size_bytes=plog.size_in_bytes,
                              segments=len(plog.segments), open_transactions=len(ongoing), pinned_by=pinned)

    def _transactional_ids_by_producer(self) -> dict[int, str]:
        txn = self._svc.txn
        out: dict[int, str] = {}
        if txn is None:
            return out
        for meta in txn.all():
            for pid in (meta.previous_producer_id, meta.producer_id):  # the current id wins
                if pid >= 0:
                    out[pid] = meta.transactional_id
        return out

    # ------------------------------------------------------------------------------ groups
    def groups(self) -> list[GroupState]:
        coordinator = self._svc.started_groups  # one not started yet has no group
        if coordinator is None:
            return []
        return [self._group(listed) for listed in coordinator.list_groups()]

    def group(self, group_id: str) -> GroupState | None:
        coordinator = self._svc.started_groups
        if coordinator is None:
            return None
        for listed in coordinator.list_groups():
            if listed.group_id == group_id:
                return self._group(listed)
        return None

    def _group(self, listed: Any) -> GroupState:
        coordinator = self._svc.groups
        assert coordinator is not None
        gid = listed.group_id
        if listed.group_type == "consumer":
            members = self._consumer_members(coordinator.consumer.describe(gid))
        elif listed.group_type == "streams":
            g = coordinator.streams.describe(gid)
            members = () if g is None else tuple(
                GroupMember(member_id=m.member_id, client_id=m.client_id, client_host=m.client_host,
                            group_instance_id=m.instance_id, assignment=()) for m in g.members.values())
        else:
            members = self._classic_members(coordinator.describe_group(gid))
        logs = self._svc.logs
        offsets = []
        for fo in coordinator.fetch_offsets(gid, None, False):
            if fo.offset < 0:
                continue
            plog = logs.get(fo.tp)
            offsets.append(GroupOffset(topic=fo.tp.topic, partition=fo.tp.partition, committed=fo.offset,
                                       high_watermark=None if plog is None else plog.high_watermark))
        return GroupState(group_id=gid, group_type=listed.group_type, protocol_type=listed.protocol_type,
                          state=listed.state, members=members, offsets=tuple(offsets))

    @staticmethod
    def _classic_members(group: Any) -> tuple[GroupMember, ...]:
        if group is None:
            return ()
        out = []
        for m in group.members.values():
            assigned: list[tuple[str, int]] = []
            if group.protocol_type == "consumer" and m.assignment:
                try:
                    assigned = [(t, p) for t, ps in decode_assignment(m.assignment).items() for p in ps]
                except Exception:  # a client's own encoding: shown as unknown, never fatal
                    assigned = []
            out.append(GroupMember(member_id=m.member_id, client_id=m.client_id, client_host=m.client_host,
                                   group_instance_id=m.group_instance_id, assignment=tuple(sorted(assigned))))
        return tuple(out)

    def _consumer_members(self, group: Any) -> tuple[GroupMember, ...]:
        if group is None:
            return ()
        out = []
        for m in group.members.values():
            assigned = []
            for topic_id, p in m.assigned:
                info = self._svc.logs.topic_by_id(topic_id)
                assigned.append((info.name if info is not None else str(topic_id), p))
            out.append(GroupMember(member_id=m.member_id, client_id=m.client_id, client_host=m.client_host,
                                   group_instance_id=m.instance_id, assignment=tuple(sorted(assigned))))
        return tuple(out)

    # ------------------------------------------------------------------------------ transactions
    def transactions(self) -> list[TransactionState]:
        txn = self._svc.txn
        if txn is None:
            return []
        return sorted((self._transaction(m) for m in txn.all()), key=lambda t: t.transactional_id)

    def transaction(self, transactional_id: str) -> TransactionState | None:
        txn = self._svc.txn
        meta = None if txn is None else txn.get(transactional_id)
        return None if meta is None else self._transaction(meta)

    def _transaction(self, meta: Any) -> TransactionState:
        assert self._svc.txn is not None
        return TransactionState(
            transactional_id=meta.transactional_id, state=meta.state.kafka_name, open=meta.state in OPEN_STATES,
            producer_id=meta.producer_id,
            producer_epoch=meta.producer_epoch, timeout_ms=meta.timeout_ms,
            partitions=tuple(sorted((tp.topic, tp.partition) for tp in meta.partitions)),
            start_ms=meta.start_ms, last_update_ms=meta.last_update_ms,
            coordinator_partition=self._svc.txn.partition_for(meta.transactional_id))

    def transaction_log(self, transactional_id: str) -> list[TxnLogEntry]:
        txn = self._svc.txn
        if txn is None:
            return []
        plog = self._svc.logs.get(TopicPartition(txn_log.TOPIC, txn.partition_for(transactional_id)))
        if plog is None:
            return []
        key = txn_log.encode_key(transactional_id)
        out = []
        start = max(plog.log_start_offset, plog.log_end_offset - TXN_LOG_WINDOW_RECORDS)
        for batch, h in _window(plog, start, TXN_LOG_WINDOW_BYTES):
            if h.is_control:
                continue
            for rec in _records(batch):
                if rec.key != key:
                    continue
                if rec.value is None:
                    out.append(TxnLogEntry(offset=rec.offset, timestamp_ms=rec.timestamp, state="Tombstone",
                                           producer_id=-1, producer_epoch=-1, partitions=()))
                    continue
                try:
                    meta = txn_log.decode_value(transactional_id, rec.value)
                except Exception:  # an unreadable value is shown as such, never fails the page
                    out.append(TxnLogEntry(offset=rec.offset, timestamp_ms=rec.timestamp, state="Unreadable",
                                           producer_id=-1, producer_epoch=-1, partitions=()))
                    continue
                out.append(TxnLogEntry(offset=rec.offset, timestamp_ms=meta.last_update_ms, state=meta.state.kafka_name,
                                       producer_id=meta.producer_id, producer_epoch=meta.producer_epoch,
                                       partitions=tuple(sorted((tp.topic, tp.partition) for tp in meta.partitions))))
        return out

    # ------------------------------------------------------------------------------ records
    def records(self, topic: str, partition: int, offset: int, max_batches: int) -> RecordPage | None:
        plog = self._svc.logs.get(TopicPartition(topic, partition))
        if plog is None:
            return None
        start = min(max(offset, plog.log_start_offset), plog.log_end_offset)
        lso = plog.last_stable_offset
        ongoing = {pid: first for first, pid in plog.producer_state.ongoing_txns.items()}
        found = list(itertools.islice(_window(plog, start, RECORD_PAGE_BYTES), max_batches))
        next_offset = found[-1][1].base_offset + found[-1][1].last_offset_delta + 1 if found else start
        aborted = plog.collect_aborted(start, next_offset) if found else []
        rows = []
        for batch, h in found:
            last = h.base_offset + h.last_offset_delta
            control = _control(batch) if h.is_control else None
            is_aborted = control is None and h.is_transactional and any(
                a.producer_id == h.producer_id and a.first_offset <= h.base_offset <= a.last_offset for a in aborted)
            is_open = (control is None and h.is_transactional and not is_aborted
                       and h.producer_id in ongoing and h.base_offset >= ongoing[h.producer_id])
            rows.append(BatchRow(base_offset=h.base_offset, last_offset=last, producer_id=h.producer_id,
                                 producer_epoch=h.producer_epoch, transactional=h.is_transactional, control=control,
                                 aborted=is_aborted, open=is_open,
                                 records=() if control is not None else tuple(
                                     RecordRow(offset=r.offset, timestamp_ms=r.timestamp, key=r.key, value=r.value,
                                               headers=r.headers) for r in _records(batch))))
        return RecordPage(topic=topic, partition=partition, start_offset=start, next_offset=next_offset,
                          log_start_offset=plog.log_start_offset, high_watermark=plog.high_watermark,
                          last_stable_offset=lso, batches=tuple(rows),
                          aborted_ranges=tuple((a.producer_id, a.first_offset, a.last_offset) for a in aborted))

    # ------------------------------------------------------------------------------ actions
    def hanging(self, topic: str, partition: int, producer_id: int) -> str | None:
        """Why the producer's open transaction on the partition is hanging (what `kafka-transactions.sh
        find-hanging` looks for), or None while its coordinator still runs it within its timeout:
        aborting a live transaction on one partition would commit the rest of it without this part."""
        txn = self._svc.txn
        meta = None if txn is None else next(
            (m for m in txn.all() if producer_id in (m.producer_id, m.previous_producer_id)), None)
        if meta is None:
            return "no transactional id of the coordinator has this producer id"
        if meta.state not in OPEN_STATES:
            return f"its transactional id {meta.transactional_id} is {meta.state.kafka_name}"
        if TopicPartition(topic, partition) not in meta.partitions:
            return f"its transaction does not include {topic}-{partition}"
        if meta.producer_id != producer_id:
            return f"its transactional id {meta.transactional_id} moved to producer {meta.producer_id}"
        if meta.start_ms >= 0 and self.now_ms() - meta.start_ms > meta.timeout_ms:
            return f"it is past its timeout ({meta.timeout_ms} ms)"
        return None

    async def abort_transaction(self, topic: str, partition: int, producer_id: int) -> None:
        tp = TopicPartition(topic, partition)
        plog = self._svc.logs.get(tp)
        if plog is None:
            raise ActionRefused(ErrorCode.unknown_topic_or_partition.name)
        entry = plog.producer_state.producers.get(producer_id)
        if entry is None or entry.current_txn_first_offset < 0:
            raise ActionRefused(f"producer {producer_id} has no open transaction on {topic}-{partition}")
        if self.hanging(topic, partition, producer_id) is None:
            raise ActionRefused(f"producer {producer_id}'s transaction is live (its coordinator runs it, within its "
                                "timeout): abort it from the producer, or let transaction.timeout.ms abort it")
        # kafka-transactions.sh abort: DescribeProducers gives the epoch and coordinator epoch,
        # WriteTxnMarkers writes the ABORT marker with them.
        error = write_marker(self._svc, tp, producer_id=producer_id, producer_epoch=entry.producer_epoch,
                             commit=False, coordinator_epoch=max(entry.coordinator_epoch, 0))
        if error is not ErrorCode.none:
            raise ActionRefused(error.name)

    async def reset_offsets(self, group_id: str, offsets: Sequence[tuple[str, int, int]]) -> None:
        coordinator = self._svc.groups
        if coordinator is None:
            raise ActionRefused(ErrorCode.coordinator_not_available.name)
        now = self._svc.clock.now_ms()
        entries = {TopicPartition(t, p): OffsetCommitEntry(offset=o)
                   for t, p, o in offsets}
        # An empty group (generation -1, no member) is the only one a tool may reset, as Kafka's
        # kafka-consumer-groups.sh: a live group answers with its error.
        results = await coordinator.commit_offsets(group_id, "", None, -1, entries, now)
        errors = {e.name for e in results.values() if e is not ErrorCode.none}
        if errors:
            raise ActionRefused(", ".join(sorted(errors)))


def _window(plog: PartitionLog, offset: int, max_bytes: int) -> Iterator[tuple[bytes, records.BatchHeader]]:
    """The batches from the one holding `offset` on, across segments, until about max_bytes were
    read or the log ends, each as its own bytes. Stops at the first unreadable batch."""
    budget = max_bytes
    while budget > 0 and offset < plog.log_end_offset:
        try:
            data, _upper = plog.read_range(offset, min(budget, RECORD_PAGE_BYTES), min_one=True)
            buf = bytes(data)
            batches = records.split_batches(buf)
        except (CorruptRecord, InvalidRecord, StorageError, OSError):
            return
        if not batches:
            return
        budget -= len(buf)
        for pos, h in batches:
            yield buf[pos:pos + h.size], h
        offset = batches[-1][1].base_offset + batches[-1][1].last_offset_delta + 1


def _records(batch: bytes) -> list[records.Record]:
    try:
        return list(records.iter_records(batch))
    except (CorruptRecord, InvalidRecord, ValueError):
        return []


def _control(batch: bytes) -> str:
    try:
        return _CONTROL.get(records.control_type(batch), "UNKNOWN")
    except (CorruptRecord, ValueError, IndexError):
        return "UNREADABLE"
