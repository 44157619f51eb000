"""Segments checked ahead on other threads at start-up (storage/recovery_check.py): the check finds
the same damage as LogSegment.recover's own walk, and recover() given a check ends in the same
state (size, next offset, indexes) as recover() without one."""

from __future__ import annotations

import os
import random
import threading

import pytest
import structlog.testing

from minikafka.protocol import records
from minikafka.storage import recovery_check
from minikafka.storage.recovery_check import Checked, RecoveryChecks, check_segment
from minikafka.storage.segment import LogSegment

pytestmark = pytest.mark.unit

T0 = 1_700_000_000_000
BASE = 0


def new_segment(directory) -> LogSegment:
    return LogSegment(directory, BASE, index_interval_bytes=4096, max_index_size=10 * 1024 * 1024, now_ms=T0)


def fill(directory, batches: int, *, value_size: int = 2000, per_batch: int = 10, seed: int = 1) -> list[int]:
    """A closed segment of `batches` batches of ~value_size * per_batch bytes; returns each batch's position."""
    rnd = random.Random(seed)
    seg = new_segment(directory)
    positions = []
    for _ in range(batches):
        base = seg.next_offset
        batch = records.build_batch([(b"k%d" % (base + i), rnd.randbytes(value_size)) for i in range(per_batch)],
                                    base_offset=base, timestamp_ms=T0 + base)
        last = base + per_batch - 1
        positions.append(seg.append(batch, last, T0 + base, last))
    seg.close()
    return positions


def state(seg: LogSegment) -> tuple:
    return (seg.size, seg.next_offset, seg.max_timestamp, seg.offset_of_max_timestamp,
            list(seg.index.relative_offsets), list(seg.index.positions), seg.bytes_since_last_index_entry)


def recover_both_ways(tmp_path, damage) -> tuple[tuple, tuple, Checked | None, int, int]:
    """The same damaged file recovered inline and with its check: (inline state, checked state,
    the check, bytes truncated inline, bytes truncated with the check)."""
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    positions = fill(a, 12)
    damage(a / f"{BASE:020d}.log", positions)
    b.mkdir()
    (b / f"{BASE:020d}.log").write_bytes((a / f"{BASE:020d}.log").read_bytes())
    inline = new_segment(a)
    with structlog.testing.capture_logs() as told_inline:
        cut_inline = inline.recover()
    checked = check_segment(str(b / f"{BASE:020d}.log"))
    ahead = new_segment(b)
    with structlog.testing.capture_logs() as told_ahead:
        cut_ahead = ahead.recover(checked=checked)
    try:
        # The operator is told the same (the reason and position of the damage; paths differ).
        assert [(e["event"], str(e.get("reason", "")).split(" of ")[0]) for e in told_ahead] == \
            [(e["event"], str(e.get("reason", "")).split(" of ")[0]) for e in told_inline]
        return state(inline), state(ahead), checked, cut_inline, cut_ahead
    finally:
        inline.close()
        ahead.close()


def flip(offset_in_batch: int, batch: int):
    def damage(path, positions):
        with open(path, "r+b") as f:
            f.seek(positions[batch] + offset_in_batch)
            byte = f.read(1)
            f.seek(positions[batch] + offset_in_batch)
            f.write(bytes([byte[0] ^ 0x40]))
    return damage


def test_an_intact_file_checks_whole(tmp_path):
    positions = fill(tmp_path, 8)
    path = tmp_path / f"{BASE:020d}.log"
    size = os.path.getsize(path)
    assert len(positions) == 8
    assert check_segment(str(path)) == Checked(size, size, None)


# batchLength (a size no batch has), magic, CRC, a record's value, the last byte of a batch.
@pytest.mark.parametrize(("where", "reason"), [
    (11, None), (16, "bad batch header"), (18, "CRC mismatch"), (500, "CRC mismatch"), (-1, "CRC mismatch"),
])
@pytest.mark.parametrize("batch", [0, 5, 11])
def test_damage_is_found_where_recover_finds_it(tmp_path, where, reason, batch):
    def damage(path, positions):
        end = positions[batch + 1] if batch + 1 < len(positions) else os.path.getsize(path)
        flip(where if where >= 0 else end - positions[batch] + where, batch)(path, positions)

    inline, ahead, checked, cut_inline, cut_ahead = recover_both_ways(tmp_path, damage)
    assert checked is not None
    if reason is not None:
        assert checked.reason == reason
    assert checked.intact < checked.size
    assert ahead == inline
    assert cut_ahead == cut_inline > 0


def test_a_torn_last_batch(tmp_path):
    def torn(path, positions):
        os.truncate(path, positions[-1] + 100)

    inline, ahead, checked, cut_inline, cut_ahead = recover_both_ways(tmp_path, torn)
    assert checked is not None and checked.reason == "batch runs past the end of the file"
    assert (ahead, cut_ahead) == (inline, cut_inline) and cut_inline == 100


def test_a_tail_shorter_than_a_batch_header(tmp_path):
    def short(path, positions):
        with open(path, "ab") as f:
            f.write(b"\x00" * 30)

    inline, ahead, checked, cut_inline, cut_ahead = recover_both_ways(tmp_path, short)
    assert checked is not None and checked.reason == "truncated batch header"
    assert (ahead, cut_ahead) == (inline, cut_inline) and cut_inline == 30


