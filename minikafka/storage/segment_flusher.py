"""SegmentFlusher: a rolled segment's files are fsynced off the event loop (Kafka's "flush-log" task).

Why: a roll used to fsync the old segment on the event loop before the next append. Writing a
1 GiB segment leaves most of it dirty in the page cache, and its fsync held every connection for
0.35-0.45 s on the 2-core VM (strace, 2026-11-29). Apache Kafka's roll schedules the old
segment's flush on its background scheduler and moves the recovery point once that flush is done.

minikafka does the same: `submit` hands the segment's file paths to one worker thread, and the
partition moves its recovery point past the segment only when the future says the fsyncs are done
(PartitionLog.settle_flushes, on the owner's thread). Until then a crash re-validates the segment,
which is what the recovery point is for. The thread opens each file by its path rather than using
the segment's cached descriptor, which the event loop may close at any time (OpenFiles); a file
deleted in the meantime (retention, compaction) has nothing left to make durable.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any


def fsync_paths(paths: Iterable[Path]) -> None:
    """fsync each file that still exists (any descriptor of a file flushes all its dirty pages)."""
    for path in paths:
        try:
            fd = os.open(path, os.O_RDONLY)
        except FileNotFoundError:
            continue
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


class SegmentFlusher:
    """One worker thread, so flushes finish in the order they were submitted."""

    def __init__(self) -> None:
        self._executor: ThreadPoolExecutor | None = None
        # The partitions with a rolled segment whose flush has not been settled yet (owned by the
        # event loop's thread: LogManager.checkpoint_flushed_rolls looks at these only).
        self.waiting: set[Any] = set()

    def submit(self, paths: list[Path], owner: Any = None) -> Future[None]:
        if owner is not None:
            self.waiting.add(owner)
        if self._executor is None:
            self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="minikafka-segment-flush")
        return self._executor.submit(fsync_paths, paths)

    def close(self) -> None:
        """Wait for the flushes under way, then stop the thread (a later submit starts another)."""
        if self._executor is not None:
            self._executor.shutdown(wait=True)
            self._executor = None
