"""The protocol fuzzer's cases (test-plan.md F-9), deterministic for a seed.

- PRODUCE_CORRUPTIONS: every field-level corruption of a Produce batch, with the error code Apache
  Kafka 4.3.1 answers (checked with `make conformance`, tests/reliability/test_bad_input.py).
- header_mutations: a valid batch with one header field set to an edge value, CRC fixed or not.
- request_corpus: one valid request per served API key and version (kio defaults), to mutate.
- mutate: bit flips, byte insert/delete, truncation, length-like fields set to -1/-2/0/max/±1.
- cases(): the mix the fuzzer sends; each case is a whole frame (size prefix included) or a raw
  byte string that is not a well-formed frame.
"""

from __future__ import annotations

import random
import struct
from collections.abc import Iterator
from typing import Any, NamedTuple

import cramjam
from builders import batch, fix_crc, record, records_area, zz
from rawclient import default_entity, request_header

from minikafka.protocol import codec, versions
from minikafka.protocol import records as R

CORRUPT_MESSAGE = 2
MESSAGE_TOO_LARGE = 10
INVALID_TIMESTAMP = 32
INVALID_RECORD = 87
HOUR = 3_600_000


def _compressed(codec_id: int, area: bytes) -> bytes:
    if codec_id == 2:
        return bytes(cramjam.snappy.compress_raw(area))
    return bytes(getattr(cramjam, {1: "gzip", 3: "lz4", 4: "zstd"}[codec_id]).compress(area))


class Corruption(NamedTuple):
    records: bytes   # the partition's records field
    code: int        # minikafka's answer
    kafka_code: int  # Apache Kafka 4.3.1's answer (measured with `make conformance`)


# Kafka 4.3.1 answers these with an exception it does not map (UNKNOWN_SERVER_ERROR), or accepts
# them; minikafka refuses them with INVALID_RECORD (see minikafka/protocol/validator.py).
KAFKA_DIFFERS = {
    "codec-5": -1, "codec-6": -1, "codec-7": -1, "garbage-gzip": -1, "garbage-snappy": -1, "garbage-lz4": -1,
    "garbage-zstd": -1, "endless-varint": -1, "lz4-trailing-record-bytes": -1, "offset-deltas-repeat": 0,
}


