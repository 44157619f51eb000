"""Size-prefixed frames: a 4-byte big-endian length, then that many bytes.

The decoder checks the declared size before buffering anything for it, so a hostile size
(negative, or over `socket.request.max.bytes`) is refused without a large allocation, the way
Kafka's NetworkReceive does.
"""

from __future__ import annotations

import struct

from minikafka.protocol.errors import FramingError

try:  # a large frame's buffer without zeroing it first (every byte is filled before it is handed out)
    from minikafka.protocol._walk import unfilled_bytearray as _unfilled
except ImportError:  # pragma: no cover - where no C compiler was available
    _unfilled = bytearray

_SIZE = struct.Struct(">i")
# The smallest request: api_key, api_version, correlation_id, client_id length.
MIN_REQUEST_SIZE = 10
# Frames above this size that span reads are received into a buffer of their exact size and
# handed out as it. 64 KiB, not 1 MiB: a busy producer's requests (librdkafka's batch.size is
# 1,000,000 bytes) are mostly under 1 MiB, and each byte of those was copied twice more.
DIRECT_THRESHOLD = 64 << 10


class FrameDecoder:
    """Feed bytes in, take whole frames out. Pure; any chunking yields the same frames.

    A large frame (over DIRECT_THRESHOLD) is received straight into one buffer of its exact size,
    so a frame on its way costs its size in memory, no more (growing a buffer chunk by chunk
    over-allocates, and slicing it copies). That buffer is the frame handed out (a bytearray, not
    bytes): copying it into a bytes object cost a copy of every byte of every large Produce."""

    __slots__ = ("_buf", "_max_size", "_need", "_frame", "_filled")

    def __init__(self, max_frame_size: int) -> None:
        self._buf = bytearray()
        self._max_size = max_frame_size
        self._need = -1  # size of the frame being collected, -1 while reading its prefix
        self._frame: bytearray | None = None  # the large frame being filled in place
        self._filled = 0

    @property
    def max_frame_size(self) -> int:
        return self._max_size

    @max_frame_size.setter
    def max_frame_size(self, size: int) -> None:
        """The largest frame accepted from now on (a SASL listener reads small ones until the
        client authenticated)."""
        self._max_size = size

    @property
    def pending_size(self) -> int:
        """Size of the frame whose size prefix has arrived but not all of its bytes, else -1."""
        return self._need

    def release_buffer(self) -> None:
        """Drop whatever is buffered (the connection is closing): its memory goes back at once."""
        self._buf = bytearray()
        self._frame = None
        self._need = -1

    @property
    def has_partial(self) -> bool:
        """True while part of a frame has arrived (used for the idle-connection check)."""
        return len(self._buf) > 0 or self._frame is not None

    def feed(self, data: bytes) -> list[bytes | bytearray]:
        """Add received bytes; return the frames now complete (a large one as the bytearray it was
        received into). Raises FramingError on a bad size."""
        if self._need < 0 and not self._buf and type(data) is bytes and len(data) >= 4:
            # The usual read of a client that waits for each answer: exactly one whole frame and
            # nothing before it. Taken as it is, without its copy into the buffer and out again.
            (size,) = _SIZE.unpack_from(data, 0)
            if len(data) == 4 + size and MIN_REQUEST_SIZE <= size <= self._max_size:
                return [data[4:]]
        frames: list[bytes | bytearray] = []
        view = memoryview(data)
        if self._frame is None and self._need > DIRECT_THRESHOLD:
            # Allocated only now that more of it arrives: a reader that bounds its memory (the
            # connection's request pool) reserved the size before reading on.
            self._frame, self._filled = _unfilled(self._need), 0
            self._fill(memoryview(self._buf)[4:], frames)  # what came with its size: never all of it
            self._buf = bytearray()
        if self._frame is not None:
            view = self._fill(view, frames)
            if self._frame is not None:
                return frames
        buf = self._buf
        buf += view
        while True:
            if self._need < 0:
                if len(buf) < 4:
                    break
                (size,) = _SIZE.unpack_from(buf, 0)
                if size < MIN_REQUEST_SIZE or size > self._max_size:
                    raise FramingError(f"invalid frame size {size}")
                self._need = size
            if len(buf) < 4 + self._need:
                break
            end = 4 + self._need
            frames.append(bytes(memoryview(buf)[4:end]))
            del buf[:end]
            self._need = -1
        return frames

    def _fill(self, view: memoryview, frames: list[bytes | bytearray]) -> memoryview:
        """Copy into the large frame; returns what is left of view once it is complete."""
        frame = self._frame
        assert frame is not None
        take = min(len(view), len(frame) - self._filled)
        # Through a view of the frame: a bytearray's own slice assignment copies any value that is
        # not a bytearray into a temporary one first, a second copy of every byte (perf, issue 17).
        with memoryview(frame) as into:
            into[self._filled : self._filled + take] = view[:take]
        self._filled += take
        if self._filled == len(frame):
            frames.append(frame)  # handed on: the decoder keeps no reference to it
            self._frame = None
            self._need = -1
        return view[take:]


def encode_frame(payload: bytes) -> bytes:
    return _SIZE.pack(len(payload)) + payload
