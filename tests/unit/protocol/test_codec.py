"""codec: request/response round trips over every served (api, version), header versions, and
decoding hostile bytes (test-plan F-3, F-4, F-5, F-10)."""

from __future__ import annotations

import dataclasses
import datetime
import struct
import subprocess
import sys
import textwrap

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kio.schema.api_versions.v3.request import ApiVersionsRequest as ApiVersionsRequestV3
from kio.schema.api_versions.v3.response import ApiVersion as ApiVersionV3
from kio.schema.api_versions.v3.response import ApiVersionsResponse as ApiVersionsResponseV3
from kio.schema.request_header.v1.header import RequestHeader as RequestHeaderV1
from kio.schema.request_header.v2.header import RequestHeader as RequestHeaderV2
from kio.static.primitive import Records, i64Timedelta
from rawclient import default_entity, metadata_v12, produce_v9, request_header, valid_batch

from minikafka.protocol import codec, versions
from minikafka.protocol.errors import FramingError, UnsupportedVersion

pytestmark = pytest.mark.unit

st.register_type_strategy(Records, st.binary(max_size=200).map(Records))
# kio's own strategy draws durations up to timedelta.max, whose millisecond count does not fit
# kio's decoder ("timedelta milliseconds overflow"); real clients send -1 or small values.
st.register_type_strategy(i64Timedelta, st.integers(-(2**40), 2**40).map(
    lambda n: i64Timedelta.parse(datetime.timedelta(milliseconds=n))))

SERVED = dict(versions.SUPPORTED)
PAIRS = [(k, v) for k, rng in SERVED.items() for v in range(rng.min, rng.max + 1)]
FAST = settings(max_examples=10, deadline=None, database=None,
                suppress_health_check=list(HealthCheck))


def _payload(data: bytes) -> bytes:
    (size,) = struct.unpack_from(">i", data, 0)
    assert size == len(data) - 4
    return data[4:]


def _body_start(api_key: int, api_version: int, frame: bytes) -> int:
    cls = versions.request_class(api_key, api_version)
    header_cls = RequestHeaderV2 if cls.__flexible__ else RequestHeaderV1
    _, used = codec._reader(header_cls)(frame, 0)
    return used


# ---------------------------------------------------------------------------------------------
# Round trips


@pytest.mark.parametrize("api_key, api_version", PAIRS)
def test_request_roundtrip_random_entities(api_key: int, api_version: int) -> None:
    cls = versions.request_class(api_key, api_version)

    @FAST
    @given(st.from_type(cls), st.integers(-(2**31), 2**31 - 1), st.one_of(st.none(), st.text(max_size=20)))
    def check(entity, corr, client_id) -> None:
        frame = _payload(codec.encode_request(api_version, corr, client_id, entity))
        got = codec.decode_request(frame, SERVED)
        assert (got.api_key, got.api_version, got.correlation_id) == (api_key, api_version, corr)
        assert got.client_id == client_id
        assert got.body == entity
        # The pre-decode length walk agrees with kio on where the body ends.
        assert codec._bounds_checker(cls)(frame, _body_start(api_key, api_version, frame)) == len(frame)

    check()


@pytest.mark.parametrize("api_key, api_version", PAIRS)
def test_response_roundtrip_random_entities(api_key: int, api_version: int) -> None:
    cls = versions.response_class(api_key, api_version)

    @settings(FAST, max_examples=5)
    @given(st.from_type(cls), st.integers(-(2**31), 2**31 - 1))
    def check(entity, corr) -> None:
        data = codec.encode_response(api_key, api_version, corr, entity)
        got_corr, body = codec.decode_response(api_key, api_version, _payload(data))
        assert got_corr == corr
        assert body == entity

    check()


def _handler_pairs() -> list[tuple[int, int]]:
    from minikafka.broker.dispatch import HandlerRegistry
    from minikafka.broker.handlers import default_handlers

    served = HandlerRegistry(default_handlers(None)).served  # type: ignore[arg-type]
    return [(k, v) for k, rng in served.items() for v in range(rng.min, rng.max + 1)]


