"""The log cleaner's background task: the async shell around storage/cleaner (Kafka's
LogCleaner.CleanerThread, one of it).

Every `log.cleaner.backoff.ms` with nothing to do, and at once after a pass that cleaned
something, it picks the filthiest compacted log (storage/cleaner/choose.py) and drives one cleaning
pass (storage/cleaner/cleaning.py) a chunk at a time: the event loop serves requests between
chunks, and `log.cleaner.io.max.bytes.per.second` is enforced by sleeping. After a pass the
first dirty offset is written to `cleaner-offset-checkpoint` (Kafka's file and format). A log
whose data the cleaner cannot read (a corrupt batch, a disk error) is set aside until the next
start, as Kafka marks it uncleanable. The internal topics are not cleaned here: their
coordinators rewrite their live state and drop older segments (group/transaction `compact`).
"""

from __future__ import annotations

import asyncio
import time
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import structlog

from minikafka.protocol.errors import CorruptRecord
from minikafka.protocol.types import TopicPartition
from minikafka.storage import files
from minikafka.storage.cleaner import choose
from minikafka.storage.log_manager import LogManager
from minikafka.storage.partition_log import PartitionLog

if TYPE_CHECKING:
    from minikafka.storage.cleaner.cleaning import CleanResult

log = structlog.get_logger("minikafka.cleaner")

CHECKPOINT_FILE = "cleaner-offset-checkpoint"
CHUNK_BYTES = 64 * 1024


def throttle_delay(moved_bytes: int, elapsed_s: float, rate: float) -> float:
    """Seconds to sleep so that `moved_bytes` over the pass so far stays at or under `rate` bytes/s
    (log.cleaner.io.max.bytes.per.second); at most a second at a time, so the pass checks again."""
    ahead = moved_bytes / rate - elapsed_s if rate > 0 else 0.0
    return min(ahead, 1.0) if ahead > 0 else 0.0