def produce_corruptions(now_ms: int) -> dict[str, Corruption]:
    """name -> the corrupt records and the error code each broker answers."""
    good = records_area(3)

    def b(area: bytes = good, count: int = 3, **kw: Any) -> bytearray:
        return batch(area, count, base_ts=kw.pop("base_ts", now_ms), **kw)

    flipped = b()
    flipped[-1] ^= 0x40
    table = {
        # framing and header
        "crc-mismatch": (bytes(flipped), CORRUPT_MESSAGE),
        "magic-0": (bytes(b(magic=0)), INVALID_RECORD),
        "magic-1": (bytes(b(magic=1)), INVALID_RECORD),
        "magic-3": (bytes(b(magic=3)), CORRUPT_MESSAGE),
        "batch-length-below-header": (bytes(b()[:8]) + struct.pack(">i", 40) + bytes(b()[12:52]), CORRUPT_MESSAGE),
        "batch-length-below-any-batch": (bytes(b()[:8]) + struct.pack(">i", 10) + bytes(b()[12:22]), CORRUPT_MESSAGE),
        "length-runs-past-data": (bytes(b())[:-4], INVALID_RECORD),
        "tiny-batch-after-the-batch": (bytes(b()) + bytes(b()[:8]) + struct.pack(">i", 3) + b"\x00" * 6,
                                       CORRUPT_MESSAGE),
        "two-batches": (bytes(b()) + bytes(b()), INVALID_RECORD),
        "base-offset-5": (bytes(b(base_offset=5)), INVALID_RECORD),
        "control-batch": (bytes(b(attributes=R.CONTROL_FLAG)), INVALID_RECORD),
        "producer-id-without-sequence": (bytes(b(producer_id=1234, producer_epoch=0)), INVALID_RECORD),
        # counts and offsets
        "count-larger": (bytes(b(count=4)), INVALID_RECORD),
        "count-smaller": (bytes(b(count=2)), INVALID_RECORD),
        "count-2^31-1": (bytes(b(count=2**31 - 1)), INVALID_RECORD),
        "count-0": (bytes(b(count=0, last_offset_delta=2)), INVALID_RECORD),
        "count-negative": (bytes(b(count=-1, last_offset_delta=2)), INVALID_RECORD),
        "last-offset-delta-off": (bytes(b(last_offset_delta=5)), INVALID_RECORD),
        "offset-deltas-repeat": (bytes(b(record(0) + record(1, offset_delta=0) + record(2, offset_delta=0))),
                                 INVALID_RECORD),
        # record fields
        "trailing-bytes-in-batch": (bytes(b(good + b"\x00\x00\x00")), INVALID_RECORD),
        "negative-record-length": (bytes(b(zz(-4) + good)), INVALID_RECORD),
        "huge-record-length": (bytes(b(zz(2**31 - 1) + good[1:])), INVALID_RECORD),
        "key-length-below-minus-one": (bytes(b(record(0, b"k", key_len=-3, size_adjust=-1), count=1)),
                                       INVALID_RECORD),
        "value-length-huge": (bytes(b(record(0, b"k", b"v", value_len=2**30), count=1)), INVALID_RECORD),
        "negative-header-count": (bytes(b(record(0, n_headers=-1), count=1)), INVALID_RECORD),
        "endless-varint": (bytes(b(b"\xff" * 40, count=1)), INVALID_RECORD),
        "eleven-byte-varlong": (bytes(b(zz(16) + b"\x00" + b"\xff" * 10 + b"\x01" + b"\x00" * 4, count=1)),
                                INVALID_RECORD),
        "record-size-too-small": (bytes(b(record(0, b"key", size_adjust=-2), count=1)), INVALID_RECORD),
        # compression
        "codec-5": (bytes(b(attributes=5)), INVALID_RECORD),
        "codec-6": (bytes(b(attributes=6)), INVALID_RECORD),
        "codec-7": (bytes(b(attributes=7)), INVALID_RECORD),
        "garbage-gzip": (bytes(b(b"\x1f\x8b" + b"\x00garbage" * 8, attributes=1)), INVALID_RECORD),
        "garbage-snappy": (bytes(b(b"\xff\xff\xff\xff\x0f" + b"garbage" * 8, attributes=2)), INVALID_RECORD),
        "garbage-lz4": (bytes(b(b"\x04\x22\x4d\x18" + b"garbage" * 8, attributes=3)), INVALID_RECORD),
        "garbage-zstd": (bytes(b(b"\x28\xb5\x2f\xfd" + b"garbage" * 8, attributes=4)), INVALID_RECORD),
        "zstd-count-larger": (bytes(b(_compressed(4, good), count=4, attributes=4)), INVALID_RECORD),
        "lz4-trailing-record-bytes": (bytes(b(_compressed(3, good + b"\x00\x00"), attributes=3)), INVALID_RECORD),
        # timestamps (message.timestamp.after.max.ms defaults to one hour)
        "timestamp-two-hours-ahead": (bytes(b(base_ts=now_ms + 2 * HOUR)), INVALID_TIMESTAMP),
    }
    return {name: Corruption(recs, code, KAFKA_DIFFERS.get(name, code)) for name, (recs, code) in table.items()}


def header_mutations(rng: random.Random, now_ms: int, n: int) -> Iterator[bytes]:
    """A valid 3-record batch with one header field (or byte) set to an edge value; CRC fixed half
    of the time, so both the CRC check and the checks behind it are reached."""
    fields = [(8, 4), (12, 4), (16, 1), (21, 2), (23, 4), (27, 8), (35, 8), (43, 8), (51, 2), (53, 4), (57, 4)]
    for _ in range(n):
        b = batch(records_area(3), 3, base_ts=now_ms)
        pos, width = rng.choice(fields)
        edge = rng.choice([0, -1, -2, 1, 2**(8 * width - 1) - 1, -(2**(8 * width - 1)), rng.getrandbits(8 * width)])
        fmt = {1: ">b", 2: ">h", 4: ">i", 8: ">q"}[width]
        edge = (edge + 2**(8 * width - 1)) % 2**(8 * width) - 2**(8 * width - 1)
        struct.pack_into(fmt, b, pos, edge)
        if rng.random() < 0.5 and pos >= 21:
            fix_crc(b)
        yield bytes(b)


def request_corpus(served: dict[int, versions.VersionRange]) -> list[tuple[int, int, bytes]]:
    """(api_key, version, frame without size prefix) of a default request for each one served."""
    out = []
    for key, rng in sorted(served.items()):
        for v in range(rng.min, rng.max + 1):
            try:
                body = default_entity(versions.request_class(key, v), nulls=False)
                out.append((key, v, codec.encode_request(v, 0, "fuzz", body)[4:]))
            except Exception:  # a few schemas have no encodable default; the garbage cases cover them
                continue
    return out


