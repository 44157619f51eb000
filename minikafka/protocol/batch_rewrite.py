"""Rewriting a stored batch with fewer records: what the log cleaner writes (pure, bytes in, bytes out).

Kafka's cleaner keeps a batch as it is when every record stays and no delete horizon has to be set;
otherwise it builds a new batch (MemoryRecords.buildRetainedRecordsInto) with:
- the original base offset, last offset delta, producer id/epoch, base sequence, partition leader
  epoch, transactional/control flags, timestamp type and compression codec, so the producer's last
  sequence survives and offsets never move;
- the retained records re-encoded with their own offsets and timestamps (deltas against the new
  base timestamp: the delete horizon when one is set, else the first record's timestamp);
- the delete-horizon attribute bit (0x40, KIP-534) and the horizon as the base timestamp once a
  batch holds a tombstone or is a marker whose transaction's data is gone.
A batch kept only for its producer state, with no records, is a 61-byte header with count 0
(DefaultRecordBatch.writeEmptyHeader): no compression, base timestamp -1, max timestamp kept.

Records are walked without decoding keys into objects the cleaner does not need: each record
yields its offset, timestamp, key, whether it has a value, and its raw bytes from the key length on
(key, value and headers exactly as stored), so a rebuilt record differs from the original only in its
two deltas.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import NamedTuple

from minikafka.protocol.errors import CorruptRecord
from minikafka.protocol.records import (
    COMPRESSION_MASK,
    CONTROL_FLAG,
    HEADER_SIZE,
    TIMESTAMP_TYPE_MASK,
    TRANSACTIONAL_FLAG,
    BatchHeader,
    assemble_batch,
    compress,
    decompress,
    read_varint,
    zigzag,
)

DELETE_HORIZON_FLAG = 0x40

class StoredRecord(NamedTuple):
    offset: int
    timestamp: int
    key: bytes | None
    has_value: bool
    tail: bytes  # key length varint .. end of the record (key, value, headers as stored)


def delete_horizon_ms(h: BatchHeader) -> int | None:
    """The batch's delete horizon (its base timestamp when the 0x40 attribute is set), or None."""
    return h.base_timestamp if h.attributes & DELETE_HORIZON_FLAG else None


def record_spans_py(data: bytes, count: int) -> list[tuple[int, int, int, int, int, int, int]]:
    """(offset delta, timestamp delta, key start, key length, value length, tail start, end) of each
    record of a decompressed records section; lengths are -1 for null. CorruptRecord when a record
    does not fit. The Python reference of the compiled `_walk.record_spans`."""
    out = []
    p, n = 0, len(data)
    for i in range(count):
        length, p = read_varint(data, p)
        end = p + length
        if length <= 0 or end > n:
            raise CorruptRecord(f"record {i} has length {length}")
        p += 1  # record attributes (unused, always 0)
        ts_delta, p = read_varint(data, p)
        off_delta, p = read_varint(data, p)
        tail = p
        klen, p = read_varint(data, p)
        key = p
        if klen > 0:
            if klen > end - p:
                raise CorruptRecord(f"record {i}'s key overruns it")
            p += klen
        if p > end:
            raise CorruptRecord(f"record {i} overruns its length")
        vlen, p = read_varint(data, p)
        if p > end or (vlen > 0 and vlen > end - p):
            raise CorruptRecord(f"record {i}'s value overruns it")
        out.append((off_delta, ts_delta, key, klen, vlen, tail, end))
        p = end
    return out


try:  # the compiled twin, when `pip install` could build it (the Produce path's _walk)
    from minikafka.protocol._walk import record_spans as _record_spans_c
except ImportError:  # pragma: no cover - exercised where no C compiler was available
    _record_spans_c = None


def record_spans(data: bytes, count: int) -> list[tuple[int, int, int, int, int, int, int]]:
    if _record_spans_c is None:
        return record_spans_py(data, count)
    try:
        return _record_spans_c(data, count)
    except ValueError as exc:
        raise CorruptRecord(str(exc)) from None


def records_section(batch: bytes | memoryview, h: BatchHeader) -> bytes:
    """The records of one batch (its bytes from its first byte), decompressed if needed."""
    raw = batch[HEADER_SIZE : h.size]
    return decompress(h.compression, raw) if h.compression else bytes(raw)


def stored_record(data: bytes, h: BatchHeader, span: tuple[int, int, int, int, int, int, int]) -> StoredRecord:
    off_delta, ts_delta, key, klen, vlen, tail, end = span
    ts = h.max_timestamp if h.attributes & TIMESTAMP_TYPE_MASK else h.base_timestamp + ts_delta
    return StoredRecord(h.base_offset + off_delta, ts, None if klen < 0 else data[key : key + klen], vlen >= 0,
                        data[tail:end])


def stored_records(batch: bytes | memoryview, h: BatchHeader) -> Iterator[StoredRecord]:
    """The records of one batch (its bytes from its first byte), decompressed if needed."""
    data = records_section(batch, h)
    for span in record_spans(data, h.records_count):
        yield stored_record(data, h, span)


def _assemble(h: BatchHeader, attributes: int, base_timestamp: int, max_timestamp: int, count: int,
              body: bytes) -> bytearray:
    return assemble_batch(base_offset=h.base_offset, attributes=attributes, last_offset_delta=h.last_offset_delta,
                          base_timestamp=base_timestamp, max_timestamp=max_timestamp, producer_id=h.producer_id,
                          producer_epoch=h.producer_epoch, base_sequence=h.base_sequence, count=count,
                          records=body, partition_leader_epoch=h.partition_leader_epoch)


def rebuild_batch(h: BatchHeader, kept: list[StoredRecord], delete_horizon: int | None) -> bytearray:
    """A batch holding only `kept` (at least one), with the original's offsets and producer fields;
    `delete_horizon` (ms) sets the 0x40 attribute and becomes the base timestamp."""
    log_append_time = bool(h.attributes & TIMESTAMP_TYPE_MASK)
    base_ts = delete_horizon if delete_horizon is not None else kept[0].timestamp
    body = bytearray()
    max_ts = -1
    for r in kept:
        rec = b"\x00" + zigzag(r.timestamp - base_ts) + zigzag(r.offset - h.base_offset) + r.tail
        body += zigzag(len(rec)) + rec
        max_ts = max(max_ts, r.timestamp)
    if log_append_time:
        max_ts = h.max_timestamp
    codec = h.attributes & COMPRESSION_MASK
    attributes = h.attributes & (COMPRESSION_MASK | TIMESTAMP_TYPE_MASK | TRANSACTIONAL_FLAG | CONTROL_FLAG)
    if delete_horizon is not None:
        attributes |= DELETE_HORIZON_FLAG
    payload = compress(codec, bytes(body)) if codec else bytes(body)
    return _assemble(h, attributes, base_ts, max_ts, len(kept), payload)


def empty_batch(h: BatchHeader) -> bytearray:
    """The header alone, count 0: kept so a producer's last sequence and epoch survive cleaning."""
    attributes = h.attributes & (TIMESTAMP_TYPE_MASK | TRANSACTIONAL_FLAG | CONTROL_FLAG)
    return _assemble(h, attributes, -1, h.max_timestamp, 0, b"")
