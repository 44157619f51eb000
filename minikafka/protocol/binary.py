"""Reading Kafka's primitive types from a byte string: the records of the internal topics and the
consumer protocol embedded in group requests (the wire protocol itself is kio's). A read past the
end, a negative length or an over-long varint raises the caller's exception class, so each decoder
reports damage in its own terms (a corrupt `__consumer_offsets` record, a malformed subscription).

Non-flexible fields: int16-length strings (-1 = null), int32-length bytes (-1 = null), int32 array
counts. Flexible ones: lengths as unsigned varints of n + 1 (0 = null) and a tagged-field section.
"""

from __future__ import annotations

import struct

_B, _H, _I, _Q = struct.Struct(">b"), struct.Struct(">h"), struct.Struct(">i"), struct.Struct(">q")


class Reader:
    __slots__ = ("data", "pos", "error")

    def __init__(self, data: bytes, error: type[Exception] = ValueError) -> None:
        self.data = data
        self.pos = 0
        self.error = error

    def take(self, n: int) -> bytes:
        if n < 0 or self.pos + n > len(self.data):
            raise self.error("field past the end of the data")
        b = self.data[self.pos : self.pos + n]
        self.pos += n
        return b

    def _int(self, st: struct.Struct) -> int:
        return int(st.unpack(self.take(st.size))[0])

    def i8(self) -> int:
        return self._int(_B)

    def i16(self) -> int:
        return self._int(_H)

    def i32(self) -> int:
        return self._int(_I)

    def i64(self) -> int:
        return self._int(_Q)

    def uvarint(self) -> int:
        shift = result = 0
        while True:
            b = self.take(1)[0]
            result |= (b & 0x7F) << shift
            if not b & 0x80:
                return result
            shift += 7
            if shift > 35:
                raise self.error("varint too long")

    # -- non-flexible
    def nstring(self) -> str | None:
        n = self.i16()
        return None if n < 0 else self.take(n).decode()

    def string(self) -> str:
        s = self.nstring()
        if s is None:
            raise self.error("null in a non-nullable string")
        return s

    def nbytes(self) -> bytes | None:
        n = self.i32()
        return None if n < 0 else self.take(n)

    def count(self) -> int:
        """An array's length; a null array reads as empty."""
        n = self.i32()
        if n > len(self.data) - self.pos:
            raise self.error("array longer than the data")
        return max(n, 0)

    # -- flexible
    def compact_nstring(self) -> str | None:
        n = self.uvarint()
        return None if n == 0 else self.take(n - 1).decode()

    def compact_string(self) -> str:
        s = self.compact_nstring()
        if s is None:
            raise self.error("null in a non-nullable string")
        return s

    def compact_len(self) -> int:
        """A non-nullable compact array's (or bytes') length."""
        n = self.uvarint()
        if n == 0:
            raise self.error("null in a non-nullable array")
        return n - 1

    def compact_int32s(self) -> list[int]:
        """A non-nullable compact array of int32."""
        return [self.i32() for _ in range(self.compact_len())]

    def tags(self) -> dict[int, bytes]:
        """The tagged-field section: tag -> its raw bytes."""
        out: dict[int, bytes] = {}
        for _ in range(self.uvarint()):
            tag = self.uvarint()
            out[tag] = self.take(self.uvarint())
        return out
