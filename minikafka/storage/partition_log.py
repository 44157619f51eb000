"""PartitionLog: the segments of one topic-partition (Kafka's UnifiedLog/LocalLog, one node).

Theory of operation
- Offsets: `log_start_offset` <= every readable offset < `log_end_offset`. On one node the high
  watermark equals the log end offset as soon as the write returned: there are no followers.
- Append: validate the batch header and CRC, assign offsets by patching the header in place,
  roll the active segment if it is full or old, `pwrite` the bytes (the OS page cache holds them
  before the producer is answered, so `kill -9` loses nothing acknowledged), then notify waiters.
  Nothing is written unless the whole batch is valid.
- Durability: fsync after `flush.messages` messages or `flush.ms`, and of a segment when it
  rolls; the recovery point is the offset up to which everything is fsynced. After an unclean
  shutdown, segments from the recovery point on are re-validated and a torn tail is truncated.
"""

from __future__ import annotations

import bisect
import enum
import os
from collections.abc import Callable, Mapping
from concurrent.futures import Future
from pathlib import Path
from typing import Any, NamedTuple

import structlog

from minikafka.protocol import records, validator
from minikafka.protocol.errors import CorruptRecord, InvalidRecord
from minikafka.protocol.types import TopicPartition
from minikafka.storage import files
from minikafka.storage import snapshot as snapshot_file
from minikafka.storage.cleaner import swap
from minikafka.storage.errors import KafkaStorageError, MessageTooLarge, OffsetOutOfRange
from minikafka.storage.producer_state import CompletedTxn, InvalidProducerEpoch, ProducerStateManager
from minikafka.storage.open_files import SHARED, OpenFiles
from minikafka.storage.recovery_check import RecoveryChecks
from minikafka.storage.segment import LogSegment
from minikafka.storage.segment_flusher import SegmentFlusher, fsync_paths
from minikafka.storage.txn_index import AbortedTxn

log = structlog.get_logger("minikafka.storage")

INT32_MAX = 2**31 - 1

# For `make bench` only, which measures Produce with the record walk on and off in one run
# (bench/harness: broker "minikafka-novalidate"). Off, a batch whose records do not decode can be
# acknowledged: never set it anywhere else.
_WALK_RECORDS = os.environ.get("MINIKAFKA_BENCH_SKIP_RECORD_VALIDATION") != "1"


class AppendOrigin(enum.Enum):
    CLIENT = "client"            # Produce requests: exactly one non-control batch, base offset 0
    COORDINATOR = "coordinator"  # internal topics and transaction markers written by the broker


class AppendResult(NamedTuple):
    base_offset: int
    last_offset: int
    log_append_time: int  # -1 unless the topic uses LogAppendTime
    log_start_offset: int


class AppendSettings(NamedTuple):
    """The topic config values every append reads, as numbers. Computed when the config is set (a
    partition's config is replaced whole, never changed in place) rather than looked up and
    parsed on each append: at tens of thousands of appends a second that was measurable."""

    max_message_bytes: int
    log_append_time: bool
    before_max_ms: int
    after_max_ms: int
    compacted: bool
    segment_bytes: int  # internal.segment.bytes where set (Kafka's LogConfig.segmentSize)
    segment_ms: int
    flush_messages: int

    @classmethod
    def of(cls, c: Mapping[str, Any]) -> AppendSettings:
        limit = c.get("internal.segment.bytes")
        return cls(int(c["max.message.bytes"]), c["message.timestamp.type"] == "LogAppendTime",
                   int(c["message.timestamp.before.max.ms"]), int(c["message.timestamp.after.max.ms"]),
                   "compact" in str(c["cleanup.policy"]), int(c["segment.bytes"] if limit is None else limit),
                   int(c["segment.ms"]), int(c["flush.messages"]))


class LogDamage(NamedTuple):
    """What a salvaging recovery could not keep: bytes that were no intact batch, from `at_offset`."""

    at_offset: int
    unreadable_bytes: int
    batches_kept: int


def segment_bases(names: list[str]) -> list[int]:
    """The base offsets of a partition directory's `.log` files, in order."""
    return sorted(files.offset_from_name(n) for n in names if n.endswith(files.LOG_SUFFIX) and n[:20].isdigit())


def needs_swap_recovery(names: list[str]) -> bool:
    """A cleaning pass the last stop interrupted left files that open() finishes or undoes."""
    return any(n.endswith((swap.CLEANED, swap.SWAP)) for n in names)


def first_to_recover(bases: list[int], recovery_point: int, *, clean: bool, salvage: bool) -> int:
    """The index of the first segment open() re-validates (len(bases): none). After a crash, the
    segment holding the recovery point and every later one; internal topics (salvage), all."""
    if salvage:
        return 0
    if clean:
        return len(bases)
    return max(0, bisect.bisect_right(bases, recovery_point) - 1)


