"""`minikafka inspect`: transactional ids, last stable offsets and aborted ranges (issue 6).

One report, two sources:

- ``--data-dir DIR`` reads the broker's files and never writes, creates or truncates one, so it
  is safe while the broker runs. Per partition it scans the batch headers of every segment (only
  control batches are read in full), replays producer state from the newest producer snapshot at
  or below the log end, exactly as the broker does on start-up, and so finds the open
  transactions: the last stable offset is the first offset of the oldest one, or the high
  watermark (the log end offset, one node) when there is none. Aborted ranges come from the
  ``.txnindex`` files. Transactional ids come from the ``__transaction_state`` partitions, folded
  as the coordinator folds them on start-up (last record per id wins, a tombstone removes it).
  A batch that is still being written when the broker runs is not complete yet and is ignored,
  like a torn tail.
- ``--bootstrap HOST:PORT`` asks a running broker: ListTransactions + DescribeTransactions for
  the ids, Metadata for the partitions, ListOffsets at read_uncommitted / read_committed for the
  high watermark and the last stable offset, DescribeProducers for the open transaction of each
  producer (``current_txn_start_offset``). The protocol has no request for a partition's aborted
  ranges, so that source reports them as unavailable (``null`` in JSON).

An open transaction holds back the last stable offset of each partition it has written to: the
LSO cannot pass its first offset there until its marker is written. `link` joins the two views
by producer id.
"""

from __future__ import annotations

import argparse
import bisect
import datetime
import json
import os
import struct
import sys
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from kio.schema.describe_producers.v0.request import DescribeProducersRequest, TopicRequest
from kio.schema.describe_transactions.v0.request import DescribeTransactionsRequest
from kio.schema.list_offsets.v7.request import ListOffsetsPartition, ListOffsetsRequest, ListOffsetsTopic
from kio.schema.list_transactions.v0.request import ListTransactionsRequest
from kio.schema.metadata.v12.request import MetadataRequest
from kio.schema.types import BrokerId, TopicName, TransactionalId
from kio.static.primitive import i8, i32, i64

from minikafka.coordinator.transaction import txn_log
from minikafka.protocol import records
from minikafka.protocol.errors import CorruptRecord
from minikafka.protocol.types import EARLIEST_TIMESTAMP, LATEST_TIMESTAMP, IsolationLevel, TopicPartition
from minikafka.storage import files
from minikafka.storage import snapshot as snapshot_file
from minikafka.storage.producer_state import ProducerStateManager
from minikafka.storage.txn_index import TransactionIndex
from minikafka.text_formats import format_duration, format_time
from minikafka.tool_client import ToolClient

_SCAN_CHUNK = 64 * 1024
ABORTED_UNAVAILABLE = "aborted ranges are only available with --data-dir (the protocol has no request for them)"


class InspectError(Exception):
    """The source cannot be read (missing directory, broker unreachable, error response)."""


# ---------------------------------------------------------------------------------------------
# The model: plain values, filled by either source, rendered by to_json / format_text.


@dataclass(frozen=True, slots=True, kw_only=True)
class HeldPartition:
    topic: str
    partition: int
    first_offset: int


