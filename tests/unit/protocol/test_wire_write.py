"""The wire primitives the direct writers use, against an independent varint reader."""

from __future__ import annotations

import pytest

from minikafka.protocol import wire_write

pytestmark = pytest.mark.unit


def _read_uvarint(data: bytes) -> int:
    value = shift = 0
    for i, b in enumerate(data):
        value |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            assert i == len(data) - 1, "bytes after the varint's last byte"
            return value
    raise AssertionError("varint without a last byte")


@pytest.mark.parametrize("n", [0, 1, 0x7E, 0x7F, 0x80, 0x3FFF, 0x4000, 2**31 - 1, 2**32 - 1])
def test_uvarint_round_trips_on_both_sides_of_the_one_byte_table(n: int) -> None:
    data = wire_write.uvarint(n)
    assert _read_uvarint(data) == n
    assert len(data) == max(1, (n.bit_length() + 6) // 7)


def test_a_negative_uvarint_is_refused() -> None:
    with pytest.raises(ValueError):
        wire_write.uvarint(-1)


def test_array_and_string_lengths_use_compact_forms_when_flexible() -> None:
    assert wire_write.array_length(0, True) == b"\x01"
    assert wire_write.array_length(200, True) == wire_write.uvarint(201)
    assert wire_write.array_length(3, False) == b"\x00\x00\x00\x03"
    assert wire_write.string("ab", True) == b"\x03ab"
    assert wire_write.string("ab", False) == b"\x00\x02ab"
