"""FrameDecoder: any chunking of the byte stream yields the same frames; bad sizes are refused
before anything is buffered for them (test-plan F-1, F-2, F-10)."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minikafka.protocol.errors import FramingError
from minikafka.protocol.framing import MIN_REQUEST_SIZE, FrameDecoder, encode_frame

pytestmark = pytest.mark.unit

MAX = 4096

payloads = st.lists(st.binary(min_size=MIN_REQUEST_SIZE, max_size=300), max_size=8)


def _chunks(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c % (len(data) + 1) for c in cuts} | {0, len(data)})
    return [data[a:b] for a, b in zip(points, points[1:], strict=False)]


@settings(max_examples=300, deadline=None)
@given(payloads, st.lists(st.integers(min_value=0, max_value=10_000), max_size=40))
def test_any_chunking_yields_the_same_frames(frames: list[bytes], cuts: list[int]) -> None:
    stream = b"".join(encode_frame(f) for f in frames)
    dec = FrameDecoder(MAX)
    got: list[bytes] = []
    for chunk in _chunks(stream, cuts):
        got.extend(dec.feed(chunk))
    assert got == frames
    assert not dec.has_partial


@settings(max_examples=100, deadline=None)
@given(payloads)
def test_byte_by_byte_feeding(frames: list[bytes]) -> None:
    stream = b"".join(encode_frame(f) for f in frames)
    dec = FrameDecoder(MAX)
    got: list[bytes] = []
    for i in range(len(stream)):
        got.extend(dec.feed(stream[i : i + 1]))
    assert got == frames


def test_encode_frame_prefix() -> None:
    assert encode_frame(b"abcdefghij") == b"\x00\x00\x00\x0aabcdefghij"


@pytest.mark.parametrize("size", [-1, -2**31, 0, 3, MIN_REQUEST_SIZE - 1, MAX + 1, 2**31 - 1])
def test_bad_sizes_are_refused_from_the_prefix_alone(size: int) -> None:
    dec = FrameDecoder(MAX)
    with pytest.raises(FramingError):
        dec.feed(struct.pack(">i", size))


def test_bad_size_after_good_frames_still_raises() -> None:
    dec = FrameDecoder(MAX)
    good = b"x" * MIN_REQUEST_SIZE
    with pytest.raises(FramingError):
        dec.feed(encode_frame(good) + struct.pack(">i", -1))


def test_limits_are_inclusive() -> None:
    dec = FrameDecoder(MAX)
    assert dec.feed(encode_frame(b"m" * MIN_REQUEST_SIZE)) == [b"m" * MIN_REQUEST_SIZE]
    big = b"b" * MAX
    assert dec.feed(encode_frame(big)) == [big]


def test_huge_declared_size_is_refused_without_buffering() -> None:
    # 100 MiB + 1 against the default socket.request.max.bytes: refused at the prefix.
    dec = FrameDecoder(100 * 1024 * 1024)
    with pytest.raises(FramingError):
        dec.feed(struct.pack(">i", 100 * 1024 * 1024 + 1) + b"\0\0\0\0")


def test_partial_frame_is_reported() -> None:
    dec = FrameDecoder(MAX)
    assert not dec.has_partial
    assert dec.feed(b"\x00\x00") == []
    assert dec.has_partial
    assert dec.feed(b"\x00\x0a" + b"12345") == []
    assert dec.has_partial
    assert dec.feed(b"67890" + b"\x00") == [b"1234567890"]
    assert dec.has_partial  # one byte of the next prefix


@pytest.mark.parametrize("chunk", [1, 7, 4096, 1 << 20, 3 << 20])
def test_large_frames_any_chunking(chunk):
    from minikafka.protocol.framing import DIRECT_THRESHOLD, FrameDecoder, encode_frame

    big = bytes(range(256)) * ((DIRECT_THRESHOLD + 12345) // 256)
    stream = encode_frame(b"a" * 20) + encode_frame(big) + encode_frame(b"b" * 30) + encode_frame(big[::-1])
    d = FrameDecoder(10 << 20)
    out = []
    for i in range(0, len(stream), chunk if chunk > 1 else 997):
        out += d.feed(stream[i : i + (chunk if chunk > 1 else 997)])
        if len(out) == 1:
            assert d.pending_size in (-1, len(big))
    assert out == [b"a" * 20, big, b"b" * 30, big[::-1]]
    assert d.pending_size == -1 and not d.has_partial


def test_a_large_frame_is_handed_out_as_the_buffer_it_was_read_into() -> None:
    """Not copied into a bytes object on the way out: a large Produce's bytes are copied once
    fewer (its records are copied out of it anyway)."""
    from minikafka.protocol.framing import DIRECT_THRESHOLD, FrameDecoder, encode_frame

    big = bytes(range(256)) * ((DIRECT_THRESHOLD + 4096) // 256)
    stream = encode_frame(big)
    d = FrameDecoder(10 << 20)

    def read_in_chunks() -> list:
        return [f for i in range(0, len(stream), 65536) for f in d.feed(stream[i : i + 65536])]

    first, second = read_in_chunks(), read_in_chunks()
    assert first == second == [big] and type(first[0]) is bytearray
    assert second[0] is not first[0]  # handed over, not kept: the next frame has a buffer of its own


@pytest.mark.parametrize("chunk", [1000, 65536, 300_000])
def test_a_large_frames_buffer_is_filled_before_it_is_handed_out(monkeypatch: pytest.MonkeyPatch,
                                                               chunk: int) -> None:
    """The buffer is not zeroed (_walk.unfilled_bytearray): here it starts as garbage, and every
    byte of each frame handed out must still be the frame's own."""
    from minikafka.protocol import framing

    monkeypatch.setattr(framing, "_unfilled", lambda n: bytearray(b"\xaa" * n))
    frames = [bytes(range(256)) * 400, b"\x00" * 200_000, bytes(range(255, -1, -1)) * 300]
    stream = b"".join(framing.encode_frame(f) for f in frames)
    d = framing.FrameDecoder(1 << 20)
    out = []
    for i in range(0, len(stream), chunk):
        out += d.feed(stream[i : i + chunk])
    assert out == frames


def test_the_unfilled_buffer_has_the_size_asked() -> None:
    from minikafka.protocol import framing

    assert [len(framing._unfilled(n)) for n in (0, 1, 70_000)] == [0, 1, 70_000]
    assert type(framing._unfilled(5)) is bytearray


@pytest.mark.parametrize("size", [MIN_REQUEST_SIZE - 1, MAX + 1])
def test_a_whole_frame_of_a_bad_size_in_one_read_is_refused(size: int) -> None:
    """The one-whole-frame read skips the buffer, not the size check."""
    with pytest.raises(FramingError):
        FrameDecoder(MAX).feed(encode_frame(b"s" * size))


def test_reads_of_one_whole_frame_each_come_out_as_sent() -> None:
    dec = FrameDecoder(MAX)
    for n in (MIN_REQUEST_SIZE, 100, MAX):
        frame = bytes(range(256)) * (n // 256) + b"t" * (n % 256)
        assert dec.feed(encode_frame(frame)) == [frame]
        assert not dec.has_partial and dec.pending_size == -1
    dec.feed(encode_frame(b"h" * 20)[:7])  # part of one: the next read completes it in the buffer
    assert dec.feed(encode_frame(b"h" * 20)[7:]) == [b"h" * 20]
