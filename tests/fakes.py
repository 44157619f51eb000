"""In-memory fakes of the coordinator ports, for unit tests (no sockets, no files, no sleeps).

- `InMemoryRecordLog` implements `minikafka.coordinator.ports.RecordLog`. `fail_appends = True`
  makes every append raise OSError (nothing is written); `hold_next_append()` returns an
  `AppendHold` that keeps the next append in flight until the test sets `hold.release`
  (`hold.entered` is set once the append has started), so "a request during a slow append" is
  driven by events, not by timing.
- `RecordingMarkerWriter` implements `minikafka.coordinator.transaction.coordinator.MarkerWriter`.
  It records every attempt and every marker written; `script(tp, *errors)` makes the next calls
  for tp answer those errors in order, `fail(tp, error)` makes every call for tp fail until
  `heal(tp)`.
- `FakeClock`: `now_ms()` (also callable as `clock()`) and `advance(ms)`.

Both fakes have `async wait_for(predicate)`: it returns once the predicate holds, re-checking after
every append / marker attempt. The time limit there only turns a hang into a failure.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections import deque
from collections.abc import Callable, Iterator, Sequence

from minikafka.coordinator.ports import LogRecord, TransactionalRecords
from minikafka.protocol.errors import ErrorCode
from minikafka.protocol.types import TopicPartition

WAIT_LIMIT_S = 5.0  # a safety net against a hanging test, never a synchronisation


class _Changes:
    """Wake `wait_for` callers whenever the fake changed."""

    def __init__(self) -> None:
        self._changed = asyncio.Event()

    def _notify(self) -> None:
        self._changed.set()
        self._changed = asyncio.Event()

    async def wait_for(self, predicate: Callable[[], bool], limit_s: float = WAIT_LIMIT_S) -> None:
        async with asyncio.timeout(limit_s):
            while not predicate():
                await self._changed.wait()


# ---------------------------------------------------------------------------------- record log
@dataclasses.dataclass(eq=False)
class AppendHold:
    """Keeps one append in flight: `entered` is set when it starts, it goes on once `release` is set."""

    entered: asyncio.Event = dataclasses.field(default_factory=asyncio.Event)
    release: asyncio.Event = dataclasses.field(default_factory=asyncio.Event)
    partition: int | None = None
    records: tuple[tuple[bytes, bytes | None], ...] = ()


@dataclasses.dataclass(frozen=True)
class Append:
    """One successful append call."""

    partition: int
    records: tuple[tuple[bytes, bytes | None], ...]
    now_ms: int
    base_offset: int


class InMemoryRecordLog(_Changes):
    """A partitioned internal topic held in lists."""

    def __init__(self, partition_count: int = 50) -> None:
        super().__init__()
        self._partition_count = partition_count
        self.compaction_wanted = False
        self.compactions: list[int] = []
        self._partitions: dict[int, list[LogRecord]] = {p: [] for p in range(partition_count)}
        self._start_offsets: dict[int, int] = {}  # after a compaction dropped the head
        self._holds: deque[AppendHold] = deque()
        self.created_at_ms: int | None = None
        self.fail_appends = False
        self.failed_appends = 0
        self.appends: list[Append] = []  # successful appends, in call order

    @property
    def partition_count(self) -> int:
        return self._partition_count

    def ensure_created(self, now_ms: int) -> None:
        if self.created_at_ms is None:
            self.created_at_ms = now_ms

    def complete_rebuilt(self, now_ms: int) -> None:
        pass  # an in-memory log is never cut short

    def hold_next_append(self) -> AppendHold:
        """The next append (in call order) waits for `release`; holds queue up if called repeatedly."""
        hold = AppendHold()
        self._holds.append(hold)
        return hold

    async def append(self, partition: int, records: Sequence[tuple[bytes, bytes | None]], now_ms: int, *,
                     producer_id: int = -1, producer_epoch: int = -1) -> int:
        if not 0 <= partition < self._partition_count:
            raise ValueError(f"partition {partition} out of range 0..{self._partition_count - 1}")
        records = tuple(records)
        if self._holds:
            hold = self._holds.popleft()
            hold.partition, hold.records = partition, records
            hold.entered.set()
            await hold.release.wait()
        if self.fail_appends:
            self.failed_appends += 1
            self._notify()
            raise OSError("InMemoryRecordLog: append failed (fail_appends is set)")
        base = self._write(partition, records, producer_id, producer_epoch)
        self.appends.append(Append(partition, records, now_ms, base))
        self._notify()
        return base

    def _write(self, partition: int, records: Sequence[tuple[bytes, bytes | None]], producer_id: int = -1,
               producer_epoch: int = -1) -> int:
        log = self._partitions[partition]
        base = self._next_offset(partition)
        for i, (key, value) in enumerate(records):
            log.append(LogRecord(partition=partition, offset=base + i, key=key, value=value,
                                 producer_id=producer_id, transactional=producer_id >= 0,
                                 producer_epoch=producer_epoch))
        return base

    def _next_offset(self, partition: int) -> int:
        log = self._partitions[partition]
        return log[-1].offset + 1 if log else self._start_offsets.get(partition, 0)

    def _first_open_offset(self, partition: int) -> int | None:
        """The LSO's stand-in: the first transactional record whose producer has no marker after it."""
        open_at: dict[int, int] = {}
        for r in self._partitions[partition]:
            if r.control_type is not None:
                open_at.pop(r.producer_id, None)
            elif r.transactional:
                open_at.setdefault(r.producer_id, r.offset)
        return min(open_at.values(), default=None)

    def needs_compaction(self, partition: int) -> bool:
        return self.compaction_wanted

    async def compact(self, partition: int, records: Sequence[tuple[bytes, bytes | None]], now_ms: int,
                      transactional: Sequence[TransactionalRecords] = ()) -> int:
        """As the real one: the rewritten state (and still-pending transactional records) go after
        the log end; everything below it goes, except from the first open transaction on."""
        keep_from = self._first_open_offset(partition)
        base = self._write(partition, records)
        for txn in transactional:
            self._write(partition, txn.records, txn.producer_id, txn.producer_epoch)
        cut = base if keep_from is None else min(base, keep_from)
        self._partitions[partition] = [r for r in self._partitions[partition] if r.offset >= cut]
        self._start_offsets[partition] = cut
        self.compactions.append(partition)
        self._notify()
        return base

    def inject(self, record: LogRecord) -> None:
        """Put a record into a partition as it is (e.g. a control record), at the next offset."""
        log = self._partitions[record.partition]
        log.append(record._replace(offset=self._next_offset(record.partition)))
        self._notify()

    def replay(self) -> Iterator[LogRecord]:
        for p in range(self._partition_count):
            yield from list(self._partitions[p])

    def records(self) -> list[tuple[bytes | None, bytes | None]]:
        """(key, value) of every successful append, in append order across partitions."""
        return [kv for a in self.appends for kv in a.records]