@dataclass(frozen=True, slots=True, kw_only=True)
class TransactionView:
    transactional_id: str
    state: str  # Kafka's name: Empty, Ongoing, PrepareCommit, ...
    producer_id: int
    producer_epoch: int
    timeout_ms: int
    partitions: tuple[TopicPartition, ...] = ()
    start_ms: int = -1
    last_update_ms: int = -1  # -1 when the source does not say (DescribeTransactions)
    age_ms: int | None = None
    holds_back: tuple[HeldPartition, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class OpenTxn:
    producer_id: int
    first_offset: int
    transactional_id: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class AbortedRange:
    producer_id: int
    first_offset: int
    last_offset: int  # the ABORT marker's offset
    last_stable_offset: int  # the LSO right after the abort


@dataclass(frozen=True, slots=True, kw_only=True)
class PartitionView:
    topic: str
    partition: int
    log_start_offset: int
    high_watermark: int
    last_stable_offset: int
    blocking: tuple[OpenTxn, ...] = ()  # open transactions, oldest first; the first one gives the LSO
    aborted: tuple[AbortedRange, ...] | None = None  # None: this source cannot tell


@dataclass(frozen=True, slots=True, kw_only=True)
class Report:
    source: str  # "data-dir" or "bootstrap"
    location: str
    now_ms: int
    transactions: tuple[TransactionView, ...]
    partitions: tuple[PartitionView, ...]
    notes: tuple[str, ...] = ()


def age_ms(now_ms: int, start_ms: int, last_update_ms: int = -1) -> int | None:
    """Since the transaction started, or since the id was last updated when it has no start."""
    if start_ms >= 0:
        return max(0, now_ms - start_ms)
    if last_update_ms >= 0:
        return max(0, now_ms - last_update_ms)
    return None


def link(*, source: str, location: str, now_ms: int, transactions: Iterable[TransactionView],
         partitions: Iterable[PartitionView], notes: Sequence[str] = ()) -> Report:
    """Join transactional ids and partitions by producer id: name the id behind each open
    transaction, and list for each id the partitions whose LSO it holds back."""
    txns = sorted(transactions, key=lambda t: t.transactional_id)
    parts = sorted(partitions, key=lambda p: (p.topic, p.partition))
    id_of = {t.producer_id: t.transactional_id for t in txns if t.producer_id >= 0}
    held: dict[int, list[HeldPartition]] = {}
    linked_parts = []
    for p in parts:
        blocking = tuple(replace(b, transactional_id=b.transactional_id or id_of.get(b.producer_id))
                         for b in sorted(p.blocking, key=lambda b: b.first_offset))
        for b in blocking:
            held.setdefault(b.producer_id, []).append(HeldPartition(topic=p.topic, partition=p.partition,
                                                                    first_offset=b.first_offset))
        linked_parts.append(replace(p, blocking=blocking))
    linked_txns = [replace(t, holds_back=tuple(held.get(t.producer_id, ()))) for t in txns]
    return Report(source=source, location=location, now_ms=now_ms, transactions=tuple(linked_txns),
                  partitions=tuple(linked_parts), notes=tuple(notes))


# ---------------------------------------------------------------------------------------------
# Rendering.


def to_json(report: Report) -> dict[str, Any]:
    return {
        "source": report.source,
        "location": report.location,
        "now_ms": report.now_ms,
        "transactions": [{
            "transactional_id": t.transactional_id,
            "state": t.state,
            "producer_id": t.producer_id,
            "producer_epoch": t.producer_epoch,
            "transaction_timeout_ms": t.timeout_ms,
            "partitions": [{"topic": tp.topic, "partition": tp.partition} for tp in t.partitions],
            "start_time_ms": t.start_ms if t.start_ms >= 0 else None,
            "last_update_time_ms": t.last_update_ms if t.last_update_ms >= 0 else None,
            "age_ms": t.age_ms,
            "holds_back": [{"topic": h.topic, "partition": h.partition, "first_offset": h.first_offset}
                           for h in t.holds_back],
        } for t in report.transactions],
        "partitions": [{
            "topic": p.topic,
            "partition": p.partition,
            "log_start_offset": p.log_start_offset,
            "high_watermark": p.high_watermark,
            "last_stable_offset": p.last_stable_offset,
            "blocking": [{"producer_id": b.producer_id, "transactional_id": b.transactional_id,
                          "first_offset": b.first_offset} for b in p.blocking],
            "aborted": None if p.aborted is None else [
                {"producer_id": a.producer_id, "first_offset": a.first_offset, "last_offset": a.last_offset,
                 "last_stable_offset": a.last_stable_offset} for a in p.aborted],
        } for p in report.partitions],
        "notes": list(report.notes),
    }


def _table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)]
    line = "  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)).rstrip()
    out = [line, "  ".join("-" * w for w in widths)]
    out += ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    return out


