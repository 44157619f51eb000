"""Small writers of Kafka's wire primitives, for the responses minikafka writes without kio
(produce_response, fetch_response, metadata_response, txn_responses) and the coordinators'
records. Each returns bytes the caller joins."""

from __future__ import annotations

import struct
from collections.abc import Iterable
from typing import Any

I16 = struct.Struct(">h")
I32 = struct.Struct(">i")


class Gathered:
    """An encoded frame kept as its parts (the size prefix first), for an answer too large to
    copy into one buffer on its way to the socket (fetch_response.GATHER_ABOVE). len() is its
    size in bytes; joined() is the frame as one buffer, for a writer that wants one."""

    __slots__ = ("parts", "nbytes")

    def __init__(self, parts: list[bytes | memoryview], nbytes: int) -> None:
        self.parts = parts
        self.nbytes = nbytes

    def __len__(self) -> int:
        return self.nbytes

    def joined(self) -> bytes:
        return b"".join(self.parts)


# Varints below 128 are one byte: every array length and string length of a small answer. Taken
# from this table, not built byte by byte (a Produce answer writes four of them, issue 17).
_ONE_BYTE = tuple(bytes((i,)) for i in range(0x80))


def uvarint(n: int) -> bytes:
    if 0 <= n < 0x80:
        return _ONE_BYTE[n]
    out = bytearray()
    while n > 0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def string(s: str, flexible: bool) -> bytes:
    raw = s.encode()
    return (uvarint(len(raw) + 1) if flexible else I16.pack(len(raw))) + raw


def nullable_string(s: str | None, flexible: bool) -> bytes:
    if s is None:
        return b"\x00" if flexible else b"\xff\xff"
    return string(s, flexible)


def throttle_ms(throttle_time: Any) -> int:
    """A response's throttle_time (a timedelta) in whole milliseconds, rounded as kio writes it."""
    return round(throttle_time.total_seconds() * 1000)


def array_length(n: int, flexible: bool) -> bytes:
    return uvarint(n + 1) if flexible else I32.pack(n)


def null_array(flexible: bool) -> bytes:
    return b"\x00" if flexible else b"\xff\xff\xff\xff"


def bytes_length(n: int, flexible: bool) -> bytes:
    return uvarint(n + 1) if flexible else I32.pack(n)


def compact_int32s(values: Iterable[int]) -> bytes:
    """A compact (flexible) array of int32."""
    vs = list(values)
    return uvarint(len(vs) + 1) + struct.pack(f">{len(vs)}i", *vs)


def tagged_fields(tags: list[tuple[int, bytes]]) -> bytes:
    """A flexible struct's tagged-field section: the count, then (tag, size, bytes) each, in tag
    order; one zero byte when there are none."""
    return uvarint(len(tags)) + b"".join(uvarint(t) + uvarint(len(v)) + v for t, v in tags)


def coordinator_key(record_type: int, *fields: str) -> bytes:
    """The key of a coordinator record (`__consumer_offsets`, `__transaction_state`): an int16
    record type, then the key struct's strings, non-flexible."""
    return record_type.to_bytes(2, "big", signed=True) + b"".join(string(f, False) for f in fields)
