"""OffsetIndex, TimeIndex and TransactionIndex on real files: append, lookup, truncate, load and its sanity check."""

from __future__ import annotations

import struct

import pytest

from minikafka.storage.offset_index import OffsetIndex
from minikafka.storage.time_index import TimeIndex

pytestmark = pytest.mark.unit

BASE = 1000


def offset_index(tmp_path, max_size: int = 10 * 1024 * 1024) -> OffsetIndex:
    return OffsetIndex(tmp_path / f"{BASE:020d}.index", BASE, max_size)


def time_index(tmp_path, max_size: int = 10 * 1024 * 1024) -> TimeIndex:
    return TimeIndex(tmp_path / f"{BASE:020d}.timeindex", BASE, max_size)


# ----------------------------------------------------------------------------- OffsetIndex
def test_offset_index_append_writes_kafka_entries(tmp_path):
    idx = offset_index(tmp_path)
    idx.append(BASE + 5, 0)
    idx.append(BASE + 17, 4200)
    idx.append(BASE + 30, 9000)
    idx.close()
    raw = idx.path.read_bytes()
    assert raw == struct.pack(">ii", 5, 0) + struct.pack(">ii", 17, 4200) + struct.pack(">ii", 30, 9000)


def test_offset_index_ignores_non_increasing_offsets(tmp_path):
    idx = offset_index(tmp_path)
    idx.append(BASE + 10, 100)
    idx.append(BASE + 10, 200)
    idx.append(BASE + 3, 300)
    idx.close()
    assert list(idx.relative_offsets) == [10]
    assert len(idx.path.read_bytes()) == 8


def test_offset_index_lookup(tmp_path):
    idx = offset_index(tmp_path)
    for rel, pos in [(10, 1000), (20, 2000), (30, 3000)]:
        idx.append(BASE + rel, pos)
    assert idx.lookup(BASE) == (BASE, 0)
    assert idx.lookup(BASE + 9) == (BASE, 0)
    assert idx.lookup(BASE + 10) == (BASE + 10, 1000)
    assert idx.lookup(BASE + 25) == (BASE + 20, 2000)
    assert idx.lookup(BASE + 10_000) == (BASE + 30, 3000)
    assert idx.last_position() == 3000
    idx.close()


def test_offset_index_truncate_to_position(tmp_path):
    idx = offset_index(tmp_path)
    for rel, pos in [(10, 1000), (20, 2000), (30, 3000)]:
        idx.append(BASE + rel, pos)
    idx.truncate_to_position(2000)
    assert list(idx.positions) == [1000]
    assert idx.path.stat().st_size == 8
    # Appending after a truncation continues the file correctly.
    idx.append(BASE + 15, 1500)
    idx.close()
    reloaded = offset_index(tmp_path)
    assert reloaded.load()
    assert list(reloaded.relative_offsets) == [10, 15]
    assert list(reloaded.positions) == [1000, 1500]


def test_offset_index_truncate_past_end_is_noop(tmp_path):
    idx = offset_index(tmp_path)
    idx.append(BASE + 1, 10)
    idx.truncate_to_position(11)
    idx.close()
    assert idx.path.stat().st_size == 8


def test_offset_index_load_roundtrip(tmp_path):
    idx = offset_index(tmp_path)
    entries = [(i * 7, i * 5000) for i in range(1, 50)]
    for rel, pos in entries:
        idx.append(BASE + rel, pos)
    idx.close()
    again = offset_index(tmp_path)
    assert again.load()
    assert list(zip(again.relative_offsets, again.positions)) == entries
    assert again.lookup(BASE + 7 * 10 + 3) == (BASE + 70, 50000)


def test_offset_index_load_missing_file(tmp_path):
    assert not offset_index(tmp_path).load()


@pytest.mark.parametrize("extra", [1, 3, 7])
def test_offset_index_load_rejects_partial_entry(tmp_path, extra):
    path = tmp_path / f"{BASE:020d}.index"
    path.write_bytes(struct.pack(">ii", 1, 0) + b"\x00" * extra)
    assert not offset_index(tmp_path).load()


@pytest.mark.parametrize("entries", [
    [(5, 0), (5, 100)],        # offsets must strictly increase
    [(5, 100), (6, 50)],       # positions must not go backwards
    [(-1, 0)],                 # negative relative offset
    [(1, -5)],                 # negative position
])
def test_offset_index_load_rejects_unordered(tmp_path, entries):
    path = tmp_path / f"{BASE:020d}.index"
    path.write_bytes(b"".join(struct.pack(">ii", r, p) for r, p in entries))
    assert not offset_index(tmp_path).load()


def test_offset_index_reset_empties_file(tmp_path):
    idx = offset_index(tmp_path)
    idx.append(BASE + 1, 10)
    idx.reset()
    assert idx.path.read_bytes() == b""
    assert idx.lookup(BASE + 5) == (BASE, 0)
    idx.append(BASE + 2, 20)
    idx.close()
    assert idx.path.read_bytes() == struct.pack(">ii", 2, 20)


