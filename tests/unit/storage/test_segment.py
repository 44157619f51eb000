"""LogSegment on real files: append/read of whole batches, Kafka's index-interval rule, recovery."""

from __future__ import annotations

import os
import random
import struct

import pytest

from minikafka.protocol import records
from minikafka.storage.segment import LogSegment

pytestmark = pytest.mark.unit

BASE = 500
T0 = 1_700_000_000_000


def new_segment(tmp_path, *, interval: int = 4096, base: int = BASE, max_index: int = 10 * 1024 * 1024) -> LogSegment:
    return LogSegment(tmp_path, base, index_interval_bytes=interval, max_index_size=max_index, now_ms=T0)


def append(seg: LogSegment, n: int = 1, *, ts: int = T0, value_size: int = 10, key_prefix: bytes = b"k"):
    """Append one batch of n records at the segment's next offset; returns (pos, base, last, size)."""
    base = seg.next_offset
    batch = records.build_batch(
        [(key_prefix + str(base + i).encode(), bytes([65 + (base + i) % 26]) * value_size) for i in range(n)],
        base_offset=base, timestamp_ms=ts,
    )
    last = base + n - 1
    pos = seg.append(batch, last, ts, last)
    return pos, base, last, len(batch)


def batches_in(data: bytes) -> list[records.BatchHeader]:
    out, pos = [], 0
    while pos < len(data):
        h = records.read_header(data, pos)
        assert pos + h.size <= len(data), "read returned a partial batch"
        out.append(h)
        pos += h.size
    return out


def expected_index_entries(appended, interval: int) -> list[tuple[int, int]]:
    """Kafka's LogSegment.append rule: an entry (last offset of the batch, its position) when more
    than `interval` bytes were appended since the previous entry, checked before the batch counts."""
    out, since = [], 0
    for pos, _base, last, size in appended:
        if since > interval:
            out.append((last, pos))
            since = 0
        since += size
    return out


def index_entries(seg: LogSegment) -> list[tuple[int, int]]:
    return [(seg.base_offset + r, p) for r, p in zip(seg.index.relative_offsets, seg.index.positions)]


# ----------------------------------------------------------------------------- append / read
def test_append_returns_positions_and_read_returns_whole_batches(tmp_path):
    seg = new_segment(tmp_path)
    appended = [append(seg, n=3) for _ in range(10)]
    assert seg.next_offset == BASE + 30
    assert [a[0] for a in appended] == [sum(a[3] for a in appended[:i]) for i in range(10)]
    assert seg.size == os.path.getsize(seg.log_path) == sum(a[3] for a in appended)
    data = seg.read(BASE, 1 << 20, upper_offset=BASE + 30, min_one=True)
    hs = batches_in(data)
    assert [h.base_offset for h in hs] == [BASE + 3 * i for i in range(10)]
    # An offset inside a batch returns that whole batch.
    data = seg.read(BASE + 4, 1 << 20, upper_offset=BASE + 30, min_one=True)
    assert batches_in(data)[0].base_offset == BASE + 3
    seg.close()


def test_read_respects_max_bytes(tmp_path):
    seg = new_segment(tmp_path)
    appended = [append(seg, n=2, value_size=50) for _ in range(8)]
    size = appended[0][3]
    for max_bytes in (size, size + 1, 3 * size - 1, 3 * size, 5 * size + 7):
        data = seg.read(BASE, max_bytes, upper_offset=BASE + 16, min_one=True)
        assert len(data) <= max_bytes
        assert len(batches_in(data)) == max_bytes // size
    seg.close()


def test_read_first_batch_whole_when_larger_than_max_bytes(tmp_path):
    seg = new_segment(tmp_path)
    _pos, _b, _l, big = append(seg, n=5, value_size=400)
    append(seg, n=1)
    data = seg.read(BASE, 100, upper_offset=BASE + 6, min_one=True)
    assert len(data) == big
    assert [h.base_offset for h in batches_in(data)] == [BASE]
    assert seg.read(BASE, 100, upper_offset=BASE + 6, min_one=False) == b""
    seg.close()


def test_read_stops_at_upper_offset(tmp_path):
    seg = new_segment(tmp_path)
    for _ in range(6):
        append(seg, n=2)
    data = seg.read(BASE, 1 << 20, upper_offset=BASE + 6, min_one=True)
    assert [h.base_offset for h in batches_in(data)] == [BASE, BASE + 2, BASE + 4]
    # A batch straddling the upper bound is excluded only if it starts at or after it.
    data = seg.read(BASE, 1 << 20, upper_offset=BASE + 5, min_one=True)
    assert [h.base_offset for h in batches_in(data)] == [BASE, BASE + 2, BASE + 4]
    assert seg.read(BASE + 6, 1 << 20, upper_offset=BASE + 6, min_one=True) == b""
    seg.close()


