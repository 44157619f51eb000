"""PartitionLog on real files: offsets, rolling, retention, reads across segments, crash recovery."""

from __future__ import annotations

import os
import random
from concurrent.futures import Future
from pathlib import Path

import pytest

from minikafka.config import BrokerConfig
from minikafka.protocol import records
from minikafka.protocol.errors import CorruptRecord, InvalidRecord
from minikafka.protocol.types import TopicPartition
from minikafka.storage.errors import MessageTooLarge, OffsetOutOfRange
from minikafka.storage.partition_log import PartitionLog
from minikafka.storage.segment_flusher import SegmentFlusher
from minikafka.topic_config import topic_defaults

pytestmark = pytest.mark.unit

TP = TopicPartition("t", 0)
T0 = 1_700_000_000_000


def cfg(**overrides) -> dict:
    c = topic_defaults(BrokerConfig.build({}))
    c.update({k.replace("_", "."): v for k, v in overrides.items()})
    return c


def open_log(d: Path, config: dict, *, clean: bool = True, recovery_point: int = 0,
             log_start_offset: int = 0, now_ms: int = T0) -> PartitionLog:
    return PartitionLog.open(TP, d, config, recovery_point=recovery_point,
                             log_start_offset=log_start_offset, clean=clean, now_ms=now_ms)


def produce(plog: PartitionLog, n: int = 1, *, ts: int = T0, value_size: int = 20, now_ms: int | None = None,
            tag: str = "k"):
    batch = records.build_batch(
        [(f"{tag}{i}".encode(), bytes([97 + i % 26]) * value_size) for i in range(n)], timestamp_ms=ts)
    return plog.append(batch, now_ms=ts if now_ms is None else now_ms)


def read_all(plog: PartitionLog, start: int | None = None) -> list[tuple[int, int, bytes | None, bytes | None]]:
    """Every record from `start` (default log start) to the log end, as (offset, ts, key, value)."""
    out = []
    offset = plog.log_start_offset if start is None else start
    while offset < plog.log_end_offset:
        data = plog.read(offset, 4096)
        assert data, f"empty read at {offset} below the log end {plog.log_end_offset}"
        pos = 0
        while pos < len(data):
            h = records.read_header(data, pos)
            for rec in records.iter_records(data, pos):
                if rec.offset >= offset:
                    out.append((rec.offset, rec.timestamp, rec.key, rec.value))
            pos += h.size
            offset = max(offset, h.next_offset)
    return out


def crash(plog: PartitionLog) -> None:
    """Drop the file descriptors without any of close()'s work, as kill -9 would."""
    for seg in plog.segments:
        seg.closed = True
        seg.files.close(str(seg.log_path))
        seg.index.close()
        seg.time_index.close()
        seg.txn_index.close()


def files_of(d: Path, suffix: str) -> list[str]:
    return sorted(n for n in os.listdir(d) if n.endswith(suffix))


# ----------------------------------------------------------------------------- append
def test_offsets_are_consecutive(tmp_path):
    plog = open_log(tmp_path / "t-0", cfg())
    expected = 0
    for n in [1, 5, 3, 10, 1]:
        res = produce(plog, n)
        assert (res.base_offset, res.last_offset) == (expected, expected + n - 1)
        assert res.log_append_time == -1
        expected += n
    assert plog.log_end_offset == plog.high_watermark == expected
    assert [r[0] for r in read_all(plog)] == list(range(expected))
    plog.close()


def test_append_rejects_bad_batches_without_writing(tmp_path):
    plog = open_log(tmp_path / "t-0", cfg(max_message_bytes=500))
    produce(plog, 2)
    size = plog.size_in_bytes
    bad_crc = records.build_batch([(b"k", b"v")])
    bad_crc[-1] ^= 1
    with pytest.raises(CorruptRecord):
        plog.append(bad_crc, now_ms=T0)
    nonzero_base = records.build_batch([(b"k", b"v")], base_offset=7)
    with pytest.raises(InvalidRecord):
        plog.append(nonzero_base, now_ms=T0)
    with pytest.raises(MessageTooLarge):
        produce(plog, 1, value_size=1000)
    assert plog.size_in_bytes == size
    assert plog.log_end_offset == 2
    plog.close()


