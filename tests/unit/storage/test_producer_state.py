"""ProducerStateManager: Kafka's sequence and epoch rules for idempotent producers (protocol.md P-10, P-11).

Batches are real record batch headers (built with `records.build_batch`, offsets patched in as the
log does), checked with `check` and folded with `update` in the order PartitionLog uses.
"""

from __future__ import annotations

import pytest

from minikafka.protocol import records
from minikafka.protocol.errors import ErrorCode
from minikafka.storage.producer_state import (
    NUM_BATCHES_TO_RETAIN,
    InvalidProducerEpoch,
    OutOfOrderSequence,
    ProducerStateManager,
)

pytestmark = pytest.mark.unit

INT32_MAX = 2**31 - 1
PID = 4000
T0 = 1_700_000_000_000


def header(*, pid: int = PID, epoch: int = 0, seq: int = 0, n: int = 1, offset: int = 0,
           ts: int = T0, transactional: bool = False) -> records.BatchHeader:
    """The header of an n-record batch whose offsets start at `offset` (as after the append)."""
    batch = records.build_batch([(b"k", b"v%d" % i) for i in range(n)], timestamp_ms=ts, producer_id=pid,
                                producer_epoch=epoch, base_sequence=seq, transactional=transactional)
    records.set_base_offset(batch, 0, offset)
    return records.read_header(batch)


class Log:
    """Just enough of PartitionLog: assigns offsets and applies check -> append -> update."""

    def __init__(self, state: ProducerStateManager | None = None, next_offset: int = 0) -> None:
        self.state = state or ProducerStateManager()
        self.next_offset = next_offset

    def append(self, *, pid: int = PID, epoch: int = 0, seq: int = 0, n: int = 1,
               ts: int = T0) -> tuple[int, int, bool]:
        """(first offset, last offset, duplicate?) of the batch; raises the state's errors."""
        h = header(pid=pid, epoch=epoch, seq=seq, n=n, offset=0, ts=ts)
        dup = self.state.check(h)
        if dup is not None:
            return dup.first_offset, dup.last_offset, True
        placed = header(pid=pid, epoch=epoch, seq=seq, n=n, offset=self.next_offset, ts=ts)
        self.state.update(placed)
        self.next_offset = placed.last_offset + 1
        return placed.base_offset, placed.last_offset, False


# ------------------------------------------------------------------------------------- duplicates


def test_duplicate_of_each_of_last_five_batches_returns_original_offsets():
    log = Log()
    placed = []
    seq = 0
    for n in (3, 1, 4, 2, 5):
        first, last, dup = log.append(seq=seq, n=n)
        assert not dup
        placed.append((seq, n, first, last))
        seq += n
    assert log.next_offset == 15
    for seq, n, first, last in placed:
        assert log.append(seq=seq, n=n) == (first, last, True)
    assert log.next_offset == 15  # nothing was appended by the retries


def test_sixth_oldest_batch_is_no_longer_a_duplicate():
    log = Log()
    for seq in range(NUM_BATCHES_TO_RETAIN + 1):
        log.append(seq=seq)
    # Batches 1..5 are retained: a retry of batch 1 is still found.
    assert log.append(seq=1) == (1, 1, True)
    # Batch 0 fell out of the window: its retry is an out-of-order sequence, not a duplicate.
    with pytest.raises(OutOfOrderSequence) as exc:
        log.append(seq=0)
    assert exc.value.error_code == ErrorCode.out_of_order_sequence_number


def test_duplicate_needs_same_first_and_last_sequence():
    log = Log()
    log.append(seq=0, n=3)  # sequences 0..2
    with pytest.raises(OutOfOrderSequence):
        log.append(seq=0, n=2)  # same first sequence, different last: not the same batch