def test_read_beyond_segment_returns_none(tmp_path):
    seg = new_segment(tmp_path)
    append(seg, n=2)
    assert seg.read(BASE + 2, 1000, upper_offset=BASE + 100, min_one=True) is None
    seg.close()


def test_read_bytes_are_what_was_appended(tmp_path):
    seg = new_segment(tmp_path)
    batch = records.build_batch([(b"key", b"value")], base_offset=BASE, timestamp_ms=T0 + 5)
    seg.append(batch, BASE, T0 + 5, BASE)
    assert seg.read(BASE, 1000, BASE + 1, True) == bytes(batch)
    (rec,) = list(records.iter_records(seg.read(BASE, 1000, BASE + 1, True)))
    assert (rec.offset, rec.timestamp, rec.key, rec.value) == (BASE, T0 + 5, b"key", b"value")
    seg.close()


# ----------------------------------------------------------------------------- indexes
@pytest.mark.parametrize("interval", [0, 100, 333, 1000])
def test_index_entries_follow_kafka_interval_rule(tmp_path, interval):
    rnd = random.Random(interval)
    seg = new_segment(tmp_path, interval=interval)
    appended = [append(seg, n=rnd.randint(1, 5), value_size=rnd.randint(0, 120), ts=T0 + i) for i in range(60)]
    assert index_entries(seg) == expected_index_entries(appended, interval)
    assert index_entries(seg), "the test should produce index entries"
    seg.close()


def test_index_lookup_positions_point_at_batch_starts(tmp_path):
    seg = new_segment(tmp_path, interval=200)
    appended = [append(seg, n=3, value_size=30) for _ in range(40)]
    starts = {a[0]: a for a in appended}
    for off, pos in index_entries(seg):
        assert pos in starts
        assert starts[pos][2] == off  # entry offset = last offset of the batch at that position
    seg.close()


def test_time_index_entries_track_max_timestamp(tmp_path):
    seg = new_segment(tmp_path, interval=100)
    tss = [T0 + 10 * i for i in range(30)]
    tss[10] = T0 + 5000  # out-of-order timestamp: the max so far stays until exceeded
    for ts in tss:
        append(seg, n=2, value_size=40, ts=ts)
    ts_list = list(seg.time_index.timestamps)
    assert ts_list == sorted(set(ts_list)), "time index timestamps must strictly increase"
    assert seg.max_timestamp == T0 + 5000
    seg.close()


def test_recover_rebuilds_identical_indexes(tmp_path):
    rnd = random.Random(7)
    seg = new_segment(tmp_path, interval=150)
    for i in range(80):
        append(seg, n=rnd.randint(1, 4), value_size=rnd.randint(1, 90), ts=T0 + rnd.randint(0, 1000))
    seg.close()
    idx_live = seg.index.path.read_bytes()
    tidx_live = seg.time_index.path.read_bytes()
    assert idx_live and tidx_live

    again = new_segment(tmp_path, interval=150)
    assert again.recover() == 0
    assert again.next_offset == seg.next_offset
    assert again.max_timestamp == seg.max_timestamp
    assert again.offset_of_max_timestamp == seg.offset_of_max_timestamp
    again.close()
    assert again.index.path.read_bytes() == idx_live
    assert again.time_index.path.read_bytes() == tidx_live


def test_recover_leaves_index_files_that_hold_the_rebuilt_entries_unwritten(tmp_path):
    """A kill -9 leaves correct index files behind: recovery reads them, does not rewrite them
    (truncating a file is the costly part of recovering thousands of partitions)."""
    seg = new_segment(tmp_path, interval=150)
    for i in range(60):
        append(seg, n=2, value_size=60, ts=T0 + i)
    seg.close()
    # Dated an hour back: a rewrite would date them now (a file's clock is too coarse to tell a
    # rewrite made within milliseconds of the first write).
    an_hour_ago = os.stat(seg.index.path).st_mtime_ns - 3600 * 10**9
    before = {}
    for p in (seg.index.path, seg.time_index.path):
        os.utime(p, ns=(an_hour_ago, an_hour_ago))
        before[p] = p.read_bytes()
    again = new_segment(tmp_path, interval=150)
    assert again.recover() == 0
    for p, data in before.items():
        assert (os.stat(p).st_mtime_ns, p.read_bytes()) == (an_hour_ago, data), p.name
    # Appends after the recovery continue the file as the memory has it.
    for i in range(20):
        append(again, n=2, value_size=60, ts=T0 + 100 + i)
    again.close()
    idx = again.index.path.read_bytes()
    assert len(idx) > len(before[again.index.path])
    assert [(BASE + r, q) for r, q in struct.iter_unpack(">ii", idx)] == index_entries(again)
    rebuilt = new_segment(tmp_path, interval=150)
    rebuilt.recover()
    rebuilt.close()
    assert rebuilt.index.path.read_bytes() == idx


