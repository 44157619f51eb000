"""test-plan.md section 6, F-1..F-8: hostile or broken bytes on the wire.

Each case talks raw protocol to a fresh broker (tests/rawclient.py). After it: the broker process
is alive (when the test started it), and a separate fresh connection completes a valid Produce and
a Fetch of what it produced. F-6(d) (transactional batch with an unknown producer id) waits for
transactions.
"""

from __future__ import annotations

import struct
import time
import uuid

import builders
import fuzzing
import pytest
from conftest import conformance_mode
from rawclient import (
    RawClient,
    api_versions_v3,
    create_topics_v7,
    fetch_records,
    fetch_v12,
    high_watermark,
    list_offsets_v7,
    metadata_v12,
    produce,
    produce_v9,
    request_header,
    valid_batch,
    wait_for_topic,
)

from minikafka.protocol import codec, versions
from minikafka.protocol.records import build_batch

# integration too: `make conformance` runs these against Apache Kafka.
pytestmark = [pytest.mark.integration, pytest.mark.reliability, pytest.mark.timeout(120)]

MIB = 1024 * 1024
RSS_BOUND_KB = 10 * 1024
CORRUPT_MESSAGE = 2
MESSAGE_TOO_LARGE = 10
UNSUPPORTED_VERSION = 35
INVALID_RECORD = 87