def _partitions_text(tps: Iterable[TopicPartition]) -> str:
    return ",".join(str(tp) for tp in tps) or "-"


def format_text(report: Report) -> str:
    where = "data directory" if report.source == "data-dir" else "broker"
    out = [f"{where} {report.location} at {format_time(report.now_ms)}", ""]

    out.append(f"Transactional ids ({len(report.transactions)})")
    if report.transactions:
        out += _table(
            ["TRANSACTIONAL ID", "STATE", "PRODUCER ID", "EPOCH", "TIMEOUT", "STARTED", "AGE", "PARTITIONS",
             "HOLDS BACK LSO OF"],
            [[t.transactional_id, t.state, str(t.producer_id), str(t.producer_epoch), format_duration(t.timeout_ms),
              format_time(t.start_ms), format_duration(t.age_ms), _partitions_text(t.partitions),
              ",".join(f"{h.topic}-{h.partition}@{h.first_offset}" for h in t.holds_back) or "-"]
             for t in report.transactions])
    else:
        out.append("(none)")
    out.append("")

    out.append(f"Partitions ({len(report.partitions)})")
    if report.partitions:
        out += _table(
            ["PARTITION", "LOG START", "HIGH WATERMARK", "LAST STABLE", "UNSTABLE", "HELD BACK BY"],
            [[f"{p.topic}-{p.partition}", str(p.log_start_offset), str(p.high_watermark), str(p.last_stable_offset),
              str(p.high_watermark - p.last_stable_offset),
              "; ".join(f"{b.transactional_id or '?'} (producer {b.producer_id}) from {b.first_offset}"
                        for b in p.blocking) or "-"]
             for p in report.partitions])
    else:
        out.append("(none)")
    out.append("")

    out.append("Aborted transactions")
    if any(p.aborted is None for p in report.partitions):
        out.append(f"({ABORTED_UNAVAILABLE})")
    else:
        rows = [[f"{p.topic}-{p.partition}", str(a.producer_id), str(a.first_offset), str(a.last_offset),
                 str(a.last_stable_offset)]
                for p in report.partitions for a in (p.aborted or ())]
        if rows:
            out += _table(["PARTITION", "PRODUCER ID", "FIRST OFFSET", "MARKER OFFSET", "LSO AFTER"], rows)
        else:
            out.append("(none)")
    notes = [n for n in report.notes if n != ABORTED_UNAVAILABLE]  # already said above
    if notes:
        out += ["", "Notes"] + [f"- {n}" for n in notes]
    return "\n".join(out) + "\n"


# ---------------------------------------------------------------------------------------------
# Source 1: a data directory, read-only.


@dataclass(frozen=True, slots=True)
class _Segment:
    base_offset: int
    fd: int
    size: int  # as seen when opened: batches appended later are not part of this reading


def _iter_batches(seg: _Segment) -> Iterator[tuple[int, records.BatchHeader]]:
    """(position, header) of each complete batch; stops at a torn or still-growing tail."""
    pos = 0
    buf = b""
    buf_start = 0
    while pos + records.LOG_OVERHEAD <= seg.size:
        rel = pos - buf_start
        if rel + records.HEADER_SIZE > len(buf):
            buf = os.pread(seg.fd, _SCAN_CHUNK, pos)
            buf_start, rel = pos, 0
        if len(buf) - rel < records.HEADER_SIZE:
            return
        h = records.read_header(buf, rel)
        if h.magic != records.MAGIC or h.size < records.HEADER_SIZE or pos + h.size > seg.size:
            return
        yield pos, h
        pos += h.size


def _read_batch(seg: _Segment, pos: int, h: records.BatchHeader) -> bytes:
    data = os.pread(seg.fd, h.size, pos)
    if len(data) != h.size:
        raise CorruptRecord(f"short read of the batch at position {pos}")
    return data