def test_log_append_time_topic(tmp_path):
    plog = open_log(tmp_path / "t-0", cfg(message_timestamp_type="LogAppendTime"))
    res = produce(plog, 3, ts=T0, now_ms=T0 + 777)
    assert res.log_append_time == T0 + 777
    assert {r[1] for r in read_all(plog)} == {T0 + 777}
    plog.close()


# ----------------------------------------------------------------------------- roll
def test_roll_by_segment_bytes(tmp_path):
    d = tmp_path / "t-0"
    plog = open_log(d, cfg(segment_bytes=1000))
    for _ in range(40):
        produce(plog, 2, value_size=30)
    assert len(plog.segments) > 1
    for seg in plog.segments:
        assert seg.size <= 1000
    bases = [s.base_offset for s in plog.segments]
    assert files_of(d, ".log") == [f"{b:020d}.log" for b in bases]
    # Every segment starts where the previous one ended.
    for prev, nxt in zip(plog.segments, plog.segments[1:]):
        assert prev.next_offset == nxt.base_offset
    assert plog.recovery_point == plog.segments[-1].base_offset  # a roll flushes the old segment
    assert [r[0] for r in read_all(plog)] == list(range(80))
    plog.close()


class _HeldFlusher:
    """A SegmentFlusher whose flushes finish when the test says so (the real one is tested below)."""

    def __init__(self) -> None:
        self.submitted: list[tuple[Future, list[Path]]] = []

    def submit(self, paths: list[Path], owner: object = None) -> Future:
        future: Future = Future()
        self.submitted.append((future, paths))
        return future


def _rolled_with_held_flushes(tmp_path: Path, segments: int) -> tuple[PartitionLog, _HeldFlusher]:
    flusher = _HeldFlusher()
    plog = PartitionLog.open(TP, tmp_path / "t-0", cfg(segment_bytes=1000), recovery_point=0, log_start_offset=0,
                             clean=True, now_ms=T0, flusher=flusher)
    while len(plog.segments) < segments:
        produce(plog, 2, value_size=30)
    return plog, flusher


def test_a_rolled_segment_is_flushed_in_the_background_and_the_recovery_point_waits_for_it(tmp_path):
    plog, flusher = _rolled_with_held_flushes(tmp_path, 3)
    first, second = (s.base_offset for s in plog.segments[1:])
    assert [paths[0] for _f, paths in flusher.submitted] == [s.log_path for s in plog.segments[:2]]
    plog.settle_flushes()
    assert plog.recovery_point == 0, "moved before the rolled segment was on disk"
    flusher.submitted[1][0].set_result(None)
    plog.settle_flushes()
    assert plog.recovery_point == 0, "moved past a segment whose flush is not done"
    flusher.submitted[0][0].set_result(None)
    plog.settle_flushes()
    assert plog.recovery_point == second
    assert first < second
    plog.close()


def test_a_failed_background_flush_holds_the_recovery_point_until_a_flush(tmp_path):
    plog, flusher = _rolled_with_held_flushes(tmp_path, 2)
    flusher.submitted[0][0].set_exception(OSError(5, "Input/output error"))
    plog.settle_flushes()
    assert plog.recovery_point == 0
    plog.flush()  # fsyncs the rolled segment itself, whatever its background flush did
    assert plog.recovery_point == plog.log_end_offset
    plog.settle_flushes()
    assert plog.recovery_point == plog.log_end_offset
    plog.close()