def test_offset_index_is_full(tmp_path):
    idx = offset_index(tmp_path, max_size=24)  # three entries
    for i in range(3):
        assert not idx.is_full
        idx.append(BASE + i + 1, i * 100)
    assert idx.is_full
    idx.close()


# ----------------------------------------------------------------------------- TimeIndex
def test_time_index_append_only_when_timestamp_grows(tmp_path):
    ti = time_index(tmp_path)
    ti.maybe_append(1000, BASE + 0)
    ti.maybe_append(1000, BASE + 5)   # same timestamp: skipped
    ti.maybe_append(900, BASE + 6)    # older: skipped
    ti.maybe_append(-1, BASE + 7)     # no timestamp: skipped
    ti.maybe_append(2000, BASE + 8)
    ti.close()
    assert ti.path.read_bytes() == struct.pack(">qi", 1000, 0) + struct.pack(">qi", 2000, 8)
    assert ti.last_entry == (2000, BASE + 8)


def test_time_index_empty_last_entry(tmp_path):
    ti = time_index(tmp_path)
    assert ti.last_entry == (-1, BASE)


def test_time_index_lookup(tmp_path):
    ti = time_index(tmp_path)
    for ts, rel in [(100, 1), (200, 10), (300, 20)]:
        ti.maybe_append(ts, BASE + rel)
    assert ti.lookup(50) == BASE
    assert ti.lookup(100) == BASE + 1
    assert ti.lookup(250) == BASE + 10
    assert ti.lookup(10**12) == BASE + 20
    ti.close()


def test_time_index_truncate_to_offset(tmp_path):
    ti = time_index(tmp_path)
    for ts, rel in [(100, 1), (200, 10), (300, 20)]:
        ti.maybe_append(ts, BASE + rel)
    ti.truncate_to_offset(BASE + 10)
    assert list(ti.timestamps) == [100]
    assert ti.path.stat().st_size == 12
    ti.maybe_append(150, BASE + 5)
    ti.close()
    again = time_index(tmp_path)
    assert again.load()
    assert list(zip(again.timestamps, again.relative_offsets)) == [(100, 1), (150, 5)]


def test_time_index_load_roundtrip(tmp_path):
    ti = time_index(tmp_path)
    entries = [(1_700_000_000_000 + i * 10, i * 3) for i in range(40)]
    for ts, rel in entries:
        ti.maybe_append(ts, BASE + rel)
    ti.close()
    again = time_index(tmp_path)
    assert again.load()
    assert list(zip(again.timestamps, again.relative_offsets)) == entries


@pytest.mark.parametrize("extra", [1, 8, 11])
def test_time_index_load_rejects_partial_entry(tmp_path, extra):
    path = tmp_path / f"{BASE:020d}.timeindex"
    path.write_bytes(struct.pack(">qi", 5, 0) + b"\x01" * extra)
    assert not time_index(tmp_path).load()


def test_time_index_load_rejects_backwards_timestamps(tmp_path):
    path = tmp_path / f"{BASE:020d}.timeindex"
    path.write_bytes(struct.pack(">qi", 500, 1) + struct.pack(">qi", 400, 2))
    assert not time_index(tmp_path).load()


def test_time_index_is_full(tmp_path):
    ti = time_index(tmp_path, max_size=24)  # two entries
    ti.maybe_append(1, BASE + 1)
    assert not ti.is_full
    ti.maybe_append(2, BASE + 2)
    assert ti.is_full
    ti.close()


def test_txn_index_keeps_an_entry_the_disk_refused_and_writes_it_later(tmp_path, monkeypatch):
    """Memory first: a refused write leaves the entry in memory (reads must hide the aborted
    records) and the index dirty; the next append or flush writes the file whole again."""
    from minikafka.storage import txn_index
    from minikafka.storage.txn_index import AbortedTxn, TransactionIndex

    path = tmp_path / "00000000000000000000.txnindex"
    idx = TransactionIndex(path)
    idx.append(AbortedTxn(1, 0, 5, 6))
    real = txn_index.write_entry

    def disk_full(*_args):  # type: ignore[no-untyped-def]
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(txn_index, "write_entry", disk_full)
    idx.append(AbortedTxn(2, 7, 9, 10))
    assert idx.dirty and [e.producer_id for e in idx.entries] == [1, 2]
    assert path.stat().st_size == txn_index.ENTRY.size  # only the first entry reached the file
    monkeypatch.setattr(txn_index, "write_entry", real)
    idx.append(AbortedTxn(3, 11, 12, 13))
    assert not idx.dirty
    idx.close()
    again = TransactionIndex(path)
    assert again.load()
    assert [e.producer_id for e in again.entries] == [1, 2, 3]
    assert not list(tmp_path.glob("*.tmp"))