def mutate(rng: random.Random, data: bytes, keep: int) -> bytes:
    """One to four mutations after the first `keep` bytes (the api key/version/correlation id)."""
    b = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        if len(b) <= keep:
            b += bytes([rng.getrandbits(8)])
            continue
        i = rng.randrange(keep, len(b))
        op = rng.randrange(6)
        if op == 0:
            b[i] ^= 1 << rng.randrange(8)
        elif op == 1:
            b.insert(i, rng.getrandbits(8))
        elif op == 2:
            del b[i]
        elif op == 3:
            del b[i:]
        else:  # a length-like field: int16/int32/varint window set to an edge value
            width = rng.choice([1, 2, 4])
            value = rng.choice([-1, -2, 0, 1, 2**(8 * width - 1) - 1, len(b) - i, len(b) - i + 1])
            value = (value + 2**(8 * width - 1)) % 2**(8 * width) - 2**(8 * width - 1)
            b[i:i + width] = struct.pack({1: ">b", 2: ">h", 4: ">i"}[width], value)
    return bytes(b)


class Case(NamedTuple):
    kind: str
    data: bytes           # bytes to send as they are (frames carry their size prefix)
    correlation_id: int   # the answer's correlation id, if there is one
    expected: int | None  # a Produce partition error code to assert, else None


def _frame(payload: bytes) -> bytes:
    return struct.pack(">i", len(payload)) + payload


def _with_correlation(payload: bytes, corr: int) -> bytes:
    return payload[:4] + struct.pack(">i", corr) + payload[8:]


def produce_frame(topic: str, records: bytes, corr: int, *, version: int = 9) -> bytes:
    from rawclient import produce_v9

    return codec.encode_request(version, corr, "fuzz", produce_v9(topic, 0, records))


def cases(seed: int, n: int, served: dict[int, versions.VersionRange], corrupt_topic: str,
          now_ms: int) -> Iterator[Case]:
    """n cases, mixed: random frames, oversized and truncated frames, garbage bodies for every
    served API key and version, mutations of valid requests, and Produce batch corruptions."""
    rng = random.Random(seed)
    corpus = request_corpus(served)
    table = list(produce_corruptions(now_ms).items())
    keys = [(k, v) for k, r in served.items() for v in range(r.min, r.max + 1)]
    for i in range(n):
        corr = 1_000_000 + i
        roll = rng.random()
        if i < len(table):  # the whole table first, then mutations of it
            name, (recs, code, _kafka) = table[i]
            yield Case(f"produce:{name}", produce_frame(corrupt_topic, recs, corr), corr, code)
        elif roll < 0.10:
            payload = rng.randbytes(rng.randint(0, 120))
            yield Case("random-frame", _frame(payload), -1, None)
        elif roll < 0.14:
            kind = rng.choice(["oversized", "truncated", "negative", "short-prefix"])
            if kind == "oversized":
                data = struct.pack(">i", rng.randint(100 * 1024 * 1024 + 1, 2**31 - 1)) + rng.randbytes(8)
            elif kind == "truncated":
                _k, _v, payload = rng.choice(corpus)
                data = _frame(payload)[: rng.randint(1, len(payload) + 3)]
            elif kind == "negative":
                data = struct.pack(">i", -rng.randint(1, 2**31)) + rng.randbytes(4)
            else:
                data = rng.randbytes(rng.randint(1, 3))
            yield Case(f"frame:{kind}", data, -1, None)
        elif roll < 0.40:
            key, v = rng.choice(keys)
            flexible = bool(versions.request_class(key, v).__flexible__)
            body = rng.randbytes(rng.randint(0, 80))
            yield Case(f"garbage:{key}v{v}", _frame(request_header(key, v, corr, flexible=flexible) + body), corr, None)
        elif roll < 0.75:
            key, v, payload = rng.choice(corpus)
            yield Case(f"mutated:{key}v{v}", _frame(mutate(rng, _with_correlation(payload, corr), 8)), corr, None)
        elif roll < 0.90:
            recs = next(header_mutations(rng, now_ms, 1))
            yield Case("produce:header-field", produce_frame(corrupt_topic, recs, corr), corr, None)
        else:
            name, (recs, _code, _kafka) = rng.choice(table)
            yield Case(f"produce:mutated-{name}", produce_frame(corrupt_topic, mutate(rng, recs, 0), corr), corr, None)
