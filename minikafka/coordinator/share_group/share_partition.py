"""One share-partition of a share group (KIP-932): which records are in flight, who holds them,
how often they were delivered, and where the group's start offset stands. Pure: time is passed in,
nothing is read or written here; the broker feeds it the batches a fetch read and persists what it
returns (issue 23).

Theory of operation (Kafka 4.3: SharePartition, InFlightState, RecordState)
- The in-flight window runs from the share-partition start offset (SPSO) to the end offset (SPEO,
  the last offset ever acquired). Every offset in it has a state: AVAILABLE (may be acquired),
  ACQUIRED (locked by one member until it acknowledges or its lock expires), ACKNOWLEDGED or
  ARCHIVED (both final). Records past the SPEO were never delivered and are AVAILABLE implicitly.
- Acquiring (a ShareFetch) takes AVAILABLE offsets inside the window first, then new ones past the
  SPEO in whole log batches (a batch's records go to one member, so MaxRecords is a soft limit, as in
  Kafka's default batch_optimized mode), while fewer than `max_record_locks` offsets are in flight.
  Each acquisition adds one to the record's delivery count (the first delivery is 1).
- Acknowledging applies to the member's own ACQUIRED records only, all of a request or none: ACCEPT
  -> ACKNOWLEDGED, REJECT and GAP -> ARCHIVED, RELEASE -> AVAILABLE, RENEW restarts the lock.
- A record released or timed out whose delivery count reached `delivery_count_limit` is ARCHIVED
  instead of AVAILABLE. A member's records released because it left (its share session closed) go
  back AVAILABLE with the count lowered again: they were fetched, not delivered.
- The SPSO moves past the leading run of final records; final records behind it are forgotten.
- What is persisted (`take_changes`: what acknowledgements, lock expiries and releases changed) is
  never ACQUIRED: an acquisition is not written, so after a restart the records a member held are
  AVAILABLE again with the count they had before, and are redelivered; nothing ACKNOWLEDGED is.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from minikafka.protocol.errors import ErrorCode


class RecordState(enum.IntEnum):
    """Kafka's RecordState ids, as the share-group state records carry them (DeliveryState)."""

    AVAILABLE = 0
    ACQUIRED = 1
    ACKNOWLEDGED = 2
    ARCHIVED = 4

    @property
    def final(self) -> bool:
        return self in (RecordState.ACKNOWLEDGED, RecordState.ARCHIVED)


class AcknowledgeType(enum.IntEnum):
    GAP = 0       # no record here for the client (a control record, a compacted offset): archived
    ACCEPT = 1
    RELEASE = 2
    REJECT = 3
    RENEW = 4     # ShareAcknowledge v2 (KIP-1222): hold the lock again, change nothing else


# What an acknowledgement does to an ACQUIRED record (RELEASE may still archive: delivery limit).
_ACK_TARGET = {AcknowledgeType.GAP: RecordState.ARCHIVED, AcknowledgeType.ACCEPT: RecordState.ACKNOWLEDGED,
               AcknowledgeType.RELEASE: RecordState.AVAILABLE, AcknowledgeType.REJECT: RecordState.ARCHIVED}


@dataclass(frozen=True, slots=True)
class ShareConfig:
    """The group's effective settings (broker defaults: group.share.delivery.count.limit 5,
    group.share.partition.max.record.locks 2000, group.share.record.lock.duration.ms 30000)."""

    delivery_count_limit: int = 5
    max_record_locks: int = 2000
    lock_duration_ms: int = 30_000


@dataclass(slots=True)
class InFlight:
    state: RecordState
    delivery_count: int
    member_id: str = ""
    lock_deadline_ms: int = -1


@dataclass(frozen=True, slots=True)
class LogBatch:
    """A record batch a fetch read: its offsets, and whether it is data of an aborted transaction
    (read_committed: such records are archived, never delivered)."""

    base_offset: int
    last_offset: int
    aborted: bool = False


@dataclass(frozen=True, slots=True)
class AcquiredRecords:
    first_offset: int
    last_offset: int
    delivery_count: int


@dataclass(frozen=True, slots=True)
class AckBatch:
    """An AcknowledgementBatch: one type for the whole range, or one per offset."""

    first_offset: int
    last_offset: int
    types: tuple[int, ...]

    def type_at(self, offset: int) -> int:
        return self.types[0] if len(self.types) == 1 else self.types[offset - self.first_offset]


@dataclass(frozen=True, slots=True)
class StateBatch:
    """A persisted range (ShareSnapshotValue/ShareUpdateValue StateBatches)."""

    first_offset: int
    last_offset: int
    delivery_state: RecordState
    delivery_count: int


