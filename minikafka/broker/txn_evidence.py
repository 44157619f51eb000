"""The transaction coordinator's DataPartitions port over local storage: which transactions are
open in the partitions, and the newest marker a producer has in one. Read only at startup, when
`__transaction_state` lost records and the coordinator repairs what it rebuilt (coordinator/
transaction/repair.py)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from minikafka.coordinator.ports import MarkerSeen, OpenTransaction
from minikafka.protocol import records
from minikafka.protocol.types import TopicPartition
from minikafka.storage.log_manager import LogManager


@dataclass(frozen=True, slots=True)
class StoredDataPartitions:
    logs: LogManager

    def open_transactions(self) -> Sequence[OpenTransaction]:
        return [OpenTransaction(plog.tp.topic, plog.tp.partition, pid, entry.producer_epoch,
                                entry.current_txn_first_offset)
                for plog in self.logs for pid, entry in plog.producer_state.producers.items()
                if entry.current_txn_first_offset >= 0]

    def last_marker(self, topic: str, partition: int, producer_id: int) -> MarkerSeen | None:
        plog = self.logs.get(TopicPartition(topic, partition))
        found = plog.last_marker(producer_id) if plog is not None else None
        if found is None:
            return None
        control_type, epoch, timestamp = found
        return MarkerSeen(control_type == records.CONTROL_COMMIT, epoch, timestamp)
