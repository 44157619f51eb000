"""Kafka's LogValidator rules for a produced record batch (magic 2): pure, bytes in, verdict out.

Nothing is appended or acknowledged unless every record of the batch decodes exactly, so what a
Produce acknowledges can always be read back. Kafka's sources of the rules:
- batch level (LogValidator.validateBatch, origin client): lastOffsetDelta + 1 == recordsCount > 0,
  no control batch, a producer id needs a base sequence;
- record structure (DefaultRecordBatch's iterators and DefaultRecord.readFrom): every varint at
  most 5 bytes (varlong 10), every length inside the record, each record's bytes exactly its
  declared size, exactly recordsCount records and no bytes after them, compressed payloads that
  decompress;
- record content (LogValidator.validateRecord): a key on compacted topics, CreateTime timestamps
  within [now - message.timestamp.before.max.ms, now + message.timestamp.after.max.ms]; these are
  collected for every record and answered as `record_errors` (batch index + message).

Where minikafka answers differently from Kafka 4.3.1 (the corruption table in
tests/fuzzing.py records both answers, and `make conformance` checks Kafka's):
- record offset deltas must run 0, 1, ..., count - 1, because minikafka stores the producer's
  bytes and never rebuilds a batch (Kafka rewrites a compressed batch whose inner offsets are
  off, and acknowledges and serves an uncompressed one with repeated offsets as sent);
- key/value lengths below -1 are refused (Kafka reads them as null);
- an unknown codec, a payload that does not decompress, a varint that does not end, and bytes
  left over inside a compressed batch are INVALID_RECORD where Kafka answers -1
  (UNKNOWN_SERVER_ERROR, from an exception it does not map).

The record walk is the hottest loop of Produce. `walk_records_py` is the reference; the C twin
`minikafka.protocol._walk.walk_records` (built by `pip install` from `_walk.c`) computes the same
result and is tested against it (tests/unit/protocol/test_validator.py). `walk_records` is whichever
is available.
"""

from __future__ import annotations

from typing import NamedTuple

from minikafka.protocol import records
from minikafka.protocol.errors import CorruptRecord, InvalidRecord, InvalidTimestamp, RecordError
from minikafka.protocol.records import HEADER_SIZE, BatchHeader

INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1
NO_TIMESTAMP = -1

# Kinds of per-record fault the walk reports (the messages are made here, not in the walk).
MISSING_KEY = 1
TIMESTAMP_OUT_OF_RANGE = 2

# A compressed batch may not expand past this many bytes: a zip bomb costs a refusal, not memory.
MAX_DECOMPRESSED_BYTES = 128 * 1024 * 1024


class Rules(NamedTuple):
    """What the topic's configuration asks of a batch, and the broker's clock."""

    now_ms: int
    log_append_time: bool       # message.timestamp.type=LogAppendTime: timestamps are not checked
    before_max_ms: int          # message.timestamp.before.max.ms
    after_max_ms: int           # message.timestamp.after.max.ms
    compacted: bool             # cleanup.policy contains compact: every record needs a key


class Walk(NamedTuple):
    """The result of walking the records of one batch.

    fault: the first structural fault (the whole batch is INVALID_RECORD), else None.
    max_timestamp: the largest record timestamp (-1 if none is larger).
    match_delta / match_timestamp: the first record whose timestamp >= the target (-1 if none).
    bad: (record index, MISSING_KEY | TIMESTAMP_OUT_OF_RANGE, timestamp) per content fault.
    """

    fault: str | None
    max_timestamp: int
    match_delta: int
    match_timestamp: int
    bad: list[tuple[int, int, int]]


class _Fault(Exception):
    pass


def _varint(data: bytes | memoryview, p: int, end: int, max_bytes: int, bits: int) -> tuple[int, int]:
    """Kafka's ByteUtils.readVarint (max_bytes 5, 32 bits) / readVarlong (10, 64): zigzag-decoded."""
    value = 0
    shift = 0
    for _ in range(max_bytes):
        if p >= end:
            raise _Fault("premature end of record")
        b = data[p]
        p += 1
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            value &= (1 << bits) - 1
            return (value >> 1) ^ -(value & 1), p
        shift += 7
    raise _Fault(f"varint longer than {max_bytes} bytes")


def _wrap64(n: int) -> int:
    return ((n + 2**63) % 2**64) - 2**63


