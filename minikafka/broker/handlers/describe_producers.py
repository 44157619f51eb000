"""DescribeProducers (API 61, KIP-664): the producer state of partitions (who writes, open txns)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from minikafka.broker.context import RequestContext
from minikafka.broker.services import BrokerServices
from minikafka.protocol import messages
from minikafka.protocol.errors import ErrorCode
from minikafka.protocol.types import ZERO_MS, TopicPartition


@dataclass(frozen=True, slots=True)
class DescribeProducersHandler:
    api_key: ClassVar[int] = 61
    svc: BrokerServices

    async def __call__(self, ctx: RequestContext, req: Any) -> messages.DescribeProducersResponse:
        topics = []
        for t in req.topics:
            parts = []
            for p in t.partition_indexes:
                plog = self.svc.logs.get(TopicPartition(t.name, p))
                if plog is None:
                    parts.append(messages.DescribeProducersPartitionResponse(
                        partition_index=p, error_code=ErrorCode.unknown_topic_or_partition,
                        error_message="This server does not host this topic-partition.", active_producers=()))
                    continue
                producers = tuple(
                    messages.ProducerState(producer_id=e.producer_id, producer_epoch=e.producer_epoch, last_sequence=e.last_seq,
                                  last_timestamp=e.last_timestamp, coordinator_epoch=e.coordinator_epoch,
                                  current_txn_start_offset=e.current_txn_first_offset)
                    for e in sorted(plog.producer_state.producers.values(), key=lambda e: e.producer_id))
                parts.append(messages.DescribeProducersPartitionResponse(partition_index=p, error_code=ErrorCode.none,
                                                                active_producers=producers))
            topics.append(messages.DescribeProducersTopicResponse(name=t.name, partitions=tuple(parts)))
        return messages.DescribeProducersResponse(throttle_time=ZERO_MS, topics=tuple(topics))