def _open_segments(directory: Path) -> list[_Segment]:
    bases = sorted(files.offset_from_name(n) for n in os.listdir(directory)
                   if n.endswith(files.LOG_SUFFIX) and n[:20].isdigit())
    segments = []
    for base in bases:
        try:
            fd = os.open(directory / files.segment_name(base, files.LOG_SUFFIX), os.O_RDONLY)
        except FileNotFoundError:
            continue  # deleted by retention while we list
        segments.append(_Segment(base, fd, os.fstat(fd).st_size))
    return segments


def _log_end_offset(segments: Sequence[_Segment]) -> int:
    last = segments[-1]
    end = last.base_offset
    for _, h in _iter_batches(last):
        end = h.next_offset
    return end


def _load_snapshot(directory: Path, log_end_offset: int, notes: list[str], tp: TopicPartition,
                   ) -> tuple[ProducerStateManager, int] | None:
    """The newest valid producer snapshot at or below the log end (as the broker's start-up)."""
    offsets = sorted(files.offset_from_name(n) for n in os.listdir(directory)
                     if n.endswith(files.SNAPSHOT_SUFFIX) and n[:20].isdigit())
    for offset in reversed(offsets):
        if offset > log_end_offset:
            continue
        path = directory / files.segment_name(offset, files.SNAPSHOT_SUFFIX)
        try:
            return ProducerStateManager.from_snapshot(snapshot_file.decode(path.read_bytes())), offset
        except FileNotFoundError:
            continue
        except snapshot_file.CorruptSnapshot as exc:
            notes.append(f"{tp}: producer snapshot {path.name} is unreadable ({exc}); an older one is used")
    return None


def _read_partition(directory: Path, tp: TopicPartition, log_start_checkpoint: int | None,
                    notes: list[str]) -> PartitionView:
    segments = _open_segments(directory)
    try:
        if not segments:
            start = max(log_start_checkpoint or 0, 0)
            return PartitionView(topic=tp.topic, partition=tp.partition, log_start_offset=start,
                                 high_watermark=start, last_stable_offset=start, aborted=())
        log_start = max(log_start_checkpoint or 0, segments[0].base_offset)
        leo = _log_end_offset(segments)
        loaded = _load_snapshot(directory, leo, notes, tp)
        state, replay_from = loaded if loaded is not None else (ProducerStateManager(), log_start)
        replay_from = max(replay_from, log_start)
        replayed_aborts = _replay(segments, state, replay_from, leo, tp, notes)
    finally:
        for seg in segments:
            os.close(seg.fd)

    first_unstable = state.first_unstable_offset()
    lso = leo if first_unstable is None else min(first_unstable, leo)
    blocking = tuple(OpenTxn(producer_id=pid, first_offset=first) for first, pid in sorted(state.ongoing_txns.items()))
    aborted = _read_txn_indexes(directory, tp, notes)
    indexed = {(a.producer_id, a.first_offset, a.last_offset) for a in aborted}
    for a in replayed_aborts:
        if (a.producer_id, a.first_offset, a.last_offset) not in indexed:
            notes.append(f"{tp}: the log holds an aborted transaction of producer {a.producer_id} at "
                         f"{a.first_offset}..{a.last_offset} that no .txnindex lists")
    return PartitionView(topic=tp.topic, partition=tp.partition, log_start_offset=log_start, high_watermark=leo,
                         last_stable_offset=lso, blocking=blocking, aborted=aborted)


def _replay(segments: Sequence[_Segment], state: ProducerStateManager, start: int, end: int,
            tp: TopicPartition, notes: list[str]) -> list[AbortedRange]:
    """Fold every producer batch in [start, end) into `state` (the broker's start-up replay);
    returns the aborts it saw, with the LSO right after each, as the broker indexes them."""
    aborts: list[AbortedRange] = []
    i = max(0, bisect.bisect_right([s.base_offset for s in segments], start) - 1)
    for seg in segments[i:]:
        for pos, h in _iter_batches(seg):
            if h.base_offset >= end:
                return aborts
            if h.last_offset < start or h.producer_id < 0:
                continue
            if not h.is_control:
                state.update(h)
                continue
            try:
                data = _read_batch(seg, pos, h)
                done = state.update_marker(h, records.control_type(data), records.control_coordinator_epoch(data))
            except CorruptRecord as exc:
                notes.append(f"{tp}: unreadable control batch at offset {h.base_offset} ({exc})")
                continue
            if done is not None and done.is_aborted:
                first_unstable = state.first_unstable_offset()
                lso = first_unstable if first_unstable is not None else done.last_offset + 1
                aborts.append(AbortedRange(producer_id=done.producer_id, first_offset=done.first_offset,
                                           last_offset=done.last_offset, last_stable_offset=lso))
    return aborts


