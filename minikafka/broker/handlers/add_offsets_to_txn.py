"""AddOffsetsToTxn (API 25): add the group's __consumer_offsets partition to the open transaction.

Kafka: KafkaApis.handleAddOffsetsToTxnRequest turns the group id into its offsets partition and
reuses the AddPartitionsToTxn path.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from minikafka.broker.context import RequestContext
from minikafka.broker.handlers.add_partitions_to_txn import fenced_for_old_clients
from minikafka.broker.services import BrokerServices
from minikafka.coordinator.group.offsets_log import TOPIC as OFFSETS_TOPIC
from minikafka.protocol import messages
from minikafka.protocol.types import ZERO_MS, TopicPartition


@dataclass(frozen=True, slots=True)
class AddOffsetsToTxnHandler:
    api_key: ClassVar[int] = 25
    svc: BrokerServices

    async def __call__(self, ctx: RequestContext, req: Any) -> messages.AddOffsetsToTxnResponse:
        assert self.svc.txn is not None and self.svc.groups is not None
        now_ms = self.svc.clock.now_ms()
        self.svc.groups.ensure_offsets_topic(now_ms)
        tp = TopicPartition(OFFSETS_TOPIC, self.svc.groups.partition_for(req.group_id))
        error = await self.svc.txn.add_partitions(
            req.transactional_id, producer_id=req.producer_id, producer_epoch=req.producer_epoch,
            partitions=frozenset({tp}), now_ms=self.svc.clock.now_ms)
        return messages.AddOffsetsToTxnResponse(throttle_time=ZERO_MS, error_code=fenced_for_old_clients(error, ctx.api_version))
