"""Producer snapshots: Kafka's `.snapshot` byte format, and how PartitionLog writes and loads them.

Format (protocol.md section 8): version int16 = 1 | crc uint32 (CRC-32C of the rest) | count int32 |
46-byte entries. PartitionLog writes `<log end offset>.snapshot` at a roll and at clean shutdown,
and on open uses the newest valid snapshot at or below the log end, deleting corrupt ones and ones
beyond the log end, then replays the log after it.
"""

from __future__ import annotations

import os
import struct
from pathlib import Path

import crc32c
import pytest

from minikafka.config import BrokerConfig
from minikafka.protocol import records
from minikafka.protocol.types import TopicPartition
from minikafka.storage import files
from minikafka.storage import snapshot as snap
from minikafka.storage.partition_log import PartitionLog
from minikafka.storage.producer_state import OutOfOrderSequence
from minikafka.topic_config import topic_defaults

pytestmark = pytest.mark.unit

TP = TopicPartition("t", 0)
T0 = 1_700_000_000_000
PID = 7001

ENTRIES = [
    snap.SnapshotEntry(producer_id=1, producer_epoch=0, last_sequence=4, last_offset=10, offset_delta=4,
                       timestamp=T0, coordinator_epoch=-1, current_txn_first_offset=-1),
    snap.SnapshotEntry(producer_id=2**62, producer_epoch=32766, last_sequence=2**31 - 1, last_offset=2**40,
                       offset_delta=0, timestamp=T0 + 99, coordinator_epoch=3, current_txn_first_offset=77),
]


# ------------------------------------------------------------------------------------- byte format


def test_encode_layout_matches_kafka():
    data = snap.encode(ENTRIES)
    assert len(data) == 10 + 46 * len(ENTRIES)
    assert snap.ENTRY_SIZE == 46
    version, crc, count = struct.unpack_from(">hIi", data, 0)
    assert (version, count) == (1, 2)
    assert crc == crc32c.crc32c(data[6:])
    # First entry, field by field (ProducerSnapshot.json order).
    assert struct.unpack_from(">qhiqiqiq", data, 10) == (1, 0, 4, 10, 4, T0, -1, -1)
    assert struct.unpack_from(">qhiqiqiq", data, 56) == tuple(ENTRIES[1])


def test_round_trip():
    assert snap.decode(snap.encode(ENTRIES)) == ENTRIES
    assert snap.decode(snap.encode([])) == []


def test_empty_snapshot_encodes_to_ten_bytes():
    data = snap.encode([])
    assert data == struct.pack(">hIi", 1, crc32c.crc32c(struct.pack(">i", 0)), 0)


def _flip(data: bytes, pos: int) -> bytes:
    b = bytearray(data)
    b[pos] ^= 0x01
    return bytes(b)


@pytest.mark.parametrize("damage", [
    pytest.param(lambda d: b"", id="empty"),
    pytest.param(lambda d: d[:5], id="shorter-than-header"),
    pytest.param(lambda d: d[:-1], id="truncated-entry"),
    pytest.param(lambda d: d[:-46], id="one-entry-missing"),
    pytest.param(lambda d: d + b"\x00", id="trailing-byte"),
    pytest.param(lambda d: _flip(d, 3), id="crc-flipped"),
    pytest.param(lambda d: _flip(d, 30), id="entry-byte-flipped"),
    pytest.param(lambda d: _flip(d, 8), id="count-flipped"),
    pytest.param(lambda d: struct.pack(">h", 2) + d[2:], id="version-2"),
    pytest.param(lambda d: struct.pack(">h", 0) + d[2:], id="version-0"),
])
def test_damaged_snapshot_is_corrupt(damage):
    with pytest.raises(snap.CorruptSnapshot):
        snap.decode(damage(snap.encode(ENTRIES)))


def test_count_that_disagrees_with_size_is_corrupt_even_with_valid_crc():
    body = struct.pack(">i", 3) + b"".join(struct.pack(">qhiqiqiq", *e) for e in ENTRIES)
    data = struct.pack(">hI", 1, crc32c.crc32c(body)) + body
    with pytest.raises(snap.CorruptSnapshot):
        snap.decode(data)