def _topic(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def _connect(broker) -> RawClient:
    return RawClient.connect(broker.bootstrap, timeout=10.0)


def _rss_kb(broker) -> int | None:
    if broker.external:
        return None
    return broker.rss_kb()


def assert_healthy(broker) -> None:
    """Broker alive; a fresh connection produces a record and fetches it back."""
    if not broker.external:
        assert broker.proc.poll() is None, f"broker exited; log:\n{broker.log_tail()}"
    topic = _topic("health")
    marker = uuid.uuid4().hex.encode()
    with _connect(broker) as c:
        wait_for_topic(c, topic)
        p = produce(c, topic, 0, build_batch([(b"health", marker)], timestamp_ms=int(time.time() * 1000)))
        assert p.error_code == 0, p
        recs = fetch_records(c, topic, 0, p.base_offset)
        assert [r.value for r in recs] == [marker]


def _expect_closed_without_response(c: RawClient, timeout: float = 5.0) -> None:
    assert c.is_closed(timeout), "the broker kept the connection open"


# ---------------------------------------------------------------------------------------------
# F-1: bad size prefixes


@pytest.mark.parametrize("size, follow", [(-1, b""), (0, b""), (3, b"\x00\x12\x00")],
                         ids=["minus-one", "zero", "three"])
def test_f1_bad_size_prefix_closes(kafka_broker, size: int, follow: bytes) -> None:
    with _connect(kafka_broker) as c:
        c.send_bytes(struct.pack(">i", size) + follow)
        _expect_closed_without_response(c)
    assert_healthy(kafka_broker)


# ---------------------------------------------------------------------------------------------
# F-2: a huge declared size is refused before any allocation


def test_f2_huge_size_closes_without_allocating(kafka_broker) -> None:
    assert_healthy(kafka_broker)  # warm up: topics, imports, buffers
    before = _rss_kb(kafka_broker)
    with _connect(kafka_broker) as c:
        c.send_bytes(struct.pack(">i", 100 * MIB + 1) + b"\x00\x03\x00\x0c")
        t0 = time.monotonic()
        _expect_closed_without_response(c, timeout=20.0)
        assert time.monotonic() - t0 < 10.0, "not closed at once"  # a broker that waits never closes
    after = _rss_kb(kafka_broker)
    if before is not None:
        assert after - before < RSS_BOUND_KB, f"RSS grew by {after - before} kB"
    assert_healthy(kafka_broker)


# ---------------------------------------------------------------------------------------------
# F-3: unknown API key, known key with an unknown version


@pytest.mark.parametrize("api_key, api_version", [(32000, 0), (3, 99)], ids=["key-32000", "metadata-v99"])
def test_f3_unsupported_request_closes(kafka_broker, api_key: int, api_version: int) -> None:
    with _connect(kafka_broker) as c:
        c.send_frame(request_header(api_key, api_version, 7) + b"\x00" * 16)
        _expect_closed_without_response(c)
    assert_healthy(kafka_broker)


# ---------------------------------------------------------------------------------------------
# F-4: ApiVersions of an unknown version gets a v0 error reply, then v3 works on the same socket


def test_f4_api_versions_v99_gets_v0_error_then_v3_works(kafka_broker) -> None:
    with _connect(kafka_broker) as c:
        # A future client sends a flexible header and some body we cannot know.
        c.send_frame(request_header(18, 99, 4242, flexible=True) + b"\x05rawc\x041.0\x00")
        frame = c.recv_frame(timeout=5)
        # v0 encoding: correlation id, error_code int16, api_keys int32 count + (int16 x3) each.
        assert len(frame) == 4 + 2 + 4 + 6, frame.hex()
        corr, body = codec.decode_response(18, 0, frame)
        assert corr == 4242
        assert body.error_code == UNSUPPORTED_VERSION
        assert len(body.api_keys) == 1
        key = body.api_keys[0]
        assert key.api_key == 18
        assert key.min_version == 0
        if not kafka_broker.external:
            assert key.max_version == versions.SUPPORTED[18].max
        else:
            assert key.max_version >= 3

        resp = c.request(api_versions_v3(), 3, timeout=5)
        assert resp.error_code == 0
        keys = {k.api_key: (k.min_version, k.max_version) for k in resp.api_keys}
        for api in (0, 1, 2, 3, 18, 19):
            assert api in keys, f"api {api} missing from {sorted(keys)}"
        assert keys[18][1] >= 3
    assert_healthy(kafka_broker)


# ---------------------------------------------------------------------------------------------
# F-5: malformed bodies


def _metadata_v4_header(corr: int = 5) -> bytes:
    return request_header(3, 4, corr)


def _metadata_v12_header(corr: int = 5) -> bytes:
    return request_header(3, 12, corr, flexible=True)


def _truncated_produce() -> bytes:
    data = codec.encode_request(9, 5, "raw", produce_v9("t", 0, valid_batch(3)))
    payload = data[4:]
    return payload[: len(payload) - 40]


MALFORMED = {
    # A Produce v9 whose body stops 40 bytes short.
    "truncated-body": _truncated_produce(),
    # Metadata v4 (legacy encoding): topics array of INT32_MAX entries, 10 bytes left.
    "array-int32-max": _metadata_v4_header() + struct.pack(">i", 0x7FFFFFFF) + b"\x00\x01a" + b"\x00" * 7,
    # Metadata v12 (compact encoding): topics length varint 0xFFFFFFFF.
    "compact-length-ffffffff": _metadata_v12_header() + b"\xff\xff\xff\xff\x0f" + b"\x00" * 10,
    # Metadata v12: a varint that never ends within 5 bytes (6 bytes long).
    "six-byte-varint": _metadata_v12_header() + b"\xff\xff\xff\xff\xff\x01" + b"\x00" * 10,
    # Metadata v4: one topic whose non-nullable name has length -2, and -1.
    "negative-string-length": _metadata_v4_header() + struct.pack(">ih", 1, -2) + b"\x01",
    "null-non-nullable-string": _metadata_v4_header() + struct.pack(">ih", 1, -1) + b"\x01",
    # A topic name that is not UTF-8.
    "non-utf8-string": _metadata_v4_header() + struct.pack(">ih", 1, 2) + b"\xff\xfe" + b"\x01",
    # Metadata v4: a negative topics count other than -1 (null).
    "negative-array-count": _metadata_v4_header() + struct.pack(">i", -5) + b"\x01",
    # Fetch v4: a null topics array (Fetch's topics are not nullable); fetch.py used to get None.
    "null-non-nullable-array": request_header(1, 4, 5) + struct.pack(">iiiib", -1, 0, 1, 1 << 20, 0)
    + struct.pack(">i", -1),
    # ListOffsets v7: null topics.
    "null-list-offsets-topics": request_header(2, 7, 5, flexible=True) + struct.pack(">ib", -1, 0) + b"\x00"
    + b"\x00",
}


# Where Kafka 4.3.1 is more lenient (README, "What differs from Apache Kafka"): it reads a nullable
# array's negative length as null and decodes a string that is not UTF-8 with replacement
# characters, and answers. minikafka closes, as for every other malformed request.
KAFKA_ANSWERS = {"compact-length-ffffffff", "negative-array-count", "non-utf8-string"}


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_f5_malformed_body_closes(kafka_broker, case: str) -> None:
    assert_healthy(kafka_broker)
    before = _rss_kb(kafka_broker)
    with _connect(kafka_broker) as c:
        c.send_frame(MALFORMED[case])
        if conformance_mode() and case in KAFKA_ANSWERS:
            assert struct.unpack_from(">i", c.recv_frame(10))[0] == 5  # an answer to its correlation id
        else:
            _expect_closed_without_response(c)
    after = _rss_kb(kafka_broker)
    if before is not None:
        assert after - before < RSS_BOUND_KB, f"RSS grew by {after - before} kB"
    assert_healthy(kafka_broker)


def test_f5_trailing_garbage_is_ignored(kafka_broker) -> None:
    """Kafka ignores bytes after a complete body (librdkafka sends 3 after Metadata v12)."""
    topic = _topic("trail")
    with _connect(kafka_broker) as c:
        wait_for_topic(c, topic)
        corr, data = c.encode(metadata_v12(topic), 12)
        payload = data[4:] + bytes(range(37))
        c.send_frame(payload)
        got, resp = c.receive(3, 12, timeout=5)
        assert got == corr
        assert [t.name for t in resp.topics] == [topic]
        assert resp.topics[0].error_code == 0
        # The connection is still usable.
        assert c.request(api_versions_v3(), 3).error_code == 0
    assert_healthy(kafka_broker)


# ---------------------------------------------------------------------------------------------
# F-6: bad batches are refused per partition; the connection stays open; nothing is appended


def _produce_and_check_refused(c: RawClient, topic: str, batch: bytes, expected_error: int) -> None:
    hw_before = high_watermark(c, topic)
    p = produce(c, topic, 0, batch)
    assert p.error_code == expected_error, (p.error_code, p.error_message)
    assert p.base_offset == -1
    # Same connection still answers, and the log did not move.
    assert high_watermark(c, topic) == hw_before
    good = produce(c, topic, 0, valid_batch(1, prefix=b"after"))
    assert good.error_code == 0
    assert good.base_offset == hw_before
    assert [r.value for r in fetch_records(c, topic, 0, hw_before)] == [b"after0"]


def _topic_with_one_record(c: RawClient, prefix: str, configs: dict[str, str] | None = None) -> str:
    topic = _topic(prefix)
    resp = c.request(create_topics_v7(topic, 1, configs), 7)
    assert resp.topics[0].error_code == 0, resp.topics[0]
    wait_for_topic(c, topic)
    assert produce(c, topic, 0, valid_batch(1)).error_code == 0
    assert high_watermark(c, topic) == 1
    return topic


def test_f6a_flipped_crc_byte_is_corrupt_message(kafka_broker) -> None:
    with _connect(kafka_broker) as c:
        topic = _topic_with_one_record(c, "crc")
        batch = valid_batch(3)
        batch[17] ^= 0x01  # first byte of the CRC
        _produce_and_check_refused(c, topic, batch, CORRUPT_MESSAGE)
        batch = valid_batch(3)
        batch[-1] ^= 0x80  # a record byte: the stored CRC no longer matches
        _produce_and_check_refused(c, topic, batch, CORRUPT_MESSAGE)
    assert_healthy(kafka_broker)


def test_f6b_batch_over_max_message_bytes_is_message_too_large(kafka_broker) -> None:
    with _connect(kafka_broker) as c:
        topic = _topic_with_one_record(c, "big", {"max.message.bytes": "1000"})
        batch = build_batch([(b"k", b"x" * 2000)], timestamp_ms=int(time.time() * 1000))
        _produce_and_check_refused(c, topic, batch, MESSAGE_TOO_LARGE)
    assert_healthy(kafka_broker)


def test_f6c_nonzero_base_offset_is_invalid_record(kafka_broker) -> None:
    with _connect(kafka_broker) as c:
        topic = _topic_with_one_record(c, "base")
        batch = build_batch([(b"k", b"v")], base_offset=5, timestamp_ms=int(time.time() * 1000))
        _produce_and_check_refused(c, topic, batch, INVALID_RECORD)
    assert_healthy(kafka_broker)


# ---------------------------------------------------------------------------------------------
# F-7: pipelining


def test_f7_fifty_pipelined_requests_answered_in_order(kafka_broker) -> None:
    topic = _topic("pipe")
    with _connect(kafka_broker) as c:
        wait_for_topic(c, topic)
        base_hw = high_watermark(c, topic)
        kinds = []
        out = bytearray()
        for i in range(50):
            kind = i % 3
            if kind == 0:
                corr, data = c.encode(api_versions_v3(), 3)
                kinds.append((corr, 18, 3))
            elif kind == 1:
                corr, data = c.encode(metadata_v12(topic), 12)
                kinds.append((corr, 3, 12))
            else:
                corr, data = c.encode(produce_v9(topic, 0, valid_batch(1, prefix=b"p%d-" % i)), 9)
                kinds.append((corr, 0, 9))
            out += data
        c.send_bytes(bytes(out))
        produced = []
        for corr, api_key, api_version in kinds:
            got, body = c.receive(api_key, api_version, timeout=10)
            assert got == corr, f"response {got} where {corr} was next"
            if api_key == 0:
                p = body.responses[0].partition_responses[0]
                assert p.error_code == 0
                produced.append(p.base_offset)
        n = len(produced)
        assert produced == list(range(base_hw, base_hw + n)), "produce order differs from request order"
        assert high_watermark(c, topic) == base_hw + n
    assert_healthy(kafka_broker)


# ---------------------------------------------------------------------------------------------
# F-8: slowloris


def test_f8_half_frame_then_silence_closed_after_idle_timeout(broker_factory) -> None:
    broker = broker_factory(overrides={"connections.max.idle.ms": "2000"})
    topic = _topic("busy")
    with _connect(broker) as busy, _connect(broker) as slow:
        wait_for_topic(busy, topic)
        # Half of a 100-byte frame, then nothing.
        slow.send_bytes(struct.pack(">i", 100) + request_header(3, 4, 1)[:40])
        t0 = time.monotonic()
        deadline = t0 + 10.0
        closed_after = None
        sent = 0
        while time.monotonic() < deadline:
            # The other client keeps working the whole time (and is never idle long enough).
            p = produce(busy, topic, 0, valid_batch(1, prefix=b"busy%d-" % sent))
            assert p.error_code == 0
            sent += 1
            if slow.is_closed(timeout=0.2):
                closed_after = time.monotonic() - t0
                break
        assert closed_after is not None, "the half-frame connection was never closed"
        assert closed_after >= 1.8, f"closed after {closed_after:.2f}s, before connections.max.idle.ms"
        # The busy client is unaffected.
        assert high_watermark(busy, topic) == sent
        assert len(fetch_records(busy, topic, 0, 0)) == sent
    assert_healthy(broker)


def test_rawclient_detects_open_connection(kafka_broker) -> None:
    """Guard for the assertions above: is_closed is False for a connection the broker keeps."""
    with _connect(kafka_broker) as c:
        assert not c.is_closed(timeout=0.3)
        assert c.request(api_versions_v3(), 3).error_code == 0
        with pytest.raises(TimeoutError):
            c.recv_frame(timeout=0.3)


# ---------------------------------------------------------------------------------------------
# F-6, every field: the Produce corruption table of the fuzzer, one case per test, each refused
# with Kafka's code and nothing appended (`make conformance` runs it against Apache Kafka).


@pytest.mark.kafka_reference
@pytest.mark.parametrize("case", sorted(fuzzing.produce_corruptions(0)))
def test_f6_produce_corruption_table(kafka_broker, case: str) -> None:
    corruption = fuzzing.produce_corruptions(int(time.time() * 1000))[case]
    with _connect(kafka_broker) as c:
        topic = _topic_with_one_record(c, "corrupt")
        if kafka_broker.external and corruption.kafka_code == 0:  # Kafka acknowledges it
            assert produce(c, topic, 0, corruption.records).error_code == 0
            return
        expected = corruption.kafka_code if kafka_broker.external else corruption.code
        _produce_and_check_refused(c, topic, corruption.records, expected)


@pytest.mark.kafka_reference
def test_f6_incomplete_bytes_after_the_batch_are_dropped(kafka_broker) -> None:
    """Kafka ignores an incomplete batch after the one a Produce carries (fewer than 17 bytes, or
    a declared size past the data); the batch itself is appended, the stray bytes are not."""
    now = int(time.time() * 1000)
    with _connect(kafka_broker) as c:
        topic = _topic_with_one_record(c, "tail")
        for tail in (b"\x00" * 7, struct.pack(">qi", 0, 500) + b"\x00\x00\x00\x00\x02" + b"\x01" * 20):
            hw = high_watermark(c, topic)
            p = produce(c, topic, 0, bytes(build_batch([(b"k", b"kept")], timestamp_ms=now)) + tail)
            assert p.error_code == 0, p
            assert p.base_offset == hw
            assert [r.value for r in fetch_records(c, topic, 0, hw)] == [b"kept"]
            after = produce(c, topic, 0, valid_batch(1, prefix=b"next"))
            assert after.base_offset == hw + 1
            assert [r.value for r in fetch_records(c, topic, 0, hw)] == [b"kept", b"next0"]


@pytest.mark.kafka_reference
def test_f6_record_errors_name_each_bad_record(kafka_broker) -> None:
    """Per-record faults come back as record_errors (KIP-467): every keyless record of a compacted
    topic, every record with a timestamp over message.timestamp.after.max.ms (one hour)."""
    now = int(time.time() * 1000)
    with _connect(kafka_broker) as c:
        compacted = _topic_with_one_record(c, "compact", {"cleanup.policy": "compact"})
        keyless = builders.batch(builders.record(0, None) + builders.record(1, b"k") + builders.record(2, None), 3,
                                 base_ts=now)
        hw = high_watermark(c, compacted)
        p = produce(c, compacted, 0, keyless)
        assert p.error_code == INVALID_RECORD
        assert [e.batch_index for e in p.record_errors] == [0, 2]
        assert all(e.batch_index_error_message for e in p.record_errors)
        assert p.error_message
        assert high_watermark(c, compacted) == hw

        topic = _topic_with_one_record(c, "future")
        future = builders.batch(builders.record(0) + builders.record(1, ts_delta=2 * 3_600_000) + builders.record(2),
                                3, base_ts=now)
        p = produce(c, topic, 0, future)
        assert p.error_code == 32  # INVALID_TIMESTAMP
        assert [e.batch_index for e in p.record_errors] == [1]
        assert "out of range" in p.record_errors[0].batch_index_error_message
        _produce_and_check_refused(c, topic, future, 32)


@pytest.mark.kafka_reference
def test_f5_out_of_range_isolation_level_is_invalid_request(kafka_broker) -> None:
    """An enum value no version defines gets INVALID_REQUEST on an open connection (Kafka throws
    from IsolationLevel.forId and answers UNKNOWN_SERVER_ERROR)."""
    import dataclasses

    topic = _topic("enum")
    expected = -1 if kafka_broker.external else 42  # measured on Kafka 4.3.1: UNKNOWN_SERVER_ERROR
    with _connect(kafka_broker) as c:
        wait_for_topic(c, topic)
        fetch = c.request(dataclasses.replace(fetch_v12(topic, 0, 0), isolation_level=5), 12)
        assert fetch.error_code == expected
        offsets = c.request(dataclasses.replace(list_offsets_v7(topic, 0), isolation_level=3), 7)
        assert offsets.topics[0].partitions[0].error_code == expected
        assert c.request(api_versions_v3(), 3).error_code == 0  # the connection stays usable
    assert_healthy(kafka_broker)
