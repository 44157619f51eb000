"""What a partition's log says happened to each record (pure): read from its raw record batches,
control batches included, as the broker stores them.

A transactional record's fate is the marker its producer wrote next on the partition: COMMIT,
ABORT, or none yet (the transaction is open: it holds the last stable offset). A record of a
non-transactional producer is simply there. Separately, `client_view` replays what a
read_committed consumer keeps of a read_committed Fetch (the batches below the LSO and the aborted
transactions the broker lists), so the two can be compared: a record the markers say was aborted
but that the broker's read_committed answer lets through is the broker's fault.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from minikafka.protocol.records import control_type, iter_records, split_batches

COMMITTED, ABORTED, OPEN, PLAIN = "committed", "aborted", "open", "plain"


@dataclass(frozen=True, slots=True)
class LoggedRecord:
    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    producer_id: int
    producer_epoch: int
    outcome: str  # COMMITTED, ABORTED, OPEN (no marker yet) or PLAIN (not transactional)

    @property
    def delivered(self) -> bool:
        """What a read_committed consumer is meant to see (once the transaction is decided)."""
        return self.outcome in (COMMITTED, PLAIN)


def reconstruct(topic: str, partition: int, data: Iterable[bytes]) -> list[LoggedRecord]:
    """Every data record of the partition, in offset order, with its outcome. `data`: the record
    batches of read_uncommitted Fetch answers, in order (overlaps are skipped by offset)."""
    out: list[LoggedRecord] = []
    pending: dict[int, list[int]] = {}  # producer id -> indexes in `out` of its open transaction
    next_offset = -1
    for chunk in data:
        for pos, h in split_batches(chunk):
            if h.last_offset < next_offset:
                continue  # a batch an earlier answer already gave
            next_offset = h.next_offset
            if h.is_control:
                outcome = COMMITTED if control_type(chunk, pos) == 1 else ABORTED
                for i in pending.pop(h.producer_id, []):
                    r = out[i]
                    out[i] = LoggedRecord(r.topic, r.partition, r.offset, r.key, r.value, r.producer_id,
                                          r.producer_epoch, outcome)
                continue
            for rec in iter_records(chunk, pos):
                if h.is_transactional:
                    pending.setdefault(h.producer_id, []).append(len(out))
                out.append(LoggedRecord(topic, partition, rec.offset, _bytes(rec.key), _bytes(rec.value),
                                        h.producer_id, h.producer_epoch, OPEN if h.is_transactional else PLAIN))
    return out


def client_view(data: Iterable[tuple[bytes, Iterable[tuple[int, int]]]]) -> set[int]:
    """Offsets a read_committed consumer keeps from read_committed Fetch answers: (records,
    aborted transactions as (producer id, first offset)) each. As Kafka's clients do: a
    transactional batch of a producer whose aborted transaction started at or before it is
    skipped until that producer's ABORT marker; control batches are never delivered."""
    kept: set[int] = set()
    for chunk, aborted in data:
        starts = sorted(aborted, key=lambda a: a[1])
        active: set[int] = set()
        for pos, h in split_batches(chunk):
            while starts and starts[0][1] <= h.last_offset:
                active.add(starts.pop(0)[0])
            if h.is_control:
                if h.producer_id in active and control_type(chunk, pos) == 0:
                    active.discard(h.producer_id)
                continue
            if h.is_transactional and h.producer_id in active:
                continue
            kept.update(r.offset for r in iter_records(chunk, pos))
    return kept


def _bytes(b: bytes | memoryview | None) -> bytes | None:
    return None if b is None else bytes(b)
