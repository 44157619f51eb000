"""Test data as code: record batches with every field settable, including inconsistent ones.

Used by the validator's unit tests, the Produce corruption table (tests/reliability) and the
protocol fuzzer (tests/fuzzing.py)."""

from __future__ import annotations

import struct

import crc32c

from minikafka.protocol import records as R


def zz(n: int) -> bytes:
    """Zigzag varint of n (any width)."""
    return R.uvarint((n << 1) ^ (n >> 63) if n < 0 else n << 1)


def record(index: int, key: bytes | None = b"k", value: bytes | None = b"v", *, ts_delta: int = 0,
           offset_delta: int | None = None, headers: tuple[tuple[bytes, bytes | None], ...] = (),
           key_len: int | None = None, value_len: int | None = None, n_headers: int | None = None,
           size_adjust: int = 0) -> bytes:
    """One v2 record; every length can be set apart from what follows it."""
    body = b"\x00" + zz(ts_delta) + zz(index if offset_delta is None else offset_delta)
    body += zz(key_len if key_len is not None else (-1 if key is None else len(key))) + (key or b"")
    body += zz(value_len if value_len is not None else (-1 if value is None else len(value))) + (value or b"")
    body += zz(len(headers) if n_headers is None else n_headers)
    for hk, hv in headers:
        body += zz(len(hk)) + hk + zz(-1 if hv is None else len(hv)) + (hv or b"")
    return zz(len(body) + size_adjust) + body


def records_area(n: int, *, prefix: bytes = b"r") -> bytes:
    return b"".join(record(i, b"k%d" % i, prefix + b"%d" % i, ts_delta=i) for i in range(n))


def batch(area: bytes, count: int, *, base_ts: int, last_offset_delta: int | None = None, attributes: int = 0,
          max_ts: int | None = None, producer_id: int = -1, producer_epoch: int = -1, base_sequence: int = -1,
          base_offset: int = 0, magic: int = 2) -> bytearray:
    """A batch around a record area, with a correct CRC whatever the header says."""
    lod = count - 1 if last_offset_delta is None else last_offset_delta
    after_crc = struct.pack(">hiqqqhii", attributes, lod, base_ts, base_ts if max_ts is None else max_ts,
                            producer_id, producer_epoch, base_sequence, count) + area
    head = struct.pack(">qiibI", base_offset, 9 + len(after_crc), 0, magic, crc32c.crc32c(after_crc))
    return bytearray(head + after_crc)


def fix_crc(b: bytearray, pos: int = 0) -> bytearray:
    size = R.read_header(b, pos).size
    struct.pack_into(">I", b, pos + 17, crc32c.crc32c(bytes(b[pos + 21 : pos + size])))
    return b