def _read_txn_indexes(directory: Path, tp: TopicPartition, notes: list[str]) -> tuple[AbortedRange, ...]:
    out = []
    for name in sorted(n for n in os.listdir(directory) if n.endswith(files.TXN_INDEX_SUFFIX) and n[:20].isdigit()):
        index = TransactionIndex(directory / name)  # load() only reads
        if not index.load():
            notes.append(f"{tp}: {name} fails the sanity check (the broker rebuilds it on start-up)")
            continue
        out += [AbortedRange(producer_id=e.producer_id, first_offset=e.first_offset, last_offset=e.last_offset,
                             last_stable_offset=e.last_stable_offset) for e in index.entries]
    return tuple(out)


def _read_transaction_state(directory: Path, log_start_checkpoint: int | None, tp: TopicPartition,
                            into: dict[str, Any], notes: list[str]) -> None:
    """Fold one __transaction_state partition: the last record per id wins, a tombstone removes it."""
    segments = _open_segments(directory)
    try:
        start = max(log_start_checkpoint or 0, segments[0].base_offset) if segments else 0
        for seg in segments:
            for pos, h in _iter_batches(seg):
                if h.is_control or h.last_offset < start:
                    continue
                try:
                    for rec in records.iter_records(_read_batch(seg, pos, h)):
                        if rec.offset < start or rec.key is None:
                            continue
                        txn_id = txn_log.decode_key(rec.key)
                        if txn_id is None:
                            continue
                        if rec.value is None:
                            into.pop(txn_id, None)
                        else:
                            into[txn_id] = txn_log.decode_value(txn_id, rec.value)
                except (CorruptRecord, struct.error, ValueError, IndexError, UnicodeDecodeError) as exc:
                    notes.append(f"{tp}: unreadable batch at offset {h.base_offset} ({exc!r})")
    finally:
        for seg in segments:
            os.close(seg.fd)


def from_data_dir(data_dir: Path, *, now_ms: int, topics: Sequence[str] = ()) -> Report:
    """Read a data directory without changing it. Raises InspectError if it is not a directory."""
    if not data_dir.is_dir():
        raise InspectError(f"{data_dir} is not a directory")
    notes: list[str] = []
    if not (data_dir / files.META_PROPERTIES).exists():
        notes.append(f"{data_dir} has no {files.META_PROPERTIES}: it may not be a broker's data directory")
    try:
        log_starts = files.read_offset_checkpoint(data_dir / files.LOG_START_OFFSET_CHECKPOINT)
    except (ValueError, OSError) as exc:
        notes.append(f"{files.LOG_START_OFFSET_CHECKPOINT} is unreadable ({exc}); segment bases are used")
        log_starts = {}
    partitions = []
    metas: dict[str, Any] = {}
    for name in sorted(os.listdir(data_dir)):
        tp = files.parse_partition_dir(name)
        path = data_dir / name
        if tp is None or not path.is_dir():
            continue
        try:
            if tp.topic == txn_log.TOPIC:
                _read_transaction_state(path, log_starts.get(tp), tp, metas, notes)
            if not topics or tp.topic in topics:
                partitions.append(_read_partition(path, tp, log_starts.get(tp), notes))
        except FileNotFoundError:
            notes.append(f"{tp}: the directory went away while it was read (topic deleted?)")
    transactions = [
        TransactionView(transactional_id=m.transactional_id, state=m.state.kafka_name, producer_id=m.producer_id,
                        producer_epoch=m.producer_epoch, timeout_ms=m.timeout_ms,
                        partitions=tuple(sorted(m.partitions)), start_ms=m.start_ms, last_update_ms=m.last_update_ms,
                        age_ms=age_ms(now_ms, m.start_ms, m.last_update_ms))
        for m in metas.values()]
    return link(source="data-dir", location=str(data_dir), now_ms=now_ms, transactions=transactions,
                partitions=partitions, notes=notes)


