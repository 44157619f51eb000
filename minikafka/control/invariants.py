"""The broker-side invariant monitor (issue 20, item 3; opt-in: `minikafka serve --check-invariants`).

It watches what the broker appends and serves, keeping its own account of every transaction it
saw (from its first record on a partition to the marker that ends it there), independent of the
.txnindex and producer state the broker answers from, and counts what breaks exactly-once:

| violation          | what was seen                                                                    |
|--------------------|----------------------------------------------------------------------------------|
| sequence_gap       | an idempotent batch whose first sequence does not follow its producer's last one  |
| above_lso          | a read_committed answer holding a batch at or past the last stable offset         |
| aborted_visible    | a read_committed answer holding a batch of an aborted transaction without listing |
|                    | that transaction as aborted (the client would deliver it)                         |
| missing_marker     | a partition still holding a transaction its coordinator no longer has open        |
|                    | (it completed without a marker there: a hanging transaction)                      |
| txn_offset_visible | an OffsetFetch answer holding a group offset that a transaction still open wrote  |

Violations are counted and reported (the broker logs each one: `invariant_violated`); the control
endpoint's GET /invariants lists the counts and the latest ones. What happened before the monitor
was on (before a restart, say) is not known to it and not judged. Pure: fed events by the broker.
"""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from minikafka.protocol.records import HEADER_SIZE, BatchHeader, peek_size, read_header

SEQUENCE_GAP, ABOVE_LSO, ABORTED_VISIBLE, MISSING_MARKER = "sequence_gap", "above_lso", "aborted_visible", "missing_marker"
TXN_OFFSET_VISIBLE = "txn_offset_visible"
KINDS = (SEQUENCE_GAP, ABOVE_LSO, ABORTED_VISIBLE, MISSING_MARKER, TXN_OFFSET_VISIBLE)
OFFSETS_TOPIC = "__consumer_offsets"
_SEQ_MASK = 0x7FFFFFFF


@dataclass(frozen=True, slots=True)
class Violation:
    kind: str
    topic: str
    partition: int
    producer_id: int
    offset: int
    detail: str

    def describe(self) -> dict[str, Any]:
        return {"kind": self.kind, "topic": self.topic, "partition": self.partition,
                "producer_id": self.producer_id, "offset": self.offset, "detail": self.detail}


TP = tuple[str, int]


