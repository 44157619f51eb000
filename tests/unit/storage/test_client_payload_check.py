"""A produced payload's checks in one compiled call (validator.client_batch_c, used by
PartitionLog._check_usual before _check_client_payload's Python checks) against the Python
reference they stand in for, and the compiled stamp of an appended batch against its reference.

The contract: for any payload, the log's check answers the same with the compiled checker as
without it: the same batch, timestamp and trimmed payload, or the same error with the same text."""

from __future__ import annotations

import os
import struct
import tempfile
from pathlib import Path

import builders
import pytest
from builders import record
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from minikafka.config import BrokerConfig
from minikafka.protocol import records as R
from minikafka.protocol import validator as V
from minikafka.protocol.errors import CorruptRecord, InvalidRecord
from minikafka.protocol.types import TopicPartition
from minikafka.storage.errors import MessageTooLarge
from minikafka.storage.partition_log import PartitionLog
from minikafka.topic_config import topic_defaults

pytestmark = pytest.mark.unit

needs_twin = pytest.mark.skipif(V.client_batch_c is None, reason="the C twin was not built on this machine")

NOW = 1_700_000_000_000
HOUR = 3_600_000
_LOGS: dict[tuple, PartitionLog] = {}
_DIR = tempfile.TemporaryDirectory()


def _log(**overrides: object) -> PartitionLog:
    """One log per configuration for the whole module (hypothesis calls the test many times)."""
    key = tuple(sorted(overrides.items()))
    if key not in _LOGS:
        config = topic_defaults(BrokerConfig.build({}))
        config.update({k.replace("_", "."): v for k, v in overrides.items()})
        path = Path(_DIR.name) / f"t-{len(_LOGS)}"
        _LOGS[key] = PartitionLog.open(TopicPartition("t", len(_LOGS)), path, config, recovery_point=0,
                                       log_start_offset=0, clean=True, now_ms=NOW)
    return _LOGS[key]


def _outcome(plog: PartitionLog, payload: bytes, compiled: bool) -> tuple:
    saved = V.client_batch_c
    if not compiled:
        V.client_batch_c = None
    buf = bytearray(payload)
    try:
        usual = plog._check_usual(buf, NOW)  # as append() checks: the compiled checker first
        batches, max_ts = ([(0, usual[0])], usual[1]) if usual is not None else plog._check_client_payload(buf, NOW)
    except (CorruptRecord, InvalidRecord, MessageTooLarge) as exc:
        return ("refused", type(exc), str(exc), getattr(exc, "record_errors", ()))
    finally:
        V.client_batch_c = saved
    return ("accepted", batches, max_ts, bytes(buf))


def _same(plog: PartitionLog, payload: bytes) -> tuple:
    reference = _outcome(plog, payload, compiled=False)
    assert _outcome(plog, payload, compiled=True) == reference
    return reference


def _area(recs: list) -> bytes:
    return b"".join(record(i, k, v, headers=tuple(h), ts_delta=t) for i, (k, v, h, t) in enumerate(recs))


_blob = st.binary(max_size=16)
_records = st.lists(st.tuples(st.none() | _blob, st.none() | _blob,
                              st.lists(st.tuples(_blob, st.none() | _blob), max_size=2),
                              st.integers(-2 * HOUR, 2 * HOUR)), min_size=1, max_size=6)


@needs_twin
@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(recs=_records, count_shift=st.sampled_from([0, 0, 0, -1, 1]),
       attributes=st.sampled_from([0, 0, 0, 1, 2, 3, 4, 5, 7, 8, 16, 32, 48]),
       producer=st.sampled_from([(-1, -1, -1), (7, 0, 0), (7, 0, -1), (7, 2, 41)]),
       base_offset=st.sampled_from([0, 0, 0, 5]), magic=st.sampled_from([2, 2, 2, 1, 3]),
       tail=st.sampled_from([b"", b"", b"\x00" * 5, b"\x01" * 16, b"\x00" * 17, b"\x00" * 40, "copy"]),
       mutations=st.just([]) | st.lists(st.tuples(st.integers(0, 4000), st.integers(0, 255),
                                                  st.sampled_from(["set", "insert", "delete"])), max_size=3),
       crc_again=st.booleans(), config=st.sampled_from(["plain", "compact", "small", "log_append_time", "window"]))
@example(recs=[(b"k", b"v", [], 0)], count_shift=0, attributes=0, producer=(-1, -1, -1), base_offset=0, magic=2,
         tail=b"", mutations=[], crc_again=False, config="plain")
def test_the_compiled_check_answers_as_the_reference(recs, count_shift, attributes, producer, base_offset, magic,
                                                     tail, mutations, crc_again, config) -> None:
    pid, epoch, seq = producer
    payload = builders.batch(_area(recs), len(recs) + count_shift, base_ts=NOW, attributes=attributes,
                             producer_id=pid, producer_epoch=epoch, base_sequence=seq, base_offset=base_offset,
                             magic=magic)
    payload += bytes(payload) if tail == "copy" else tail
    for where, byte, how in mutations:
        i = where % (len(payload) + (how == "insert"))
        if how == "set":
            payload[i] = byte
        elif how == "insert":
            payload.insert(i, byte)
        elif len(payload) > 1:
            del payload[i]
    if crc_again and len(payload) >= R.HEADER_SIZE:
        size = R.peek_size(payload, 0)[1]
        if R.HEADER_SIZE <= size <= len(payload):
            builders.fix_crc(payload)
    plog = _log(**{
        "plain": {},
        "compact": {"cleanup_policy": "compact"},
        "small": {"max_message_bytes": 120},
        "log_append_time": {"message_timestamp_type": "LogAppendTime"},
        "window": {"message_timestamp_before_max_ms": HOUR, "message_timestamp_after_max_ms": HOUR},
    }[config])
    _same(plog, bytes(payload))