# ------------------------------------------------------------------------------------- PartitionLog


def cfg(**overrides: object) -> dict:
    c = topic_defaults(BrokerConfig.build({}))
    c.update({k.replace("_", "."): v for k, v in overrides.items()})
    return c


def open_log(d: Path, config: dict, *, clean: bool) -> PartitionLog:
    return PartitionLog.open(TP, d, config, recovery_point=0, log_start_offset=0, clean=clean, now_ms=T0)


def idem_batch(seq: int, n: int = 2, *, epoch: int = 0, pid: int = PID, size: int = 100) -> bytearray:
    return records.build_batch([(b"k", bytes([97 + (seq + i) % 26]) * size) for i in range(n)],
                               timestamp_ms=T0, producer_id=pid, producer_epoch=epoch, base_sequence=seq)


def snapshot_offsets(d: Path) -> list[int]:
    return sorted(files.offset_from_name(n) for n in os.listdir(d) if n.endswith(".snapshot"))


def fill(plog: PartitionLog, batches: int) -> int:
    """Append `batches` idempotent 2-record batches from sequence 0; returns the next sequence."""
    seq = 0
    for _ in range(batches):
        plog.append(idem_batch(seq), now_ms=T0)
        seq += 2
    return seq


def test_roll_and_clean_close_write_snapshots_at_the_log_end(tmp_path):
    d = tmp_path / "t-0"
    plog = open_log(d, cfg(segment_bytes=1024), clean=True)
    fill(plog, 12)
    bases = [s.base_offset for s in plog.segments]
    assert len(bases) >= 3
    assert snapshot_offsets(d) == bases[1:]  # one per roll, named by the new segment's base
    leo = plog.log_end_offset
    plog.close(snapshot=True)
    assert snapshot_offsets(d) == bases[1:] + [leo]
    entries = snap.decode((d / files.segment_name(leo, ".snapshot")).read_bytes())
    assert [(e.producer_id, e.last_sequence, e.last_offset) for e in entries] == [(PID, 23, leo - 1)]


@pytest.mark.parametrize("clean", [True, False], ids=["clean", "unclean"])
@pytest.mark.parametrize("damage", ["empty", "truncate", "corrupt", "bad_version"])
def test_bad_newest_snapshot_is_deleted_and_state_rebuilt(tmp_path, damage, clean):
    d = tmp_path / "t-0"
    plog = open_log(d, cfg(segment_bytes=1024), clean=True)
    next_seq = fill(plog, 12)
    leo = plog.log_end_offset
    plog.close(snapshot=True)
    older = snapshot_offsets(d)[:-1]
    newest = d / files.segment_name(leo, ".snapshot")
    data = newest.read_bytes()
    match damage:
        case "empty":
            newest.write_bytes(b"")
        case "truncate":
            newest.write_bytes(data[: len(data) - 7])
        case "corrupt":
            newest.write_bytes(_flip(data, 20))
        case "bad_version":
            newest.write_bytes(struct.pack(">h", 9) + data[2:])

    reopened = open_log(d, cfg(segment_bytes=1024), clean=clean)
    assert not newest.exists()
    assert snapshot_offsets(d) == older
    entry = reopened.producer_state.producers[PID]
    assert entry.last_seq == next_seq - 1
    assert entry.last_offset == leo - 1
    # A retry of the last batch is a duplicate with its original offsets; nothing is written.
    res = reopened.append(idem_batch(next_seq - 2), now_ms=T0)
    assert (res.base_offset, res.last_offset) == (leo - 2, leo - 1)
    assert reopened.log_end_offset == leo
    # The producer continues with no gap.
    res = reopened.append(idem_batch(next_seq), now_ms=T0)
    assert res.base_offset == leo
    with pytest.raises(OutOfOrderSequence):
        reopened.append(idem_batch(next_seq + 5), now_ms=T0)
    reopened.close()