@pytest.mark.parametrize("damage", ["extra-entry", "wrong-entry", "half-entry", "missing"])
def test_recover_rewrites_index_files_that_differ(tmp_path, damage):
    seg = new_segment(tmp_path, interval=150)
    for i in range(60):
        append(seg, n=2, value_size=60, ts=T0 + i)
    seg.close()
    good = {p: p.read_bytes() for p in (seg.index.path, seg.time_index.path)}
    for p, data in good.items():
        bad = {"extra-entry": data + data[-12:] if p.suffix == ".timeindex" else data + data[-8:],
               "wrong-entry": bytes([data[0] ^ 1]) + data[1:],
               "half-entry": data + b"\x00\x01\x02",
               "missing": None}[damage]
        if bad is None:
            p.unlink()
        else:
            p.write_bytes(bad)
    again = new_segment(tmp_path, interval=150)
    assert again.recover() == 0
    again.close()
    assert {p: p.read_bytes() for p in good} == good


def test_load_after_deleted_indexes_rebuilds_them(tmp_path):
    seg = new_segment(tmp_path, interval=100)
    for i in range(50):
        append(seg, n=2, value_size=30, ts=T0 + i)
    seg.close()
    idx_live = seg.index.path.read_bytes()
    tidx_live = seg.time_index.path.read_bytes()
    os.unlink(seg.index.path)
    os.unlink(seg.time_index.path)
    again = new_segment(tmp_path, interval=100)
    assert again.load() is False  # not to be trusted: the caller recovers it
    assert again.recover() == 0
    assert again.next_offset == BASE + 100
    again.close()
    assert again.index.path.read_bytes() == idx_live
    assert again.time_index.path.read_bytes() == tidx_live


@pytest.mark.parametrize("first", [3, 7, 20])
def test_load_continues_appends_with_same_index_rule(tmp_path, first):
    """After a clean reopen, index entries continue as if the segment had never been closed (and
    so as a recovery of the whole segment would rebuild them)."""
    seg = new_segment(tmp_path, interval=400)
    appended = [append(seg, n=2, value_size=30, ts=T0 + i) for i in range(first)]
    seg.close()
    again = new_segment(tmp_path, interval=400)
    assert again.load()
    assert again.next_offset == seg.next_offset
    appended += [append(again, n=2, value_size=30, ts=T0 + 100 + i) for i in range(40 - first)]
    assert index_entries(again) == expected_index_entries(appended, 400)
    again.close()
    offset_index_bytes = again.index.path.read_bytes()
    rebuilt = new_segment(tmp_path, interval=400)
    rebuilt.recover()
    rebuilt.close()
    assert rebuilt.index.path.read_bytes() == offset_index_bytes


# ----------------------------------------------------------------------------- recovery
def _filled(tmp_path, n_batches=20):
    seg = new_segment(tmp_path, interval=100)
    appended = [append(seg, n=3, value_size=20, ts=T0 + i) for i in range(n_batches)]
    seg.flush()
    seg.close()
    return seg, appended


def test_recover_truncates_garbage_tail(tmp_path):
    seg, appended = _filled(tmp_path)
    good = seg.size
    rnd = random.Random(3)
    with open(seg.log_path, "ab") as f:
        f.write(rnd.randbytes(777))
    again = new_segment(tmp_path, interval=100)
    assert again.recover() == 777
    assert again.size == good == os.path.getsize(seg.log_path)
    assert again.next_offset == appended[-1][2] + 1
    again.close()


