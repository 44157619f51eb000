"""The observe room's one door into the broker: a read-only view (and, separately, the two
actions the console may take when they are switched on). The broker implements both in
broker/observation.py; nothing here knows of storage, coordinators or handlers."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from minikafka.observe.meters import Meters
from minikafka.observe.model import (
    BrokerSummary,
    GroupState,
    PartitionState,
    RecordPage,
    TransactionState,
    TxnLogEntry,
)


class BrokerView(Protocol):
    meters: Meters

    def now_ms(self) -> int: ...

    def summary(self) -> BrokerSummary: ...

    def partitions(self, topic: str | None = None) -> list[PartitionState]:
        """Every partition (of one topic), internal topics included, in topic and partition order."""
        ...

    def groups(self) -> list[GroupState]: ...

    def group(self, group_id: str) -> GroupState | None: ...

    def transactions(self) -> list[TransactionState]: ...

    def transaction(self, transactional_id: str) -> TransactionState | None: ...

    def transaction_log(self, transactional_id: str) -> list[TxnLogEntry]:
        """Its records in __transaction_state, oldest first (what compaction left of them)."""
        ...

    def records(self, topic: str, partition: int, offset: int, max_batches: int) -> RecordPage | None:
        """Batches from the one holding `offset` (clamped to the log), None for no such partition."""
        ...

    def hanging(self, topic: str, partition: int, producer_id: int) -> str | None:
        """Why the producer's open transaction on the partition is hanging (its coordinator no
        longer runs it there, or it is past its timeout), or None while it is live."""
        ...


class ActionRefused(Exception):
    """An action the broker would not take; the message says why (Kafka's error name)."""


class BrokerActions(Protocol):
    async def abort_transaction(self, topic: str, partition: int, producer_id: int) -> None:
        """As `kafka-transactions.sh abort`: write an ABORT marker for the producer's open
        transaction on the partition (with its epoch), so the LSO can move on."""
        ...

    async def reset_offsets(self, group_id: str, offsets: Sequence[tuple[str, int, int]]) -> None:
        """As `kafka-consumer-groups.sh --reset-offsets --execute`: commit (topic, partition,
        offset) for an empty group."""
        ...