def test_every_snapshot_bad_means_full_replay(tmp_path):
    d = tmp_path / "t-0"
    plog = open_log(d, cfg(segment_bytes=1024), clean=True)
    next_seq = fill(plog, 12)
    leo = plog.log_end_offset
    plog.close(snapshot=True)
    for off in snapshot_offsets(d):
        (d / files.segment_name(off, ".snapshot")).write_bytes(b"\x00\x01garbage")
    reopened = open_log(d, cfg(segment_bytes=1024), clean=False)
    assert snapshot_offsets(d) == []
    assert reopened.producer_state.producers[PID].last_seq == next_seq - 1
    # Replay restores up to five batches, so even an older retry is still a duplicate.
    res = reopened.append(idem_batch(next_seq - 6), now_ms=T0)
    assert (res.base_offset, res.last_offset) == (leo - 6, leo - 5)
    assert reopened.log_end_offset == leo
    reopened.close()


def test_newest_valid_snapshot_is_loaded_on_clean_open(tmp_path):
    """The snapshot is really used: state only it holds (a producer with no batch in the log)
    is there after a clean open, and the replay after it adds what follows."""
    d = tmp_path / "t-0"
    plog = open_log(d, cfg(), clean=True)
    next_seq = fill(plog, 3)
    leo = plog.log_end_offset
    entries = plog.producer_state.to_snapshot()
    ghost = snap.SnapshotEntry(producer_id=555, producer_epoch=2, last_sequence=41, last_offset=1,
                               offset_delta=0, timestamp=T0, coordinator_epoch=-1, current_txn_first_offset=-1)
    (d / files.segment_name(leo, ".snapshot")).write_bytes(snap.encode(sorted(entries + [ghost])))
    plog.close()
    reopened = open_log(d, cfg(), clean=True)
    assert reopened.producer_state.producers[555].last_seq == 41
    assert reopened.producer_state.producers[PID].last_seq == next_seq - 1
    # Only the last batch is known after a load: a retry of it is a duplicate.
    res = reopened.append(idem_batch(next_seq - 2), now_ms=T0)
    assert (res.base_offset, res.last_offset) == (leo - 2, leo - 1)
    with pytest.raises(OutOfOrderSequence):
        reopened.append(idem_batch(7, n=1, pid=555, epoch=2), now_ms=T0)
    assert reopened.append(idem_batch(42, n=1, pid=555, epoch=2), now_ms=T0).base_offset == leo
    reopened.close()


def test_snapshot_beyond_the_log_end_is_deleted(tmp_path):
    d = tmp_path / "t-0"
    plog = open_log(d, cfg(), clean=True)
    next_seq = fill(plog, 3)
    leo = plog.log_end_offset
    # A snapshot that claims more than the log holds (e.g. the log tail was lost): its state
    # would wrongly deduplicate retried batches, so it must be discarded.
    ahead = plog.producer_state.to_snapshot()
    ahead = [e._replace(last_sequence=e.last_sequence + 10, last_offset=e.last_offset + 10) for e in ahead]
    (d / files.segment_name(leo + 10, ".snapshot")).write_bytes(snap.encode(ahead))
    plog.close()
    reopened = open_log(d, cfg(), clean=False)
    assert snapshot_offsets(d) == []
    assert reopened.producer_state.producers[PID].last_seq == next_seq - 1
    assert reopened.append(idem_batch(next_seq), now_ms=T0).base_offset == leo
    reopened.close()


def test_snapshot_state_plus_replay_equals_live_state(tmp_path):
    d = tmp_path / "t-0"
    plog = open_log(d, cfg(segment_bytes=1024), clean=True)
    fill(plog, 9)
    for seq in range(0, 6, 3):  # a second producer after the last roll
        plog.append(idem_batch(seq, n=3, pid=PID + 1, epoch=4), now_ms=T0)
    live = plog.producer_state.to_snapshot()
    plog.close()  # no snapshot at close: the newest snapshot is older than the log end
    assert snapshot_offsets(d)[-1] < plog.log_end_offset
    reopened = open_log(d, cfg(segment_bytes=1024), clean=False)
    assert reopened.producer_state.to_snapshot() == live
    reopened.close()