def test_recover_truncates_torn_last_batch(tmp_path):
    seg, appended = _filled(tmp_path)
    last_pos, _b, last_last, last_size = appended[-1]
    os.truncate(seg.log_path, last_pos + last_size // 2)
    again = new_segment(tmp_path, interval=100)
    assert again.recover() == last_size // 2
    assert again.size == last_pos
    assert again.next_offset == appended[-2][2] + 1
    again.close()


# batchLength, magic, CRC, attributes, first record, last byte. (baseOffset and
# partitionLeaderEpoch are outside the CRC: Kafka cannot detect a flip there either.)
@pytest.mark.parametrize("where", [9, 11, 16, 18, 22, 61, -1])
def test_recover_truncates_flipped_byte_in_last_batch(tmp_path, where):
    seg, appended = _filled(tmp_path)
    last_pos, _b, _l, last_size = appended[-1]
    at = last_pos + (where if where >= 0 else last_size + where)
    with open(seg.log_path, "r+b") as f:
        f.seek(at)
        b = f.read(1)
        f.seek(at)
        f.write(bytes([b[0] ^ 0x40]))
    again = new_segment(tmp_path, interval=100)
    again.recover()
    assert again.size == last_pos
    assert again.next_offset == appended[-2][2] + 1
    assert again.read(appended[-2][1], 1 << 20, 10**9, True) is not None
    again.close()


def test_recover_of_empty_segment(tmp_path):
    seg = new_segment(tmp_path)
    assert seg.recover() == 0
    assert seg.next_offset == BASE
    seg.close()


def test_truncate_to_offset(tmp_path):
    seg = new_segment(tmp_path, interval=100)
    appended = [append(seg, n=3, value_size=20) for _ in range(20)]
    cut = appended[12]
    seg.truncate_to(cut[1])
    assert seg.size == cut[0]
    assert seg.next_offset == cut[1]
    assert all(p < cut[0] for p in seg.index.positions)
    seg.close()


# ----------------------------------------------------------------------------- timestamps
def test_find_offset_by_timestamp(tmp_path):
    seg = new_segment(tmp_path, interval=100)
    appended = []
    for i in range(40):
        appended.append(append(seg, n=2, value_size=30, ts=T0 + 100 * i))
    # Records of batch i carry T0 + 100*i (build_batch gives all records the batch timestamp).
    assert seg.find_offset_by_timestamp(T0, BASE) == (BASE, T0)
    assert seg.find_offset_by_timestamp(T0 + 1, BASE) == (BASE + 2, T0 + 100)
    assert seg.find_offset_by_timestamp(T0 + 2050, BASE) == (BASE + 42, T0 + 2100)
    assert seg.find_offset_by_timestamp(T0 + 3900, BASE) == (BASE + 78, T0 + 3900)
    assert seg.find_offset_by_timestamp(T0 + 3901, BASE) is None
    # The start offset bounds the answer from below.
    assert seg.find_offset_by_timestamp(T0, BASE + 11) == (BASE + 11, T0 + 500)
    for target in random.Random(1).sample(range(T0 - 50, T0 + 3901), 50):
        got = seg.find_offset_by_timestamp(target, BASE)
        i = max(0, -(-(target - T0) // 100))
        assert got == (BASE + 2 * i, T0 + 100 * i)
    seg.close()


def test_find_offset_by_timestamp_with_non_monotonic_timestamps(tmp_path):
    seg = new_segment(tmp_path, interval=0)
    tss = [T0 + 50, T0 + 10, T0 + 300, T0 + 200, T0 + 250, T0 + 400]
    for ts in tss:
        append(seg, n=1, ts=ts)
    for target in range(T0, T0 + 410, 5):
        expect = next(((BASE + i, ts) for i, ts in enumerate(tss) if ts >= target), None)
        assert seg.find_offset_by_timestamp(target, BASE) == expect, target
    seg.close()


@pytest.mark.parametrize("fault", ["short-log-write", "index-write"])
def test_an_append_the_disk_refuses_leaves_nothing(tmp_path, monkeypatch, fault):
    seg = new_segment(tmp_path, interval=1)
    for _ in range(3):
        append(seg, 2, value_size=100)
    before = (seg.size, seg.next_offset, seg.max_timestamp, list(seg.index.positions), os.path.getsize(seg.log_path),
              os.path.getsize(seg.index.path))
    if fault == "short-log-write":
        real = os.pwrite
        monkeypatch.setattr(os, "pwrite", lambda fd, data, pos: real(fd, bytes(data)[:17], pos))
    else:
        def refuse(*a):
            raise OSError(28, "No space left on device")
        monkeypatch.setattr(os, "write", refuse)
    with pytest.raises(OSError):
        append(seg, 2, ts=T0 + 5, value_size=100)
    monkeypatch.undo()
    after = (seg.size, seg.next_offset, seg.max_timestamp, list(seg.index.positions), os.path.getsize(seg.log_path),
             os.path.getsize(seg.index.path))
    assert after == before
    # The next append lands where the refused one would have, and everything reads back.
    pos, base, last, _ = append(seg, 2, value_size=100)
    assert pos == before[0] and base == before[1]
    assert [h.base_offset for h in batches_in(seg.read(BASE, 1 << 20, 1 << 40, True))] == [500, 502, 504, 506]
