"""Per-partition producer state (Kafka's ProducerStateManager, ProducerAppendInfo, ProducerStateEntry).

Theory of operation
- For each producer id the partition keeps its epoch, the metadata of its last 5 batches
  (first/last sequence, last offset, max timestamp), the coordinator epoch of its last marker and,
  while it has an open transaction here, the offset of the transaction's first batch.
- A client batch is checked before anything is written (`check`), in Kafka's order: a duplicate
  of one of the last 5 batches (same epoch, same sequence range) is answered with its original
  offsets and not appended; an older epoch is INVALID_PRODUCER_EPOCH; a newer epoch must start
  at sequence 0 unless no epoch is known; within an epoch the first sequence must follow the last
  one (Int32 max wraps to 0), except that a producer with no state at all is accepted at any
  sequence (its state may have been removed by retention or expiry). Only after the log write
  succeeds is the state updated (`update`), so a failed write leaves no trace.
- Open transactions give the last stable offset: the smallest first offset of any open
  transaction, or the high watermark when there is none. A control batch (COMMIT/ABORT marker)
  ends the producer's open transaction and is reported as a CompletedTxn so the log can record
  aborts in the transaction index.
- The state is a fold over the log: it can be rebuilt by replaying batches from a snapshot.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import NamedTuple

from minikafka.protocol.errors import ErrorCode
from minikafka.protocol.records import CONTROL_ABORT, BatchHeader
from minikafka.storage.errors import StorageError
from minikafka.storage.snapshot import SnapshotEntry

NUM_BATCHES_TO_RETAIN = 5
INT32_MAX = 2**31 - 1


class InvalidProducerEpoch(StorageError):
    """Kafka: INVALID_PRODUCER_EPOCH (47)."""

    error_code = ErrorCode.invalid_producer_epoch


class OutOfOrderSequence(StorageError):
    """Kafka: OUT_OF_ORDER_SEQUENCE_NUMBER (45)."""

    error_code = ErrorCode.out_of_order_sequence_number


class BatchMetadata(NamedTuple):
    first_seq: int
    last_seq: int
    last_offset: int
    offset_delta: int
    timestamp: int

    @property
    def first_offset(self) -> int:
        return self.last_offset - self.offset_delta


@dataclass
class ProducerEntry:
    producer_id: int
    producer_epoch: int = -1
    batches: deque[BatchMetadata] = field(default_factory=lambda: deque(maxlen=NUM_BATCHES_TO_RETAIN))
    coordinator_epoch: int = -1
    current_txn_first_offset: int = -1
    last_timestamp: int = -1

    @property
    def last_seq(self) -> int:
        return self.batches[-1].last_seq if self.batches else -1

    @property
    def last_offset(self) -> int:
        return self.batches[-1].last_offset if self.batches else -1

    def find_duplicate(self, h: BatchHeader) -> BatchMetadata | None:
        if h.producer_epoch != self.producer_epoch:
            return None
        last = h.last_sequence
        for b in self.batches:
            if b.first_seq == h.base_sequence and b.last_seq == last:
                return b
        return None


class CompletedTxn(NamedTuple):
    producer_id: int
    first_offset: int
    last_offset: int  # the marker's offset
    is_aborted: bool


def in_sequence(last_seq: int, next_seq: int) -> bool:
    return next_seq == last_seq + 1 or (next_seq == 0 and last_seq == INT32_MAX)


class ProducerStateManager:
    def __init__(self) -> None:
        self.producers: dict[int, ProducerEntry] = {}
        # first offset -> producer id, for the open transactions (gives the LSO).
        self.ongoing_txns: dict[int, int] = {}

    # ------------------------------------------------------------------------------ checks
    def check(self, h: BatchHeader) -> BatchMetadata | None:
        """Validate a client batch. Returns the original batch if it is a duplicate.

        Raises InvalidProducerEpoch or OutOfOrderSequence.
        """
        entry = self.producers.get(h.producer_id)
        if entry is None:
            return None  # no state: any epoch, any sequence (KIP-360; redpanda#22670)
        dup = entry.find_duplicate(h)
        if dup is not None:
            return dup
        if h.producer_epoch < entry.producer_epoch:
            raise InvalidProducerEpoch(
                f"epoch {h.producer_epoch} of producer {h.producer_id} is older than {entry.producer_epoch}")
        if h.is_control:
            return None
        if h.producer_epoch != entry.producer_epoch:
            if h.base_sequence != 0 and entry.producer_epoch != -1:
                raise OutOfOrderSequence(
                    f"new epoch {h.producer_epoch} of producer {h.producer_id} starts at sequence "
                    f"{h.base_sequence}, not 0")
        elif entry.producer_epoch != -1 and not in_sequence(entry.last_seq, h.base_sequence):
            raise OutOfOrderSequence(
                f"producer {h.producer_id} sent sequence {h.base_sequence}, expected {entry.last_seq + 1}")
        return None

    # ------------------------------------------------------------------------------ updates
    def update(self, h: BatchHeader) -> None:
        """Fold one appended data batch (offsets assigned) into the state."""
        entry = self.producers.get(h.producer_id)
        if entry is None:
            entry = ProducerEntry(h.producer_id)
            self.producers[h.producer_id] = entry
        if h.producer_epoch != entry.producer_epoch:
            entry.batches.clear()
            entry.producer_epoch = h.producer_epoch
        entry.last_timestamp = max(entry.last_timestamp, h.max_timestamp)
        if h.base_sequence >= 0:
            entry.batches.append(BatchMetadata(h.base_sequence, h.last_sequence, h.last_offset,
                                               h.last_offset_delta, h.max_timestamp))
        if h.is_transactional and entry.current_txn_first_offset < 0:
            entry.current_txn_first_offset = h.base_offset
            self.ongoing_txns[h.base_offset] = h.producer_id

    def _end_txn(self, entry: ProducerEntry, h: BatchHeader, control_type: int,
                 coordinator_epoch: int) -> CompletedTxn | None:
        if coordinator_epoch >= 0:
            entry.coordinator_epoch = coordinator_epoch
        first = entry.current_txn_first_offset
        if first < 0:
            return None  # a marker with no data before it changes nothing
        entry.current_txn_first_offset = -1
        self.ongoing_txns.pop(first, None)
        return CompletedTxn(h.producer_id, first, h.base_offset, control_type == CONTROL_ABORT)

    def update_marker(self, h: BatchHeader, control_type: int, coordinator_epoch: int) -> CompletedTxn | None:
        """Fold an appended control batch whose type and coordinator epoch were parsed."""
        entry = self.producers.get(h.producer_id)
        if entry is None:
            entry = ProducerEntry(h.producer_id, producer_epoch=h.producer_epoch)
            self.producers[h.producer_id] = entry
        if h.producer_epoch > entry.producer_epoch:
            entry.batches.clear()
            entry.producer_epoch = h.producer_epoch
        entry.last_timestamp = max(entry.last_timestamp, h.max_timestamp)
        return self._end_txn(entry, h, control_type, coordinator_epoch)

    def first_unstable_offset(self) -> int | None:
        return min(self.ongoing_txns) if self.ongoing_txns else None

    def ongoing_txn_first_offset(self, producer_id: int) -> int:
        entry = self.producers.get(producer_id)
        return entry.current_txn_first_offset if entry is not None else -1

    # ------------------------------------------------------------------------------ expiry
    def expire(self, now_ms: int, expiration_ms: int) -> list[int]:
        """Remove producers idle for longer than producer.id.expiration.ms with no open txn."""
        gone = [pid for pid, e in self.producers.items()
                if e.current_txn_first_offset < 0 and now_ms - e.last_timestamp >= expiration_ms]
        for pid in gone:
            del self.producers[pid]
        return gone

    # ------------------------------------------------------------------------------ snapshots
    def to_snapshot(self) -> list[SnapshotEntry]:
        out = []
        for e in sorted(self.producers.values(), key=lambda e: e.producer_id):
            last = e.batches[-1] if e.batches else None
            out.append(SnapshotEntry(
                producer_id=e.producer_id, producer_epoch=e.producer_epoch,
                last_sequence=last.last_seq if last else -1,
                last_offset=last.last_offset if last else -1,
                offset_delta=last.offset_delta if last else 0,
                timestamp=last.timestamp if last else e.last_timestamp,
                coordinator_epoch=e.coordinator_epoch,
                current_txn_first_offset=e.current_txn_first_offset,
            ))
        return out

    @classmethod
    def from_snapshot(cls, entries: list[SnapshotEntry]) -> ProducerStateManager:
        m = cls()
        for s in entries:
            e = ProducerEntry(s.producer_id, s.producer_epoch, coordinator_epoch=s.coordinator_epoch,
                              current_txn_first_offset=s.current_txn_first_offset, last_timestamp=s.timestamp)
            if s.last_offset >= 0:
                first_seq = (s.last_sequence - s.offset_delta) & INT32_MAX
                e.batches.append(BatchMetadata(first_seq, s.last_sequence, s.last_offset, s.offset_delta,
                                               s.timestamp))
            m.producers[s.producer_id] = e
            if s.current_txn_first_offset >= 0:
                m.ongoing_txns[s.current_txn_first_offset] = s.producer_id
        return m