def test_the_segment_flusher_fsyncs_files_and_skips_deleted_ones(tmp_path):
    there = tmp_path / "a.log"
    there.write_bytes(b"x" * 100)
    flusher = SegmentFlusher()
    try:
        assert flusher.submit([there, tmp_path / "deleted.index"]).result(timeout=10) is None
        missing_dir = tmp_path / "no-such-dir" / "b.log"
        assert flusher.submit([missing_dir]).result(timeout=10) is None
    finally:
        flusher.close()


def test_after_a_crash_recovered_segments_are_flushed_in_the_background(tmp_path):
    """Start-up does not wait for the fsync of what it re-validated (the last run may have left
    gigabytes dirty): the flusher does it once every partition is open, and the recovery point
    stays where the checkpoint put it until that flush is done, as Kafka's moves only with a flush."""
    d = tmp_path / "t-0"
    plog, before = _fill(d, cfg(segment_bytes=1000))
    rp = plog.recovery_point
    bases = [s.base_offset for s in plog.segments]
    crash(plog)
    flusher = _HeldFlusher()
    again = PartitionLog.open(TP, d, cfg(segment_bytes=1000), recovery_point=rp, log_start_offset=0,
                              clean=False, now_ms=T0, flusher=flusher)
    holding = max(i for i, b in enumerate(bases) if b <= rp)
    assert read_all(again) == before
    assert flusher.submitted == []  # handed over once every partition is open (LogManager.startup)
    again.flush_recovered()
    again.flush_recovered()  # once
    assert len(flusher.submitted) == 1
    future, paths = flusher.submitted[0]
    assert [p for p in paths if p.suffix == ".log"] == [s.log_path for s in again.segments[holding:]]
    again.settle_flushes()
    assert again.recovery_point == rp, "moved before the recovered segments were on disk"
    future.set_result(None)
    again.settle_flushes()
    assert again.recovery_point == again.log_end_offset
    again.close()


def test_roll_by_segment_ms(tmp_path):
    plog = open_log(tmp_path / "t-0", cfg(segment_ms=1000))
    produce(plog, 1, ts=T0)
    produce(plog, 1, ts=T0 + 1000)       # exactly segment.ms: no roll yet
    assert len(plog.segments) == 1
    produce(plog, 1, ts=T0 + 1001)       # record time 1001 ms after the segment's first batch
    assert len(plog.segments) == 2
    assert plog.active.base_offset == 2
    produce(plog, 1, ts=T0 + 1500)
    assert len(plog.segments) == 2
    plog.close()


def test_roll_by_segment_ms_uses_now_when_no_timestamps(tmp_path):
    plog = open_log(tmp_path / "t-0", cfg(segment_ms=1000), now_ms=T0)
    produce(plog, 1, ts=-1, now_ms=T0)
    produce(plog, 1, ts=-1, now_ms=T0 + 500)
    assert len(plog.segments) == 1
    produce(plog, 1, ts=-1, now_ms=T0 + 1001)
    assert len(plog.segments) == 2
    plog.close()


# ----------------------------------------------------------------------------- read
def test_read_across_segment_boundaries(tmp_path):
    plog = open_log(tmp_path / "t-0", cfg(segment_bytes=600))
    for i in range(30):
        produce(plog, 3, value_size=25, tag=f"b{i}-")
    assert len(plog.segments) >= 4
    everything = read_all(plog)
    assert [r[0] for r in everything] == list(range(90))
    for seg in plog.segments[1:]:
        # Reading at a segment's base offset, and at the last offset of the previous segment.
        data = plog.read(seg.base_offset, 10_000)
        assert records.read_header(data, 0).base_offset == seg.base_offset
        data = plog.read(seg.base_offset - 1, 10_000)
        assert records.read_header(data, 0).last_offset == seg.base_offset - 1
    assert read_all(plog, 47) == everything[47:]
    plog.close()


