"""Which log to clean next and which offsets of it (Kafka's LogCleanerManager), pure over the
segments' sizes, base offsets and timestamps.

- The first dirty offset is the cleaner checkpoint of the log (where the last pass ended), reset
  to the log start when it is below it (retention or DeleteRecords moved the start) or past the
  log end (the tail was truncated).
- Nothing at or past the first uncleanable offset is cleaned: the active segment, the last stable
  offset (an open transaction's records may still be aborted), and every segment whose largest
  timestamp is within `min.compaction.lag.ms` of now. It is rounded down to a segment base.
- A log is cleanable when its dirty ratio (dirty bytes over all bytes up to the uncleanable
  point) exceeds `min.cleanable.dirty.ratio`, or when its oldest dirty, non-active segment began
  more than `max.compaction.lag.ms` ago (and there is something to clean). The filthiest goes first.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NamedTuple, Protocol

from minikafka.protocol.types import TopicPartition


class SegmentView(Protocol):
    base_offset: int
    size: int
    max_timestamp: int
    rolling_base_ms: int | None  # the first batch's max timestamp


class LogView(Protocol):
    tp: TopicPartition
    config: Mapping[str, Any]
    segments: list[Any]
    log_start_offset: int
    log_end_offset: int
    last_stable_offset: int


class LogToClean(NamedTuple):
    tp: TopicPartition
    first_dirty: int
    first_uncleanable: int
    clean_bytes: int
    cleanable_bytes: int
    need_compaction_now: bool
    reset_checkpoint: bool  # the checkpoint was invalid: write first_dirty back

    @property
    def total_bytes(self) -> int:
        return self.clean_bytes + self.cleanable_bytes

    @property
    def ratio(self) -> float:
        return self.cleanable_bytes / self.total_bytes if self.total_bytes else 0.0


def segments_overlapping(segments: Sequence[SegmentView], start: int, end: int) -> list[SegmentView]:
    """Segments holding any offset in [start, end) (Kafka's logSegments(from, to))."""
    if start >= end:
        return []
    bases = [s.base_offset for s in segments]
    i = max(0, bisect.bisect_right(bases, start) - 1)
    j = bisect.bisect_left(bases, end)
    return list(segments[i:j])


def non_active_from(segments: Sequence[SegmentView], offset: int) -> list[SegmentView]:
    bases = [s.base_offset for s in segments]
    i = max(0, bisect.bisect_right(bases, offset) - 1)
    return list(segments[i:-1])


def cleanable_offsets(log: LogView, checkpoint: int | None, now_ms: int) -> tuple[int, int, bool]:
    """(first dirty offset, first uncleanable offset, reset the checkpoint?)."""
    start = log.log_start_offset
    dirty = start if checkpoint is None else checkpoint
    reset = False
    if dirty < start or dirty > log.log_end_offset:
        dirty, reset = start, checkpoint is not None
    limits = [log.last_stable_offset, log.segments[-1].base_offset]
    lag = max(int(log.config["min.compaction.lag.ms"]), 0)
    if lag > 0:
        for seg in non_active_from(log.segments, dirty):
            if seg.max_timestamp > now_ms - lag:
                limits.append(seg.base_offset)
                break
    return dirty, max(dirty, min(limits)), reset


def max_compaction_delay(log: LogView, first_dirty: int, now_ms: int) -> int:
    """How far past max.compaction.lag.ms the oldest dirty segment is (0: not at all)."""
    firsts = [s.rolling_base_ms for s in non_active_from(log.segments, first_dirty)
              if s.rolling_base_ms is not None and s.rolling_base_ms > 0]
    if not firsts:
        return 0
    clean_until = now_ms - max(int(log.config["max.compaction.lag.ms"]), 0)
    earliest = min(firsts)
    return clean_until - earliest if earliest < clean_until else 0


def log_to_clean(log: LogView, checkpoint: int | None, now_ms: int) -> LogToClean:
    first_dirty, uncleanable, reset = cleanable_offsets(log, checkpoint, now_ms)
    segs = log.segments
    later = non_active_from(segs, uncleanable)
    first_uncleanable = (later[0] if later else segs[-1]).base_offset
    clean_bytes = sum(s.size for s in segs if s.base_offset < first_dirty)
    cleanable = sum(s.size for s in segments_overlapping(segs, min(first_dirty, first_uncleanable), first_uncleanable))
    return LogToClean(log.tp, first_dirty, first_uncleanable, clean_bytes, cleanable,
                      max_compaction_delay(log, first_dirty, now_ms) > 0, reset)


def filthiest(candidates: Iterable[tuple[LogToClean, float]]) -> LogToClean | None:
    """The log with the highest dirty ratio among those over their own min.cleanable.dirty.ratio
    or past their max.compaction.lag.ms; `candidates` pairs each log with its ratio threshold."""
    best: LogToClean | None = None
    for ltc, min_ratio in candidates:
        if ltc.total_bytes <= 0:
            continue
        if (ltc.need_compaction_now and ltc.cleanable_bytes > 0) or ltc.ratio > min_ratio:
            if best is None or ltc.ratio > best.ratio:
                best = ltc
    return best