class PartitionLog:
    def __init__(self, tp: TopicPartition, directory: Path, topic_config: Mapping[str, Any],
                 now_ms: int, open_files: OpenFiles = SHARED, flusher: SegmentFlusher | None = None) -> None:
        self.tp = tp
        self.open_files = open_files
        # Rolled segments are fsynced by `flusher` (off the caller's thread) when there is one;
        # each (its flush, its files, the offset the recovery point may move to once it is done).
        self.flusher = flusher
        self._rolled: list[tuple[Future[None], list[Path], int]] = []
        self._recovered: list[LogSegment] = []  # re-validated after a crash, not flushed yet (flush_recovered)
        self._flush_failure_told = -1  # the base offset of the failed flush last logged
        self.dir = directory
        self.config = topic_config
        self.segments: list[LogSegment] = []
        self._bases: list[int] = []
        self.log_start_offset = 0
        self.recovery_point = 0
        self.unflushed_messages = 0
        self.last_flush_ms = now_ms
        # Told of each append (records, bytes) after it is written: wakes parked fetches, counts
        # Kafka's MessagesIn / BytesIn (markers and coordinator appends included, as Kafka counts).
        self.on_append: Callable[[int, int], None] | None = None
        self.recovered_segments = 0  # how many segments the last open() re-validated (for tests)
        self.producer_state = ProducerStateManager()
        self.completed_txns: list[CompletedTxn] = []  # markers seen by the last append (for the caller)
        self.damage: LogDamage | None = None  # set by a salvaging open() that found a corrupt batch
        self.storage_error: str | None = None  # the last append's disk failure, until one succeeds
        self.closed = False  # closed or deleted: a cleaning pass under way stops

    @property
    def config(self) -> Mapping[str, Any]:
        return self._config

    @config.setter
    def config(self, value: Mapping[str, Any]) -> None:
        self._config = value
        self.settings = AppendSettings.of(value)

    # ------------------------------------------------------------------------------ lifecycle
    @classmethod
    def open(cls, tp: TopicPartition, directory: Path, topic_config: Mapping[str, Any], *,
             recovery_point: int, log_start_offset: int, clean: bool, now_ms: int,
             salvage: bool = False, open_files: OpenFiles = SHARED,
             flusher: SegmentFlusher | None = None, checks: RecoveryChecks | None = None,
             names: list[str] | None = None) -> PartitionLog:
        """Load the partition directory; recover from the recovery point unless the shutdown was clean.

        salvage=True (internal topics) re-validates every segment whatever the stop was, and after
        a corrupt batch keeps the intact batches that follow it: the log is truncated at the damage,
        they are appended again behind it (new offsets, same order), and `damage` says what was lost.
        checks: segment files already being checked on other threads (LogManager.startup);
        names: the directory's listing, when the caller has just taken it.
        """
        plog = cls(tp, directory, topic_config, now_ms, open_files, flusher)
        if names is None:  # one listing (start-up and creation of many partitions)
            directory.mkdir(parents=True, exist_ok=True)
            names = os.listdir(directory)
        if needs_swap_recovery(names):
            swap.recover(directory)  # a cleaning pass the last stop interrupted: finished or undone
            names = os.listdir(directory)
        for name in names:
            if name.endswith((".tmp", ".deleted")):
                os.unlink(directory / name)
        bases = segment_bases(names)
        for name in names:  # index files whose .log is gone are orphans
            if name.endswith((files.INDEX_SUFFIX, files.TIME_INDEX_SUFFIX, files.TXN_INDEX_SUFFIX)) \
                    and name[:20].isdigit() and files.offset_from_name(name) not in bases:
                os.unlink(directory / name)
        for base in bases:
            plog.segments.append(plog._new_segment_object(base, now_ms))
        if not plog.segments:
            start = max(log_start_offset, 0)
            plog.segments.append(plog._new_segment_object(start, now_ms))
        plog._bases = [s.base_offset for s in plog.segments]

        recover_from = first_to_recover(plog._bases, recovery_point, clean=clean, salvage=salvage)
        tail = b""
        for i, seg in enumerate(plog.segments):
            if i < recover_from:
                last = i == len(plog.segments) - 1
                if seg.load(strict_tail=last):
                    continue
                plog.recovered_segments += 1
                if not last:
                    # An older segment's index failed its sanity check: rebuilt from that segment
                    # alone, as Kafka's loadSegmentFiles does; the segments after it stay.
                    seg.recover()
                    continue
                # The last segment (its index or its tail failed): re-validated, truncated at any damage.
            elif not salvage or not clean:
                plog.recovered_segments += 1
            checked = checks.result(str(seg.log_path)) if checks is not None else None
            truncated = seg.recover(max_batch_size=INT32_MAX, keep_tail=salvage, checked=checked)
            if truncated:
                # Anything after a corrupt point cannot be trusted as it lies: later segments go too.
                later_bytes = []
                for later in plog.segments[i + 1 :]:
                    if salvage:
                        later_bytes.append(later.log_path.read_bytes())
                    log.warning("segment_deleted_after_corruption", path=str(later.log_path))
                    later.delete()
                del plog.segments[i + 1 :]
                tail = seg.truncated_tail + b"".join(later_bytes)
                seg.truncated_tail = b""
                break
        plog._bases = [s.base_offset for s in plog.segments]
        plog.log_start_offset = max(log_start_offset, plog.segments[0].base_offset)
        # As Kafka's LogLoader: the recovery point moves only with a flush.
        plog.recovery_point = min(recovery_point, plog.log_end_offset)
        plog._load_producer_state()
        if tail:
            plog._salvage(tail, now_ms)
        if tail or (clean and plog.recovered_segments) or (not clean and flusher is None):
            # What start-up itself rewrote (salvaged batches, indexes rebuilt after a clean stop),
            # and, without a flusher (tools, tests), what it re-validated after a crash.
            plog.flush()
        elif not clean:
            plog._recovered = plog.segments[recover_from:]  # for flush_recovered
        return plog

    def flush_recovered(self) -> None:
        """After a crash, the segments open() re-validated are fsynced by the flusher's thread,
        and the recovery point moves to the log end once they are (settle_flushes), as after a
        roll; so a next crash does not check them again. LogManager.startup calls this once every
        partition is open: a restart then does not wait for the pages the last run left dirty
        (2 GB of them made it 0.6-0.7 s longer, 2026-11-30), nor do its own checkpoint fsyncs
        queue behind their writeback. (open() without a flusher has flushed them itself.)"""
        recovered, self._recovered = self._recovered, []
        if not recovered:
            return
        assert self.flusher is not None  # open() records them only when it has a flusher
        for seg in recovered:
            if seg.txn_index.dirty:  # rebuilt by the producer-state replay: rewritten on this thread
                seg.txn_index.flush()
        # A file deleted meanwhile has nothing left to make durable (fsync_paths skips it).
        paths = [path for seg in recovered for path in seg.file_paths()]
        self._rolled.append((self.flusher.submit(paths, owner=self), paths, self.log_end_offset))

    def _salvage(self, tail: bytes, now_ms: int) -> None:
        """Append again the intact batches of a tail cut off at a corrupt batch (internal topics)."""
        damaged_at = self.log_end_offset
        found, lost_bytes = records.salvage_batches(tail)
        for pos, size in found:
            self.append(bytearray(tail[pos : pos + size]), now_ms=now_ms, origin=AppendOrigin.COORDINATOR)
        self.damage = LogDamage(damaged_at, lost_bytes, len(found))
        log.warning("internal_log_damaged", topic=self.tp.topic, partition=self.tp.partition,
                    at_offset=damaged_at, unreadable_bytes=lost_bytes, batches_kept=len(found),
                    hint="records in the unreadable bytes are lost; state written there may be stale")

    # ------------------------------------------------------------------------------ producer state
    def _snapshot_offsets(self) -> list[int]:
        return sorted(files.offset_from_name(n) for n in os.listdir(self.dir)
                      if n.endswith(files.SNAPSHOT_SUFFIX) and n[:20].isdigit())

    def _snapshot_path(self, offset: int) -> Path:
        return self.dir / files.segment_name(offset, files.SNAPSHOT_SUFFIX)

    def _load_producer_state(self) -> None:
        """Newest valid snapshot at or below the log end, then replay the log after it.

        Snapshots past the log end (the log was truncated) and corrupt ones are deleted; a
        corrupt one is reported and an older one tried (Kafka's ProducerStateManager)."""
        leo = self.log_end_offset
        state: ProducerStateManager | None = None
        start = self.log_start_offset
        # A rebuilt transaction index needs the producer state from before that segment, so a
        # rebuild below the newest snapshot replays the whole log (Kafka's rebuildProducerState).
        rebuild_from = min((s.base_offset for s in self.segments if s.txn_index_rebuild), default=None)
        for offset in reversed(self._snapshot_offsets()):
            path = self._snapshot_path(offset)
            if offset > leo:
                log.warning("snapshot_deleted", path=str(path), reason="beyond the log end offset")
                path.unlink()
                continue
            try:
                entries = snapshot_file.decode(path.read_bytes())
            except (snapshot_file.CorruptSnapshot, OSError) as exc:
                # Deleted even when a rebuild skips it below: Kafka never keeps a corrupt snapshot.
                log.warning("snapshot_corrupt_deleted", path=str(path), reason=str(exc))
                path.unlink()
                continue
            if rebuild_from is not None and offset > rebuild_from:
                continue
            state = ProducerStateManager.from_snapshot(entries)
            start = max(offset, self.log_start_offset)
            break
        self.producer_state = state or ProducerStateManager()
        self._replay_producer_state(start)

    def _replay_producer_state(self, start: int) -> None:
        i = max(0, bisect.bisect_right(self._bases, start) - 1)
        for seg in self.segments[i:]:
            _, pos = seg.index.lookup(start)
            for p, h in seg.iter_headers(pos):
                if h.last_offset < start or h.producer_id < 0:
                    continue
                self._fold_producer_batch(h, lambda seg=seg, p=p, n=h.size: os.pread(seg.fd, n, p), seg, False)
            seg.txn_index_rebuild = False

    def _fold_producer_batch(self, h: records.BatchHeader, batch_bytes: Callable[[], bytes],
                             segment: LogSegment, live: bool) -> CompletedTxn | None:
        """Update producer state with one batch; an ABORT that ends a transaction is recorded in
        the marker's segment's transaction index (live, or when replaying a rebuilt segment)."""
        if not h.is_control:
            self.producer_state.update(h)
            return None
        data = batch_bytes()
        done = self.producer_state.update_marker(h, records.control_type(data),
                                                 records.control_coordinator_epoch(data))
        if done is not None and done.is_aborted and (live or segment.txn_index_rebuild):
            first_unstable = self.producer_state.first_unstable_offset()
            lso = first_unstable if first_unstable is not None else done.last_offset + 1
            segment.txn_index.append(AbortedTxn(done.producer_id, done.first_offset, done.last_offset, lso))
        return done

    def append_marker(self, *, producer_id: int, producer_epoch: int, commit: bool, coordinator_epoch: int,
                      now_ms: int) -> AppendResult:
        """Write a COMMIT/ABORT control batch (WriteTxnMarkers). Raises InvalidProducerEpoch when the
        partition has seen a newer epoch of this producer (Kafka's appendEndTxnMarker)."""
        entry = self.producer_state.producers.get(producer_id)
        if entry is not None and producer_epoch < entry.producer_epoch:
            raise InvalidProducerEpoch(f"marker epoch {producer_epoch} is older than {entry.producer_epoch} "
                                       f"for producer {producer_id}")
        batch = records.build_control_batch(producer_id=producer_id, producer_epoch=producer_epoch, commit=commit,
                                            coordinator_epoch=coordinator_epoch, timestamp_ms=now_ms)
        return self.append(batch, now_ms=now_ms, origin=AppendOrigin.COORDINATOR)

    def take_snapshot(self) -> None:
        """Write the producer state as `<log end offset>.snapshot` (at roll and clean shutdown)."""
        offset = self.log_end_offset
        files.atomic_write(self._snapshot_path(offset), snapshot_file.encode(self.producer_state.to_snapshot()))

    def _new_segment_object(self, base: int, now_ms: int) -> LogSegment:
        return LogSegment(self.dir, base,
                          index_interval_bytes=int(self.config["index.interval.bytes"]),
                          max_index_size=int(self.config["segment.index.bytes"]), now_ms=now_ms,
                          open_files=self.open_files)

    def close(self, *, snapshot: bool = False) -> None:
        self.closed = True
        if snapshot:
            self.take_snapshot()
        for seg in self.segments:
            seg.close()

    def delete(self) -> None:
        self.close()
        for name in os.listdir(self.dir):
            os.unlink(self.dir / name)
        os.rmdir(self.dir)

    # ------------------------------------------------------------------------------ offsets
    @property
    def active(self) -> LogSegment:
        return self.segments[-1]

    @property
    def log_end_offset(self) -> int:
        return self.segments[-1].next_offset

    @property
    def high_watermark(self) -> int:
        return self.log_end_offset

    @property
    def last_stable_offset(self) -> int:
        first_unstable = self.producer_state.first_unstable_offset()
        hw = self.high_watermark
        if first_unstable is None:
            return hw
        # Retention may delete the start of a transaction that is still open; the LSO never points
        # below the log start offset (Kafka's maybeIncrementFirstUnstableOffset does the same).
        return max(min(first_unstable, hw), self.log_start_offset)

    @property
    def size_in_bytes(self) -> int:
        return sum(s.size for s in self.segments)

    # ------------------------------------------------------------------------------ append
    def append(self, payload: bytearray, *, now_ms: int,
               origin: AppendOrigin = AppendOrigin.CLIENT, rewrite: bool = False) -> AppendResult:
        """Validate, assign offsets and write. Raises CorruptRecord, InvalidRecord, MessageTooLarge;
        on any of them nothing is written. `rewrite`: live state written again by an internal
        topic's compaction, not new data (on_append is told of no records)."""
        settings = self.settings
        if origin is AppendOrigin.CLIENT:
            usual = self._check_usual(payload, now_ms)
            if usual is not None:
                return self._append_usual(payload, now_ms, usual[0], usual[1])
            batches, records_max_ts = self._check_client_payload(payload, now_ms)
            h = batches[0][1]
            if h.producer_id >= 0:
                duplicate = self.producer_state.check(h)  # raises InvalidProducerEpoch / OutOfOrderSequence
                if duplicate is not None:
                    # A retry of one of the last five batches: its original offsets, nothing written.
                    return AppendResult(duplicate.first_offset, duplicate.last_offset, -1, self.log_start_offset)
        else:
            batches = self._split(payload)
            records_max_ts = -1

        log_append_time = now_ms if settings.log_append_time else -1
        roll_max_ts, roll_delta = batches[0][1].max_timestamp, 0
        for _, h in batches:
            if h.max_timestamp > roll_max_ts:
                roll_max_ts = h.max_timestamp
            roll_delta += h.last_offset_delta + 1
        try:
            self._maybe_roll(len(payload), roll_max_ts, roll_delta, now_ms)
        except OSError as exc:
            raise self._storage_failed(exc) from None
        next_offset = self.log_end_offset
        base_offset = next_offset
        max_ts = -1
        offset_of_max_ts = -1
        count = 0
        for pos, h in batches:
            if log_append_time >= 0 and not h.is_control:
                batch_max, stamp = log_append_time, records.STAMP_LOG_APPEND_TIME
            elif origin is AppendOrigin.CLIENT:
                # Kafka's setMaxTimestamp: the header says what the records hold, as CreateTime.
                batch_max = records_max_ts
                stamp = (records.STAMP_CREATE_TIME if h.max_timestamp != batch_max
                         or h.attributes & records.TIMESTAMP_TYPE_MASK else records.STAMP_OFFSETS)
            else:
                batch_max, stamp = h.max_timestamp, records.STAMP_OFFSETS
            records.stamp_batch(payload, pos, h.size, next_offset, batch_max, stamp)
            last = next_offset + h.last_offset_delta
            if batch_max > max_ts:
                max_ts, offset_of_max_ts = batch_max, last
            next_offset = last + 1
            count += h.records_count
        last_offset = next_offset - 1
        try:
            self.active.append(payload, last_offset, max_ts, offset_of_max_ts)
        except OSError as exc:
            raise self._storage_failed(exc) from None
        if self.storage_error is not None:
            log.info("storage_recovered", topic=self.tp.topic, partition=self.tp.partition)
            self.storage_error = None
        completed: list[CompletedTxn] = []
        for pos, before in batches:
            if before.producer_id < 0:  # the producer id is not among the fields just rewritten
                continue
            h = records.read_header(payload, pos)  # with the offsets assigned
            done = self._fold_producer_batch(h, lambda pos=pos, n=h.size: bytes(payload[pos:pos + n]),
                                             self.active, True)
            if done is not None:
                completed.append(done)
        self.completed_txns = completed
        self._written(count, 0 if rewrite else count, 0 if rewrite else len(payload))
        return AppendResult(base_offset, last_offset, log_append_time, self.log_start_offset)

    def _written(self, count: int, told_records: int, told_bytes: int) -> None:
        """After an append of `count` records: flush when flush.messages says so, and tell
        on_append what was appended (a rewrite tells nothing: it is not new data)."""
        self.unflushed_messages += count
        if self.unflushed_messages >= self.settings.flush_messages:
            try:
                self.flush()
            except OSError as exc:  # written, not yet synced: the next flush tries again
                log.warning("flush_failed", topic=self.tp.topic, partition=self.tp.partition, reason=str(exc))
        if self.on_append is not None:
            self.on_append(told_records, told_bytes)

    def _append_usual(self, payload: bytearray, now_ms: int, h: records.BatchHeader,
                      records_max_ts: int) -> AppendResult:
        """append() of a producer's batch the compiled checker passed: one whole uncompressed
        batch, never a control batch. The general path's steps for that one batch, without its
        lists and loops: a Produce of one small batch spends most of its broker time in Python
        glue, and this path is most of them (issue 17). tests/unit/storage hold it to the
        general path, which answers everything else."""
        if h.producer_id >= 0:
            duplicate = self.producer_state.check(h)  # raises InvalidProducerEpoch / OutOfOrderSequence
            if duplicate is not None:
                return AppendResult(duplicate.first_offset, duplicate.last_offset, -1, self.log_start_offset)
        size = len(payload)
        try:
            self._maybe_roll(size, h.max_timestamp, h.last_offset_delta + 1, now_ms)
        except OSError as exc:
            raise self._storage_failed(exc) from None
        settings = self.settings
        if settings.log_append_time:
            log_append_time = batch_max = now_ms
            stamp = records.STAMP_LOG_APPEND_TIME
        else:
            # Kafka's setMaxTimestamp: the header says what the records hold, as CreateTime.
            log_append_time, batch_max = -1, records_max_ts
            stamp = (records.STAMP_CREATE_TIME if h.max_timestamp != batch_max
                     or h.attributes & records.TIMESTAMP_TYPE_MASK else records.STAMP_OFFSETS)
        seg = self.segments[-1]
        base_offset = seg.next_offset
        records.stamp_batch(payload, 0, h.size, base_offset, batch_max, stamp)
        last_offset = base_offset + h.last_offset_delta
        try:
            # batch_max >= -1, and a segment's largest timestamp starts at -1: one batch's
            # timestamp of -1 moves neither it nor its offset, as in the general path.
            seg.append(payload, last_offset, batch_max, last_offset)
        except OSError as exc:
            raise self._storage_failed(exc) from None
        if self.storage_error is not None:
            log.info("storage_recovered", topic=self.tp.topic, partition=self.tp.partition)
            self.storage_error = None
        if h.producer_id >= 0:
            self.producer_state.update(records.read_header(payload, 0))  # with the offsets assigned
        if self.completed_txns:
            self.completed_txns = []
        count = h.records_count
        self._written(count, count, size)
        return AppendResult(base_offset, last_offset, log_append_time, self.log_start_offset)

    def _storage_failed(self, exc: OSError) -> KafkaStorageError:
        """Nothing was written (the segment cut itself back): KAFKA_STORAGE_ERROR, and one warning
        per partition until an append succeeds again."""
        if self.storage_error is None:
            log.warning("storage_error", topic=self.tp.topic, partition=self.tp.partition, dir=str(self.dir),
                        reason=str(exc), hint="appends fail with KAFKA_STORAGE_ERROR until the disk accepts them")
        self.storage_error = str(exc)
        return KafkaStorageError(f"cannot write to {self.dir}: {exc}")

    def _split(self, payload: bytearray) -> list[tuple[int, records.BatchHeader]]:
        """The payload's whole batches, header-checked (records.split_batches), none too large;
        an incomplete batch after the last one is cut off, as Kafka drops it."""
        batches = records.split_batches(payload)
        if not batches:
            raise InvalidRecord("no complete record batch in the produce data")
        used = batches[-1][0] + batches[-1][1].size
        if used < len(payload):
            del payload[used:]
        max_message_bytes = self.settings.max_message_bytes
        for _, h in batches:
            if h.size > max_message_bytes:
                raise MessageTooLarge(f"batch of {h.size} bytes exceeds max.message.bytes={max_message_bytes}")
        return batches

    def _check_usual(self, payload: bytearray, now_ms: int) -> tuple[records.BatchHeader, int] | None:
        """The compiled checker's (validator.client_batch_c) answer for the usual case, one whole
        sound uncompressed batch, in one call: its header and the largest timestamp of its
        records. None for everything else: the Python reference in _check_client_payload then
        raises the exact error (or decompresses)."""
        checker = validator.client_batch_c
        if checker is None or not _WALK_RECORDS:
            return None
        s = self.settings
        low, high = validator.timestamp_window(now_ms, s.log_append_time, s.before_max_ms, s.after_max_ms)
        usual = checker(payload, low, high, s.compacted, s.max_message_bytes, records.BatchHeader)
        if usual is None:
            return None
        used, header, records_max_ts = usual
        if used < len(payload):  # fewer than 17 stray bytes after the batch
            del payload[used:]
        return header, records_max_ts

    def _check_client_payload(self, payload: bytearray,
                              now_ms: int) -> tuple[list[tuple[int, records.BatchHeader]], int]:
        """A producer's payload checked against every rule, in Python (append() asks _check_usual
        first): its one batch, and the largest timestamp of its records. Raises CorruptRecord,
        InvalidRecord, MessageTooLarge, or decompresses."""
        rules = self._validation_rules(now_ms)
        batches = self._split(payload)
        if len(batches) != 1:
            raise InvalidRecord("produce requests v3+ carry exactly one record batch per partition")
        pos, h = batches[0]
        if h.base_offset != 0:
            raise InvalidRecord(f"the batch's base offset must be 0, not {h.base_offset}")
        if not _WALK_RECORDS:
            validator.check_client_batch_header(h)
            return batches, h.max_timestamp
        return batches, validator.validate_client_batch(payload, pos, h, rules)

    def _validation_rules(self, now_ms: int) -> validator.Rules:
        s = self.settings
        return validator.Rules(now_ms, s.log_append_time, s.before_max_ms, s.after_max_ms, s.compacted)

    def _maybe_roll(self, size: int, max_ts: int, last_delta: int, now_ms: int) -> None:
        """Roll before an append of `size` bytes whose batches' largest timestamp is `max_ts` and
        which takes `last_delta` offsets, when the active segment cannot take it."""
        seg = self.segments[-1]
        if seg.size == 0:
            return
        reason = None
        settings = self.settings
        if seg.size + size > settings.segment_bytes:
            reason = "size"
        elif self._time_waited_for_roll(seg, max_ts, now_ms) > settings.segment_ms:
            reason = "time"
        elif seg.index.is_full or seg.time_index.is_full:
            reason = "index_full"
        elif self.log_end_offset + last_delta - seg.base_offset > INT32_MAX:
            reason = "offset_overflow"
        if reason:
            self.roll(now_ms, reason)

    @staticmethod
    def _time_waited_for_roll(seg: LogSegment, message_ts: int, now_ms: int) -> int:
        # Kafka's LogSegment.timeWaitedForRoll: the incoming batch's timestamp against the
        # segment's first batch timestamp, or wall time since creation when there is none.
        if seg.rolling_base_ms is not None and seg.rolling_base_ms >= 0:
            return message_ts - seg.rolling_base_ms
        return now_ms - seg.created_ms

    def roll(self, now_ms: int, reason: str = "requested") -> LogSegment:
        """Start a new active segment at the log end offset; fsync the old one."""
        old = self.active
        new_base = self.log_end_offset
        if old.size == 0 and old.base_offset == new_base:
            return old
        old.on_become_inactive()
        if self.flusher is None or old.txn_index.dirty:  # a dirty txn index is rewritten by flush()
            self._flush_rolled_inline()  # the recovery point below must not pass one still under way
            old.flush()
            self.recovery_point = max(self.recovery_point, new_base)
        else:
            # As Kafka's roll schedules "flush-log": the fsync of a large segment held the loop
            # for 0.35-0.45 s (segment_flusher.py); the recovery point moves once it is done.
            paths = old.file_paths()
            self._rolled.append((self.flusher.submit(paths, owner=self), paths, new_base))
        self.take_snapshot()
        seg = self._new_segment_object(new_base, now_ms)
        self.segments.append(seg)
        self._bases.append(new_base)
        log.info("segment_rolled", topic=self.tp.topic, partition=self.tp.partition,
                 base_offset=new_base, reason=reason)
        return seg

    def flush(self) -> None:
        """Everything written is on disk: rolled segments whose background flush is still under
        way are fsynced here too (a repeated fsync of clean pages costs next to nothing)."""
        self._flush_rolled_inline()
        self.active.flush()
        self.unflushed_messages = 0
        self.recovery_point = self.log_end_offset

    @property
    def flushes_under_way(self) -> bool:
        return bool(self._rolled)

    def _flush_rolled_inline(self) -> None:
        for _future, paths, _base in self._rolled:
            fsync_paths(paths)
        self._rolled.clear()

    def settle_flushes(self) -> None:
        """Move the recovery point past the rolled segments whose background flush is done, in
        roll order (one that failed, and every later one, wait for the next flush())."""
        while self._rolled and self._rolled[0][0].done():
            future, _paths, base = self._rolled[0]
            exc = future.exception()
            if exc is not None:
                if self._flush_failure_told != base:  # once, not every second until the next flush
                    self._flush_failure_told = base
                    log.error("segment_flush_failed", topic=self.tp.topic, partition=self.tp.partition,
                              base_offset=base, reason=str(exc),
                              hint="the recovery point stays; the next flush or clean stop tries again")
                return
            self._rolled.pop(0)
            self.recovery_point = max(self.recovery_point, min(base, self.log_end_offset))

    def maybe_flush_by_time(self, now_ms: int) -> None:
        flush_ms = int(self.config["flush.ms"])
        if self.unflushed_messages and now_ms - self.last_flush_ms >= flush_ms:
            self.flush()
            self.last_flush_ms = now_ms

    # ------------------------------------------------------------------------------ read
    def read(self, offset: int, max_bytes: int, *, upper_offset: int | None = None,
             min_one: bool = True) -> bytes:
        """Raw batches starting at the one holding `offset`; empty at the log end.

        Raises OffsetOutOfRange below the log start offset or past the log end offset.
        """
        return bytes(self.read_range(offset, max_bytes, upper_offset=upper_offset, min_one=min_one)[0])

    def read_range(self, offset: int, max_bytes: int, *, upper_offset: int | None = None,
                   min_one: bool = True) -> tuple[bytes | memoryview, int]:
        """As read(), with the offset that follows the data (the fetch's upper bound); the data
        may be a view of a larger read."""
        leo = self.log_end_offset
        if offset < self.log_start_offset or offset > leo:
            raise OffsetOutOfRange(f"offset {offset} not in [{self.log_start_offset}, {leo}]")
        upper = leo if upper_offset is None else min(upper_offset, leo)
        if offset >= upper:
            return b"", offset
        i = max(0, bisect.bisect_right(self._bases, offset) - 1)
        for seg in self.segments[i:]:
            found = seg.read_range(offset, max_bytes, upper, min_one)
            if found is not None:
                return found
        return b"", offset

    def collect_aborted(self, fetch_offset: int, upper_bound: int) -> list[AbortedTxn]:
        """Aborted transactions overlapping [fetch_offset, upper_bound) (Kafka's collectAbortedTxns)."""
        out: list[AbortedTxn] = []
        i = max(0, bisect.bisect_right(self._bases, fetch_offset) - 1)
        for seg in self.segments[i:]:
            found, complete = seg.txn_index.collect(fetch_offset, upper_bound)
            out.extend(found)
            if complete:
                break
        return out

    def last_marker(self, producer_id: int) -> tuple[int, int, int] | None:
        """(control type, producer epoch, timestamp) of the newest COMMIT/ABORT marker of a producer,
        or None. Scans segments newest first (a startup repair after damage, never a hot path)."""
        for seg in reversed(self.segments):
            found = None
            for pos, h in seg.iter_headers(0):
                if h.is_control and h.producer_id == producer_id:
                    found = (pos, h)
            if found is not None:
                pos, h = found
                return records.control_type(os.pread(seg.fd, h.size, pos)), h.producer_epoch, h.max_timestamp
        return None

    def aborted_txns(self) -> list[AbortedTxn]:
        return [e for seg in self.segments for e in seg.txn_index.entries]

    def offset_for_timestamp(self, timestamp: int) -> tuple[int, int] | None:
        """(offset, timestamp) of the first record with timestamp >= target, from the log start."""
        for seg in self.segments:
            if seg.max_timestamp < timestamp:
                continue
            found = seg.find_offset_by_timestamp(timestamp, self.log_start_offset)
            if found is not None:
                return found
        return None

    def max_timestamp_offset(self) -> tuple[int, int] | None:
        """(offset, timestamp) of the first record carrying the largest timestamp (ListOffsets -3);
        Kafka finds the batch, then the record inside it (RecordBatch.offsetOfMaxTimestamp)."""
        best: LogSegment | None = None
        for seg in self.segments:
            if seg.max_timestamp >= 0 and (best is None or seg.max_timestamp > best.max_timestamp):
                best = seg
        if best is None:
            return None
        return best.find_offset_by_timestamp(best.max_timestamp, self.log_start_offset)

    # ------------------------------------------------------------------------------ cleaning
    def replace_segments(self, base: int, old: list[LogSegment], now_ms: int,
                         reach: Callable[[str], None] = lambda step: None) -> LogSegment:
        """Put the cleaned segment `<base>.log.cleaned` (complete and fsynced) in place of `old`,
        consecutive segments of this log (Kafka's replaceSegments; the file steps in cleaner/swap.py)."""
        i = next(k for k, s in enumerate(self.segments) if s is old[0])
        if any(a is not b for a, b in zip(self.segments[i : i + len(old)], old, strict=True)):
            raise ValueError("the segments to replace are not consecutive segments of the log")

        def delete_old() -> None:
            for seg in old:
                seg.delete()
                if seg.base_offset != base:  # as Kafka's replaceSegments: a replaced segment's snapshot goes too
                    self._snapshot_path(seg.base_offset).unlink(missing_ok=True)

        swap.commit(self.dir, base, delete_old, reach)
        new = self._new_segment_object(base, now_ms)
        if not new.load():
            new.recover()
        self.segments[i : i + len(old)] = [new]
        self._bases = [s.base_offset for s in self.segments]
        return new

    # ------------------------------------------------------------------------------ retention
    @property
    def deletes_records(self) -> bool:
        """cleanup.policy includes `delete`: retention and DeleteRecords may drop old records."""
        return "delete" in str(self.config["cleanup.policy"])

    def delete_retained_segments(self, now_ms: int) -> int:
        """Delete segments past retention.ms or beyond retention.bytes; returns how many."""
        if not self.deletes_records:
            return 0
        retention_ms = int(self.config["retention.ms"])
        retention_bytes = int(self.config["retention.bytes"])
        deletable: list[LogSegment] = []
        total = self.size_in_bytes
        for seg in self.segments:
            if seg.size == 0:
                break
            by_time = retention_ms >= 0 and seg.max_timestamp >= 0 and now_ms - seg.max_timestamp > retention_ms
            by_size = retention_bytes >= 0 and total - seg.size >= retention_bytes
            if not (by_time or by_size):
                break
            deletable.append(seg)
            total -= seg.size
        if not deletable:
            return 0
        if deletable[-1] is self.active:
            self.roll(now_ms, "retention")
        for seg in deletable:
            log.info("segment_deleted", topic=self.tp.topic, partition=self.tp.partition,
                     base_offset=seg.base_offset, reason="retention")
            seg.delete()
        n = len(deletable)
        del self.segments[:n]
        self._bases = [s.base_offset for s in self.segments]
        self.log_start_offset = max(self.log_start_offset, self.segments[0].base_offset)
        self._on_log_start_offset_incremented()
        return n

    def _on_log_start_offset_incremented(self) -> None:
        # Snapshots below the log start describe batches that are gone (Kafka keeps none of them).
        for offset in self._snapshot_offsets():
            if offset < self.log_start_offset:
                self._snapshot_path(offset).unlink(missing_ok=True)

    def delete_records_before(self, offset: int) -> int:
        """Advance the log start offset to `offset` (never past the high watermark) and delete the
        segments wholly below it (Kafka's DeleteRecords / log start offset increment). Returns the
        number of segments deleted."""
        offset = min(offset, self.high_watermark)
        if offset <= self.log_start_offset:
            return 0
        self.log_start_offset = offset
        doomed = [seg for seg in self.segments[:-1] if seg.next_offset <= offset]
        for seg in doomed:
            log.info("segment_deleted", topic=self.tp.topic, partition=self.tp.partition,
                     base_offset=seg.base_offset, reason="log_start_offset")
            seg.delete()
        del self.segments[: len(doomed)]
        self._bases = [s.base_offset for s in self.segments]
        self._on_log_start_offset_incremented()
        return len(doomed)

    def truncate_to(self, offset: int) -> None:
        """Remove everything at and after offset (used by recovery of internal state only)."""
        while len(self.segments) > 1 and self.segments[-1].base_offset >= offset:
            self.segments.pop().delete()
        self.active.truncate_to(offset)
        self._bases = [s.base_offset for s in self.segments]
        self.recovery_point = min(self.recovery_point, self.log_end_offset)
        self._load_producer_state()


__all__ = ["PartitionLog", "AppendOrigin", "AppendResult", "CorruptRecord", "InvalidRecord",
           "MessageTooLarge", "OffsetOutOfRange"]
