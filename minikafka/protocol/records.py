"""Record batch v2 (magic 2): header view, validation, in-place patching, control batches.

Layout (Kafka DefaultRecordBatch): baseOffset int64 | batchLength int32 | partitionLeaderEpoch int32 |
magic int8 | crc uint32 | attributes int16 | lastOffsetDelta int32 | baseTimestamp int64 |
maxTimestamp int64 | producerId int64 | producerEpoch int16 | baseSequence int32 | recordsCount int32 |
records. The CRC-32C covers bytes 21..end, so the broker can rewrite baseOffset and
partitionLeaderEpoch without recomputing it. Batches stay opaque bytes in the broker; only the
61-byte header is parsed. Records are decoded only to find timestamps (ListOffsets by time) and in
tests.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from typing import NamedTuple

from minikafka.protocol.crc import crc32c

from minikafka.protocol.errors import CorruptRecord, InvalidRecord
# Unsigned varints (tagged fields, compact lengths; records use their zigzag form): the one
# writer, with its table for the one-byte values that most of a transaction's records hold.
from minikafka.protocol.wire_write import uvarint

HEADER_SIZE = 61
LOG_OVERHEAD = 12  # baseOffset + batchLength
_UP_TO_MAGIC = 17  # baseOffset + batchLength + partitionLeaderEpoch + magic
MAGIC = 2

_HEADER = struct.Struct(">qiibIhiqqqhii")
_OFFSET = struct.Struct(">q")
_LENGTH_AT = struct.Struct(">qi")
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")
_U32 = struct.Struct(">I")

COMPRESSION_MASK = 0x07
TIMESTAMP_TYPE_MASK = 0x08
TRANSACTIONAL_FLAG = 0x10
CONTROL_FLAG = 0x20

CONTROL_ABORT = 0
CONTROL_COMMIT = 1


class BatchHeader(NamedTuple):
    base_offset: int
    batch_length: int
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    records_count: int

    @property
    def size(self) -> int:
        return self.batch_length + LOG_OVERHEAD

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        return self.base_offset + self.last_offset_delta + 1

    @property
    def compression(self) -> int:
        return self.attributes & COMPRESSION_MASK

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & TRANSACTIONAL_FLAG)

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & CONTROL_FLAG)

    @property
    def last_sequence(self) -> int:
        if self.base_sequence < 0:
            return -1
        return (self.base_sequence + self.last_offset_delta) & 0x7FFFFFFF


def read_header(buf: bytes | bytearray | memoryview, pos: int = 0) -> BatchHeader:
    return BatchHeader._make(_HEADER.unpack_from(buf, pos))


def is_transactional_at(buf: bytes | bytearray | memoryview, pos: int = 0) -> bool:
    """The transactional bit of the batch at pos (attributes, bytes 21-22), without reading the
    whole header: most batches are not transactional, and Produce asks for every one."""
    return bool(buf[pos + 22] & TRANSACTIONAL_FLAG)


def peek_size(buf: bytes | bytearray | memoryview, pos: int) -> tuple[int, int]:
    """(base_offset, total batch size) from the first 12 bytes at pos."""
    base, length = _LENGTH_AT.unpack_from(buf, pos)
    return base, length + LOG_OVERHEAD


def crc_of(buf: bytes | bytearray | memoryview, pos: int, size: int) -> int:
    return crc32c(memoryview(buf)[pos + 21 : pos + size])


def is_intact(buf: bytes | bytearray | memoryview, pos: int, size: int) -> bool:
    """A whole v2 batch of `size` bytes at pos whose stored CRC matches its bytes."""
    return (size >= HEADER_SIZE and buf[pos + 16] == MAGIC
            and _U32.unpack_from(buf, pos + 17)[0] == crc_of(buf, pos, size))


def salvage_batches(buf: bytes | bytearray | memoryview) -> tuple[list[tuple[int, int]], int]:
    """(position, size) of every intact v2 batch in bytes that begin with a damaged one, with the
    number of bytes that belong to none. Used where a log must be rebuilt from what is still
    readable after a corrupt batch (internal topics): a batch counts only if its CRC matches, so
    a length field that points into garbage is not trusted; the scan then moves to the next byte
    where a magic value of 2 could start a batch."""
    found: list[tuple[int, int]] = []
    n = len(buf)
    pos = 0
    lost = 0
    view = bytes(buf)
    while pos + HEADER_SIZE <= n:
        _, size = peek_size(view, pos)
        if HEADER_SIZE <= size <= n - pos and is_intact(view, pos, size):
            found.append((pos, size))
            pos += size
            continue
        # Resync: the next position whose magic byte (offset 16 of a batch) could be a batch's.
        nxt = view.find(bytes([MAGIC]), pos + 17)
        step = n - pos if nxt < 0 else nxt - 16 - pos
        lost += step
        pos += step
    return found, lost + (n - pos)


def split_batches(buf: bytes | bytearray | memoryview) -> list[tuple[int, BatchHeader]]:
    """Header-check every batch in a produce payload; return (position, header) per batch.

    Kafka's framing rules (ByteBufferLogInputStream.nextBatch, DefaultRecordBatch.ensureValid): a
    declared size below any batch's overhead, a magic other than 0..2, a v2 size below its header,
    a bad CRC are CorruptRecord (CORRUPT_MESSAGE); magic 0 or 1 is InvalidRecord (Produce v3+
    carries only v2 batches). An incomplete batch at the end (fewer than 17 bytes, or a declared
    size past the data) ends the list: Kafka drops those bytes, and so do the callers.
    """
    out: list[tuple[int, BatchHeader]] = []
    pos = 0
    end = len(buf)
    while end - pos >= _UP_TO_MAGIC:
        _base, size = peek_size(buf, pos)
        if size - LOG_OVERHEAD < 14:  # Kafka's minimum record overhead (magic 0)
            raise CorruptRecord(f"batch size {size} at position {pos} is smaller than any batch")
        if pos + size > end:
            break
        magic = buf[pos + 16]
        if magic in (0, 1):
            raise InvalidRecord(f"magic {magic} is not supported; only record batch v2")
        if magic != MAGIC:
            raise CorruptRecord(f"invalid magic {magic} in the batch at position {pos}")
        if size < HEADER_SIZE:
            raise CorruptRecord(f"batch size {size} at position {pos} is smaller than a batch header")
        header = read_header(buf, pos)
        if crc_of(buf, pos, size) != header.crc:
            raise CorruptRecord(f"CRC mismatch in batch at position {pos}")
        out.append((pos, header))
        pos += size
    return out


def set_base_offset(buf: bytearray | memoryview, pos: int, base_offset: int) -> None:
    """Assign the batch's offsets in place (outside the CRC, as Kafka's setLastOffset)."""
    _OFFSET.pack_into(buf, pos, base_offset)


def set_partition_leader_epoch(buf: bytearray | memoryview, pos: int, epoch: int) -> None:
    _I32.pack_into(buf, pos + 12, epoch)


def set_max_timestamp(buf: bytearray | memoryview, pos: int, size: int, timestamp: int, *,
                      log_append_time: bool) -> None:
    """Kafka's setMaxTimestamp: the timestamp type bit and maxTimestamp, then the CRC again."""
    attrs = struct.unpack_from(">h", buf, pos + 21)[0]
    attrs = attrs | TIMESTAMP_TYPE_MASK if log_append_time else attrs & ~TIMESTAMP_TYPE_MASK
    struct.pack_into(">h", buf, pos + 21, attrs)
    _I64.pack_into(buf, pos + 35, timestamp)
    struct.pack_into(">I", buf, pos + 17, crc32c(memoryview(buf)[pos + 21 : pos + size]))


