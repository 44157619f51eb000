"""protocol/binary.Reader: Kafka's primitive types, and damage reported in the caller's terms."""

from __future__ import annotations

import pytest

from minikafka.protocol.binary import Reader

pytestmark = pytest.mark.unit


class Damaged(Exception):
    pass


def test_reads_each_type_in_order() -> None:
    data = (b"\xff" + b"\x00\x02" + b"\x00\x00\x00\x03" + b"\x00" * 7 + b"\x04" + b"\x96\x01"
            + b"\x00\x02hi" + b"\xff\xff" + b"\xff\xff\xff\xff" + b"\x03ok" + b"\x00" + b"\x01\x01\x02ab")
    r = Reader(data, Damaged)
    assert (r.i8(), r.i16(), r.i32(), r.i64(), r.uvarint()) == (-1, 2, 3, 4, 150)
    assert (r.string(), r.nstring(), r.nbytes(), r.compact_string(), r.compact_nstring()) == ("hi", None, None, "ok",
                                                                                             None)
    assert r.tags() == {1: b"ab"} and r.pos == len(data)


@pytest.mark.parametrize("data, read", [
    (b"\x00", Reader.i16),
    (b"\x00\x05ab", Reader.string),
    (b"\xff\xff", Reader.string),
    (b"\x80\x80\x80\x80\x80\x80", Reader.uvarint),
    (b"\x00", Reader.compact_len),
    (b"\x00\x00\x00\x09", Reader.count),
])
def test_damage_raises_the_callers_error(data: bytes, read: object) -> None:
    with pytest.raises(Damaged):
        read(Reader(data, Damaged))  # type: ignore[operator]
