"""OffsetDelete (API 47, KIP-496): drop committed offsets of partitions the group does not consume.

Kafka: KafkaApis.handleOffsetDeleteRequest, OffsetMetadataManager.deleteOffsets,
ClassicGroup.validateOffsetDelete (unknown group -> GROUP_ID_NOT_FOUND; a non-consumer group with
members -> NON_EMPTY_GROUP; a subscribed topic -> GROUP_SUBSCRIBED_TO_TOPIC per partition).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from minikafka.broker.context import RequestContext
from minikafka.broker.services import BrokerServices
from minikafka.coordinator.group.coordinator import GroupCoordinator
from minikafka.protocol import messages
from minikafka.protocol.errors import ErrorCode
from minikafka.protocol.types import ZERO_MS, TopicPartition


@dataclass(frozen=True, slots=True)
class OffsetDeleteHandler:
    api_key: ClassVar[int] = 47
    svc: BrokerServices
    groups: GroupCoordinator

    async def __call__(self, ctx: RequestContext, req: Any) -> messages.OffsetDeleteResponse:
        if not req.group_id:
            return messages.OffsetDeleteResponse(error_code=ErrorCode.invalid_group_id, throttle_time=ZERO_MS, topics=())
        codes: dict[TopicPartition, ErrorCode] = {}
        known: list[TopicPartition] = []
        for t in req.topics:
            info = self.svc.logs.topics.get(t.name)
            for p in t.partitions:
                tp = TopicPartition(t.name, p.partition_index)
                if info is None or not 0 <= p.partition_index < info.partitions:
                    codes[tp] = ErrorCode.unknown_topic_or_partition
                else:
                    known.append(tp)
        top, results = await self.groups.delete_offsets(req.group_id, known, self.svc.clock.now_ms())
        if top is not ErrorCode.none:
            return messages.OffsetDeleteResponse(error_code=top, throttle_time=ZERO_MS, topics=())
        codes.update(results)
        return messages.OffsetDeleteResponse(error_code=ErrorCode.none, throttle_time=ZERO_MS, topics=tuple(
            messages.OffsetDeleteResponseTopic(name=t.name, partitions=tuple(
                messages.OffsetDeleteResponsePartition(partition_index=p.partition_index,
                                              error_code=codes[TopicPartition(t.name, p.partition_index)])
                for p in t.partitions))
            for t in req.topics))
