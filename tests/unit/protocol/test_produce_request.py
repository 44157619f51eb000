"""The compiled Produce reader (protocol/produce_request.py) against kio's reader, its reference:
the same entities for every request it reads, None (kio decides) for everything else, and never
an answer where kio refuses the bytes."""

from __future__ import annotations

import datetime

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from minikafka.protocol import codec, produce_request, versions
from minikafka.protocol.errors import FramingError

pytestmark = pytest.mark.unit

needs_reader = pytest.mark.skipif(produce_request.reader(9) is None, reason="the C reader was not built here")
VERSIONS = range(produce_request.FIRST_VERSION, produce_request.LAST_VERSION + 1)
SERVED = {0: versions.SUPPORTED[0]}


def _request(version: int, txn: str | None, acks: int, timeout_ms: int, topics: list) -> object:
    cls = versions.request_class(0, version)
    topic_cls = versions.nested_class(cls, "topic_data")
    part_cls = versions.nested_class(topic_cls, "partition_data")
    return cls(transactional_id=txn, acks=acks, timeout=datetime.timedelta(milliseconds=timeout_ms),
               topic_data=tuple(topic_cls(name=name, partition_data=tuple(part_cls(index=i, records=r)
                                                                           for i, r in parts))
                                for name, parts in topics))


def _frame(version: int, body: object, client_id: str | None = "c") -> bytes:
    return bytes(codec.encode_request(version, 7, client_id, body)[4:])


def _reference(frame: bytes) -> object:
    """decode_request with kio's reader only."""
    saved = produce_request._produce_request_c
    produce_request._produce_request_c = None
    codec._fast_reader.cache_clear()
    try:
        return codec.decode_request(frame, SERVED)
    except FramingError as exc:
        return ("refused", str(exc))
    finally:
        produce_request._produce_request_c = saved
        codec._fast_reader.cache_clear()


def _compiled(frame: bytes, version: int) -> object:
    pos = codec._header_walk(frame, version >= 9)
    return produce_request.reader(version)(frame, pos)


_name = st.text(max_size=12)
_records = st.none() | st.binary(max_size=40)
_topics = st.lists(st.tuples(_name, st.lists(st.tuples(st.integers(-2**31, 2**31 - 1), _records), max_size=3)),
                   max_size=3)


@needs_reader
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(version=st.sampled_from(VERSIONS), txn=st.none() | st.text(max_size=10),
       acks=st.integers(-2**15, 2**15 - 1), timeout_ms=st.integers(-2**31, 2**31 - 1), topics=_topics,
       client_id=st.none() | st.text(max_size=5))
@example(version=3, txn=None, acks=1, timeout_ms=30000, topics=[("t", [(0, b"x")])], client_id="c")
@example(version=12, txn="tx", acks=-1, timeout_ms=0, topics=[], client_id=None)
def test_the_compiled_reader_builds_what_kio_builds(version, txn, acks, timeout_ms, topics, client_id) -> None:
    body = _request(version, txn, acks, timeout_ms, topics)
    frame = _frame(version, body, client_id)
    fast = _compiled(frame, version)
    assert fast is not None  # a request kio wrote is always the usual case
    assert type(fast) is type(body) and fast == body
    for got, want in zip(fast.topic_data, body.topic_data):
        assert type(got) is type(want)
        assert all(type(g) is type(w) for g, w in zip(got.partition_data, want.partition_data))
        for g, w in zip(got.partition_data, want.partition_data):
            # The one difference from kio: records are a bytearray of their own, which the append
            # stamps in place (the handler used to copy kio's bytes to get one).
            assert g.records is None if w.records is None else type(g.records) is bytearray
    assert codec.decode_request(frame, SERVED) == _reference(frame)


