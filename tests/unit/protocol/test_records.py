"""Record batch v2: build -> split/read_header/crc/iter_records round trips, in-place patches,
CRC coverage, control batches, and compressed batches (gzip, snappy, lz4, zstd)."""

from __future__ import annotations

import struct

import cramjam
import crc32c
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minikafka.protocol import records as R
from minikafka.protocol.errors import CorruptRecord, InvalidRecord

pytestmark = pytest.mark.unit

TS = 1_700_000_000_000


def _fix_crc(batch: bytearray, pos: int = 0) -> None:
    size = R.read_header(batch, pos).size
    struct.pack_into(">I", batch, pos + 17, crc32c.crc32c(bytes(batch[pos + 21 : pos + size])))


# ---------------------------------------------------------------------------------------------
# Round trips


def test_build_then_parse_round_trip() -> None:
    recs = [(b"k1", b"v1"), (None, b"value-with-null-key"), (b"k3", None), (b"", b"")]
    headers = (("h1", b"x"), ("h2", None), ("", b""))
    batch = R.build_batch(recs, timestamp_ms=TS, producer_id=7, producer_epoch=3, base_sequence=11,
                          headers=headers)
    [(pos, h)] = R.split_batches(batch)
    assert pos == 0
    assert h == R.read_header(batch)
    assert h.size == len(batch)
    assert h.batch_length == len(batch) - R.LOG_OVERHEAD
    assert (h.magic, h.base_offset, h.records_count, h.last_offset_delta) == (2, 0, 4, 3)
    assert (h.producer_id, h.producer_epoch, h.base_sequence, h.last_sequence) == (7, 3, 11, 14)
    assert (h.base_timestamp, h.max_timestamp) == (TS, TS)
    assert h.compression == 0 and not h.is_transactional and not h.is_control
    assert h.crc == R.crc_of(batch, 0, h.size)
    got = list(R.iter_records(batch))
    assert [(r.offset, r.timestamp, r.key, r.value, r.headers) for r in got] == [
        (i, TS, k, v, headers) for i, (k, v) in enumerate(recs)
    ]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.none() | st.binary(max_size=300), st.none() | st.binary(max_size=300)),
                min_size=1, max_size=20),
       st.lists(st.tuples(st.text(max_size=10), st.none() | st.binary(max_size=20)), max_size=3),
       st.integers(0, 2**40), st.booleans())
def test_round_trip_property(recs, headers, ts, transactional) -> None:
    batch = R.build_batch(recs, timestamp_ms=ts, headers=tuple(headers), transactional=transactional,
                          producer_id=1 if transactional else -1, producer_epoch=0 if transactional else -1)
    [(_, h)] = R.split_batches(batch)
    assert h.is_transactional == transactional
    got = list(R.iter_records(batch))
    assert [(r.key, r.value) for r in got] == recs
    assert all(r.headers == tuple(headers) for r in got)


def test_split_several_batches_and_read_at_positions() -> None:
    a = R.build_batch([(b"a", b"1")], timestamp_ms=TS)
    b = R.build_batch([(b"b", b"2"), (b"c", b"3")], timestamp_ms=TS + 5)
    buf = bytes(a + b)
    batches = R.split_batches(buf)
    assert [p for p, _ in batches] == [0, len(a)]
    assert R.peek_size(buf, len(a)) == (0, len(b))
    assert [r.value for r in R.iter_records(buf, len(a))] == [b"2", b"3"]


# ---------------------------------------------------------------------------------------------
# Patching and CRC coverage


def test_set_base_offset_and_epoch_keep_the_crc_valid() -> None:
    batch = R.build_batch([(b"k", b"v"), (b"k2", b"v2")], timestamp_ms=TS)
    crc = R.read_header(batch).crc
    R.set_base_offset(batch, 0, 123_456_789_012)
    R.set_partition_leader_epoch(batch, 0, 9)
    h = R.read_header(batch)
    assert (h.base_offset, h.partition_leader_epoch, h.crc) == (123_456_789_012, 9, crc)
    assert h.last_offset == 123_456_789_013 and h.next_offset == 123_456_789_014
    R.split_batches(batch)  # still valid
    assert [r.offset for r in R.iter_records(batch)] == [123_456_789_012, 123_456_789_013]