def test_duplicate_check_ignores_batches_of_another_epoch():
    log = Log()
    log.append(epoch=0, seq=0)
    log.append(epoch=1, seq=0)
    # seq 0 of epoch 1 is a duplicate; seq 0 of epoch 0 is a fenced (older) epoch.
    assert log.append(epoch=1, seq=0) == (1, 1, True)
    with pytest.raises(InvalidProducerEpoch):
        log.append(epoch=0, seq=0)


# ------------------------------------------------------------------------------------- epochs


def test_older_epoch_is_invalid_producer_epoch():
    log = Log()
    log.append(epoch=3, seq=0)
    with pytest.raises(InvalidProducerEpoch) as exc:
        log.append(epoch=2, seq=1)
    assert exc.value.error_code == ErrorCode.invalid_producer_epoch
    assert log.next_offset == 1


def test_newer_epoch_at_sequence_zero_is_accepted_and_resets_the_window():
    log = Log()
    log.append(epoch=0, seq=0, n=2)
    log.append(epoch=0, seq=2, n=2)
    first, last, dup = log.append(epoch=1, seq=0, n=1)
    assert (first, last, dup) == (4, 4, False)
    entry = log.state.producers[PID]
    assert entry.producer_epoch == 1
    assert [b.first_seq for b in entry.batches] == [0]
    # The next batch of the new epoch follows its own sequence.
    assert log.append(epoch=1, seq=1) == (5, 5, False)


def test_newer_epoch_not_at_sequence_zero_is_out_of_order():
    log = Log()
    log.append(epoch=0, seq=0)
    with pytest.raises(OutOfOrderSequence):
        log.append(epoch=1, seq=1)
    with pytest.raises(OutOfOrderSequence):
        log.append(epoch=5, seq=42)
    assert log.next_offset == 1
    assert log.state.producers[PID].producer_epoch == 0


# ------------------------------------------------------------------------------------- sequences


@pytest.mark.parametrize("seq", [0, 1, 17, 1_000_000, INT32_MAX])
def test_unknown_producer_accepts_any_sequence(seq):
    log = Log()
    assert log.append(pid=999, epoch=7, seq=seq) == (0, 0, False)
    assert log.state.producers[999].last_seq == seq


def test_gap_is_out_of_order_and_nothing_changes():
    log = Log()
    log.append(seq=0, n=2)  # last sequence 1
    with pytest.raises(OutOfOrderSequence):
        log.append(seq=5)
    with pytest.raises(OutOfOrderSequence):
        log.append(seq=1)  # overlaps the last batch without being it
    assert log.state.producers[PID].last_seq == 1
    assert log.append(seq=2) == (2, 2, False)


def test_sequence_wraps_at_int32_max():
    log = Log()
    log.append(seq=INT32_MAX - 1, n=2)  # sequences INT32_MAX-1 .. INT32_MAX
    assert log.state.producers[PID].last_seq == INT32_MAX
    with pytest.raises(OutOfOrderSequence):
        log.append(seq=1)
    assert log.append(seq=0, n=3) == (2, 4, False)
    assert log.state.producers[PID].last_seq == 2


def test_batch_crossing_int32_max_has_wrapped_last_sequence():
    h = header(seq=INT32_MAX - 1, n=4)  # INT32_MAX-1, INT32_MAX, 0, 1
    assert h.last_sequence == 1
    log = Log()
    log.append(seq=INT32_MAX - 1, n=4)
    assert log.append(seq=INT32_MAX - 1, n=4) == (0, 3, True)
    assert log.append(seq=2) == (4, 4, False)


def test_producers_are_independent():
    log = Log()
    log.append(pid=1, seq=0)
    log.append(pid=2, seq=100)
    log.append(pid=1, seq=1)
    with pytest.raises(OutOfOrderSequence):
        log.append(pid=2, seq=0)
    assert log.append(pid=2, seq=101) == (3, 3, False)


# ------------------------------------------------------------------------------------- expiry