def walk_records_py(data: bytes | memoryview, count: int, base_timestamp: int, ts_low: int, ts_high: int,
                    key_required: bool, target_timestamp: int) -> Walk:
    """Walk `count` records of an uncompressed record area (the reference implementation).

    ts_low / ts_high bound CreateTime timestamps (pass INT64_MIN / INT64_MAX for no check); a
    target_timestamp < 0 searches nothing. Work is bounded by len(data): a record takes >= 7 bytes.
    """
    end = len(data)
    p = 0
    max_ts = NO_TIMESTAMP
    match_delta = match_ts = -1
    bad: list[tuple[int, int, int]] = []
    i = 0
    try:
        while i < count:
            if p >= end:
                raise _Fault(f"Incorrect declared batch size, premature EOF reached at record {i} of {count}")
            size, p = _varint(data, p, end, 5, 32)
            if size < 0 or size > end - p:
                raise _Fault(f"Invalid record size {size} at record {i}: "
                             f"{end - p} bytes remain in the batch")
            start = p
            rec_end = p + size
            if p >= rec_end:
                raise _Fault(f"Invalid record size {size} at record {i}")
            p += 1  # attributes (unused in v2)
            ts_delta, p = _varint(data, p, rec_end, 10, 64)
            offset_delta, p = _varint(data, p, rec_end, 5, 32)
            key_len, p = _varint(data, p, rec_end, 5, 32)
            if key_len < -1 or key_len > rec_end - p:
                raise _Fault(f"Invalid key length {key_len} at record {i}")
            p += max(key_len, 0)
            value_len, p = _varint(data, p, rec_end, 5, 32)
            if value_len < -1 or value_len > rec_end - p:
                raise _Fault(f"Invalid value length {value_len} at record {i}")
            p += max(value_len, 0)
            n_headers, p = _varint(data, p, rec_end, 5, 32)
            if n_headers < 0 or n_headers > rec_end - p:
                raise _Fault(f"Found invalid number of record headers {n_headers} at record {i}")
            for _ in range(n_headers):
                hk, p = _varint(data, p, rec_end, 5, 32)
                if hk < 0 or hk > rec_end - p:
                    raise _Fault(f"Invalid header key size {hk} at record {i}")
                p += hk
                hv, p = _varint(data, p, rec_end, 5, 32)
                if hv < -1 or hv > rec_end - p:
                    raise _Fault(f"Invalid header value size {hv} at record {i}")
                p += max(hv, 0)
            if p != rec_end:
                raise _Fault(f"Invalid record size: expected to read {size} bytes in record payload, "
                             f"but instead read {p - start} (record {i})")
            if offset_delta != i:
                raise _Fault(f"record {i} has offset delta {offset_delta}; the deltas of a batch must run "
                             f"0, 1, ..., count - 1")
            ts = _wrap64(base_timestamp + ts_delta)
            if ts > max_ts:
                max_ts = ts
            if key_required and key_len < 0:
                bad.append((i, MISSING_KEY, ts))
            if ts != NO_TIMESTAMP and (ts < ts_low or ts > ts_high):
                bad.append((i, TIMESTAMP_OUT_OF_RANGE, ts))
            if match_delta < 0 <= target_timestamp <= ts:
                match_delta, match_ts = i, ts
            i += 1
        if p != end:
            raise _Fault("Incorrect declared batch size, records still remaining in file "
                         f"({end - p} bytes after record {count - 1})")
    except _Fault as exc:
        return Walk(str(exc), max_ts, match_delta, match_ts, bad)
    return Walk(None, max_ts, match_delta, match_ts, bad)


try:  # the compiled twin, when `pip install` could build it
    from minikafka.protocol._walk import walk_records as walk_records_c
except ImportError:  # pragma: no cover - exercised where no C compiler was available
    walk_records_c = None

COMPILED = walk_records_c is not None

try:  # a produced payload's checks in one call (PartitionLog._check_client_payload)
    from minikafka.protocol._walk import client_batch as client_batch_c
except ImportError:  # pragma: no cover - as above
    client_batch_c = None


def walk_records(data: bytes | memoryview, count: int, base_timestamp: int, ts_low: int, ts_high: int,
                 key_required: bool, target_timestamp: int) -> Walk:
    """walk_records_py's result, computed by the compiled twin when it is there."""
    if walk_records_c is None:
        return walk_records_py(data, count, base_timestamp, ts_low, ts_high, key_required, target_timestamp)
    return Walk._make(walk_records_c(data, count, base_timestamp, ts_low, ts_high, key_required,
                                     target_timestamp))


