"""What the coordinators need from storage, as Protocols. broker/app.py passes adapters built on
minikafka.storage (broker/group_log.py); unit tests pass in-memory fakes."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import NamedTuple, Protocol


class LogRecord(NamedTuple):
    """One record of an internal topic, as replayed on start-up."""

    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    producer_id: int = -1
    transactional: bool = False
    control_type: int | None = None  # for control batches: 0 = ABORT, 1 = COMMIT marker
    producer_epoch: int = -1


class TransactionalRecords(NamedTuple):
    """Records of one producer's open transaction, rewritten by a compaction."""

    producer_id: int
    producer_epoch: int
    records: Sequence[tuple[bytes, bytes | None]]


class RecordLog(Protocol):
    """An internal, partitioned, compacted topic (`__consumer_offsets`, `__transaction_state`)."""

    @property
    def partition_count(self) -> int: ...

    def ensure_created(self, now_ms: int) -> None:
        """Create the topic if it does not exist yet (Kafka creates it on first FindCoordinator),
        all partitions or none; raises OSError when the disk refuses."""

    def complete_rebuilt(self, now_ms: int) -> None:
        """At startup: give a topic whose creation a crash cut short all its partitions."""

    async def append(self, partition: int, records: Sequence[tuple[bytes, bytes | None]], now_ms: int, *,
                     producer_id: int = -1, producer_epoch: int = -1) -> int:
        """Append the records as one batch, durably enough to answer the client; returns the base
        offset. With a producer id the batch is transactional (TxnOffsetCommit) and counts as part
        of that producer's open transaction until its marker. Raises OSError (or a storage error)
        when nothing could be written."""

    def replay(self) -> Iterator[LogRecord]:
        """Every record of every partition, partition by partition, in offset order."""

    def needs_compaction(self, partition: int) -> bool:
        """True once the partition's log has rolled past its first segment."""

    async def compact(self, partition: int, records: Sequence[tuple[bytes, bytes | None]], now_ms: int,
                      transactional: Sequence[TransactionalRecords] = ()) -> int:
        """Bound a compacted internal topic: roll, append `records` (the complete live state of the
        partition, in the topic's record schemas), then each of `transactional` as a batch of its
        producer's open transaction, and drop every segment below them that holds no open
        transaction. Replaying the partition afterwards gives the same state. Returns the offset of
        the first rewritten record; the others follow it one by one, in the order given."""


class MarkerSeen(NamedTuple):
    """The newest COMMIT/ABORT marker of a producer found in a data partition."""

    commit: bool
    producer_epoch: int
    timestamp_ms: int


class OpenTransaction(NamedTuple):
    """Transactional data of a producer in a partition that no marker has ended yet."""

    topic: str
    partition: int
    producer_id: int
    producer_epoch: int
    first_offset: int


class DataPartitions(Protocol):
    """What the data partitions say of transactions: the evidence a repair of damaged
    `__transaction_state` rests on (the markers are written before a completion is)."""

    def open_transactions(self) -> Sequence[OpenTransaction]:
        """Every open transaction in every partition."""

    def last_marker(self, topic: str, partition: int, producer_id: int) -> MarkerSeen | None:
        """The producer's newest marker in the partition, or None (or no such partition)."""