class InvariantMonitor:
    def __init__(self, on_violation: Callable[[Violation], None] | None = None, *, keep: int = 100) -> None:
        self.on_violation = on_violation
        self.violations: Counter[str] = Counter()
        self.checked: Counter[str] = Counter()  # batches and answers looked at, per check
        self.recent: deque[Violation] = deque(maxlen=keep)
        self._last_sequence: dict[tuple[TP, int], tuple[int, int]] = {}  # (tp, pid) -> (epoch, last sequence)
        self._open: dict[tuple[TP, int], int] = {}  # (tp, pid) -> first offset of its open transaction
        self._aborted: dict[TP, list[tuple[int, int, int]]] = {}  # tp -> (pid, first offset, marker offset)
        self._suspect: set[tuple[TP, int, int]] = set()  # open (tp, pid, first) seen unknown to the coordinator once
        self._pending_offsets: dict[int, dict[tuple[str, TP], int]] = {}  # pid -> (group, tp) -> offset
        self._group_offsets: dict[tuple[str, TP], int] = {}  # (group, tp) -> last offset made visible

    # ------------------------------------------------------------------------------ appends
    def appended(self, tp: TP, h: BatchHeader) -> None:
        """A data batch the broker appended (offsets assigned)."""
        self.checked["appended"] += 1
        if h.producer_id >= 0 and h.base_sequence >= 0:
            key = (tp, h.producer_id)
            prev = self._last_sequence.get(key)
            if prev is not None:
                epoch, last = prev
                expected = (last + 1) & _SEQ_MASK if h.producer_epoch == epoch else 0
                if h.producer_epoch >= epoch and h.base_sequence != expected:
                    self._violate(SEQUENCE_GAP, tp, h.producer_id, h.base_offset,
                                  f"epoch {h.producer_epoch} sequence {h.base_sequence} after epoch {epoch} "
                                  f"sequence {last} (expected {expected})")
            self._last_sequence[key] = (h.producer_epoch, h.last_sequence)
        if h.is_transactional:
            self._open.setdefault((tp, h.producer_id), h.base_offset)

    def marker(self, tp: TP, producer_id: int, commit: bool, offset: int) -> None:
        """A COMMIT or ABORT marker appended at `offset`."""
        first = self._open.pop((tp, producer_id), None)
        if first is not None and not commit:
            self._aborted.setdefault(tp, []).append((producer_id, first, offset))
        if tp[0] == OFFSETS_TOPIC:
            # The transaction's outcome is one for all its offsets, whichever offsets partition
            # the marker is on first.
            pending = self._pending_offsets.pop(producer_id, None)
            if pending and commit:
                self._group_offsets.update(pending)

    # ------------------------------------------------------------------------------ group offsets
    def offset_committed(self, group: str, tp: TP, offset: int) -> None:
        """A plain OffsetCommit: visible at once."""
        self._group_offsets[(group, tp)] = offset

    def txn_offset_written(self, group: str, producer_id: int, tp: TP, offset: int) -> None:
        """A TxnOffsetCommit of an open transaction: invisible until its COMMIT marker."""
        self._pending_offsets.setdefault(producer_id, {})[(group, tp)] = offset

    def offset_served(self, group: str, tp: TP, offset: int) -> None:
        """An OffsetFetch answer's offset for one partition of a group."""
        self.checked["offset_fetch"] += 1
        if offset < 0 or self._group_offsets.get((group, tp)) == offset:
            return
        for pid, pending in self._pending_offsets.items():
            if pending.get((group, tp)) == offset:
                self._violate(TXN_OFFSET_VISIBLE, tp, pid, offset,
                              f"group {group}: offset {offset}, written by an open transaction, served")
                return

    # ------------------------------------------------------------------------------ reads
    def served_read_committed(self, tp: TP, data: bytes | memoryview, aborted: Iterable[tuple[int, int]],
                              last_stable_offset: int) -> None:
        """A read_committed answer: its batches, the aborted transactions it lists, its LSO."""
        self.checked["read_committed"] += 1
        listed = list(aborted)
        ranges = self._aborted.get(tp, ())
        for h in _headers(data):
            if h.last_offset >= last_stable_offset:
                self._violate(ABOVE_LSO, tp, h.producer_id, h.base_offset,
                              f"batch {h.base_offset}-{h.last_offset} served at LSO {last_stable_offset}")
            if not h.is_transactional or h.is_control:
                continue
            for pid, first, end in ranges:
                if pid == h.producer_id and first <= h.base_offset < end:
                    if not any(a_pid == pid and a_first <= h.base_offset for a_pid, a_first in listed):
                        self._violate(ABORTED_VISIBLE, tp, pid, h.base_offset,
                                      f"batch {h.base_offset}-{h.last_offset} of the transaction aborted at {end}, "
                                      "not listed as aborted")
                    break

    # ------------------------------------------------------------------------------ markers
    def check_open(self, still_open: Callable[[int], bool]) -> None:
        """Every transaction open on a partition must be open at its coordinator too
        (`still_open(producer_id)`); one that is not, twice in a row (a commit in flight writes
        its markers between two checks), ended without a marker there."""
        self.checked["open_transactions"] += len(self._open)
        suspect = set()
        for (tp, pid), first in list(self._open.items()):
            if still_open(pid):
                continue
            key = (tp, pid, first)
            if key in self._suspect:
                self._violate(MISSING_MARKER, tp, pid, first,
                              f"transaction open at {first} with no marker; its coordinator has it ended")
                del self._open[(tp, pid)]  # reported once
            else:
                suspect.add(key)
        self._suspect = suspect

    # ------------------------------------------------------------------------------ report
    def describe(self) -> dict[str, Any]:
        return {"violations": {k: self.violations[k] for k in KINDS}, "checked": dict(self.checked),
                "recent": [v.describe() for v in self.recent]}

    def _violate(self, kind: str, tp: TP, producer_id: int, offset: int, detail: str) -> None:
        v = Violation(kind, tp[0], tp[1], producer_id, offset, detail)
        self.violations[kind] += 1
        self.recent.append(v)
        if self.on_violation is not None:
            self.on_violation(v)


def _headers(data: bytes | memoryview) -> Iterable[BatchHeader]:
    """The headers of the whole batches in an answer (no CRC: what was served, not whether it is
    intact, is judged here)."""
    pos, end = 0, len(data)
    while end - pos >= HEADER_SIZE:
        _, size = peek_size(data, pos)
        if size < HEADER_SIZE or pos + size > end:
            return
        yield read_header(data, pos)
        pos += size
