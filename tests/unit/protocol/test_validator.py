"""Kafka's LogValidator rules (minikafka.protocol.validator): one test per rule, the record walk's
compiled twin against its Python reference, and bounded decompression."""

from __future__ import annotations

import builders
import cramjam
import pytest
from builders import record, zz
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from minikafka.protocol import records as R
from minikafka.protocol import validator as V
from minikafka.protocol.errors import CorruptRecord, InvalidRecord, InvalidTimestamp

pytestmark = pytest.mark.unit

NOW = 1_700_000_000_000
HOUR = 3_600_000
RULES = V.Rules(now_ms=NOW, log_append_time=False, before_max_ms=2**63 - 1, after_max_ms=HOUR, compacted=False)


def batch(area: bytes, count: int, **kw) -> bytearray:
    return builders.batch(area, count, base_ts=kw.pop("base_ts", NOW), **kw)


def validate(b: bytearray, rules: V.Rules = RULES) -> int:
    [(pos, h)] = R.split_batches(b)
    return V.validate_client_batch(b, pos, h, rules)


def good_area(n: int = 3) -> bytes:
    return b"".join(record(i, b"k%d" % i, b"v%d" % i, ts_delta=i) for i in range(n))


# ---------------------------------------------------------------------------------------------
# Batch-level rules (LogValidator.validateBatch)


def test_a_valid_batch_passes_and_reports_its_records_max_timestamp() -> None:
    assert validate(batch(good_area(3), 3)) == NOW + 2


@pytest.mark.parametrize("count, lod, message", [
    (3, 1, "Inconsistent batch offset range"),
    (3, -1, "invalid offset range"),
    (0, -1, "invalid offset range"),
    (-5, 4, "Invalid reported count"),
    (0, 0, "Invalid reported count"),
])
def test_count_and_last_offset_delta_must_agree(count: int, lod: int, message: str) -> None:
    with pytest.raises(InvalidRecord, match=message):
        validate(batch(good_area(3), count, last_offset_delta=lod))


def test_control_batches_are_refused_from_clients() -> None:
    with pytest.raises(InvalidRecord, match="control records"):
        validate(batch(good_area(1), 1, attributes=R.CONTROL_FLAG | R.TRANSACTIONAL_FLAG, producer_id=5,
                       base_sequence=0))


def test_a_producer_id_needs_a_sequence() -> None:
    with pytest.raises(InvalidRecord, match="Invalid sequence number -1"):
        validate(batch(good_area(1), 1, producer_id=5, base_sequence=-1))


# ---------------------------------------------------------------------------------------------
# Record structure (DefaultRecord.readFrom, the batch iterators)


STRUCTURE_FAULTS = {
    "count-larger": (good_area(3), 4, "premature EOF"),
    "count-2^31-1": (good_area(3), 2**31 - 1, "premature EOF"),
    "count-smaller": (good_area(3), 2, "records still remaining"),
    "trailing-bytes": (good_area(3) + b"\x00\x00", 3, "records still remaining"),
    "negative-record-length": (zz(-3) + good_area(1), 1, "Invalid record size -3"),
    "huge-record-length": (zz(2**31 - 1) + good_area(1)[1:], 1, "Invalid record size 2147483647"),
    "zero-record-length": (zz(0) + good_area(1), 1, "Invalid record size 0"),
    "key-length-below-minus-one": (record(0, b"k", key_len=-2, size_adjust=-1), 1, "Invalid key length -2"),
    "key-longer-than-record": (record(0, b"k", key_len=50), 1, "Invalid key length 50"),
    "value-length-below-minus-one": (record(0, b"k", b"", value_len=-7), 1, "Invalid value length -7"),
    "negative-header-count": (record(0, n_headers=-1), 1, "invalid number of record headers -1"),
    "huge-header-count": (record(0, n_headers=2**30), 1, "invalid number of record headers"),
    "negative-header-key": (record(0, headers=((b"h", b"x"),))[:-5] + zz(-1) + b"\x00\x00", 1, "Invalid"),
    "size-larger-than-fields": (record(0, size_adjust=1) + b"\x00", 1, "expected to read"),
    "size-smaller-than-fields": (record(0, b"key", size_adjust=-2), 1, "Invalid"),
    "eleven-byte-varlong": (zz(16) + b"\x00" + b"\xff" * 10 + b"\x01" + b"\x00" * 4, 1, "varint longer than 10"),
    "ten-byte-varlong-is-fine-but-size-is-not": (zz(16) + b"\x00" + b"\xff" * 9 + b"\x01" + b"\x00" * 5, 1,
                                                 "expected to read 16"),
    "endless-varint": (b"\xff" * 64, 1, "varint longer than 5 bytes"),
    "varint-off-the-end": (b"\x80", 1, "premature end"),
    "offset-delta-repeated": (record(0) + record(1, offset_delta=0), 2, "offset delta 0"),
    "offset-delta-gap": (record(0) + record(1, offset_delta=5), 2, "offset delta 5"),
}