def test_set_log_append_time_recomputes_crc() -> None:
    batch = R.build_batch([(b"k", b"v"), (b"k2", b"v2")], timestamp_ms=TS)
    R.set_log_append_time(batch, 0, len(batch), TS + 1000)
    [(_, h)] = R.split_batches(batch)
    assert h.attributes & R.TIMESTAMP_TYPE_MASK
    assert [r.timestamp for r in R.iter_records(batch)] == [TS + 1000, TS + 1000]


def test_every_byte_after_offset_21_is_covered_by_the_crc() -> None:
    batch = R.build_batch([(b"key", b"value")], timestamp_ms=TS, headers=(("h", b"v"),))
    for i in range(21, len(batch)):
        bad = bytearray(batch)
        bad[i] ^= 0x01
        with pytest.raises(CorruptRecord):
            R.split_batches(bad)


def test_flipped_crc_byte_is_corrupt() -> None:
    for i in range(17, 21):
        bad = R.build_batch([(b"k", b"v")], timestamp_ms=TS)
        bad[i] ^= 0x40
        with pytest.raises(CorruptRecord):
            R.split_batches(bad)


def test_bytes_before_the_crc_are_not_covered() -> None:
    batch = R.build_batch([(b"k", b"v")], timestamp_ms=TS)
    batch[0] ^= 0xFF  # base offset
    batch[13] ^= 0xFF  # partition leader epoch
    R.split_batches(batch)


def test_bad_magic_size_and_counts() -> None:
    batch = R.build_batch([(b"k", b"v")], timestamp_ms=TS)
    bad = bytearray(batch)
    bad[16] = 1
    with pytest.raises(InvalidRecord):
        R.split_batches(bad)
    bad[16] = 3
    with pytest.raises(CorruptRecord, match="invalid magic 3"):
        R.split_batches(bad)
    # Kafka's ByteBufferLogInputStream: a declared length past the end, or fewer than 17 bytes,
    # is an incomplete batch, which ends the list (the append drops those bytes).
    assert R.split_batches(batch[:-1]) == []
    assert R.split_batches(batch[:40]) == []
    assert len(R.split_batches(batch + b"\x00" * 16)) == 1
    assert len(R.split_batches(batch + batch[:-1])) == 1
    bad = bytearray(batch)
    struct.pack_into(">i", bad, 8, 13)  # batchLength below any batch's overhead
    with pytest.raises(CorruptRecord, match="smaller than any batch"):
        R.split_batches(bad)
    bad = bytearray(batch)
    struct.pack_into(">i", bad, 8, 40)  # batchLength smaller than a v2 header
    with pytest.raises(CorruptRecord, match="smaller than a batch header"):
        R.split_batches(bad[:52])


# ---------------------------------------------------------------------------------------------
# Control batches


@pytest.mark.parametrize("commit", [True, False])
def test_control_batch_layout(commit: bool) -> None:
    batch = R.build_control_batch(producer_id=4242, producer_epoch=7, commit=commit, coordinator_epoch=5,
                                  timestamp_ms=TS)
    assert len(batch) == 78
    [(_, h)] = R.split_batches(batch)
    assert h.batch_length == 66
    assert h.attributes == 0x30
    assert h.is_control and h.is_transactional
    assert (h.producer_id, h.producer_epoch, h.base_sequence, h.records_count) == (4242, 7, -1, 1)
    assert h.last_offset_delta == 0 and h.base_offset == 0
    assert R.control_type(batch) == (R.CONTROL_COMMIT if commit else R.CONTROL_ABORT)
    assert R.control_coordinator_epoch(batch) == 5
    [rec] = list(R.iter_records(batch))
    assert rec.key == struct.pack(">hh", 0, 1 if commit else 0)
    assert rec.value == struct.pack(">hi", 0, 5)
    assert rec.timestamp == TS


