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

import os
import struct
from concurrent.futures import Future, ThreadPoolExecutor
from typing import NamedTuple

from minikafka.protocol.crc import crc32c
from minikafka.protocol.records import HEADER_SIZE, LOG_OVERHEAD, MAGIC

_READ_CHUNK = 8 * 1024 * 1024  # one read covers many batches; a larger batch grows the buffer
# Smaller files are checked inline by recover(): handing them to a thread costs more than it saves,
# and many small checks make the threads and the opening thread take turns at the GIL.
MIN_CHECKED_BYTES = 1024 * 1024
# Checked ahead, small batches cost the GIL twice (here, then recover()'s own walk over their
# headers) and gain little: a check that meets them gives the file back to recover().
# 300 MB of 1 KiB batches: 1.23-1.30 s inline, 1.32-1.49 s checked ahead (2026-11-30).
_SAMPLE_BATCHES = 64
MIN_MEAN_BATCH_BYTES = 16 * 1024
_LENGTH = struct.Struct(">i")  # batchLength, at byte 8 of a batch
_CRC = struct.Struct(">I")  # at byte 17, over the batch from byte 21 (attributes) on
_CRC_FROM = 21
_MAGIC_AT = 16


class Checked(NamedTuple):
    """A segment file's check: its first `intact` bytes are whole batches whose CRCs match;
    `reason` says what is wrong at `intact` (None: the file ends there). `size` is the file's size
    when checked: a file of another size was changed since, and its check does not apply."""

    size: int
    intact: int
    reason: str | None


def check_segment(path: str) -> Checked | None:
    """Read the `.log` file at `path` and check every batch: its header (size, magic), that it ends
    within the file, and its CRC. The same rules and reasons as LogSegment.iter_headers(validate=True).
    None: the file's first batches are small, and recover() is better left to check it itself."""
    fd = os.open(path, os.O_RDONLY)
    try:
        size = os.fstat(fd).st_size
        buf = bytearray(min(_READ_CHUNK, max(size, HEADER_SIZE)))
        view = memoryview(buf)
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
                batch = _LENGTH.unpack_from(buf, rel + 8)[0] + LOG_OVERHEAD
                if batch < HEADER_SIZE or buf[rel + _MAGIC_AT] != MAGIC:
                    return Checked(size, pos, "bad batch header")
                if pos + batch > size:
                    return Checked(size, pos, "batch runs past the end of the file")
                if rel + batch > have:  # the batch is not all in the buffer: read it from its start
                    if batch > len(buf):
                        view.release()
                        buf = bytearray(batch)
                        view = memoryview(buf)
                    start, rel = pos, 0
                    have = os.preadv(fd, [view], pos)
                    if have < batch:  # the file shrank under the check: not this check's to judge
                        return Checked(-1, pos, "file changed during the check")
                if crc32c(view[rel + _CRC_FROM : rel + batch]) != _CRC.unpack_from(buf, rel + 17)[0]:
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


class RecoveryChecks:
    """Segment checks under way on a pool of threads; `result(path)` waits for one (None: that
    file was not submitted, its batches are small, or its check failed to read it: the caller
    checks it itself)."""

    def __init__(self, paths: list[str], threads: int) -> None:
        self._pool: ThreadPoolExecutor | None = None
        self._futures: dict[str, Future[Checked | None]] = {}
        if threads > 1:
            paths = [p for p in paths if _size(p) >= MIN_CHECKED_BYTES]
        if paths and threads > 1:
            self._pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="minikafka-log-recovery")
            self._futures = {p: self._pool.submit(check_segment, p) for p in paths}

    def result(self, path: str) -> Checked | None:
        future = self._futures.pop(path, None)
        if future is None:
            return None
        try:
            return future.result()
        except OSError:
            return None  # recover() reads the file again and meets the error itself

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
