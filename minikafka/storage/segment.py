"""LogSegment: one base offset's `.log` with its `.index` and `.timeindex` (Kafka's LogSegment).

Batches are appended exactly as received (offsets already patched). The offset index gets an
entry when more than `index.interval.bytes` were appended since the last one; the entry's offset
is the last offset of the batch and its position the batch start; the time index gets the
segment's max timestamp so far at the same moment. Reads never build per-record objects: they
return the raw bytes of whole batches.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Iterator
from pathlib import Path

import structlog

from minikafka.protocol import records, validator
from minikafka.protocol.errors import CorruptRecord
from minikafka.protocol.records import HEADER_SIZE, LOG_OVERHEAD, BatchHeader
from minikafka.storage import files
from minikafka.storage.offset_index import OffsetIndex
from minikafka.storage.open_files import SHARED, OpenFiles
from minikafka.storage.recovery_check import Checked
from minikafka.storage.time_index import TimeIndex
from minikafka.storage.txn_index import TransactionIndex

log = structlog.get_logger("minikafka.storage")

_SCAN_CHUNK = 64 * 1024
_LOG_FLAGS = os.O_RDWR | os.O_CREAT


class LogSegment:
    __slots__ = (
        "dir", "base_offset", "log_path", "_log_key", "files", "closed", "size", "index", "time_index",
        "index_interval_bytes", "bytes_since_last_index_entry", "max_timestamp",
        "offset_of_max_timestamp", "next_offset", "rolling_base_ms", "created_ms", "txn_index",
        "txn_index_rebuild", "truncated_tail",
    )

    def __init__(self, directory: Path, base_offset: int, *, index_interval_bytes: int,
                 max_index_size: int, now_ms: int, open_files: OpenFiles = SHARED, suffix: str = "") -> None:
        """`suffix` names the files of a segment being built aside (the log cleaner's `.cleaned`)."""
        self.dir = directory
        self.base_offset = base_offset
        self.log_path = directory / (files.segment_name(base_offset, files.LOG_SUFFIX) + suffix)
        self._log_key = str(self.log_path)
        self.files = open_files  # descriptors are borrowed per system call (storage/open_files.py)
        self.closed = False
        self.size = os.fstat(self.fd).st_size
        self.index = OffsetIndex(directory / (files.segment_name(base_offset, files.INDEX_SUFFIX) + suffix),
                                 base_offset, max_index_size, open_files)
        self.time_index = TimeIndex(directory / (files.segment_name(base_offset, files.TIME_INDEX_SUFFIX) + suffix),
                                    base_offset, max_index_size, open_files)
        self.txn_index = TransactionIndex(
            directory / (files.segment_name(base_offset, files.TXN_INDEX_SUFFIX) + suffix), open_files)
        # Set when the aborted-transaction entries must be rebuilt by replaying producer state.
        self.txn_index_rebuild = False
        self.truncated_tail = b""  # what recover(keep_tail=True) cut off, for salvage
        if self.size == 0:  # a new segment has its (empty) index files at once, as in Kafka
            self.index.path.touch(exist_ok=True)
            self.time_index.path.touch(exist_ok=True)
        self.index_interval_bytes = index_interval_bytes
        self.bytes_since_last_index_entry = 0
        self.max_timestamp = -1
        self.offset_of_max_timestamp = -1
        self.next_offset = base_offset
        self.rolling_base_ms: int | None = None  # max timestamp of the first batch (segment.ms)
        self.created_ms = now_ms

    @property
    def fd(self) -> int:
        """The `.log` file's descriptor, opened on demand: use it for one system call at a time."""
        return self.files.fd(self._log_key, _LOG_FLAGS)

    # ---------------------------------------------------------------------------------- loading
    def load(self, *, strict_tail: bool = True) -> bool:
        """Open an existing segment whose tail is trusted (clean shutdown or below recovery point).

        False when it cannot be trusted after all, with nothing changed: the caller recovers it
        (re-validates and truncates at the damage). That is so when an index is missing or fails
        the sanity check, and (strict_tail, the log's last segment) when the batches after the
        last index entry do not end exactly at the end of the file: a damaged header there would
        otherwise end the walk quietly, the log would end before bytes it still holds (all of
        them, when the entry points at the damage), and the next append would give out offsets
        that are already in the file. An older segment's damage is left to reads, which answer
        CORRUPT_MESSAGE there: truncating it would delete every later segment with it.
        """
        if self.size == 0:
            self.index.reset()
            self.time_index.reset()
            self.txn_index.reset()
            return True
        if not self.txn_index.load():
            log.warning("txn_index_rebuild", path=str(self.txn_index.path), reason="failed sanity check")
            self.txn_index.reset()
            self.txn_index_rebuild = True
        if not (self.index.load() and self.time_index.load() and self._index_within_log()):
            log.warning("index_rebuild", path=str(self.log_path), reason="missing or failed sanity check")
            return False
        start = self.index.last_position()
        try:
            tail = list(self.iter_headers(start, strict=strict_tail))
        except CorruptRecord as exc:
            log.warning("segment_tail_unreadable", path=str(self.log_path), reason=str(exc),
                        hint="the segment is re-validated and truncated at the damage")
            return False
        ts, off = self.time_index.last_entry
        self.max_timestamp, self.offset_of_max_timestamp = ts, off
        self.next_offset = self.base_offset
        for pos, h in tail:
            if pos == 0:
                self.rolling_base_ms = h.max_timestamp
            self.next_offset = h.next_offset
            if h.max_timestamp > self.max_timestamp:
                self.max_timestamp, self.offset_of_max_timestamp = h.max_timestamp, h.last_offset
        # Bytes since the last index entry, as append() and recover() count them.
        self.bytes_since_last_index_entry = self.size - start
        if self.rolling_base_ms is None:
            first_header = next(self.iter_headers(0), None)
            if first_header is not None:
                self.rolling_base_ms = first_header[1].max_timestamp
        return True

    def _index_within_log(self) -> bool:
        return not self.index.positions or self.index.positions[-1] < max(self.size, 1)

    def recover(self, max_batch_size: int = 2**31 - 1, *, keep_tail: bool = False,
                checked: Checked | None = None) -> int:
        """Re-validate every batch (size, magic, CRC), rebuild both indexes, truncate a bad tail.

        Returns the number of bytes truncated (Kafka's LogSegment.recover); with keep_tail the
        bytes cut off are kept in `truncated_tail` (internal topics salvage intact batches).
        `checked`: this file's batches already checked on another thread (recovery_check.py); its
        CRCs are not computed again, and where it found damage the tail is cut as if found here.
        """
        # Rebuilt in memory; each index file is written at the end only where it differs.
        self.index.begin_rebuild()
        self.time_index.begin_rebuild()
        try:
            return self._recover(max_batch_size, keep_tail, checked)
        finally:
            try:
                self.index.end_rebuild()
            finally:  # never left rebuilding: its later appends would not reach the file
                self.time_index.end_rebuild()

    def _recover(self, max_batch_size: int, keep_tail: bool, checked: Checked | None) -> int:
        """recover()'s walk, with both indexes open for their rebuild."""
        self.txn_index.reset()
        self.txn_index_rebuild = True  # the log replay of producer state refills it
        self.max_timestamp = -1
        self.offset_of_max_timestamp = -1
        self.next_offset = self.base_offset
        self.rolling_base_ms = None
        valid = 0
        last_index_entry = 0
        prev_next = None
        trusted = checked if checked is not None and checked.size == self.size else None
        try:
            walk = (self.iter_headers(0, validate=True) if trusted is None
                    else self.iter_headers(0, strict=True, end=trusted.intact))
            for pos, h in walk:
                if h.size > max_batch_size:
                    raise CorruptRecord(f"batch of {h.size} bytes over the limit")
                if prev_next is not None and h.base_offset < prev_next:
                    raise CorruptRecord("offsets go backwards")
                if h.max_timestamp > self.max_timestamp:
                    self.max_timestamp, self.offset_of_max_timestamp = h.max_timestamp, h.last_offset
                if pos - last_index_entry > self.index_interval_bytes:
                    self.index.append(h.last_offset, pos)
                    self.time_index.maybe_append(self.max_timestamp, self.offset_of_max_timestamp)
                    last_index_entry = pos
                if self.rolling_base_ms is None:
                    self.rolling_base_ms = h.max_timestamp
                valid = pos + h.size
                self.next_offset = h.next_offset
                prev_next = h.next_offset
            if trusted is not None and trusted.reason is not None:
                raise self._corrupt(trusted.intact, trusted.reason)
        except CorruptRecord as exc:
            log.warning("segment_corrupt_tail", path=str(self.log_path), position=valid, reason=str(exc))
        truncated = self.size - valid
        if truncated:
            log.warning("segment_truncated", path=str(self.log_path), valid_bytes=valid, truncated_bytes=truncated)
            if keep_tail:
                self.truncated_tail = os.pread(self.fd, truncated, valid)
            os.ftruncate(self.fd, valid)
            self.size = valid
        # As Kafka: a normally closed segment ends with an entry for its largest timestamp.
        self.time_index.maybe_append(self.max_timestamp, self.offset_of_max_timestamp)
        self.bytes_since_last_index_entry = valid - last_index_entry
        return truncated

    # ---------------------------------------------------------------------------------- writing
    def append(self, data: bytes | bytearray | memoryview, last_offset: int, max_timestamp: int,
               offset_of_max_timestamp: int) -> int:
        """Write batches (offsets already assigned) at the end; returns their file position.

        All or nothing: when the disk refuses a write (no space, I/O error) the log and both
        indexes are cut back to what they were and the OSError is raised; nothing of the batch
        stays, in the files or in this object's state."""
        position = self.size
        try:
            n = os.pwrite(self.fd, data, position)
            if n != len(data):  # a full disk can accept part of a write
                raise OSError(errno.ENOSPC, f"short write to {self.log_path} ({n} of {len(data)} bytes)")
            new_max = max_timestamp > self.max_timestamp
            max_ts = max_timestamp if new_max else self.max_timestamp
            max_off = offset_of_max_timestamp if new_max else self.offset_of_max_timestamp
            indexed = self.bytes_since_last_index_entry > self.index_interval_bytes
            if indexed:
                self.index.append(last_offset, position)
                self.time_index.maybe_append(max_ts, max_off)
        except OSError:
            self._cut_back(position)
            raise
        self.size += n
        if self.rolling_base_ms is None:
            self.rolling_base_ms = max_timestamp
        self.max_timestamp, self.offset_of_max_timestamp = max_ts, max_off
        if indexed:
            self.bytes_since_last_index_entry = 0
        self.bytes_since_last_index_entry += n
        self.next_offset = last_offset + 1
        return position

    def append_batches(self, data: bytes | bytearray, batches: list[tuple[int, BatchHeader]]) -> None:
        """Write whole batches (offsets as stored) in one call, indexing them one by one as
        append() would have: the log cleaner's output, never the request path."""
        position = self.size
        n = os.pwrite(self.fd, data, position)
        if n != len(data):
            self._cut_back(position)
            raise OSError(errno.ENOSPC, f"short write to {self.log_path} ({n} of {len(data)} bytes)")
        for pos, h in batches:
            if h.max_timestamp > self.max_timestamp:
                self.max_timestamp, self.offset_of_max_timestamp = h.max_timestamp, h.last_offset
            if self.bytes_since_last_index_entry > self.index_interval_bytes:
                self.index.append(h.last_offset, position + pos)
                self.time_index.maybe_append(self.max_timestamp, self.offset_of_max_timestamp)
                self.bytes_since_last_index_entry = 0
            if self.rolling_base_ms is None:
                self.rolling_base_ms = h.max_timestamp
            self.bytes_since_last_index_entry += h.size
            self.next_offset = h.next_offset
        self.size += n

    def _cut_back(self, position: int) -> None:
        """Undo a failed append (shrinking a file needs no space)."""
        try:
            os.ftruncate(self.fd, position)
            self.index.truncate_to_position(position)
            self.time_index.truncate_to_offset(self.next_offset)
        except OSError as exc:  # pragma: no cover - the next start's recovery truncates the tail
            log.warning("append_undo_failed", path=str(self.log_path), reason=str(exc))

    def on_become_inactive(self) -> None:
        """At roll: the final time index entry (Kafka's onBecomeInactiveSegment)."""
        self.time_index.maybe_append(self.max_timestamp, self.offset_of_max_timestamp)

    def file_paths(self) -> list[Path]:
        """The segment's files, for a flush by path (SegmentFlusher)."""
        return [self.log_path, self.index.path, self.time_index.path, self.txn_index.path]

    def flush(self) -> None:
        os.fsync(self.fd)
        self.index.flush()
        self.time_index.flush()
        self.txn_index.flush()

    def truncate_to(self, offset: int) -> None:
        """Remove every batch whose base offset is >= offset."""
        cut = self.size
        for pos, h in self.iter_headers(self.index.lookup(offset)[1]):
            if h.base_offset >= offset:
                cut = pos
                break
        if cut < self.size:
            os.ftruncate(self.fd, cut)
            self.size = cut
            self.index.truncate_to_position(cut)
            self.time_index.truncate_to_offset(offset)
            self.txn_index.truncate_to(offset)
            # Recompute the tail state from what is left.
            self.recover()

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            if self.max_timestamp >= 0:
                self.time_index.maybe_append(self.max_timestamp, self.offset_of_max_timestamp)
            self.files.close(self._log_key)
        self.index.close()
        self.time_index.close()
        self.txn_index.close()

    def delete(self) -> None:
        self.close()
        for suffix in (files.LOG_SUFFIX, files.INDEX_SUFFIX, files.TIME_INDEX_SUFFIX, files.TXN_INDEX_SUFFIX):
            try:
                os.unlink(self.dir / files.segment_name(self.base_offset, suffix))
            except FileNotFoundError:
                pass

    # ---------------------------------------------------------------------------------- reading
    def iter_headers(self, start: int, *, validate: bool = False, strict: bool = False,
                     end: int | None = None) -> Iterator[tuple[int, BatchHeader]]:
        """(position, header) of each batch from `start`; stops quietly at an incomplete tail.

        strict=True raises CorruptRecord where a bad header or a batch running past the end of the
        file stops the walk before the end (reads: the data there cannot be served); validate=True
        also checks every batch's CRC (recovery). `end`: walk only the file's first `end` bytes.
        """
        pos = start
        size = self.size if end is None else min(end, self.size)
        buf = b""
        buf_start = pos
        raising = validate or strict
        while pos + LOG_OVERHEAD <= size:
            rel = pos - buf_start
            if rel + HEADER_SIZE > len(buf):
                buf = os.pread(self.fd, max(_SCAN_CHUNK, HEADER_SIZE), pos)
                buf_start, rel = pos, 0
            if len(buf) - rel < HEADER_SIZE:
                if raising:
                    raise self._corrupt(pos, "truncated batch header")
                return
            h = records.read_header(buf, rel)
            if h.size < HEADER_SIZE or h.magic != records.MAGIC:
                if raising:
                    raise self._corrupt(pos, "bad batch header")
                return
            if pos + h.size > size:
                if raising:
                    raise self._corrupt(pos, "batch runs past the end of the file")
                return
            if validate:
                if rel + h.size <= len(buf):
                    crc = records.crc_of(buf, rel, h.size)
                else:
                    crc = records.crc_of(os.pread(self.fd, h.size, pos), 0, h.size)
                if crc != h.crc:
                    raise self._corrupt(pos, "CRC mismatch")
            yield pos, h
            pos += h.size
        if raising and pos < size:
            raise self._corrupt(pos, "truncated batch header")

    def _corrupt(self, position: int, reason: str) -> CorruptRecord:
        return CorruptRecord(f"{reason} at position {position} of {self.log_path}")

    def find_position(self, offset: int) -> tuple[int, BatchHeader] | None:
        """The first batch whose last offset is >= offset (CorruptRecord if a bad batch is in the way)."""
        _, start = self.index.lookup(offset)
        for pos, h in self.iter_headers(start, strict=True):
            if h.last_offset >= offset:
                return pos, h
        return None

    def read(self, offset: int, max_bytes: int, upper_offset: int, min_one: bool) -> bytes | None:
        """Whole batches from the one holding `offset` (see read_range); None when none is here."""
        found = self.read_range(offset, max_bytes, upper_offset, min_one)
        return None if found is None else bytes(found[0])

    def read_range(self, offset: int, max_bytes: int, upper_offset: int,
                   min_one: bool) -> tuple[bytes | memoryview, int] | None:
        """Whole batches from the one holding `offset`, at most max_bytes (but at least one batch
        if min_one, KIP-74), never a batch whose base offset is >= upper_offset; with the offset
        that follows the last batch returned.

        Every batch returned has passed its CRC check: the read stops before a batch that fails
        it, and raises CorruptRecord (naming file and position) when that is the first one. None
        when no batch here holds offset.
        """
        found = self.find_position(offset)
        if found is None:
            return None
        pos, first = found
        if first.base_offset >= upper_offset:
            return b"", offset
        want = min(max_bytes, self.size - pos)
        if want < first.size:
            if not min_one:
                return b"", offset
            data = os.pread(self.fd, first.size, pos)
            if not records.is_intact(data, 0, first.size):
                raise self._corrupt(pos, "CRC mismatch or bad batch header")
            return data, first.next_offset
        data = os.pread(self.fd, want, pos)
        end = 0
        last = -1
        n = len(data)
        while end + LOG_OVERHEAD <= n:
            base, size = records.peek_size(data, end)
            if base >= upper_offset or end + size > n:
                break
            if not records.is_intact(data, end, size):
                if last < 0:
                    raise self._corrupt(pos + end, "CRC mismatch or bad batch header")
                break
            last = end
            end += size
        next_offset = records.read_header(data, last).next_offset if last >= 0 else offset
        # A view, not a copy: the read usually ends inside a batch, and a Fetch answer hands these
        # bytes to the socket as they are.
        return (data if end == n else memoryview(data)[:end]), next_offset

    def find_offset_by_timestamp(self, timestamp: int, start_offset: int) -> tuple[int, int] | None:
        """(offset, timestamp) of the first record with timestamp >= target and offset >= start.

        Bounded work whatever the data (Kafka's LogSegment.findOffsetByTimestamp): the time index
        gives a position at most about one index interval before the first batch whose max
        timestamp reaches the target; batch headers are skipped from there, and only that
        batch's records are walked (at C speed, bounded by its bytes)."""
        if self.max_timestamp < timestamp:
            return None
        approx = max(self.time_index.lookup(timestamp), start_offset)
        _, pos = self.index.lookup(approx)
        for p, h in self.iter_headers(pos, strict=True):
            if h.max_timestamp < timestamp or h.last_offset < start_offset:
                continue
            if h.attributes & records.TIMESTAMP_TYPE_MASK:  # LogAppendTime: one timestamp for all
                return max(h.base_offset, start_offset), h.max_timestamp
            batch = os.pread(self.fd, h.size, p)
            if not records.is_intact(batch, 0, h.size):
                raise self._corrupt(p, "CRC mismatch or bad batch header")
            walk = validator.walk_records(validator.record_area(batch, 0, h), h.records_count, h.base_timestamp,
                                          validator.INT64_MIN, validator.INT64_MAX, False, timestamp)
            if walk.fault is not None:
                raise self._corrupt(p, walk.fault)
            if walk.match_delta < 0:
                continue
            if h.base_offset + walk.match_delta >= start_offset:
                return h.base_offset + walk.match_delta, walk.match_timestamp
            # The batch straddles the log start offset: the records below it do not count.
            for rec in records.iter_records(batch):
                if rec.timestamp >= timestamp and rec.offset >= start_offset:
                    return rec.offset, rec.timestamp
        return None