def set_log_append_time(buf: bytearray | memoryview, pos: int, size: int, now_ms: int) -> None:
    """LogAppendTime topics: set the timestamp type bit and maxTimestamp, then recompute the CRC."""
    set_max_timestamp(buf, pos, size, now_ms, log_append_time=True)


# What an append writes into a batch besides its offsets (stamp_batch's mode).
STAMP_OFFSETS = 0          # the base offset and a partition leader epoch of 0 only
STAMP_CREATE_TIME = 1      # and maxTimestamp as CreateTime (the type bit cleared), CRC again
STAMP_LOG_APPEND_TIME = 2  # and maxTimestamp as LogAppendTime (the type bit set), CRC again


def stamp_batch_py(buf: bytearray, pos: int, size: int, base_offset: int, timestamp: int, mode: int) -> None:
    """What the log writes into a batch it appends, in one call (the reference of the compiled
    twin, minikafka.protocol._walk.stamp_batch, which tests hold to it)."""
    set_base_offset(buf, pos, base_offset)
    set_partition_leader_epoch(buf, pos, 0)
    if mode != STAMP_OFFSETS:
        set_max_timestamp(buf, pos, size, timestamp, log_append_time=mode == STAMP_LOG_APPEND_TIME)


try:
    from minikafka.protocol._walk import stamp_batch