# ---------------------------------------------------------------------------------------------
# Source 2: a running broker, over the protocol.


def _ms(value: datetime.datetime | None) -> int:
    return -1 if value is None else int(value.timestamp() * 1000)


def _list_offsets(client: ToolClient, tps: Sequence[TopicPartition], isolation: IsolationLevel,
                  timestamp: int, notes: list[str]) -> dict[TopicPartition, int]:
    by_topic: dict[str, list[int]] = {}
    for tp in tps:
        by_topic.setdefault(tp.topic, []).append(tp.partition)
    resp = client.request(ListOffsetsRequest(
        replica_id=BrokerId(-1), isolation_level=i8(int(isolation)),
        topics=tuple(ListOffsetsTopic(name=TopicName(t), partitions=tuple(
            ListOffsetsPartition(partition_index=i32(p), timestamp=i64(timestamp)) for p in ps))
            for t, ps in by_topic.items())), 7)
    out = {}
    for t in resp.topics:
        for p in t.partitions:
            if p.error_code != 0:
                notes.append(f"{t.name}-{p.partition_index}: ListOffsets error {int(p.error_code)}")
                continue
            out[TopicPartition(t.name, int(p.partition_index))] = int(p.offset)
    return out


def from_bootstrap(bootstrap: str, *, now_ms: int, timeout: float = 10.0, topics: Sequence[str] = ()) -> Report:
    """Ask a running broker. Raises InspectError when it cannot be reached or answers an error."""
    client = ToolClient(bootstrap, timeout, client_id="minikafka-inspect", error=InspectError)
    notes: list[str] = [ABORTED_UNAVAILABLE]
    try:
        md = client.request(MetadataRequest(topics=None, allow_auto_topic_creation=False,
                                            include_topic_authorized_operations=False), 12)
        tps = sorted(TopicPartition(t.name, int(p.partition_index))
                     for t in md.topics if t.error_code == 0 and t.name is not None
                     and (not topics or t.name in topics) for p in t.partitions)
        partitions = []
        if tps:
            start = _list_offsets(client, tps, IsolationLevel.READ_UNCOMMITTED, EARLIEST_TIMESTAMP, notes)
            hwm = _list_offsets(client, tps, IsolationLevel.READ_UNCOMMITTED, LATEST_TIMESTAMP, notes)
            lso = _list_offsets(client, tps, IsolationLevel.READ_COMMITTED, LATEST_TIMESTAMP, notes)
            open_txns = _describe_producers(client, tps, notes)
            partitions = [PartitionView(topic=tp.topic, partition=tp.partition, log_start_offset=start.get(tp, -1),
                                        high_watermark=hwm.get(tp, -1), last_stable_offset=lso.get(tp, -1),
                                        blocking=tuple(open_txns.get(tp, ())))
                          for tp in tps]
        transactions = _describe_transactions(client, now_ms, notes)
    finally:
        client.close()
    return link(source="bootstrap", location=bootstrap, now_ms=now_ms, transactions=transactions,
                partitions=partitions, notes=notes)