@pytest.mark.parametrize("case", sorted(STRUCTURE_FAULTS))
def test_structural_faults_are_invalid_record(case: str) -> None:
    area, count, message = STRUCTURE_FAULTS[case]
    b = batch(area, count, last_offset_delta=min(count, 2**31 - 1) - 1)
    with pytest.raises(InvalidRecord, match=message) as info:
        validate(b)
    assert type(info.value) is InvalidRecord
    assert info.value.record_errors == ()


def test_headers_and_null_keys_and_values_are_fine() -> None:
    area = record(0, None, None, headers=((b"h", None), (b"", b"x"))) + record(1, b"", b"", ts_delta=-NOW - 1)
    assert validate(batch(area, 2)) == NOW  # the second record has timestamp -1 (none)


# ---------------------------------------------------------------------------------------------
# Record content (LogValidator.validateRecord): every bad record is listed


def test_compacted_topics_need_keys_and_every_keyless_record_is_listed() -> None:
    area = record(0, None) + record(1, b"k") + record(2, None)
    with pytest.raises(InvalidRecord) as info:
        validate(batch(area, 3), RULES._replace(compacted=True))
    assert type(info.value) is InvalidRecord
    assert [e.batch_index for e in info.value.record_errors] == [0, 2]
    assert "without key" in info.value.record_errors[0].message
    assert "2 record errors" in str(info.value)
    validate(batch(area, 3))  # not compacted: fine


def test_timestamps_outside_the_window_are_invalid_timestamp() -> None:
    area = record(0, ts_delta=0) + record(1, ts_delta=2 * HOUR) + record(2, ts_delta=-10 * HOUR)
    with pytest.raises(InvalidTimestamp) as info:
        validate(batch(area, 3), RULES._replace(before_max_ms=5 * HOUR))
    assert info.value.error_code == 32
    assert [e.batch_index for e in info.value.record_errors] == [1, 2]
    assert f"Timestamp {NOW + 2 * HOUR} of message with offset 1 is out of range" in info.value.record_errors[0].message
    # LogAppendTime topics replace timestamps: nothing to check.
    validate(batch(area, 3), RULES._replace(before_max_ms=5 * HOUR, log_append_time=True))


def test_timestamp_minus_one_is_never_out_of_range() -> None:
    validate(batch(record(0, ts_delta=-NOW - 1), 1, base_ts=NOW), RULES._replace(before_max_ms=0, after_max_ms=0))


# ---------------------------------------------------------------------------------------------
# Compressed batches


@pytest.mark.parametrize("codec, name", [(1, "gzip"), (2, "snappy"), (3, "lz4"), (4, "zstd")])
def test_compressed_batches_are_walked_after_decompression(codec: int, name: str) -> None:
    area = good_area(5)
    comp = bytes(cramjam.snappy.compress_raw(area)) if codec == 2 else bytes(getattr(cramjam, name).compress(area))
    assert validate(batch(comp, 5, attributes=codec)) == NOW + 4
    with pytest.raises(InvalidRecord, match="records still remaining"):
        validate(batch(comp, 4, attributes=codec))


# Kafka 4.3.1 answers both with UNKNOWN_SERVER_ERROR; minikafka says INVALID_RECORD (not retriable).
@pytest.mark.parametrize("codec", [1, 2, 3, 4])
def test_garbage_compressed_payloads_are_invalid(codec: int) -> None:
    with pytest.raises(InvalidRecord, match="does not decompress"):
        validate(batch(b"\x00garbage-not-compressed" * 3, 1, attributes=codec))
    with pytest.raises(CorruptRecord, match="does not decompress"):  # on a read: corrupt data
        V.record_area(*_header_of(batch(b"\x00garbage-not-compressed" * 3, 1, attributes=codec)))