def test_read_out_of_range(tmp_path):
    plog = open_log(tmp_path / "t-0", cfg(segment_bytes=500, retention_bytes=600))
    for _ in range(20):
        produce(plog, 2, value_size=30)
    assert plog.read(plog.log_end_offset, 1000) == b""
    with pytest.raises(OffsetOutOfRange):
        plog.read(plog.log_end_offset + 1, 1000)
    plog.delete_retained_segments(T0)
    assert plog.log_start_offset > 0
    with pytest.raises(OffsetOutOfRange):
        plog.read(plog.log_start_offset - 1, 1000)
    assert plog.read(plog.log_start_offset, 1000)
    with pytest.raises(OffsetOutOfRange):
        plog.read(-1, 1000)
    plog.close()


def test_read_upper_offset(tmp_path):
    plog = open_log(tmp_path / "t-0", cfg())
    for _ in range(5):
        produce(plog, 2)
    data = plog.read(0, 100_000, upper_offset=4)
    pos, bases = 0, []
    while pos < len(data):
        h = records.read_header(data, pos)
        bases.append(h.base_offset)
        pos += h.size
    assert bases == [0, 2]
    assert plog.read(4, 100_000, upper_offset=4) == b""
    plog.close()


def test_offset_for_timestamp_across_segments(tmp_path):
    plog = open_log(tmp_path / "t-0", cfg(segment_bytes=700, index_interval_bytes=100))
    for i in range(50):
        produce(plog, 2, ts=T0 + 10 * i)
    assert len(plog.segments) > 3
    for target in [T0 - 5, T0, T0 + 1, T0 + 155, T0 + 490, T0 + 491]:
        i = max(0, -(-(target - T0) // 10))
        expect = None if i >= 50 else (2 * i, T0 + 10 * i)
        assert plog.offset_for_timestamp(target) == expect
    # Both records of the last batch carry the max timestamp: Kafka answers the first of them
    # (RecordBatch.offsetOfMaxTimestamp), not the batch's last offset.
    assert plog.max_timestamp_offset() == (98, T0 + 490)
    plog.close()


# ----------------------------------------------------------------------------- retention
def test_retention_by_time(tmp_path):
    d = tmp_path / "t-0"
    plog = open_log(d, cfg(segment_bytes=500, retention_ms=10_000))
    for i in range(30):
        produce(plog, 2, value_size=30, ts=T0 + 1000 * i)
    segs = [(s.base_offset, s.max_timestamp) for s in plog.segments]
    assert len(segs) > 3
    now = segs[2][1] + 10_001  # the first three segments are older than retention.ms
    assert plog.delete_retained_segments(now) == 3
    assert plog.log_start_offset == segs[3][0]
    assert files_of(d, ".log")[0] == f"{segs[3][0]:020d}.log"
    for base, _ in segs[:3]:
        for suffix in (".log", ".index", ".timeindex"):
            assert not (d / f"{base:020d}{suffix}").exists()
    assert read_all(plog)[0][0] == segs[3][0]
    # Nothing more is old enough.
    assert plog.delete_retained_segments(now) == 0
    plog.close()


def test_retention_by_time_removes_active_segment_and_rolls(tmp_path):
    d = tmp_path / "t-0"
    plog = open_log(d, cfg(retention_ms=1000))
    produce(plog, 5, ts=T0)
    assert plog.delete_retained_segments(T0 + 5000) == 1
    assert plog.log_start_offset == plog.log_end_offset == 5
    assert files_of(d, ".log") == [f"{5:020d}.log"]
    assert produce(plog, 1, ts=T0 + 5000).base_offset == 5
    plog.close()


def test_retention_by_bytes(tmp_path):
    d = tmp_path / "t-0"
    plog = open_log(d, cfg(segment_bytes=500, retention_bytes=1200))
    for _ in range(40):
        produce(plog, 2, value_size=30)
    before = [s.size for s in plog.segments]
    deleted = plog.delete_retained_segments(T0)
    assert deleted > 0
    # Kafka's rule: delete the oldest segments while what remains is still >= retention.bytes.
    total = sum(before)
    expect = 0
    for size in before:
        if total - size < 1200:
            break
        total -= size
        expect += 1
    assert deleted == expect
    assert plog.size_in_bytes == total >= 1200
    assert plog.log_start_offset == plog.segments[0].base_offset
    assert len(files_of(d, ".log")) == len(before) - deleted
    plog.close()


def test_retention_disabled_for_compact_policy(tmp_path):
    plog = open_log(tmp_path / "t-0", cfg(segment_bytes=500, retention_bytes=0, cleanup_policy="compact"))
    for _ in range(20):
        produce(plog, 2, value_size=30)
    assert plog.delete_retained_segments(T0 + 10**9) == 0
    plog.close()


def test_log_start_offset_survives_reopen(tmp_path):
    d = tmp_path / "t-0"
    plog = open_log(d, cfg(segment_bytes=500, retention_bytes=600))
    for _ in range(20):
        produce(plog, 2, value_size=30)
    plog.delete_retained_segments(T0)
    start, end = plog.log_start_offset, plog.log_end_offset
    plog.close()
    again = open_log(d, cfg(segment_bytes=500), log_start_offset=start, recovery_point=end)
    assert (again.log_start_offset, again.log_end_offset) == (start, end)
    again.close()


# ----------------------------------------------------------------------------- recovery
def _fill(d: Path, config: dict, batches: int = 25) -> tuple[PartitionLog, list]:
    plog = open_log(d, config)
    for i in range(batches):
        produce(plog, 3, value_size=40, ts=T0 + 10 * i, tag=f"r{i}-")
    return plog, read_all(plog)


def _last_batch_position(plog: PartitionLog) -> tuple[int, int, int]:
    """(position, size, base offset) of the active segment's last batch."""
    last = None
    for pos, h in plog.active.iter_headers(0):
        last = (pos, h.size, h.base_offset)
    assert last is not None
    return last


def test_clean_reopen_revalidates_nothing(tmp_path):
    d = tmp_path / "t-0"
    plog, before = _fill(d, cfg(segment_bytes=1000))
    plog.flush()
    rp, n_segs = plog.recovery_point, len(plog.segments)
    plog.close()
    again = open_log(d, cfg(segment_bytes=1000), clean=True, recovery_point=rp)
    assert again.recovered_segments == 0
    assert len(again.segments) == n_segs
    assert read_all(again) == before
    again.close()


def test_unclean_reopen_revalidates_from_recovery_point(tmp_path):
    d = tmp_path / "t-0"
    plog, before = _fill(d, cfg(segment_bytes=1000))
    rp = plog.recovery_point
    bases = [s.base_offset for s in plog.segments]
    crash(plog)
    assert 0 < rp < plog.log_end_offset
    again = open_log(d, cfg(segment_bytes=1000), clean=False, recovery_point=rp)
    holding = max(i for i, b in enumerate(bases) if b <= rp)
    assert again.recovered_segments == len(bases) - holding
    assert read_all(again) == before
    assert again.recovery_point == again.log_end_offset  # no flusher: the recovered segments flushed here
    again.close()
    # Without a recovery point, everything is re-validated.
    again = open_log(d, cfg(segment_bytes=1000), clean=False, recovery_point=0)
    assert again.recovered_segments == len(bases)
    again.close()


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_crash_with_garbage_appended_to_log_and_index(tmp_path, seed):
    d = tmp_path / "t-0"
    config = cfg(index_interval_bytes=200)
    plog, before = _fill(d, config)
    leo = plog.log_end_offset
    active = plog.active
    crash(plog)
    rnd = random.Random(seed)
    with open(active.log_path, "ab") as f:
        f.write(rnd.randbytes(rnd.randint(1, 1024)))
    with open(active.index.path, "ab") as f:
        f.write(rnd.randbytes(rnd.randint(1, 1024)))
    again = open_log(d, config, clean=False)
    assert again.log_end_offset == leo
    assert read_all(again) == before
    assert produce(again, 2, ts=T0 + 9999).base_offset == leo
    assert read_all(again)[-2:][0][0] == leo
    again.close()


def test_crash_with_log_truncated_inside_last_batch(tmp_path):
    d = tmp_path / "t-0"
    config = cfg(index_interval_bytes=200)
    plog, before = _fill(d, config)
    pos, size, base = _last_batch_position(plog)
    log_path = plog.active.log_path
    crash(plog)
    os.truncate(log_path, pos + size - 7)
    again = open_log(d, config, clean=False)
    assert again.log_end_offset == base
    assert read_all(again) == [r for r in before if r[0] < base]
    assert os.path.getsize(log_path) == pos
    assert produce(again, 1, ts=T0 + 5000, tag="new").base_offset == base
    assert read_all(again)[-1][2] == b"new0"
    again.close()


@pytest.mark.parametrize("offset_in_batch", [10, 17, 30, 70, -1])
def test_crash_with_flipped_byte_in_last_batch(tmp_path, offset_in_batch):
    d = tmp_path / "t-0"
    config = cfg(index_interval_bytes=200)
    plog, before = _fill(d, config)
    pos, size, base = _last_batch_position(plog)
    log_path = plog.active.log_path
    crash(plog)
    at = pos + (offset_in_batch if offset_in_batch >= 0 else size + offset_in_batch)
    with open(log_path, "r+b") as f:
        f.seek(at)
        byte = f.read(1)[0]
        f.seek(at)
        f.write(bytes([byte ^ 0x10]))
    again = open_log(d, config, clean=False)
    assert again.log_end_offset == base
    assert read_all(again) == [r for r in before if r[0] < base]
    assert produce(again, 2, ts=T0 + 5000).base_offset == base
    again.close()


def test_crash_corruption_in_older_segment_drops_later_segments(tmp_path):
    d = tmp_path / "t-0"
    config = cfg(segment_bytes=1000)
    plog, before = _fill(d, config)
    assert len(plog.segments) >= 3
    second = plog.segments[1]
    crash(plog)
    # Corrupt the CRC-covered bytes of the second segment's first batch.
    with open(second.log_path, "r+b") as f:
        f.seek(40)
        b = f.read(1)[0]
        f.seek(40)
        f.write(bytes([b ^ 0xFF]))
    again = open_log(d, config, clean=False, recovery_point=0)
    assert again.log_end_offset == second.base_offset
    assert files_of(d, ".log")[-1] == f"{second.base_offset:020d}.log"
    assert read_all(again) == [r for r in before if r[0] < second.base_offset]
    again.close()


def test_deleted_indexes_are_rebuilt_identically(tmp_path):
    d = tmp_path / "t-0"
    config = cfg(segment_bytes=2000, index_interval_bytes=150)
    plog, before = _fill(d, config, batches=60)
    plog.flush()
    rp = plog.recovery_point
    plog.close()
    originals = {n: (d / n).read_bytes() for n in files_of(d, ".index") + files_of(d, ".timeindex")}
    assert len(originals) >= 6 and all(originals.values())
    for n in originals:
        os.unlink(d / n)
    # Clean open: load() finds no index and rebuilds it.
    again = open_log(d, config, clean=True, recovery_point=rp)
    assert read_all(again) == before
    for target in range(T0 - 5, T0 + 600, 7):
        i = max(0, -(-(target - T0) // 10))
        assert again.offset_for_timestamp(target) == (None if i >= 60 else (3 * i, T0 + 10 * i))
    again.close()
    assert {n: (d / n).read_bytes() for n in originals} == originals
    # Unclean open with no indexes: the same.
    for n in originals:
        os.unlink(d / n)
    again = open_log(d, config, clean=False, recovery_point=0)
    assert read_all(again) == before
    again.close()
    assert {n: (d / n).read_bytes() for n in originals} == originals


def test_corrupt_index_on_clean_open_is_rebuilt(tmp_path):
    d = tmp_path / "t-0"
    config = cfg(index_interval_bytes=100)
    plog, before = _fill(d, config)
    plog.flush()
    rp = plog.recovery_point
    plog.close()
    idx = d / f"{0:020d}.index"
    original = idx.read_bytes()
    with open(idx, "ab") as f:
        f.write(b"\x00\x01\x02")  # not a multiple of 8: fails the sanity check
    again = open_log(d, config, clean=True, recovery_point=rp)
    assert read_all(again) == before
    again.close()
    assert idx.read_bytes() == original


def _damaged_clean_reopen(d: Path, config: dict, which: str) -> tuple[PartitionLog, list, int]:
    """Fill and close cleanly, write garbage over one batch's header after the active segment's
    last index entry (`which`: the batch that entry points at, or the one after it), reopen as
    after a clean stop: (reopened log, records before, base offset of the damaged batch)."""
    plog, before = _fill(d, config)
    plog.flush()
    rp = plog.recovery_point
    active = plog.active
    last_indexed = active.index.last_position()
    batches = [(pos, h.base_offset) for pos, h in active.iter_headers(last_indexed)]
    plog.close()
    assert len(batches) >= 2, "the test needs two batches after the last index entry"
    pos, base = batches[0] if which == "indexed" else batches[1]
    with open(active.log_path, "r+b") as f:
        f.seek(pos)
        f.write(bytes(range(100, 161)))  # a whole batch header of garbage: no magic, an absurd size
    return open_log(d, config, clean=True, recovery_point=rp), before, base


@pytest.mark.parametrize("which", ["indexed", "after-the-entry"])
def test_a_damaged_header_after_the_last_index_entry_is_truncated_on_a_clean_open(tmp_path, which):
    """A clean open trusts the segment but walks the batches after its last index entry to find
    the log end. A bad header there used to end that walk quietly: the log ended before bytes it
    still held (at the segment's base when the entry pointed at the damage), and the next append
    gave out offsets the file already had. Now the segment is re-validated and truncated."""
    d = tmp_path / "t-0"
    again, before, damaged = _damaged_clean_reopen(d, cfg(), which)
    assert again.recovered_segments == 1
    assert again.log_end_offset == damaged
    assert read_all(again) == [r for r in before if r[0] < damaged]
    produce(again, 2, tag="after-")
    records_now = read_all(again)
    offsets = [r[0] for r in records_now]
    assert offsets == list(range(damaged + 2)), "an offset given out twice, or a gap"
    assert [r[2] for r in records_now[-2:]] == [b"after-0", b"after-1"]
    again.close()


def test_a_damaged_header_in_an_older_segment_leaves_the_later_segments_alone(tmp_path):
    """Only the last segment's tail decides where the log ends. Damage in an older segment stays
    where it is, an error to reads at that batch: truncating it would delete every segment after
    it, acknowledged data included (a review found that: 129 of 180 records gone)."""
    d = tmp_path / "t-0"
    plog, before = _fill(d, cfg(segment_bytes=1000))
    plog.flush()
    rp, end, n_segs = plog.recovery_point, plog.log_end_offset, len(plog.segments)
    assert n_segs >= 3
    first = plog.segments[0]
    pos, h = list(first.iter_headers(0))[-1]
    plog.close()
    with open(first.log_path, "r+b") as f:
        f.seek(pos + 16)
        f.write(b"\x07")  # the magic byte of the segment's last batch
    again = open_log(d, cfg(segment_bytes=1000), clean=True, recovery_point=rp)
    assert len(again.segments) == n_segs
    assert again.log_end_offset == end
    assert again.recovered_segments == 0
    assert read_all(again, h.next_offset) == [r for r in before if r[0] >= h.next_offset]
    with pytest.raises(CorruptRecord):
        again.read(h.base_offset, 4096)
    again.close()


def test_a_roll_flushed_inline_first_flushes_the_rolls_still_under_way(tmp_path, monkeypatch):
    """A dirty transaction index makes a roll flush inline and move the recovery point at once:
    a rolled segment whose background flush is not done must be fsynced first, or the recovery
    point would pass data that is not on disk."""
    from minikafka.storage import partition_log as partition_log_module

    fsynced: list[Path] = []
    monkeypatch.setattr(partition_log_module, "fsync_paths", lambda paths: fsynced.extend(paths))
    plog, flusher = _rolled_with_held_flushes(tmp_path, 2)
    pending_log = flusher.submitted[0][1][0]
    assert not flusher.submitted[0][0].done()
    plog.active.txn_index.dirty = True  # as after a failed write of the transaction index
    while len(plog.segments) < 3:
        produce(plog, 2, value_size=30)
    assert len(flusher.submitted) == 1  # the second roll flushed inline
    assert pending_log in fsynced
    assert plog.recovery_point == plog.segments[2].base_offset
    plog.settle_flushes()
    assert plog.recovery_point == plog.segments[2].base_offset
    plog.close()


def test_leftover_temporary_and_orphan_files_are_removed(tmp_path):
    d = tmp_path / "t-0"
    plog, _ = _fill(d, cfg())
    plog.close()
    (d / "00000000000000000999.index").write_bytes(b"")
    (d / "00000000000000000000.log.deleted").write_bytes(b"x")
    (d / "partition.metadata.tmp").write_bytes(b"x")
    again = open_log(d, cfg(), clean=True, recovery_point=plog.log_end_offset)
    again.close()
    names = set(os.listdir(d))
    assert "00000000000000000999.index" not in names
    assert not any(n.endswith((".deleted", ".tmp")) for n in names)


def _batch_with_timestamps(stamps: list[int]) -> bytearray:
    """An uncompressed client batch whose records carry the given timestamps (deltas from the first)."""
    batch = records.build_batch([(None, b"v")] * len(stamps), timestamp_ms=stamps[0])
    body = bytearray()
    for i, ts in enumerate(stamps):
        rec = bytearray(b"\x00") + records.zigzag(ts - stamps[0]) + records.zigzag(i)
        rec += records.zigzag(-1) + records.zigzag(1) + b"v" + records.zigzag(0)
        body += records.zigzag(len(rec)) + rec
    import struct

    import crc32c

    out = bytearray(batch[: records.HEADER_SIZE]) + body
    struct.pack_into(">i", out, 8, len(out) - 12)
    struct.pack_into(">q", out, 35, max(stamps))
    struct.pack_into(">I", out, 17, crc32c.crc32c(bytes(out[21:])))
    return out


def test_max_timestamp_offset_is_the_first_record_with_the_max(tmp_path):
    """ListOffsets -3: Kafka returns the record inside the batch (offsetOfMaxTimestamp), not the
    batch's last offset."""
    plog = open_log(tmp_path, cfg())
    plog.append(_batch_with_timestamps([T0 + 100, T0 + 300, T0 + 200]), now_ms=T0)
    assert plog.max_timestamp_offset() == (1, T0 + 300)


def test_lso_never_below_log_start_offset(tmp_path):
    """An open transaction whose first batch lies below the log start offset (retention, DeleteRecords)
    does not drag the last stable offset below the log start."""
    plog = open_log(tmp_path, cfg(**{"segment.bytes": 300}))
    txn = records.build_batch([(None, b"t" * 50)], producer_id=7, producer_epoch=0, base_sequence=0,
                              transactional=True, timestamp_ms=T0)
    plog.append(txn, now_ms=T0)
    produce(plog, 10, value_size=100)
    assert plog.last_stable_offset == 0
    plog.delete_records_before(5)
    assert plog.log_start_offset == 5
    assert plog.last_stable_offset == 5