@pytest.mark.parametrize("api_key, api_version", _handler_pairs())
def test_default_response_downgrades_and_encodes(api_key: int, api_version: int) -> None:
    canonical = default_entity(versions.canonical_response(api_key), nulls=False)
    down = versions.downgrade(canonical, api_version)
    assert type(down).__version__ == api_version
    data = codec.encode_response(api_key, api_version, 99, down)
    assert codec.decode_response(api_key, api_version, _payload(data)) == (99, down)


# ---------------------------------------------------------------------------------------------
# Header versions


def test_api_versions_response_header_is_v0_even_when_flexible() -> None:
    body = dataclasses.replace(default_entity(ApiVersionsResponseV3),
                               api_keys=(ApiVersionV3(api_key=18, min_version=0, max_version=4),))
    assert ApiVersionsResponseV3.__flexible__
    data = codec.encode_response(18, 3, 0x01020304, body)
    # size, correlation id, then straight into the body: error_code int16 0, then the compact
    # array length of api_keys (2 = one element). No tagged-field byte in between.
    assert data[4:8] == b"\x01\x02\x03\x04"
    assert data[8:10] == b"\x00\x00"
    assert data[10] == 2
    assert codec.decode_response(18, 3, data[4:]) == (0x01020304, body)


def test_other_flexible_responses_have_header_v1() -> None:
    cls = versions.response_class(3, 12)
    body = default_entity(cls)
    data = codec.encode_response(3, 12, 5, body)
    assert data[8] == 0  # the empty tagged-field section of response header v1
    non_flex = codec.encode_response(3, 8, 5, versions.downgrade(body, 8))
    assert len(data) != len(non_flex)


def test_api_versions_v3_request_uses_header_v2() -> None:
    req = ApiVersionsRequestV3(client_software_name="x", client_software_version="1")
    frame = _payload(codec.encode_request(3, 1, "cid", req))
    assert frame[:8] == struct.pack(">hhi", 18, 3, 1)
    assert frame[8:13] == b"\x00\x03cid"  # client_id stays a legacy nullable string
    assert frame[13] == 0  # header tagged fields


# ---------------------------------------------------------------------------------------------
# Refusals


def test_unknown_api_key_is_unsupported() -> None:
    frame = request_header(32000, 0, 77) + b"\x00" * 8
    with pytest.raises(UnsupportedVersion) as info:
        codec.decode_request(frame, SERVED)
    assert (info.value.api_key, info.value.api_version, info.value.correlation_id) == (32000, 0, 77)


def test_unserved_version_is_unsupported() -> None:
    with pytest.raises(UnsupportedVersion) as info:
        codec.decode_request(request_header(3, 99, 8), SERVED)
    assert info.value.correlation_id == 8
    with pytest.raises(UnsupportedVersion):
        codec.decode_request(request_header(18, SERVED[18].max + 1, 8, flexible=True) + b"\0\0\0", SERVED)


def test_short_frame_is_framing_error() -> None:
    with pytest.raises(FramingError):
        codec.decode_request(b"\x00\x03\x00", SERVED)


def test_truncated_body_is_framing_error() -> None:
    frame = _payload(codec.encode_request(9, 5, "c", produce_v9("t", 0, valid_batch(2))))
    for cut in (1, 2, 10, 50, len(frame) - _body_start(0, 9, frame) - 1):
        with pytest.raises(FramingError):
            codec.decode_request(frame[: len(frame) - cut], SERVED)


def test_trailing_bytes_are_ignored() -> None:
    req = metadata_v12("a", "b")
    frame = _payload(codec.encode_request(12, 6, "c", req)) + b"\x01\x02\x03"
    assert codec.decode_request(frame, SERVED).body == req