@pytest.mark.parametrize("codec", [5, 6, 7])
def test_unknown_codecs_are_invalid(codec: int) -> None:
    with pytest.raises(InvalidRecord, match=f"unknown compression codec {codec}"):
        validate(batch(good_area(1), 1, attributes=codec))


def _header_of(b: bytearray) -> tuple[bytearray, int, R.BatchHeader]:
    return b, 0, R.read_header(b)


@pytest.mark.parametrize("name", ["gzip", "lz4", "zstd"])
def test_decompression_is_bounded(name: str) -> None:
    bomb = bytes(getattr(cramjam, name).compress(b"\x00" * (4 * 1024 * 1024)))
    with pytest.raises(CorruptRecord):
        R.decompress_bounded({"gzip": 1, "lz4": 3, "zstd": 4}[name], bomb, 1024 * 1024)
    assert len(R.decompress_bounded({"gzip": 1, "lz4": 3, "zstd": 4}[name], bomb, 4 * 1024 * 1024)) == 4 * 1024 * 1024


def test_snappy_declared_length_is_checked_before_allocating() -> None:
    block = R.uvarint(2**31) + b"\x00" * 10
    with pytest.raises(CorruptRecord):
        R.decompress_bounded(2, block, 1024 * 1024)


# ---------------------------------------------------------------------------------------------
# The compiled twin returns exactly what the reference returns


needs_twin = pytest.mark.skipif(not V.COMPILED, reason="the C twin was not built on this machine")

_blob = st.binary(max_size=24)
_records = st.lists(st.tuples(st.none() | _blob, st.none() | _blob,
                              st.lists(st.tuples(_blob, st.none() | _blob), max_size=3),
                              st.integers(-2**40, 2**40)), max_size=8)


def _area(recs: list) -> bytes:
    return b"".join(record(i, k, v, headers=tuple(h), ts_delta=t) for i, (k, v, h, t) in enumerate(recs))


def _both(area: bytes, count: int, base: int, low: int, high: int, key: bool, target: int) -> None:
    py = V.walk_records_py(area, count, base, low, high, key, target)
    c = V.Walk._make(V.walk_records_c(area, count, base, low, high, key, target))
    assert c == py


@needs_twin
@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(recs=_records, mutations=st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 255),
                                                   st.sampled_from(["set", "insert", "delete"])), max_size=4),
       count_shift=st.integers(-2, 2), cut=st.integers(0, 3),
       base=st.integers(-2**63, 2**63 - 1), window=st.tuples(st.integers(-2**63, 2**63 - 1),
                                                             st.integers(-2**63, 2**63 - 1)),
       key=st.booleans(), target=st.integers(-1, 2**62))
@example(recs=[], mutations=[], count_shift=0, cut=0, base=0, window=(0, 0), key=False, target=-1)
def test_twin_matches_reference_on_valid_and_mutated_areas(recs, mutations, count_shift, cut, base, window,
                                                           key, target) -> None:
    area = bytearray(_area(recs))
    for where, byte, how in mutations:
        if not area and how != "insert":
            continue
        i = where % (len(area) + (how == "insert"))
        if how == "set":
            area[i] = byte
        elif how == "insert":
            area.insert(i, byte)
        else:
            del area[i]
    if cut:
        area = area[: max(0, len(area) - cut)]
    low, high = sorted(window)
    _both(bytes(area), max(0, len(recs) + count_shift), base, low, high, key, target)


@needs_twin
@pytest.mark.parametrize("case", sorted(STRUCTURE_FAULTS))
def test_twin_matches_reference_on_each_structural_fault(case: str) -> None:
    area, count, _ = STRUCTURE_FAULTS[case]
    _both(area, count, NOW, NOW - HOUR, NOW + HOUR, True, NOW)


@needs_twin
def test_twin_accepts_any_buffer() -> None:
    area = good_area(4)
    for buf in (area, bytearray(area), memoryview(area), memoryview(bytearray(b"xx" + area))[2:]):
        _both(buf, 4, NOW, -2**63, 2**63 - 1, False, NOW + 2)