except ImportError:  # pragma: no cover - where no C compiler was available
    stamp_batch = stamp_batch_py


# ---------------------------------------------------------------------------------------------
# Control batches (transaction markers), Kafka's EndTransactionMarker.


def build_control_batch(
    *, producer_id: int, producer_epoch: int, commit: bool, coordinator_epoch: int, timestamp_ms: int
) -> bytearray:
    """One COMMIT or ABORT marker batch: 78 bytes, base offset 0 (assigned on append)."""
    key = struct.pack(">hh", 0, CONTROL_COMMIT if commit else CONTROL_ABORT)
    value = struct.pack(">hi", 0, coordinator_epoch)
    body = bytes([0]) + zigzag(0) + zigzag(0) + zigzag(len(key)) + key + zigzag(len(value)) + value + zigzag(0)
    record = zigzag(len(body)) + body
    return assemble_batch(base_offset=0, attributes=TRANSACTIONAL_FLAG | CONTROL_FLAG, last_offset_delta=0,
                          base_timestamp=timestamp_ms, max_timestamp=timestamp_ms, producer_id=producer_id,
                          producer_epoch=producer_epoch, base_sequence=-1, count=1, records=record)


_AFTER_CRC = struct.Struct(">hiqqqhii")  # attributes .. records count: what the CRC covers first
_BEFORE_CRC = struct.Struct(">qiibI")    # base offset, batch length, leader epoch, magic, crc


def assemble_batch(*, base_offset: int, attributes: int, last_offset_delta: int, base_timestamp: int,
                   max_timestamp: int, producer_id: int, producer_epoch: int, base_sequence: int, count: int,
                   records: bytes | bytearray, partition_leader_epoch: int = 0) -> bytearray:
    """A v2 batch from its header fields and its (encoded, possibly compressed) records, CRC set."""
    after_crc = _AFTER_CRC.pack(attributes, last_offset_delta, base_timestamp, max_timestamp, producer_id,
                                producer_epoch, base_sequence, count) + bytes(records)
    # batchLength counts partitionLeaderEpoch, magic and crc (9 bytes) and what follows them.
    head = _BEFORE_CRC.pack(base_offset, 9 + len(after_crc), partition_leader_epoch, MAGIC, crc32c(after_crc))
    return bytearray(head + after_crc)


def control_type(batch: bytes | bytearray | memoryview, pos: int = 0) -> int:
    """The control record type (0 ABORT, 1 COMMIT, ...) of an uncompressed control batch."""
    rec = next(iter_records(batch, pos))
    if rec.key is None or len(rec.key) < 4:
        raise CorruptRecord("control record without a key")
    return struct.unpack_from(">h", rec.key, 2)[0]


