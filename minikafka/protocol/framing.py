"""Size-prefixed frames: a 4-byte big-endian length, then that many bytes.

The decoder checks the declared size before buffering anything for it, so a hostile size
(negative, or over `socket.request.max.bytes`) is refused without a large allocation, the way
Kafka's NetworkReceive does.
"""

from __future__ import annotations

import struct

from minikafka.protocol.errors import FramingError

_SIZE = struct.Struct(">i")
# The smallest request: api_key, api_version, correlation_id, client_id length.
MIN_REQUEST_SIZE = 10


class FrameDecoder:
    """Feed bytes in, take whole frames out. Pure; any chunking yields the same frames."""

    __slots__ = ("_buf", "_max_size", "_need")

    def __init__(self, max_frame_size: int) -> None:
        self._buf = bytearray()
        self._max_size = max_frame_size
        self._need = -1  # size of the frame being collected, -1 while reading its prefix

    @property
    def has_partial(self) -> bool:
        """True while part of a frame has arrived (used for the idle-connection check)."""
        return len(self._buf) > 0

    def feed(self, data: bytes) -> list[bytes]:
        """Add received bytes; return the frames now complete. Raises FramingError on a bad size."""
        buf = self._buf
        buf += data
        frames: list[bytes] = []
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
            frames.append(bytes(buf[4:end]))
            del buf[:end]
            self._need = -1
        return frames


def encode_frame(payload: bytes) -> bytes:
    return _SIZE.pack(len(payload)) + payload