@needs_reader
def test_each_partition_gets_records_of_its_own() -> None:
    """Two partitions' records are two buffers: stamping one changes neither the other nor the frame."""
    frame = _frame(9, _request(9, None, 1, 1000, [("t", [(0, b"abc"), (1, b"abc")])]))
    parts = _compiled(frame, 9).topic_data[0].partition_data
    parts[0].records[0:1] = b"X"
    assert (bytes(parts[0].records), bytes(parts[1].records)) == (b"Xbc", b"abc")
    assert frame.count(b"abc") == 2


@pytest.mark.parametrize("compiled", [True, False])
def test_a_frame_handed_out_as_a_bytearray_decodes_as_its_bytes(compiled: bool) -> None:
    """The frame decoder hands a large frame out as the bytearray it was read into (framing.py)."""
    frame = _frame(9, _request(9, "tx", -1, 1000, [("t", [(0, b"r" * 100), (1, None)])]))
    if compiled:
        if produce_request.reader(9) is None:
            pytest.skip("the C reader was not built here")
        assert codec.decode_request(bytearray(frame), SERVED) == codec.decode_request(frame, SERVED)
    else:
        assert _reference(bytearray(frame)) == _reference(frame)


@needs_reader
@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(version=st.sampled_from(VERSIONS), topics=_topics, txn=st.none() | st.just("tx"),
       mutations=st.lists(st.tuples(st.integers(0, 400), st.integers(0, 255),
                                    st.sampled_from(["set", "insert", "delete"])), min_size=1, max_size=3),
       cut=st.integers(0, 4))
def test_on_mutated_bytes_the_compiled_reader_agrees_or_leaves_it_to_kio(version, topics, txn, mutations,
                                                                          cut) -> None:
    frame = bytearray(_frame(version, _request(version, txn, 1, 1000, topics)))
    start = codec._header_walk(bytes(frame), version >= 9)
    for where, byte, how in mutations:  # the body only: the header's own walk is not the reader's
        room = len(frame) - start
        if room <= 0:
            break
        i = start + where % (room + (how == "insert"))
        if how == "set" and i < len(frame):
            frame[i] = byte
        elif how == "insert":
            frame.insert(i, byte)
        elif i < len(frame):
            del frame[i]
    if cut:
        frame = frame[:max(start, len(frame) - cut)]
    frame = bytes(frame)
    fast = _compiled(frame, version)
    reference = _reference(frame)
    if fast is not None:
        assert not (isinstance(reference, tuple) and reference[0] == "refused"), reference
        assert fast == reference.body
    assert _decoded(frame) == reference


def _decoded(frame: bytes) -> object:
    try:
        return codec.decode_request(frame, SERVED)
    except FramingError as exc:
        return ("refused", str(exc))


@needs_reader
@pytest.mark.parametrize("version", [9, 12])
def test_a_tagged_field_is_left_to_kio(version: int) -> None:
    frame = bytearray(_frame(version, _request(version, None, 1, 1000, [("t", [(0, b"r")])])))
    assert frame[-1] == 0  # the request's own (empty) tagged fields, last
    frame[-1:] = b"\x01\x05\x01\x00"  # one tag (5) of one byte
    assert _compiled(bytes(frame), version) is None
    assert codec.decode_request(bytes(frame), SERVED) == _reference(bytes(frame))


@needs_reader
def test_the_reader_is_the_path_taken(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = []
    compiled = produce_request._produce_request_c

    def counted(*args: object) -> object:
        calls.append(args[1])
        return compiled(*args)

    monkeypatch.setattr(produce_request, "_produce_request_c", counted)
    codec._fast_reader.cache_clear()
    try:
        frame = _frame(9, _request(9, None, 1, 1000, [("t", [(0, b"r")])]))
        assert codec.decode_request(frame, SERVED) == _reference(frame)
        assert len(calls) == 1
    finally:
        codec._fast_reader.cache_clear()


def test_v13_and_unknown_versions_have_no_compiled_reader() -> None:
    assert produce_request.reader(13) is None
    assert produce_request.reader(2) is None