def control_coordinator_epoch(batch: bytes | bytearray | memoryview, pos: int = 0) -> int:
    rec = next(iter_records(batch, pos))
    if rec.value is None or len(rec.value) < 6:
        return -1
    return struct.unpack_from(">i", rec.value, 2)[0]


# ---------------------------------------------------------------------------------------------
# Records inside a batch (only for timestamps and tests; the broker never rebuilds batches).


class Record(NamedTuple):
    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...]


def zigzag(n: int) -> bytes:
    return uvarint((n << 1) ^ (n >> 63))


def read_varint(buf: bytes | memoryview, pos: int) -> tuple[int, int]:
    shift = 0
    result = 0
    while True:
        if pos >= len(buf):
            raise CorruptRecord("truncated varint")
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            break
        shift += 7
        if shift > 63:
            raise CorruptRecord("varint too long")
    return (result >> 1) ^ -(result & 1), pos


_CODECS = {1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}


def decompress(codec: int, data: bytes | memoryview) -> bytes:
    """The records of a compressed batch (no bound: for the broker's own and already-validated
    batches; produced batches go through decompress_bounded)."""
    return bytes(decompress_bounded(codec, data, 2**31 - 1))


def decompress_bounded(codec: int, data: bytes | memoryview, limit: int) -> memoryview:
    """Decompress at most `limit` bytes. CorruptRecord for an unknown codec, a payload that does
    not decompress, or one that expands past the limit (nothing larger is ever allocated)."""
    import cramjam

    if codec == 0:
        return memoryview(data)
    name = _CODECS.get(codec)
    if name is None:
        raise CorruptRecord(f"unknown compression codec {codec}")
    try:
        if codec == 2:
            return memoryview(_snappy_decompress(data, limit))
        into = getattr(cramjam, name).decompress_into
        size = min(limit, max(64 * 1024, 16 * len(data)))
        while True:
            out = bytearray(size)
            try:
                n = into(data, out)
            except cramjam.DecompressionError as exc:
                if "failed to write whole buffer" in str(exc) and size < limit:
                    size = min(limit, size * 8)
                    continue
                raise
            return memoryview(out)[:n]
    except cramjam.DecompressionError as exc:
        raise CorruptRecord(f"{name} payload does not decompress (within {limit} bytes): {exc}") from None


def compress(codec: int, data: bytes) -> bytes:
    """Compress a records section with a batch's codec (the log cleaner rewrites batches in their own
    codec): 1 gzip, 2 snappy in snappy-java's xerial framing (what Kafka's Java producer writes and
    every client reads), 3 lz4 frame, 4 zstd."""
    import cramjam

    name = _CODECS.get(codec)
    if name is None:
        raise CorruptRecord(f"unknown compression codec {codec}")
    if codec == 2:
        block = bytes(cramjam.snappy.compress_raw(data))
        return _XERIAL_MAGIC + struct.pack(">iii", 1, 1, len(block)) + block
    return bytes(getattr(cramjam, name).compress(data))


_XERIAL_MAGIC = b"\x82SNAPPY\x00"


def _raw_snappy(block: bytes | memoryview, limit: int) -> bytes:
    # A raw snappy block starts with its uncompressed length (an unsigned varint): checked before
    # anything is allocated for it.
    import cramjam

    n = shift = 0
    for i in range(min(5, len(block))):
        n |= (block[i] & 0x7F) << shift
        shift += 7
        if not block[i] & 0x80:
            break
    if n > limit:
        raise cramjam.DecompressionError(f"snappy block declares {n} bytes")
    return bytes(cramjam.snappy.decompress_raw(bytes(block)))