def record_area(buf: bytes | bytearray | memoryview, pos: int, h: BatchHeader) -> bytes | memoryview:
    """The batch's records, decompressed if needed; CorruptRecord if they cannot be."""
    raw = memoryview(buf)[pos + HEADER_SIZE : pos + h.size]
    if not h.compression:
        return raw
    return records.decompress_bounded(h.compression, raw, MAX_DECOMPRESSED_BYTES)


def _produced_record_area(buf: bytes | bytearray | memoryview, pos: int, h: BatchHeader) -> bytes | memoryview:
    # Kafka 4.3.1 answers an unknown codec or a payload that does not decompress with
    # UNKNOWN_SERVER_ERROR (an unhandled exception). INVALID_RECORD says why and, like -1, is not
    # retriable: the same bytes would fail again (CORRUPT_MESSAGE would make producers retry).
    try:
        return record_area(buf, pos, h)
    except CorruptRecord as exc:
        raise InvalidRecord(str(exc)) from None


def validate_client_batch(buf: bytes | bytearray | memoryview, pos: int, h: BatchHeader, rules: Rules) -> int:
    """Check one producer batch against every rule; return its records' max timestamp.

    Raises InvalidRecord (with record_errors for content faults) or InvalidTimestamp. Size, magic
    and CRC are checked before (records.split_batches)."""
    check_client_batch_header(h)
    data = _produced_record_area(buf, pos, h)
    low, high = timestamp_bounds(rules)
    walk = walk_records(data, h.records_count, h.base_timestamp, low, high, rules.compacted, -1)
    if walk.fault is not None:
        raise InvalidRecord(walk.fault)
    if walk.bad:
        raise _content_error(walk.bad, low, high)
    return walk.max_timestamp


def timestamp_bounds(rules: Rules) -> tuple[int, int]:
    """The CreateTime window a record's timestamp must fall in (none under LogAppendTime)."""
    return timestamp_window(rules.now_ms, rules.log_append_time, rules.before_max_ms, rules.after_max_ms)


def timestamp_window(now_ms: int, log_append_time: bool, before_max_ms: int, after_max_ms: int) -> tuple[int, int]:
    """timestamp_bounds from the values themselves (PartitionLog's usual append builds no Rules)."""
    if log_append_time:
        return INT64_MIN, INT64_MAX
    return max(now_ms - before_max_ms, INT64_MIN), min(now_ms + after_max_ms, INT64_MAX)


def check_client_batch_header(h: BatchHeader) -> None:
    """The batch-level rules (LogValidator.validateBatch for a client's batch)."""
    if h.last_offset_delta < 0:
        raise InvalidRecord(f"Batch has an invalid offset range: [0, {h.last_offset_delta}]")
    if h.records_count <= 0:
        raise InvalidRecord(f"Invalid reported count for record batch: {h.records_count}")
    if h.records_count != h.last_offset_delta + 1:
        raise InvalidRecord(f"Inconsistent batch offset range [0, {h.last_offset_delta}] "
                            f"and record count {h.records_count}")
    if h.is_control:
        raise InvalidRecord("Clients are not allowed to write control records")
    if h.producer_id >= 0 and h.base_sequence < 0:
        raise InvalidRecord(f"Invalid sequence number {h.base_sequence} in record batch with "
                            f"producerId {h.producer_id}")


def _content_error(bad: list[tuple[int, int, int]], low: int, high: int) -> InvalidRecord | InvalidTimestamp:
    errors = []
    for index, kind, ts in bad:
        if kind == MISSING_KEY:
            message = "Compacted topic cannot accept message without key."
        else:
            message = (f"Timestamp {ts} of message with offset {index} is out of range. "
                       f"The timestamp should be within [{low}, {high}]")
        errors.append(RecordError(index, message))
    if any(kind == TIMESTAMP_OUT_OF_RANGE for _, kind, _ in bad):
        return InvalidTimestamp("One or more records have been rejected due to invalid timestamp",
                                tuple(errors))
    shown = ", ".join(f"[{e.batch_index}] {e.message}" for e in errors[:3])
    return InvalidRecord(f"One or more records have been rejected due to {len(errors)} record errors "
                         f"in total, and only showing the first three errors at most: {shown}", tuple(errors))