# ---------------------------------------------------------------------------------------------
# Compressed batches


def _xerial(data: bytes) -> bytes:
    block = bytes(cramjam.snappy.compress_raw(data))
    return b"\x82SNAPPY\x00" + struct.pack(">ii", 1, 1) + struct.pack(">i", len(block)) + block


def _xerial_two_blocks(data: bytes) -> bytes:
    half = len(data) // 2
    out = b"\x82SNAPPY\x00" + struct.pack(">ii", 1, 1)
    for part in (data[:half], data[half:]):
        block = bytes(cramjam.snappy.compress_raw(part))
        out += struct.pack(">i", len(block)) + block
    return out


COMPRESSORS = {
    "gzip": (1, lambda d: bytes(cramjam.gzip.compress(d))),
    "snappy-raw": (2, lambda d: bytes(cramjam.snappy.compress_raw(d))),
    "snappy-xerial": (2, _xerial),
    "snappy-xerial-2-blocks": (2, _xerial_two_blocks),
    "lz4": (3, lambda d: bytes(cramjam.lz4.compress(d))),
    "zstd": (4, lambda d: bytes(cramjam.zstd.compress(d))),
}


def _compress_batch(batch: bytearray, codec: int, compress) -> bytearray:
    """Compress the records section of an uncompressed batch; fix attributes, length and CRC."""
    out = bytearray(batch[: R.HEADER_SIZE]) + compress(bytes(batch[R.HEADER_SIZE :]))
    attrs = struct.unpack_from(">h", out, 21)[0]
    struct.pack_into(">h", out, 21, (attrs & ~R.COMPRESSION_MASK) | codec)
    struct.pack_into(">i", out, 8, len(out) - R.LOG_OVERHEAD)
    _fix_crc(out)
    return out


@pytest.mark.parametrize("name", sorted(COMPRESSORS))
def test_iter_records_on_compressed_batches(name: str) -> None:
    codec, compress = COMPRESSORS[name]
    recs = [(b"key-%d" % i, b"value-%d-" % i * 20) for i in range(50)] + [(None, b"last")]
    plain = R.build_batch(recs, timestamp_ms=TS, headers=(("trace", b"abc"),))
    batch = _compress_batch(plain, codec, compress)
    assert len(batch) < len(plain)
    [(_, h)] = R.split_batches(batch)
    assert h.compression == codec
    got = list(R.iter_records(batch))
    assert [(r.offset, r.key, r.value) for r in got] == [(i, k, v) for i, (k, v) in enumerate(recs)]
    assert all(r.headers == (("trace", b"abc"),) for r in got)


def test_unknown_compression_codec_is_corrupt() -> None:
    batch = _compress_batch(R.build_batch([(b"k", b"v")], timestamp_ms=TS), 5, lambda d: d)
    with pytest.raises(CorruptRecord):
        list(R.iter_records(batch))


def test_salvage_batches_keeps_intact_batches_after_a_damaged_one():
    records = R
    a = bytes(records.build_batch([(b"k", b"a")], timestamp_ms=1))
    b = bytes(records.build_batch([(b"k", b"b" * 100)], timestamp_ms=1))
    flipped = bytearray(a)
    flipped[-2] ^= 1  # CRC fails, length intact
    assert records.salvage_batches(bytes(flipped) + b + a) == ([(len(a), len(b)), (len(a) + len(b), len(a))], len(a))
    bad_length = bytearray(a)
    bad_length[8:12] = (2**31 - 1).to_bytes(4, "big")  # the length points past the end: resync
    found, lost = records.salvage_batches(b"\x02\x02junk" + bytes(bad_length) + b + b"tail")
    assert [size for _, size in found] == [len(b)]
    assert lost == 6 + len(a) + 4
    assert records.salvage_batches(b"") == ([], 0)
