"""One cleaning pass over one log (Kafka's Cleaner.doClean), as a generator.

The pass maps the dirty section [first dirty, first uncleanable) key -> latest offset, then rewrites
every segment from the log start up to where the map ends, in groups that fit one segment
(segment.bytes, the index size, an int32 offset range), each group into one `.cleaned` segment put
in place by `swap.commit`. The generator yields the bytes it read or wrote after each chunk, so
the broker's task can throttle (`log.cleaner.io.max.bytes.per.second`) and the event loop serves
requests in between, and an Offload (the fsync of a finished cleaned segment) the driver runs on a
thread; it returns the CleanResult.

Between two chunks the log may change under the pass: appends (past the range), a roll, retention
or DeleteRecords deleting segments, a topic deletion. Every chunk first checks that the segments it
reads are still the log's; a group is swapped in only if its segments are all still there, in a
synchronous step. Otherwise the pass stops (CleaningAborted) and its `.cleaned` files go.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Generator, Iterator
from typing import TYPE_CHECKING, NamedTuple

import structlog

from minikafka.protocol import records
from minikafka.protocol.errors import CorruptRecord, InvalidRecord
from minikafka.protocol.records import LOG_OVERHEAD, BatchHeader
from minikafka.storage import files
from minikafka.storage.cleaner import swap
from minikafka.storage.cleaner.choose import LogToClean, segments_overlapping
from minikafka.storage.cleaner.offset_map import OffsetMap
from minikafka.storage.cleaner.retention import CleanerStats, PassContext, ProducerTail, filter_batch, map_batch
from minikafka.storage.cleaner.txn_metadata import CleanedTransactionMetadata
from minikafka.storage.segment import LogSegment

if TYPE_CHECKING:
    from minikafka.storage.partition_log import PartitionLog

log = structlog.get_logger("minikafka.storage")

INT32_MAX = 2**31 - 1


class CleaningAborted(Exception):
    """The log changed under the pass (segments deleted, topic deleted): nothing was swapped in
    for the group under way; groups already swapped stay (each is a complete, valid segment)."""


class Offload(NamedTuple):
    """Blocking work the driver may run off the event loop (fsync of the finished `.cleaned` files,
    through descriptors of its own): nothing else touches those files until the swap."""

    fn: Callable[[], None]


class CleanResult(NamedTuple):
    end_offset: int  # the next pass's first dirty offset (the checkpoint)
    stats: CleanerStats
    groups: int


def _check_alive(plog: PartitionLog, seg: LogSegment) -> None:
    if plog.closed or seg.closed or not any(s is seg for s in plog.segments):
        raise CleaningAborted(f"segment {seg.base_offset} of {plog.tp.topic}-{plog.tp.partition} is gone")


def _batches(plog: PartitionLog, seg: LogSegment, start_pos: int,
             chunk_bytes: int) -> Iterator[list[tuple[memoryview, BatchHeader]]]:
    """Whole batches of a segment from a position, a chunk at a time, each checked as a produced
    batch is (records.split_batches: sizes, magic, CRC); a bad one stops the pass (Kafka marks such
    a partition uncleanable)."""
    pos = start_pos
    while pos + LOG_OVERHEAD <= seg.size:
        _check_alive(plog, seg)
        data = os.pread(seg.fd, min(chunk_bytes, seg.size - pos), pos)
        if len(data) >= LOG_OVERHEAD:
            _, size = records.peek_size(data, 0)
            if size > len(data) and pos + size <= seg.size:  # one batch larger than the chunk
                data = os.pread(seg.fd, size, pos)
        try:
            found = records.split_batches(data)
        except (CorruptRecord, InvalidRecord) as exc:
            raise CorruptRecord(f"{exc} (chunk at position {pos} of {seg.log_path})") from None
        if not found:
            raise CorruptRecord(f"incomplete batch at position {pos} of {seg.log_path}")
        view = memoryview(data)
        yield [(view[p : p + h.size], h) for p, h in found]
        last_pos, last = found[-1]
        pos += last_pos + last.size


def group_segments(segments: list[LogSegment], max_bytes: int, max_index_bytes: int,
                   first_uncleanable: int) -> list[list[LogSegment]]:
    """Consecutive segments that fit one cleaned segment (Kafka's groupSegmentsBySize)."""
    groups: list[list[LogSegment]] = []
    i = 0
    while i < len(segments):
        group = [segments[i]]
        size = segments[i].size
        index_size = len(segments[i].index.relative_offsets) * 8
        time_size = len(segments[i].time_index.relative_offsets) * 12
        i += 1
        while i < len(segments):
            nxt = segments[i]
            last_offset = segments[i + 1].base_offset - 1 if i + 1 < len(segments) else first_uncleanable - 1
            if not (size + nxt.size <= max_bytes
                    and index_size + len(nxt.index.relative_offsets) * 8 <= max_index_bytes
                    and time_size + len(nxt.time_index.relative_offsets) * 12 <= max_index_bytes
                    and (nxt.size == 0 or last_offset - group[0].base_offset <= INT32_MAX)):
                break
            group.append(nxt)
            size += nxt.size
            index_size += len(nxt.index.relative_offsets) * 8
            time_size += len(nxt.time_index.relative_offsets) * 12
            i += 1
        groups.append(group)
    return groups


def producer_tails(plog: PartitionLog) -> dict[int, ProducerTail]:
    """What each active producer's state rests on (Kafka's lastRecordsOfActiveProducers): the
    batches of its last five sequences (the ones its duplicate detection holds), where Kafka keeps
    the last one, so a replay of the log alone restores as much of that state as memory had."""
    return {pid: ProducerTail(frozenset(b.last_offset for b in e.batches), e.producer_epoch)
            for pid, e in plog.producer_state.producers.items()}


def clean(plog: PartitionLog, ltc: LogToClean, *, now_ms: int, map_capacity: int, chunk_bytes: int,
          reach: Callable[[str], None] = lambda step: None) -> Generator[int | Offload, None, CleanResult]:
    config = plog.config
    start, upper = ltc.first_dirty, ltc.first_uncleanable
    # 1. The offset map of the dirty section (aborted data does not count).
    offset_map = OffsetMap(map_capacity)
    build_txns = CleanedTransactionMetadata()
    build_txns.add_aborted(plog.collect_aborted(start, upper))
    dirty = segments_overlapping(plog.segments, start, upper)
    full = False
    for i, seg in enumerate(dirty):
        next_start = dirty[i + 1].base_offset if i + 1 < len(dirty) else upper
        _, pos = seg.index.lookup(start)
        for chunk in _batches(plog, seg, pos, chunk_bytes):
            for batch, h in chunk:
                if map_batch(batch, h, start, offset_map, build_txns):
                    full = True
                    break
            yield sum(h.size for _, h in chunk)
            if full:
                break
        if full:
            break
        offset_map.update_latest_offset(next_start - 1)
    end_offset = offset_map.latest_offset + 1
    stats = CleanerStats()
    if end_offset <= start:
        return CleanResult(max(end_offset, start), stats, 0)

    # 2. Rewrite from the log start to where the map ends, one group at a time.
    ctx = PassContext(offset_map, CleanedTransactionMetadata(), producer_tails(plog), upper, now_ms,
                      int(config["delete.retention.ms"]), stats)
    limit = config.get("internal.segment.bytes")
    max_bytes = int(config["segment.bytes"] if limit is None else limit)
    groups = group_segments(segments_overlapping(plog.segments, 0, end_offset), max_bytes,
                            int(config["segment.index.bytes"]), upper)
    for group in groups:
        yield from _clean_group(plog, group, ctx, now_ms, chunk_bytes, reach)
    return CleanResult(end_offset, stats, len(groups))


def _clean_group(plog: PartitionLog, group: list[LogSegment], ctx: PassContext, now_ms: int,
                 chunk_bytes: int, reach: Callable[[str], None]) -> Generator[int | Offload, None, None]:
    base = group[0].base_offset
    cleaned = LogSegment(plog.dir, base, index_interval_bytes=int(plog.config["index.interval.bytes"]),
                         max_index_size=int(plog.config["segment.index.bytes"]), now_ms=now_ms,
                         open_files=plog.open_files, suffix=swap.CLEANED)
    done = False
    try:
        for i, seg in enumerate(group):
            upper = group[i + 1].base_offset if i + 1 < len(group) else seg.next_offset
            ctx.txns.add_aborted(plog.collect_aborted(seg.base_offset, upper))
            for chunk in _batches(plog, seg, 0, chunk_bytes):
                out = bytearray()
                placed: list[tuple[int, BatchHeader]] = []
                for batch, h in chunk:
                    kept = filter_batch(batch, h, ctx)
                    for aborted in ctx.txns.kept_aborted:
                        cleaned.txn_index.append(aborted)
                    ctx.txns.kept_aborted.clear()
                    if kept is not None:
                        placed.append((len(out), records.read_header(kept)))
                        out += kept
                if out:
                    cleaned.append_batches(out, placed)
                yield sum(h.size for _, h in chunk) + len(out)
        cleaned.on_become_inactive()
        cleaned.close()
        paths = [cleaned.log_path, cleaned.index.path, cleaned.time_index.path]
        if cleaned.txn_index.entries:
            paths.append(cleaned.txn_index.path)
        yield Offload(lambda: files.fsync_all(paths))
        for seg in group:  # the swap is one synchronous step: nothing can change under it
            _check_alive(plog, seg)
        plog.replace_segments(base, group, now_ms, reach)
        done = True
    finally:
        if not done:
            cleaned.close()
            swap.discard(plog.dir, base)
