"""RecordLog adapter (coordinator/ports.py) for an internal topic on storage.

Kafka creates its internal topics on first use with `<name>.num.partitions` partitions,
`cleanup.policy=compact` and their own segment size; records are written as one uncompressed
batch per operation with no producer id, acks=all — on one node: written to the segment before
the client is answered.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence

from minikafka.coordinator.ports import LogRecord, TransactionalRecords
from minikafka.protocol import records
from minikafka.protocol.errors import ErrorCode
from minikafka.protocol.types import TopicPartition
from minikafka.storage.errors import KafkaStorageError
from minikafka.storage.log_manager import LogManager, TopicError
from minikafka.storage.partition_log import AppendOrigin

_READ_CHUNK = 1 << 20
_COMPACTION_BATCH = 500
# Rewritten batches stay well below max.message.bytes (1 MiB) whatever the records' sizes (offset
# metadata may be 4 KiB each).
_COMPACTION_BATCH_BYTES = 256 * 1024


def _chunks(recs: Sequence[tuple[bytes, bytes | None]]) -> Iterator[list[tuple[bytes, bytes | None]]]:
    """Consecutive runs of at most _COMPACTION_BATCH records and about _COMPACTION_BATCH_BYTES."""
    chunk: list[tuple[bytes, bytes | None]] = []
    size = 0
    for key, value in recs:
        n = len(key) + len(value or b"") + 32
        if chunk and (len(chunk) >= _COMPACTION_BATCH or size + n > _COMPACTION_BATCH_BYTES):
            yield chunk
            chunk, size = [], 0
        chunk.append((key, value))
        size += n
    if chunk:
        yield chunk


class InternalTopicLog:
    def __init__(self, logs: LogManager, topic: str, *, partitions: int, configs: Mapping[str, str],
                 before_append: Callable[[], None] | None = None, base_sequence: int = -1) -> None:
        """`base_sequence`: what the batches' headers carry (Kafka 4.x's group coordinator runtime
        writes 0 to __consumer_offsets; its transaction coordinator -1, no sequence)."""
        self._logs = logs
        self._base_sequence = base_sequence
        self.topic = topic
        self._partitions = partitions
        self._configs = dict(configs)
        self._before_append = before_append  # test hook (fault injection), None in production

    @property
    def partition_count(self) -> int:
        info = self._logs.topics.get(self.topic)
        return info.partitions if info is not None else self._partitions

    def ensure_created(self, now_ms: int) -> None:
        """Create the topic with all its partitions, or raise KafkaStorageError (an OSError) and
        leave nothing behind (LogManager.create_topic is all-or-nothing); the next call tries again."""
        if self.topic in self._logs.topics:
            return
        try:
            self._logs.create_topic(self.topic, self._partitions, self._configs, now_ms=now_ms, internal=True)
        except TopicError as exc:
            if exc.error_code is ErrorCode.kafka_storage_error:
                raise KafkaStorageError(str(exc)) from None
            return

    def complete_rebuilt(self, now_ms: int) -> None:
        """At startup: a topic rebuilt from its directories (its creation was cut short by a crash
        before the topics file was written) gets the partitions it was being created with. A topic
        the topics file knows keeps its count, as Kafka never changes an internal topic's."""
        info = self._logs.topics.get(self.topic)
        if info is not None and info.rebuilt and info.partitions < self._partitions:
            self._logs.create_partitions(self.topic, self._partitions, now_ms=now_ms)
            info.rebuilt = False

    async def append(self, partition: int, recs: Sequence[tuple[bytes, bytes | None]], now_ms: int, *,
                     producer_id: int = -1, producer_epoch: int = -1) -> int:
        if self._before_append is not None:
            self._before_append()
        self.ensure_created(now_ms)
        plog = self._logs.get(TopicPartition(self.topic, partition))
        batch = records.build_batch(list(recs), timestamp_ms=now_ms, producer_id=producer_id,
                                    producer_epoch=producer_epoch, transactional=producer_id >= 0,
                                    base_sequence=self._base_sequence)
        return plog.append(batch, now_ms=now_ms, origin=AppendOrigin.COORDINATOR).base_offset

    def needs_compaction(self, partition: int) -> bool:
        # A rolled log whose oldest segment lies wholly below the LSO (nothing open in it).
        plog = self._logs.opened(TopicPartition(self.topic, partition))  # one not opened is empty
        return (plog is not None and len(plog.segments) > 1
                and plog.segments[0].next_offset <= plog.last_stable_offset)

    async def compact(self, partition: int, recs: Sequence[tuple[bytes, bytes | None]], now_ms: int,
                      transactional: Sequence[TransactionalRecords] = ()) -> int:
        # Kafka cleans a compacted topic record by record; one node bounds its internal topics the
        # coordinator's way instead: the live state is written again after a roll, and the old
        # segments go, but never past the first offset of an open transaction (the LSO).
        plog = self._logs.get(TopicPartition(self.topic, partition))
        plog.roll(now_ms, reason="compaction")
        base = plog.log_end_offset
        for chunk in _chunks(recs):
            plog.append(records.build_batch(chunk, timestamp_ms=now_ms, base_sequence=self._base_sequence),
                        now_ms=now_ms, origin=AppendOrigin.COORDINATOR, rewrite=True)
        for txn in transactional:  # still pending: written again after the live state they may replace
            for chunk in _chunks(txn.records):
                plog.append(records.build_batch(chunk, timestamp_ms=now_ms, producer_id=txn.producer_id,
                                                producer_epoch=txn.producer_epoch, transactional=True,
                                                base_sequence=self._base_sequence),
                            now_ms=now_ms, origin=AppendOrigin.COORDINATOR, rewrite=True)
        # The rewritten state must be on disk before the segments it replaces are deleted (roll
        # already synced the older ones).
        plog.flush()
        plog.delete_records_before(min(base, plog.last_stable_offset))
        return base

    def replay(self) -> Iterator[LogRecord]:
        info = self._logs.topics.get(self.topic)
        if info is None:
            return
        for p in range(info.partitions):
            plog = self._logs.opened(TopicPartition(self.topic, p))
            if plog is None:  # a new partition not opened yet: empty
                continue
            offset = plog.log_start_offset
            end = plog.log_end_offset
            while offset < end:
                data = plog.read(offset, _READ_CHUNK)
                if not data:
                    break
                start = offset
                for pos, h in records.split_batches(data):
                    if h.next_offset <= offset:
                        continue
                    for rec in records.iter_records(data, pos):
                        if rec.offset < offset:
                            continue
                        ctype = None
                        if h.is_control:
                            if rec.key is None or len(rec.key) < 4:
                                continue
                            ctype = int.from_bytes(rec.key[2:4], "big", signed=True)
                        yield LogRecord(p, rec.offset, rec.key, rec.value, h.producer_id, h.is_transactional, ctype,
                                        h.producer_epoch)
                    offset = h.next_offset
                if offset == start:
                    break