def _snappy_decompress(data: bytes | memoryview, limit: int) -> bytes:
    """Kafka's snappy is either raw snappy or snappy-java's (xerial) block framing."""
    import cramjam

    data = bytes(data)
    if not data.startswith(_XERIAL_MAGIC):
        return _raw_snappy(data, limit)
    out = bytearray()
    pos = 16  # magic(8) + version(4) + compatible version(4)
    while pos < len(data):
        if pos + 4 > len(data):
            raise cramjam.DecompressionError("truncated xerial block length")
        (n,) = _I32.unpack_from(data, pos)
        pos += 4
        if n < 0 or pos + n > len(data):
            raise cramjam.DecompressionError(f"xerial block of {n} bytes runs past the payload")
        out += _raw_snappy(data[pos : pos + n], limit - len(out))
        pos += n
    return bytes(out)


def iter_records(batch: bytes | bytearray | memoryview, pos: int = 0) -> Iterator[Record]:
    """Decode the records of the batch at pos (decompressing if needed).

    Work is bounded by the batch's bytes whatever its header claims: a record that does not fit
    raises CorruptRecord (stored batches were validated on produce; this guards the rest)."""
    h = read_header(batch, pos)
    raw = bytes(memoryview(batch)[pos + HEADER_SIZE : pos + h.size])
    data = decompress(h.compression, raw) if h.compression else raw
    p = 0
    for i in range(h.records_count):
        if p >= len(data):
            raise CorruptRecord(f"batch at offset {h.base_offset} ends after {i} of {h.records_count} records")
        length, p = read_varint(data, p)
        end = p + length
        if length <= 0 or end > len(data):
            raise CorruptRecord(f"record {i} of the batch at offset {h.base_offset} has length {length}")
        p += 1  # attributes
        ts_delta, p = read_varint(data, p)
        off_delta, p = read_varint(data, p)
        klen, p = read_varint(data, p)
        key = None if klen < 0 else data[p : p + klen]
        p += max(klen, 0)
        vlen, p = read_varint(data, p)
        value = None if vlen < 0 else data[p : p + vlen]
        p += max(vlen, 0)
        nh, p = read_varint(data, p)
        headers = []
        for _h in range(nh):
            hk, p = read_varint(data, p)
            hkey = bytes(data[p : p + hk]).decode(errors="replace")
            p += hk
            hv, p = read_varint(data, p)
            hval = None if hv < 0 else data[p : p + hv]
            p += max(hv, 0)
            headers.append((hkey, hval))
        if p > end:
            raise CorruptRecord(f"record {i} of the batch at offset {h.base_offset} overruns its length")
        p = end
        ts = h.max_timestamp if h.attributes & TIMESTAMP_TYPE_MASK else h.base_timestamp + ts_delta
        yield Record(h.base_offset + off_delta, ts, key, value, tuple(headers))


def build_batch(
    records: list[tuple[bytes | None, bytes | None]],
    *,
    base_offset: int = 0,
    timestamp_ms: int = 0,
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
    transactional: bool = False,
    headers: tuple[tuple[str, bytes | None], ...] = (),
) -> bytearray:
    """An uncompressed batch; used by the broker for internal topics and by tests."""
    body = bytearray()
    for i, (key, value) in enumerate(records):
        rec = bytearray(b"\x00") + zigzag(0) + zigzag(i)
        rec += zigzag(-1) if key is None else zigzag(len(key)) + key
        rec += zigzag(-1) if value is None else zigzag(len(value)) + value
        rec += zigzag(len(headers))
        for hk, hv in headers:
            hkb = hk.encode()
            rec += zigzag(len(hkb)) + hkb
            rec += zigzag(-1) if hv is None else zigzag(len(hv)) + hv
        body += zigzag(len(rec)) + rec
    n = len(records)
    return assemble_batch(base_offset=base_offset, attributes=TRANSACTIONAL_FLAG if transactional else 0,
                          last_offset_delta=n - 1, base_timestamp=timestamp_ms, max_timestamp=timestamp_ms,
                          producer_id=producer_id, producer_epoch=producer_epoch, base_sequence=base_sequence,
                          count=n, records=body)