def test_random_damage_recovers_the_same_both_ways(tmp_path):
    rnd = random.Random(11)
    for n in range(25):
        def damage(path, positions, rnd=rnd):
            size = os.path.getsize(path)
            at = rnd.randrange(size)
            if rnd.random() < 0.3:
                os.truncate(path, at)
            else:
                with open(path, "r+b") as f:
                    f.seek(at)
                    f.write(rnd.randbytes(rnd.randint(1, 80)))

        (tmp_path / str(n)).mkdir()
        inline, ahead, _checked, cut_inline, cut_ahead = recover_both_ways(tmp_path / str(n), damage)
        assert (ahead, cut_ahead) == (inline, cut_inline), n


def test_batches_larger_than_the_read_buffer(tmp_path, monkeypatch):
    monkeypatch.setattr(recovery_check, "_READ_CHUNK", 4096)  # every batch here is ~20 KB
    inline, ahead, checked, cut_inline, cut_ahead = recover_both_ways(tmp_path, flip(700, 7))
    assert checked is not None and checked.reason == "CRC mismatch"
    assert (ahead, cut_ahead) == (inline, cut_inline)


def test_a_check_of_another_size_is_not_trusted(tmp_path):
    """A file changed after its check (it should not be: start-up owns the directory) is checked
    again by recover() itself: a stale check never decides what stays."""
    positions = fill(tmp_path, 6)
    path = tmp_path / f"{BASE:020d}.log"
    checked = check_segment(str(path))
    flip(300, 3)(path, positions)
    with open(path, "ab") as f:
        f.write(b"\x00" * 7)
    seg = new_segment(tmp_path)
    assert checked is not None and checked.reason is None and checked.size != seg.size
    size = seg.size
    assert seg.recover(checked=checked) == size - positions[3]  # cut at the flipped byte's batch
    assert seg.size == os.path.getsize(path) == positions[3]
    seg.close()


def test_small_batches_are_left_to_recover(tmp_path):
    positions = fill(tmp_path, 200, value_size=100, per_batch=2)
    assert len(positions) == 200
    assert check_segment(str(tmp_path / f"{BASE:020d}.log")) is None


def test_checks_run_on_the_pool_and_small_files_stay_inline(tmp_path, monkeypatch):
    big, small = tmp_path / "big", tmp_path / "small"
    big.mkdir()
    small.mkdir()
    fill(big, 60)  # ~1.2 MB
    fill(small, 3)
    big_path, small_path = str(big / f"{BASE:020d}.log"), str(small / f"{BASE:020d}.log")
    assert os.path.getsize(big_path) >= recovery_check.MIN_CHECKED_BYTES > os.path.getsize(small_path)
    ran_on: list[str] = []
    real = recovery_check.check_segment

    def spy(path, buffer=None):
        ran_on.append(threading.current_thread().name)
        return real(path, buffer)

    monkeypatch.setattr(recovery_check, "check_segment", spy)
    checks = RecoveryChecks([big_path, small_path, str(tmp_path / "gone.log")], threads=2)
    try:
        size = os.path.getsize(big_path)
        assert checks.result(big_path) == Checked(size, size, None)
        assert checks.result(small_path) is None  # not submitted: recover() checks it
        assert checks.result(big_path) is None  # a result is taken once
    finally:
        checks.close()
    assert len(ran_on) == 1 and ran_on[0].startswith("minikafka-log-recovery")

    one = RecoveryChecks([big_path], threads=1)  # one thread: everything inline, no pool
    assert one.result(big_path) is None
    one.close()
    assert len(ran_on) == 1


def test_the_pool_and_its_buffers_are_gone_after_close(tmp_path):
    """Each pool thread reads into one mapping of its own, unmapped when the thread ends: the
    threads end with close(), so start-up leaves no buffer behind (malloc's arenas kept 16 MB)."""
    paths = []
    for n in range(4):
        (tmp_path / str(n)).mkdir()
        fill(tmp_path / str(n), 60)
        paths.append(str(tmp_path / str(n) / f"{BASE:020d}.log"))
    checks = RecoveryChecks(paths, threads=2)
    assert all(checks.result(p) is not None for p in paths)
    assert any(t.name.startswith("minikafka-log-recovery") for t in threading.enumerate())
    checks.close()
    assert not any(t.name.startswith("minikafka-log-recovery") for t in threading.enumerate())


def test_a_read_buffer_grows_and_unmaps():
    buffer = recovery_check.ReadBuffer()
    small = buffer.at_least(4096)
    assert len(small) >= 4096
    small.release()
    big = buffer.at_least(1 << 20)
    assert len(big) == 1 << 20
    big.release()
    again = buffer.at_least(4096)  # a smaller need reuses the larger mapping
    assert len(again) == 1 << 20
    again.release()
    buffer.close()
    buffer.close()  # twice is harmless


def test_a_check_that_fails_leaves_the_file_to_recover(tmp_path, monkeypatch):
    """A check is only a head start: one that raises (a bug, not the file) is logged and recover()
    checks the file itself, so start-up goes on."""
    fill(tmp_path, 60)
    path = str(tmp_path / f"{BASE:020d}.log")

    def broken(path, buffer=None):
        raise ValueError("a bug in the check")

    monkeypatch.setattr(recovery_check, "check_segment", broken)
    checks = RecoveryChecks([path], threads=2)
    try:
        with structlog.testing.capture_logs() as told:
            assert checks.result(path) is None
    finally:
        checks.close()
    assert [e["event"] for e in told] == ["recovery_check_failed"]