HOSTILE = {
    # KAFKA-14063: collection lengths far beyond the bytes left.
    "legacy-array-int32-max": request_header(3, 4, 1) + struct.pack(">i", 2**31 - 1) + b"\x00\x01a" + b"\0" * 7,
    "legacy-array-minus-2": request_header(3, 4, 1) + struct.pack(">i", -2) + b"\0" * 10,
    "compact-array-ffffffff": request_header(3, 12, 1, flexible=True) + b"\xff\xff\xff\xff\x0f" + b"\0" * 10,
    "compact-array-2-pow-31": request_header(3, 12, 1, flexible=True) + b"\x80\x80\x80\x80\x08" + b"\0" * 10,
    "six-byte-varint": request_header(3, 12, 1, flexible=True) + b"\xff\xff\xff\xff\xff\x01" + b"\0" * 10,
    "tagged-count-huge": request_header(3, 12, 1, flexible=True) + b"\x01\x00\x00" + b"\xff\xff\xff\xff\x0f",
    "negative-string": request_header(3, 4, 1) + struct.pack(">ih", 1, -2) + b"\x01",
    "null-non-nullable-string": request_header(3, 4, 1) + struct.pack(">ih", 1, -1) + b"\x01",
    "string-past-end": request_header(3, 4, 1) + struct.pack(">ih", 1, 30000) + b"abc",
    "produce-records-int32-max": request_header(0, 3, 1) + struct.pack(">hhi", -1, 1, 1000) + struct.pack(">i", 1)
    + b"\x00\x01t" + struct.pack(">ii", 1, 0) + struct.pack(">i", 2**31 - 1) + b"\0" * 10,
    "fetch-compact-array-huge": request_header(1, 12, 1, flexible=True) + struct.pack(">iiiibii", -1, 500, 1, 1000, 0, 0, -1)
    + b"\xfe\xff\xff\xff\x0f" + b"\0" * 10,
}


def test_hostile_lengths_fail_cleanly_without_allocating() -> None:
    """Each frame must raise FramingError. Runs in a child process: before the length walk in
    codec.decode_request, kio's native reader aborted the whole process on these."""
    script = textwrap.dedent("""
        import resource, sys
        from minikafka.protocol import codec, versions
        from minikafka.protocol.errors import FramingError
        cases = eval(sys.stdin.read())
        served = dict(versions.SUPPORTED)
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        for name, frame in cases.items():
            try:
                codec.decode_request(frame, served)
            except FramingError:
                print("ok", name)
            else:
                print("decoded", name)
        grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
        print("rss_grown_kb", grown)
    """)
    proc = subprocess.run([sys.executable, "-c", script], input=repr(HOSTILE), capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr[-2000:]
    lines = proc.stdout.split("\n")
    assert sorted(line.split()[1] for line in lines if line.startswith("ok ")) == sorted(HOSTILE), proc.stdout
    grown = int(next(line for line in lines if line.startswith("rss_grown_kb")).split()[1])
    assert grown < 10 * 1024


# ---------------------------------------------------------------------------------------------
# Arbitrary bytes raise only the codec's errors (F-10)


@settings(max_examples=1500, deadline=None, database=None)
@given(st.binary(max_size=200))
def test_arbitrary_bytes_raise_only_framing_errors(data: bytes) -> None:
    try:
        codec.decode_request(data, SERVED)
    except FramingError:
        pass


@settings(max_examples=1500, deadline=None, database=None)
@given(st.sampled_from(PAIRS), st.integers(-(2**31), 2**31 - 1), st.binary(max_size=200))
def test_valid_header_then_arbitrary_body_raises_only_framing_errors(pair, corr, tail) -> None:
    api_key, api_version = pair
    flexible = versions.request_class(api_key, api_version).__flexible__
    frame = request_header(api_key, api_version, corr, flexible=flexible) + tail
    try:
        got = codec.decode_request(frame, SERVED)
    except FramingError:
        return
    assert got.api_key == api_key and got.correlation_id == corr


@settings(max_examples=300, deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(st.sampled_from(PAIRS).flatmap(
    lambda p: st.tuples(st.just(p), st.from_type(versions.request_class(*p)))),
    st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 255)), min_size=1, max_size=4),
    st.integers(0, 10_000))
def test_mutated_valid_requests_raise_only_framing_errors(pair_entity, edits, cut) -> None:
    (api_key, api_version), entity = pair_entity
    frame = bytearray(_payload(codec.encode_request(api_version, 1, "m", entity)))
    for pos, byte in edits:
        frame[8 + pos % max(1, len(frame) - 8)] = byte  # keep key/version, mutate the rest
    frame = frame[: max(8, len(frame) - cut % 4 * (cut % 7))]
    try:
        codec.decode_request(bytes(frame), SERVED)
    except FramingError:
        pass