class LogCleaner:
    def __init__(self, logs: LogManager, config: Callable[[], Any], now_ms: Callable[[], int],
                 internal_topics: frozenset[str], crash_point: Callable[[str], None] = lambda step: None) -> None:
        self.logs = logs
        self._config = config
        self._now_ms = now_ms
        self._internal = internal_topics
        self._reach = crash_point
        self.path: Path = logs.data_dir / CHECKPOINT_FILE
        # First dirty offset per partition, with the log it belongs to: a topic deleted and created
        # again under the same name is a new log, whose first dirty offset is its log start.
        self._dirty_from: dict[TopicPartition, tuple[PartitionLog, int]] = {}
        self.uncleanable: weakref.WeakSet[PartitionLog] = weakref.WeakSet()

    @property
    def checkpoints(self) -> dict[TopicPartition, int]:
        """What `cleaner-offset-checkpoint` holds: the live logs' first dirty offsets."""
        return {tp: offset for tp, (plog, offset) in self._dirty_from.items() if self.logs.get(tp) is plog}

    def load(self) -> None:
        """Read `cleaner-offset-checkpoint` (after the log manager has locked and loaded the dir)."""
        try:
            stored = files.read_offset_checkpoint(self.path)
        except (OSError, ValueError) as exc:
            log.warning("checkpoint_ignored", file=CHECKPOINT_FILE, reason=str(exc))
            stored = {}
        self._dirty_from = {tp: (plog, offset) for tp, offset in stored.items()
                            if (plog := self.logs.get(tp)) is not None}

    def _checkpoint_of(self, plog: PartitionLog) -> int | None:
        owner, offset = self._dirty_from.get(plog.tp, (None, None))
        return offset if owner is plog else None

    def _set_checkpoint(self, plog: PartitionLog, offset: int) -> None:
        self._dirty_from[plog.tp] = (plog, offset)
        live = self.checkpoints  # deleted logs drop out of the file (and of memory) here
        self._dirty_from = {tp: entry for tp, entry in self._dirty_from.items() if tp in live}
        files.write_offset_checkpoint(self.path, live)

    # ------------------------------------------------------------------------------ choosing
    def _compacted(self) -> list[PartitionLog]:
        return [plog for plog in self.logs if "compact" in str(plog.config["cleanup.policy"])
                and plog.tp.topic not in self._internal and plog not in self.uncleanable]

    def grab_filthiest(self, now_ms: int) -> tuple[PartitionLog, choose.LogToClean] | None:
        candidates = []
        for plog in self._compacted():
            ltc = choose.log_to_clean(plog, self._checkpoint_of(plog), now_ms)
            if ltc.reset_checkpoint:
                self._set_checkpoint(plog, ltc.first_dirty)
            candidates.append((ltc, float(plog.config["min.cleanable.dirty.ratio"])))
        best = choose.filthiest(candidates)
        return None if best is None else (self.logs.get(best.tp), best)

    # ------------------------------------------------------------------------------ running
    async def run(self) -> None:
        while True:
            try:
                cleaned = await self.clean_filthiest()
            except OSError as exc:  # the checkpoint file: the next pass tries again
                log.warning("cleaner_checkpoint_failed", reason=str(exc))
                cleaned = False
            await asyncio.sleep(0 if cleaned else int(self._config()["log.cleaner.backoff.ms"]) / 1000)

    async def clean_filthiest(self) -> bool:
        """One pass over the filthiest log; False when no log needs cleaning."""
        now = self._now_ms()
        found = self.grab_filthiest(now)
        if found is None:
            return False
        plog, ltc = found
        # The pass itself is imported by the first log that needs one: a broker with no dirty
        # compacted log never loads it (~3 ms of importtime at start-up, issue 17).
        from minikafka.storage.cleaner import offset_map
        from minikafka.storage.cleaner.cleaning import CleaningAborted, Offload, clean

        c = self._config()
        capacity = offset_map.capacity(int(c["log.cleaner.dedupe.buffer.size"]),
                                       float(c["log.cleaner.io.buffer.load.factor"]),
                                       max(int(c["log.cleaner.threads"]), 1))
        # Chunks of 64 KiB: each is parsed and written in one go on the event loop (~1 ms), so a
        # pass delays requests by about that much, not by a whole io.buffer.size at a time.
        chunk = min(max(int(c["log.cleaner.io.buffer.size"]), 4096), CHUNK_BYTES)
        rate = float(c["log.cleaner.io.max.bytes.per.second"])
        started = time.monotonic()
        steps = clean(plog, ltc, now_ms=now, map_capacity=capacity, chunk_bytes=chunk, reach=self._reach)
        moved = 0
        try:
            while True:
                step = next(steps)
                if isinstance(step, Offload):
                    await asyncio.to_thread(step.fn)  # an fsync: the loop serves requests meanwhile
                    continue
                moved += step
                # after each chunk the loop serves requests; longer when over the configured rate
                await asyncio.sleep(throttle_delay(moved, time.monotonic() - started, rate))
        except StopIteration as stop:
            result: CleanResult = stop.value
        except CleaningAborted as exc:
            log.info("cleaning_aborted", topic=ltc.tp.topic, partition=ltc.tp.partition, reason=str(exc))
            return True
        except (CorruptRecord, OSError) as exc:
            if plog.closed:  # deleted under the pass (an fsync on a thread found its files gone)
                log.info("cleaning_aborted", topic=ltc.tp.topic, partition=ltc.tp.partition, reason=str(exc))
                return True
            self.uncleanable.add(plog)
            log.warning("log_uncleanable", topic=ltc.tp.topic, partition=ltc.tp.partition, reason=str(exc),
                        hint="the partition is not cleaned again until the broker restarts")
            return True
        if plog.closed:
            return True
        self._set_checkpoint(plog, result.end_offset)
        s = result.stats
        log.info("log_cleaned", topic=ltc.tp.topic, partition=ltc.tp.partition, first_dirty=ltc.first_dirty,
                 end_offset=result.end_offset, dirty_ratio=round(ltc.ratio, 3), groups=result.groups,
                 bytes_read=s.bytes_read, bytes_written=s.bytes_written, records_read=s.records_read,
                 records_kept=s.records_kept, aborted_batches_removed=s.aborted_batches_removed,
                 markers_removed=s.markers_removed, seconds=round(time.monotonic() - started, 3))
        return True
