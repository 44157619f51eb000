"""What the observe room sees of the broker: plain, frozen values, built by the broker's side of
the door (broker/observation.py) on each look, never references to live broker objects."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True, kw_only=True)
class PinningTxn:
    """The open transaction holding a partition's last stable offset back."""

    producer_id: int
    first_offset: int
    transactional_id: str | None  # None: the coordinator has no id for the producer (yet)


@dataclass(frozen=True, slots=True, kw_only=True)
class PartitionState:
    topic: str
    partition: int
    internal: bool
    log_start_offset: int
    high_watermark: int           # the log end offset on one node
    last_stable_offset: int
    size_bytes: int
    segments: int
    open_transactions: int        # producers with a transaction open here
    pinned_by: PinningTxn | None  # the oldest of them, which the LSO waits for

    @property
    def lso_lag(self) -> int:
        return self.high_watermark - self.last_stable_offset


@dataclass(frozen=True, slots=True, kw_only=True)
class GroupMember:
    member_id: str
    client_id: str
    client_host: str
    group_instance_id: str | None
    assignment: tuple[tuple[str, int], ...]  # (topic, partition)


@dataclass(frozen=True, slots=True, kw_only=True)
class GroupOffset:
    topic: str
    partition: int
    committed: int
    high_watermark: int | None  # None: the partition no longer exists

    @property
    def lag(self) -> int | None:
        return None if self.high_watermark is None else max(0, self.high_watermark - self.committed)


@dataclass(frozen=True, slots=True, kw_only=True)
class GroupState:
    group_id: str
    group_type: str   # classic, consumer, streams
    protocol_type: str
    state: str
    members: tuple[GroupMember, ...]
    offsets: tuple[GroupOffset, ...]

    @property
    def lag(self) -> int:
        return sum(o.lag or 0 for o in self.offsets)


@dataclass(frozen=True, slots=True, kw_only=True)
class TransactionState:
    transactional_id: str
    state: str                    # Kafka's name: Empty, Ongoing, PrepareCommit, ...
    open: bool                    # Ongoing or Prepare*: its partitions may hold unmarked records
    producer_id: int
    producer_epoch: int
    timeout_ms: int
    partitions: tuple[tuple[str, int], ...]
    start_ms: int                 # -1 when no transaction was started
    last_update_ms: int
    coordinator_partition: int    # its __transaction_state partition


@dataclass(frozen=True, slots=True, kw_only=True)
class TxnLogEntry:
    """One record of a transactional id in __transaction_state: a step of its timeline."""

    offset: int
    timestamp_ms: int
    state: str                    # Kafka's name; "Tombstone" for a removed id
    producer_id: int
    producer_epoch: int
    partitions: tuple[tuple[str, int], ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class RecordRow:
    offset: int
    timestamp_ms: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class BatchRow:
    """One record batch as stored, with what a read_committed consumer would make of it."""

    base_offset: int
    last_offset: int
    producer_id: int
    producer_epoch: int
    transactional: bool
    control: str | None           # "COMMIT" / "ABORT" for a control batch (its marker), else None
    aborted: bool                 # data of a transaction that was aborted
    open: bool                    # data of a transaction still open (at or past the LSO)
    records: tuple[RecordRow, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class RecordPage:
    topic: str
    partition: int
    start_offset: int
    next_offset: int              # where the next page starts
    log_start_offset: int
    high_watermark: int
    last_stable_offset: int
    batches: tuple[BatchRow, ...]
    aborted_ranges: tuple[tuple[int, int, int], ...]  # (producer id, first offset, last offset)


@dataclass(frozen=True, slots=True, kw_only=True)
class BrokerSummary:
    node_id: int
    cluster_id: str
    listeners: tuple[tuple[str, str, int], ...]  # (name, host, port)
    connections: dict[str, int]                  # per listener
    producer_ids: int                            # producer states kept, summed over the partitions
    txn_log_partitions: int