# ---------------------------------------------------------------------------------- markers
@dataclasses.dataclass(frozen=True)
class Marker:
    tp: TopicPartition
    producer_id: int
    producer_epoch: int
    commit: bool
    coordinator_epoch: int


class RecordingMarkerWriter(_Changes):
    """Records markers; answers scripted or sticky per-partition errors."""

    def __init__(self) -> None:
        super().__init__()
        self.attempts: list[tuple[Marker, ErrorCode]] = []
        self.markers: list[Marker] = []  # the ones answered with ErrorCode.none
        self._scripted: dict[TopicPartition, deque[ErrorCode]] = {}
        self._failing: dict[TopicPartition, ErrorCode] = {}

    def script(self, tp: TopicPartition, *errors: ErrorCode) -> None:
        """The next calls for tp answer `errors` in order; later ones succeed (unless `fail`ed)."""
        self._scripted.setdefault(tp, deque()).extend(errors)

    def fail(self, tp: TopicPartition, error: ErrorCode = ErrorCode.kafka_storage_error) -> None:
        """Every call for tp answers `error` until `heal(tp)`."""
        self._failing[tp] = error

    def heal(self, tp: TopicPartition) -> None:
        self._failing.pop(tp, None)

    def attempts_for(self, tp: TopicPartition) -> int:
        return sum(1 for m, _ in self.attempts if m.tp == tp)

    def write_marker(self, tp: TopicPartition, *, producer_id: int, producer_epoch: int, commit: bool,
                     coordinator_epoch: int) -> ErrorCode:
        marker = Marker(tp, producer_id, producer_epoch, commit, coordinator_epoch)
        scripted = self._scripted.get(tp)
        error = scripted.popleft() if scripted else self._failing.get(tp, ErrorCode.none)
        self.attempts.append((marker, error))
        if error is ErrorCode.none:
            self.markers.append(marker)
        self._notify()
        return error


# ---------------------------------------------------------------------------------- clock
class FakeClock:
    """Milliseconds that move only when the test says so."""

    def __init__(self, start_ms: int = 1_700_000_000_000) -> None:
        self.ms = start_ms

    def now_ms(self) -> int:
        return self.ms

    __call__ = now_ms

    def advance(self, ms: int) -> int:
        if ms < 0:
            raise ValueError("time does not go backwards")
        self.ms += ms
        return self.ms