# -- tagged fields the schema does not define (a newer client's): skipped, as Kafka skips them ------


def _tags(*fields: tuple[int, bytes]) -> bytes:
    """A tagged-field section: count, then (tag, size, bytes) each (all values below 128 here)."""
    out = bytes([len(fields)])
    for tag, data in fields:
        out += bytes([tag, len(data)]) + data
    return out


def _metadata_frame(name: str = "t") -> tuple[bytes, int, int]:
    """A Metadata v12 frame for one topic; the offsets of its header's tag section and of the topic
    entry's tag section (each a single 0 byte)."""
    frame = codec.encode_request(12, 5, "cid", metadata_v12(name))[4:]
    header_tags = codec._header_walk(frame, True) - 1
    topic_tags = header_tags + 1 + 1 + 16 + 1 + len(name)  # array length, topic id, name
    assert frame[header_tags] == 0 and frame[topic_tags] == 0 and frame[-1] == 0
    return frame, header_tags, topic_tags


def _put(frame: bytes, at: int, section: bytes) -> bytes:
    return frame[:at] + section + frame[at + 1:]


def test_unknown_tagged_fields_are_skipped_in_header_body_and_nested_entities() -> None:
    frame, header_tags, topic_tags = _metadata_frame()
    expected = codec.decode_request(frame, SERVED)
    # Later positions first, so the earlier offsets stay valid.
    tagged = _put(frame, len(frame) - 1, _tags((7, b"\xab\xcd"), (90, b"")))
    tagged = _put(tagged, topic_tags, _tags((3, b"x" * 5)))
    tagged = _put(tagged, header_tags, _tags((1, b"\x01")))
    got = codec.decode_request(tagged, SERVED)
    assert got == expected
    # As the frame decoder hands a large frame over: the bytearray it was read into (framing.py).
    assert codec.decode_request(bytearray(tagged), SERVED) == expected


def test_known_tagged_fields_are_kept_next_to_unknown_ones() -> None:
    """Fetch v12 defines ClusterId as tag 0; an unknown tag 42 after it is dropped, tag 0 kept."""
    body = dataclasses.replace(default_entity(versions.request_class(1, 12), nulls=False), cluster_id="the-cluster")
    frame = codec.encode_request(12, 9, "cid", body)[4:]
    entry = bytes([0, 12, 12]) + b"the-cluster"  # tag 0, size 12, compact string (length + 1 = 12)
    assert frame.endswith(bytes([1]) + entry)
    tagged = frame[: -len(entry) - 1] + bytes([2]) + entry + bytes([42, 1, 0xFF])
    got = codec.decode_request(tagged, SERVED)
    assert got.body.cluster_id == "the-cluster"
    assert got.body == codec.decode_request(frame, SERVED).body


def test_unknown_tagged_field_longer_than_the_frame_is_a_framing_error() -> None:
    frame, _header_tags, _topic_tags = _metadata_frame()
    bad = frame[:-1] + bytes([1, 9, 100]) + b"\x00" * 3  # claims 100 bytes, has 3
    with pytest.raises(FramingError):
        codec.decode_request(bad, SERVED)


def test_nullable_struct_marker_is_checked() -> None:
    """DescribeTopicPartitions' cursor is a nullable struct: an int8 marker (-1 null, 1 present)
    before its fields. Both decode; any other marker is a malformed frame."""
    from kio.schema.describe_topic_partitions.v0.request import Cursor, DescribeTopicPartitionsRequest, TopicRequest

    served = {75: versions.VersionRange(0, 0)}
    for cursor in (None, Cursor(topic_name="t", partition_index=3)):
        body = DescribeTopicPartitionsRequest(topics=(TopicRequest(name="t"),), response_partition_limit=5,
                                              cursor=cursor)
        frame = codec.encode_request(0, 1, "c", body)[4:]
        assert codec.decode_request(frame, served).body == body
    bad = bytearray(frame)
    marker = len(bad) - 1 - 1 - 4 - 2 - 1  # back over: request tags, cursor tags, partition index, name
    assert bad[marker] == 0x01
    bad[marker] = 0x02
    with pytest.raises(FramingError):
        codec.decode_request(bytes(bad), served)