def test_expire_removes_idle_producers_only():
    log = Log()
    log.append(pid=1, seq=0, ts=T0)
    log.append(pid=2, seq=0, ts=T0 + 5_000)
    gone = log.state.expire(now_ms=T0 + 10_000, expiration_ms=8_000)
    assert gone == [1]
    assert set(log.state.producers) == {2}
    # The expired producer has no state any more: any sequence is accepted again (KIP-360).
    assert log.append(pid=1, seq=57, ts=T0 + 10_000) == (2, 2, False)


def test_expire_keeps_producer_with_open_transaction():
    state = ProducerStateManager()
    state.update(header(pid=9, seq=0, offset=0, ts=T0, transactional=True))
    assert state.expire(now_ms=T0 + 10**9, expiration_ms=1) == []
    assert 9 in state.producers
    assert state.first_unstable_offset() == 0


# ------------------------------------------------------------------------------------- snapshots


def test_snapshot_entries_hold_the_last_batch():
    log = Log()
    log.append(pid=1, epoch=2, seq=0, n=3, ts=T0)
    log.append(pid=1, epoch=2, seq=3, n=4, ts=T0 + 1)
    log.append(pid=2, epoch=0, seq=10, n=1, ts=T0 + 2)
    entries = log.state.to_snapshot()
    assert [(e.producer_id, e.producer_epoch, e.last_sequence, e.last_offset, e.offset_delta, e.timestamp,
             e.coordinator_epoch, e.current_txn_first_offset) for e in entries] == [
        (1, 2, 6, 6, 3, T0 + 1, -1, -1),
        (2, 0, 10, 7, 0, T0 + 2, -1, -1),
    ]


def test_from_snapshot_keeps_the_last_batch_for_dedup():
    log = Log()
    log.append(seq=0, n=2)
    log.append(seq=2, n=3)  # offsets 2..4, sequences 2..4
    restored = Log(ProducerStateManager.from_snapshot(log.state.to_snapshot()), next_offset=log.next_offset)
    # The last batch is still recognised as a duplicate, with its original offsets.
    assert restored.append(seq=2, n=3) == (2, 4, True)
    # Only the last batch is in a snapshot (Kafka's format): older ones are out of order now.
    with pytest.raises(OutOfOrderSequence):
        restored.append(seq=0, n=2)
    # The producer continues where it was.
    assert restored.append(seq=5) == (5, 5, False)


def test_from_snapshot_round_trip_is_stable():
    log = Log()
    for pid in (5, 3, 8):
        log.append(pid=pid, epoch=pid % 3, seq=pid * 10, n=pid)
    entries = log.state.to_snapshot()
    assert ProducerStateManager.from_snapshot(entries).to_snapshot() == entries


def test_from_snapshot_restores_open_transaction():
    state = ProducerStateManager()
    state.update(header(pid=9, seq=0, n=2, offset=40, transactional=True))
    restored = ProducerStateManager.from_snapshot(state.to_snapshot())
    assert restored.first_unstable_offset() == 40
    assert restored.ongoing_txn_first_offset(9) == 40


@pytest.mark.unit
def test_known_epoch_without_batches_must_start_at_sequence_zero():
    """Kafka exempts only a producer with no epoch at all; an entry made by a marker (epoch known,
    no data batch) must continue at sequence 0 (checkSequence: inSequence(-1, seq))."""
    from minikafka.protocol.records import build_control_batch, read_header
    from minikafka.storage.producer_state import OutOfOrderSequence, ProducerStateManager

    psm = ProducerStateManager()
    marker = read_header(build_control_batch(producer_id=9, producer_epoch=2, commit=False, coordinator_epoch=0,
                                             timestamp_ms=1))
    psm.update_marker(marker, 0, 0)
    from minikafka.protocol.records import build_batch

    late = read_header(build_batch([(None, b"x")], producer_id=9, producer_epoch=2, base_sequence=5))
    with pytest.raises(OutOfOrderSequence):
        psm.check(late)
    first = read_header(build_batch([(None, b"x")], producer_id=9, producer_epoch=2, base_sequence=0))
    assert psm.check(first) is None