def _describe_producers(client: ToolClient, tps: Sequence[TopicPartition], notes: list[str],
                        ) -> dict[TopicPartition, list[OpenTxn]]:
    by_topic: dict[str, list[int]] = {}
    for tp in tps:
        by_topic.setdefault(tp.topic, []).append(tp.partition)
    resp = client.request(DescribeProducersRequest(topics=tuple(
        TopicRequest(name=TopicName(t), partition_indexes=tuple(i32(p) for p in ps)) for t, ps in by_topic.items())), 0)
    out: dict[TopicPartition, list[OpenTxn]] = {}
    for t in resp.topics:
        for p in t.partitions:
            tp = TopicPartition(t.name, int(p.partition_index))
            if p.error_code != 0:
                notes.append(f"{tp}: DescribeProducers error {int(p.error_code)} {p.error_message or ''}".rstrip())
                continue
            out[tp] = [OpenTxn(producer_id=int(s.producer_id), first_offset=int(s.current_txn_start_offset))
                       for s in p.active_producers if s.current_txn_start_offset >= 0]
    return out


def _describe_transactions(client: ToolClient, now_ms: int, notes: list[str]) -> list[TransactionView]:
    listed = client.request(ListTransactionsRequest(state_filters=(), producer_id_filters=()), 0)
    if listed.error_code != 0:
        raise InspectError(f"ListTransactions error {int(listed.error_code)}")
    ids = sorted(t.transactional_id for t in listed.transaction_states)
    if not ids:
        return []
    described = client.request(DescribeTransactionsRequest(transactional_ids=tuple(TransactionalId(i) for i in ids)), 0)
    out = []
    for d in described.transaction_states:
        if d.error_code != 0:
            notes.append(f"transactional id {d.transactional_id!r}: DescribeTransactions error {int(d.error_code)}")
            continue
        start = _ms(d.transaction_start_time)
        out.append(TransactionView(
            transactional_id=d.transactional_id, state=d.transaction_state, producer_id=int(d.producer_id),
            producer_epoch=int(d.producer_epoch), timeout_ms=int(d.transaction_timeout.total_seconds() * 1000),
            partitions=tuple(sorted(TopicPartition(t.topic, int(p)) for t in d.topics for p in t.partitions)),
            start_ms=start, age_ms=age_ms(now_ms, start)))
    return out


# ---------------------------------------------------------------------------------------------
# Command line.


def add_arguments(p: argparse.ArgumentParser) -> None:
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--data-dir", type=Path, help="read a data directory (read-only; the broker may be running)")
    src.add_argument("--bootstrap", metavar="HOST:PORT", help="ask a running broker")
    p.add_argument("--json", action="store_true", help="one JSON document instead of tables")
    p.add_argument("--topic", action="append", default=[], help="only these topics' partitions (repeatable)")
    p.add_argument("--timeout", type=float, default=10.0, help="socket timeout for --bootstrap, in seconds")
    p.add_argument("--internal", action="store_true",
                   help="also list the internal topics' partitions (__consumer_offsets, __transaction_state)")


DESCRIPTION = """Show what a broker holds about transactions: each transactional id with its state, producer id and
epoch; each partition's high watermark, last stable offset (how far read_committed consumers can
read) and the open transactions holding it back; the aborted ranges recorded on disk.
Read a data directory (read-only, safe beside a running broker) or ask a running broker."""


def run(args: argparse.Namespace) -> int:
    now_ms = int(time.time() * 1000)
    try:
        if args.data_dir is not None:
            report = from_data_dir(args.data_dir, now_ms=now_ms, topics=args.topic)
        else:
            report = from_bootstrap(args.bootstrap, now_ms=now_ms, timeout=args.timeout, topics=args.topic)
    except InspectError as exc:
        print(f"minikafka inspect: {exc}", file=sys.stderr)
        return 1
    if not args.internal and not args.topic:
        report = replace(report, partitions=tuple(
            p for p in report.partitions if not p.topic.startswith("__")))
    try:
        if args.json:
            json.dump(to_json(report), sys.stdout, indent=2)
            sys.stdout.write("\n")
        else:
            sys.stdout.write(format_text(report))
        sys.stdout.flush()
    except BrokenPipeError:
        # `minikafka inspect | head`: the reader has what it wanted. Point stdout at /dev/null so
        # the interpreter's final flush does not report the closed pipe either.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 0
