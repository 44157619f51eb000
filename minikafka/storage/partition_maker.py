"""PartitionMaker: the directories and files of a new topic's partitions, made off the event loop.

Why: making a file is a costly system call on some file systems (0.66 ms of kernel CPU per file
on the 2-core VM of 2026-11-28; a new partition has six, counting the renamed temporaries), so
CreateTopics of 1,000 partitions held the event loop for 3-5 s. Apache Kafka answers CreateTopics
once the controller has committed the topic to its metadata log, before any broker has made a log
for it. minikafka does the same: the topics file names the topic (fsynced) and the answer goes
out; this thread then makes each partition's directory and files (`files.make_partition_files`).

A partition asked for before the thread reached it is made at once by the caller (`make_now`),
under the partition's own lock, so one partition is never made twice; deleting a topic cancels
what is not made yet. A stop or a crash before a partition is made leaves it named in the topics
file, and start-up makes it (LogManager.startup). Only files are made here: the PartitionLog is
opened on the event loop when the partition is first used (LogManager.get), not before: opening
thousands at once would hold the loop for seconds, and an unused new partition holds nothing.
"""

from __future__ import annotations

import threading
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import structlog

from minikafka.protocol.types import TopicPartition
from minikafka.storage import files

log = structlog.get_logger("minikafka.storage")


@dataclass(eq=False)
class PendingPartition:
    """A partition named in the topics file whose files may not be made yet."""

    tp: TopicPartition
    path: Path
    topic_id: uuid.UUID
    created_ms: int  # the creation's time, for the first segment's segment.ms clock
    lock: threading.Lock = field(default_factory=threading.Lock)
    made: bool = False
    cancelled: bool = False  # its topic was deleted: the thread leaves it alone


class PartitionMaker:
    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir
        self.pending: dict[TopicPartition, PendingPartition] = {}  # owned by the event-loop thread
        self._executor: ThreadPoolExecutor | None = None
        self._closing = False

    def submit(self, entries: list[PendingPartition]) -> None:
        """Make these partitions' files in the background, in order."""
        if not entries:
            return
        for e in entries:
            self.pending[e.tp] = e
        if self._executor is None:
            # One thread: the event loop keeps the other core. The system calls release the GIL.
            self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="partition-maker")
        self._executor.submit(self._make_all, entries)

    def _make_all(self, entries: list[PendingPartition]) -> None:
        made: list[Path] = []
        for e in entries:
            if self._closing:
                return  # start-up makes the rest
            with e.lock:
                if e.cancelled:
                    continue
                if not e.made:
                    try:
                        files.make_partition_files(e.path, e.topic_id)
                    except OSError as exc:  # make_now tries again, and answers the error
                        log.warning("partition_files_failed", partition=str(e.tp), reason=str(exc))
                        continue
                    e.made = True
                made += (e.path / files.PARTITION_METADATA, e.path)
        try:  # durable in one step for the whole request, as the synchronous creation was
            files.fsync_all(made)
            files.fsync_dir(self.data_dir)
        except OSError as exc:
            log.warning("partition_files_fsync_failed", partitions=len(made) // 2, reason=str(exc))

    def make_now(self, tp: TopicPartition) -> PendingPartition:
        """The pending partition, its files made by now (here, if the thread has not made them).
        Raises KeyError when tp is not pending, OSError when its files cannot be made."""
        e = self.pending[tp]
        with e.lock:  # waits for the thread when it is making this very partition
            if not e.made:
                files.make_partition_files(e.path, e.topic_id)
                e.made = True
        del self.pending[tp]
        return e

    def cancel(self, tp: TopicPartition) -> bool:
        """Forget a pending partition (its topic is deleted): True when its files were made."""
        e = self.pending.pop(tp, None)
        if e is None:
            return False
        with e.lock:
            e.cancelled = True
            return e.made

    def wait_idle(self) -> None:
        """Until every submitted partition is made (tests, and a clean stop's choice)."""
        if self._executor is not None:
            self._executor.submit(lambda: None).result()

    def close(self) -> None:
        """Stop after the partition being made: what is left, start-up makes."""
        self._closing = True
        if self._executor is not None:
            self._executor.shutdown(wait=True, cancel_futures=True)
            self._executor = None