def validate_ack_batches(batches: Sequence[AckBatch]) -> bool:
    """Kafka's request-level check of a partition's AcknowledgementBatches (INVALID_REQUEST when
    False): each range ordered and after the previous one, one type or one per offset, known types."""
    previous_last = -1
    for b in batches:
        if b.first_offset > b.last_offset or b.first_offset < previous_last or b.first_offset < 0:
            return False
        if not b.types or (len(b.types) > 1 and len(b.types) != b.last_offset - b.first_offset + 1):
            return False
        if any(t < 0 or t > AcknowledgeType.RENEW for t in b.types):
            return False
        previous_last = b.last_offset
    return True


class SharePartition:
    def __init__(self, config: ShareConfig, start_offset: int,
                 state_batches: Iterable[StateBatch] = ()) -> None:
        """`start_offset`: the persisted SPSO, or where share.auto.offset.reset put a new one;
        `state_batches`: the persisted in-flight states beyond it."""
        self.config = config
        self.start_offset = start_offset
        self.records: dict[int, InFlight] = {}
        # What acknowledgements, lock expiries and releases changed since the last take_changes():
        # offset -> (state, delivery count), what the next write of the share state carries.
        self.changes: dict[int, tuple[RecordState, int]] = {}
        self.end_offset = start_offset - 1  # the last offset acquired; start - 1 while none is
        for b in state_batches:
            state = RecordState.AVAILABLE if b.delivery_state is RecordState.ACQUIRED else b.delivery_state
            for o in range(max(b.first_offset, start_offset), b.last_offset + 1):
                self.records[o] = InFlight(state, b.delivery_count)
                self.end_offset = max(self.end_offset, o)
        # Offsets of the window no batch names were never delivered (an acquisition is not
        # persisted): AVAILABLE, delivery count 0. The window stays dense.
        for o in range(start_offset, self.end_offset + 1):
            self.records.setdefault(o, InFlight(RecordState.AVAILABLE, 0))
        self._advance_start()

    # ------------------------------------------------------------------------------ views
    @property
    def in_flight(self) -> int:
        return self.end_offset - self.start_offset + 1 if self.end_offset >= self.start_offset else 0

    def next_fetch_offset(self) -> int:
        """Where a fetch for this partition reads from: the first AVAILABLE offset in the window,
        or the offset after it."""
        for o in range(self.start_offset, self.end_offset + 1):
            r = self.records.get(o)
            if r is not None and r.state is RecordState.AVAILABLE:
                return o
        return self.end_offset + 1

    def can_acquire(self) -> bool:
        return self.next_fetch_offset() <= self.end_offset or self.in_flight < self.config.max_record_locks

    # ------------------------------------------------------------------------------ acquire
    def acquire(self, member_id: str, batches: Sequence[LogBatch], *, max_records: int,
                now_ms: int) -> list[AcquiredRecords]:
        """A ShareFetch's acquisition over the batches its log read returned (in offset order, from
        next_fetch_offset on): the ranges the member now holds."""
        budget = max(min(max_records, self.config.max_record_locks - self.in_flight), 0)
        taken: list[tuple[int, int]] = []  # (offset, delivery count)
        deadline = now_ms + self.config.lock_duration_ms
        cursor = self.next_fetch_offset()  # where the read began
        for b in batches:
            if b.last_offset < self.start_offset:
                continue
            # Offsets of the window the log no longer has (compaction removed them) are archived.
            self._archive_available(cursor, min(b.base_offset, self.end_offset + 1))
            cursor = b.last_offset + 1
            # Offsets already in the window: AVAILABLE ones are delivered again.
            inside_last = min(b.last_offset, self.end_offset)
            for o in range(max(b.base_offset, self.start_offset), inside_last + 1):
                if len(taken) >= max_records:
                    break
                r = self.records.get(o)
                if r is None or r.state is not RecordState.AVAILABLE:
                    continue
                if b.aborted:
                    r.state = RecordState.ARCHIVED
                    continue
                r.state, r.member_id, r.lock_deadline_ms = RecordState.ACQUIRED, member_id, deadline
                r.delivery_count += 1
                taken.append((o, r.delivery_count))
            # New offsets past the SPEO: the rest of the batch, whole, while the window has room.
            if b.last_offset > self.end_offset:
                if budget <= 0 or len(taken) >= max_records:
                    break
                first = max(b.base_offset, self.end_offset + 1, self.start_offset)
                for o in range(max(self.end_offset + 1, self.start_offset), first):
                    self.records[o] = InFlight(RecordState.ARCHIVED, 0)  # not in the log: a gap
                for o in range(first, b.last_offset + 1):
                    if b.aborted:
                        self.records[o] = InFlight(RecordState.ARCHIVED, 1)
                    else:
                        self.records[o] = InFlight(RecordState.ACQUIRED, 1, member_id, deadline)
                        taken.append((o, 1))
                count = b.last_offset - first + 1
                budget -= count
                self.end_offset = b.last_offset
        self._advance_start()
        return _ranges(taken)

    # ------------------------------------------------------------------------------ acknowledge
    def acknowledge(self, member_id: str, batches: Sequence[AckBatch], now_ms: int) -> ErrorCode:
        """All of the batches or none: INVALID_REQUEST for a range past the window or a bad type,
        INVALID_RECORD_STATE for a record not ACQUIRED by this member."""
        if not validate_ack_batches(batches):
            return ErrorCode.invalid_request
        records, acquired, start = self.records, RecordState.ACQUIRED, self.start_offset
        staged: list[tuple[int, int, AckBatch]] = []   # first, last, batch: checked, not yet applied
        for b in batches:
            if b.last_offset < start:
                continue  # already behind the start offset: nothing to do
            if b.last_offset > self.end_offset:
                return ErrorCode.invalid_request
            first = max(b.first_offset, start)
            for o in range(first, b.last_offset + 1):
                r = records.get(o)
                if r is None or r.state is not acquired or r.member_id != member_id:
                    return ErrorCode.invalid_record_state
            staged.append((first, b.last_offset, b))
        renewed = now_ms + self.config.lock_duration_ms
        for first, last, b in staged:   # all checked: apply (one type per batch is the common case)
            single = AcknowledgeType(b.types[0]) if len(b.types) == 1 else None
            for o in range(first, last + 1):
                ack = single if single is not None else AcknowledgeType(b.type_at(o))
                if ack is AcknowledgeType.RENEW:
                    records[o].lock_deadline_ms = renewed
                else:
                    self._settle(o, records[o], _ACK_TARGET[ack])
        self._advance_start()
        return ErrorCode.none

    # ------------------------------------------------------------------------------ release
    def expire_locks(self, now_ms: int) -> list[int]:
        """Records whose acquisition lock ran out go back (or are archived at the delivery limit);
        the offsets that changed."""
        changed = []
        for o, r in self.records.items():
            if r.state is RecordState.ACQUIRED and r.lock_deadline_ms <= now_ms:
                self._settle(o, r, RecordState.AVAILABLE)
                changed.append(o)
        if changed:
            self._advance_start()
        return changed

    def release_member(self, member_id: str) -> list[int]:
        """The member left (its share session closed): what it held is AVAILABLE again, its delivery
        count lowered (fetched, not delivered), never archived by the limit."""
        changed = []
        for o, r in self.records.items():
            if r.state is RecordState.ACQUIRED and r.member_id == member_id:
                r.state, r.member_id, r.lock_deadline_ms = RecordState.AVAILABLE, "", -1
                r.delivery_count = max(0, r.delivery_count - 1)
                self.changes[o] = (r.state, r.delivery_count)
                changed.append(o)
        return changed

    def next_lock_deadline(self) -> int | None:
        deadlines = [r.lock_deadline_ms for r in self.records.values() if r.state is RecordState.ACQUIRED]
        return min(deadlines) if deadlines else None

    def log_start_moved(self, log_start_offset: int) -> None:
        """Retention or DeleteRecords moved the log start past the SPSO: AVAILABLE records below it
        are archived (ACQUIRED ones wait for their member or their lock), the SPSO follows it."""
        if log_start_offset <= self.start_offset:
            return
        for o, r in self.records.items():
            if o < log_start_offset and r.state is RecordState.AVAILABLE:
                r.state = RecordState.ARCHIVED
        self.start_offset = log_start_offset
        self.end_offset = max(self.end_offset, log_start_offset - 1)
        for o in [o for o in self.records if o < log_start_offset and self.records[o].state.final]:
            del self.records[o]

    # ------------------------------------------------------------------------------ persistence
    # ------------------------------------------------------------------------------ internals
    def _archive_available(self, first: int, end: int) -> None:
        for o in range(max(first, self.start_offset), end):
            r = self.records.get(o)
            if r is not None and r.state is RecordState.AVAILABLE:
                r.state = RecordState.ARCHIVED

    def _settle(self, offset: int, r: InFlight, target: RecordState) -> None:
        if target is RecordState.AVAILABLE and r.delivery_count >= self.config.delivery_count_limit:
            target = RecordState.ARCHIVED  # delivered as often as allowed
        r.state, r.member_id, r.lock_deadline_ms = target, "", -1
        self.changes[offset] = (target, r.delivery_count)

    def take_changes(self) -> dict[int, tuple[RecordState, int]]:
        """The changes to persist (and forget them): Kafka's write carries only these."""
        out, self.changes = self.changes, {}
        return out

    def _advance_start(self) -> None:
        start = self.start_offset
        while start <= self.end_offset:
            r = self.records.get(start)
            if r is None or not r.state.final:
                break
            del self.records[start]
            start += 1
        self.start_offset = start


def _ranges(taken: Sequence[tuple[int, int]]) -> list[AcquiredRecords]:
    """Consecutive offsets of the same delivery count as one AcquiredRecords."""
    out: list[AcquiredRecords] = []
    first = last = count = -1
    for o, n in taken:
        if o == last + 1 and n == count:
            last = o
            continue
        if first >= 0:
            out.append(AcquiredRecords(first, last, count))
        first = last = o
        count = n
    if first >= 0:
        out.append(AcquiredRecords(first, last, count))
    return out
