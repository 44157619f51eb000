"""Start-up re-validation of segments, several at a time (Kafka's num.recovery.threads.per.data.dir).

After a crash every segment from a partition's recovery point on is read whole and each batch's
CRC is checked (LogSegment.recover). With gigabytes written since the last flush, that reading is
most of a restart: 5 GB over 100 partitions took 0.85 s of a 1.33 s restart on the 2-core VM
(2026-11-30), all on the event loop's thread. Reading (pread) and CRC32C release the GIL, so the
checks can run in threads and use more than one core. Kafka recovers partitions on a pool of
`num.recovery.threads.per.data.dir` threads (2 since Kafka 4.0, KIP-1030); minikafka checks
segments on a pool of that size, ahead of the partitions being opened in order on the loop's thread.

A check shares nothing with the rest of storage: it opens the file by its path, not through the
OpenFiles cache (whose descriptors the opening thread may close, and the number be reused, between
a lookup and a read), and it only reads. Its answer is how far the file holds whole, intact
batches, and why it stops before the end if it does. LogSegment.recover then walks the headers up
to there without checking CRCs again, and treats the rest exactly as a corrupt tail it found itself.
Everything else recovery decides (offsets going backwards, the batch size limit, the indexes)
stays in LogSegment.recover.
"""

from __future__ import annotations

import mmap
import os
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from typing import NamedTuple

import structlog

from minikafka.protocol import records
from minikafka.protocol.records import HEADER_SIZE, LOG_OVERHEAD, MAGIC

log = structlog.get_logger("minikafka.storage")

_READ_CHUNK = 8 * 1024 * 1024  # one read covers many batches; a larger batch grows the buffer
# Smaller files are checked inline by recover(): handing them to a thread costs more than it saves,
# and many small checks make the threads and the opening thread take turns at the GIL.
MIN_CHECKED_BYTES = 1024 * 1024
# Checked ahead, small batches cost the GIL twice (here, then recover()'s own walk over their
# headers) and gain little: a check that meets them gives the file back to recover().
# 300 MB of 1 KiB batches: 1.23-1.30 s inline, 1.32-1.49 s checked ahead (2026-11-30).
_SAMPLE_BATCHES = 64
MIN_MEAN_BATCH_BYTES = 16 * 1024


class Checked(NamedTuple):
    """A segment file's check: its first `intact` bytes are whole batches whose CRCs match;
    `reason` says what is wrong at `intact` (None: the file ends there). `size` is the file's size
    when checked: a file of another size was changed since, and its check does not apply."""

    size: int
    intact: int
    reason: str | None


def check_segment(path: str, buffer: ReadBuffer | None = None) -> Checked | None:
    """Read the `.log` file at `path` and check every batch: its header (size, magic), that it ends
    within the file, and its CRC. The same rules and reasons as LogSegment.iter_headers(validate=True).
    None: the file's first batches are small, and recover() is better left to check it itself.
    `buffer`: where to read (one per thread, kept from check to check); without one, a buffer of
    this check's own."""
    own = buffer is None
    buf = ReadBuffer() if buffer is None else buffer
    fd = os.open(path, os.O_RDONLY)
    try:
        size = os.fstat(fd).st_size
        view = buf.at_least(min(_READ_CHUNK, max(size, HEADER_SIZE)))
        start = 0  # file position of buf[0]
        have = 0  # bytes of buf read from the file
        pos = 0
        count = 0
        try:
            while pos + LOG_OVERHEAD <= size:
                rel = pos - start
                if rel + HEADER_SIZE > have:
                    start, rel = pos, 0
                    have = os.preadv(fd, [view], pos)
                if have - rel < HEADER_SIZE:
                    return Checked(size, pos, "truncated batch header")
                h = records.read_header(view, rel)
                batch = h.size
                if batch < HEADER_SIZE or h.magic != MAGIC:
                    return Checked(size, pos, "bad batch header")
                if pos + batch > size:
                    return Checked(size, pos, "batch runs past the end of the file")
                if rel + batch > have:  # the batch is not all in the buffer: read it from its start
                    if batch > len(view):
                        view.release()  # the mapping it shows is replaced by a larger one
                        view = buf.at_least(batch)
                    start, rel = pos, 0
                    have = os.preadv(fd, [view], pos)
                    if have < batch:  # the file shrank under the check: not this check's to judge
                        return Checked(-1, pos, "file changed during the check")
                if records.crc_of(view, rel, batch) != h.crc:
                    return Checked(size, pos, "CRC mismatch")
                pos += batch
                count += 1
                if count == _SAMPLE_BATCHES and pos < MIN_MEAN_BATCH_BYTES * count:
                    return None
            return Checked(size, pos, None if pos == size else "truncated batch header")
        finally:
            view.release()
    finally:
        os.close(fd)
        if own:
            buf.close()


class ReadBuffer:
    """A check's read buffer: an anonymous mapping, unmapped by close() (or when the thread that
    holds it ends). From malloc, each check thread's arena kept its 8 MiB buffers after the pool
    was gone (16 MB more RSS for the broker's life); mapped anew for each check, every check paid
    page faults over its whole buffer (0.70 -> 0.83 s for 150 segments)."""

    __slots__ = ("_map",)

    def __init__(self) -> None:
        self._map: mmap.mmap | None = None

    def at_least(self, size: int) -> memoryview:
        if self._map is None or len(self._map) < size:
            self.close()
            self._map = mmap.mmap(-1, size)
        return memoryview(self._map)

    def close(self) -> None:
        if self._map is not None:
            self._map.close()
            self._map = None


class RecoveryChecks:
    """Segment checks under way on a pool of threads; `result(path)` waits for one (None: that
    file was not submitted, its batches are small, or its check failed to read it: the caller
    checks it itself)."""

    def __init__(self, paths: list[str], threads: int) -> None:
        self._pool: ThreadPoolExecutor | None = None
        self._futures: dict[str, Future[Checked | None]] = {}
        self._buffers = threading.local()  # each pool thread's ReadBuffer, unmapped as it ends
        if threads > 1:
            paths = [p for p in paths if _size(p) >= MIN_CHECKED_BYTES]
            if paths:
                self._pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="minikafka-log-recovery")
                self._futures = {p: self._pool.submit(self._check, p) for p in paths}

    def _check(self, path: str) -> Checked | None:
        buffer = getattr(self._buffers, "buffer", None)
        if buffer is None:
            buffer = self._buffers.buffer = ReadBuffer()
        return check_segment(path, buffer)

    def result(self, path: str) -> Checked | None:
        future = self._futures.pop(path, None)
        if future is None:
            return None
        try:
            return future.result()
        except OSError:
            return None  # recover() reads the file again and meets the error itself
        except Exception:  # noqa: BLE001 - a check is an optimisation: recover() does it all itself
            log.exception("recovery_check_failed", path=path)
            return None

    def close(self) -> None:
        """Stop the pool; checks nobody asked for are cancelled (or finish, and are dropped)."""
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None
        self._futures.clear()


def _size(path: str) -> int:
    try:
        return os.stat(path).st_size
    except OSError:
        return 0  # recover() meets whatever is wrong with it