@needs_twin
@pytest.mark.parametrize("stray", [0, 1, 16])
def test_the_usual_batch_is_answered_by_the_compiled_check(stray: int) -> None:
    """The fast path is taken, not only matched: a sound batch gets the compiled answer, with its
    header read as the reference reads it, and at most 16 stray bytes after it."""
    area = b"".join(record(i, b"k", b"v" * 100, ts_delta=i) for i in range(3))
    payload = builders.batch(area, 3, base_ts=NOW, producer_id=9, producer_epoch=1, base_sequence=4)
    answer = V.client_batch_c(bytes(payload) + b"\x00" * stray, NOW - HOUR, NOW + HOUR, True, 1_000_000,
                              R.BatchHeader)
    assert answer is not None
    used, header, max_ts = answer
    assert (used, max_ts) == (len(payload), NOW + 2)
    assert type(header) is R.BatchHeader and header == R.read_header(payload)
    assert _same(_log(), bytes(payload) + b"\x00" * stray)[0] == "accepted"


@needs_twin
@pytest.mark.parametrize("value_size", [4000, 70_000, 1_100_000])
def test_large_batches_take_the_compiled_check_and_a_damaged_one_does_not(value_size: int) -> None:
    """Batches of every size get the same verdicts (the compiled check hashes with the project's CRC)."""
    area = b"".join(record(i, b"k", os.urandom(value_size // 2), ts_delta=i) for i in range(2))
    payload = builders.batch(area, 2, base_ts=NOW)
    answer = V.client_batch_c(bytes(payload), NOW - HOUR, NOW + HOUR, False, 2_000_000, R.BatchHeader)
    assert answer is not None and answer[1] == R.read_header(payload)
    payload[len(payload) // 2] ^= 0x40
    assert V.client_batch_c(bytes(payload), NOW - HOUR, NOW + HOUR, False, 2_000_000, R.BatchHeader) is None
    assert _same(_log(max_message_bytes=2_000_000), bytes(payload))[1] is CorruptRecord


@needs_twin
@pytest.mark.parametrize("case", ["codec 1", "codec 2", "codec 3", "codec 4", "codec 5", "codec 7", "two_batches",
                                  "bad_crc", "too_large", "keyless_compacted", "out_of_window", "base_offset",
                                  "control"])
def test_anything_unusual_is_left_to_the_reference(case: str) -> None:
    area = record(0, None if case == "keyless_compacted" else b"k", b"v" * 50,
                  ts_delta=-10 * HOUR if case == "out_of_window" else 0)
    attributes = int(case.split()[1]) if case.startswith("codec") else 0
    if case == "control":
        attributes = R.CONTROL_FLAG | R.TRANSACTIONAL_FLAG
    payload = builders.batch(area, 1, base_ts=NOW, attributes=attributes, base_offset=5 if case == "base_offset" else 0,
                             producer_id=3 if case == "control" else -1, base_sequence=0 if case == "control" else -1)
    if case == "two_batches":
        payload += bytes(payload)
    if case == "bad_crc":
        payload[-1] ^= 1
    limit = 50 if case == "too_large" else 1_000_000
    assert V.client_batch_c(bytes(payload), NOW - HOUR, NOW + HOUR, True, limit, R.BatchHeader) is None


def _stamp_cases() -> list[tuple[int, int]]:
    return [(R.STAMP_OFFSETS, 0), (R.STAMP_CREATE_TIME, NOW + 5), (R.STAMP_LOG_APPEND_TIME, NOW + 9)]


@needs_twin
@pytest.mark.parametrize("mode, timestamp", _stamp_cases())
@pytest.mark.parametrize("attributes", [0, 8, 16])
@pytest.mark.parametrize("value_size", [30, 9000])
def test_the_compiled_stamp_writes_what_the_reference_writes(mode: int, timestamp: int, attributes: int,
                                                             value_size: int) -> None:
    area = b"".join(record(i, b"k", b"v" * value_size, ts_delta=i) for i in range(2))
    batch = builders.batch(area, 2, base_ts=NOW, attributes=attributes)
    struct.pack_into(">i", batch, 12, 77)  # a leader epoch the stamp must reset
    buffer_c, buffer_py = bytearray(b"ab" + batch), bytearray(b"ab" + batch)
    from minikafka.protocol import _walk
    _walk.stamp_batch(buffer_c, 2, len(batch), 1234, timestamp, mode)
    R.stamp_batch_py(buffer_py, 2, len(batch), 1234, timestamp, mode)
    assert buffer_c == buffer_py
    [(_, h)] = R.split_batches(buffer_c[2:])  # the CRC holds
    assert (h.base_offset, h.partition_leader_epoch) == (1234, 0)
    if mode != R.STAMP_OFFSETS:
        assert h.max_timestamp == timestamp
        assert bool(h.attributes & R.TIMESTAMP_TYPE_MASK) == (mode == R.STAMP_LOG_APPEND_TIME)


@needs_twin
def test_the_compiled_stamp_refuses_a_position_without_a_whole_header() -> None:
    from minikafka.protocol import _walk
    with pytest.raises(ValueError):
        _walk.stamp_batch(bytearray(70), 20, 61, 0, 0, R.STAMP_OFFSETS)
