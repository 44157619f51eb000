"""OffsetForLeaderEpoch (API 23): one node, one leader epoch (0) for the whole log.

librdkafka sends v2 after a leader change or on offset validation; the answer for epoch 0 is the
log end offset. A later epoch than ours is undefined (-1/-1), as Kafka answers it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from minikafka.broker.context import RequestContext
from minikafka.broker.services import BrokerServices
from minikafka.protocol import messages
from minikafka.protocol.errors import ErrorCode
from minikafka.protocol.types import ZERO_MS, TopicPartition

LEADER_EPOCH = 0


@dataclass(frozen=True, slots=True)
class OffsetForLeaderEpochHandler:
    api_key: ClassVar[int] = 23
    svc: BrokerServices

    async def __call__(self, ctx: RequestContext, req: Any) -> messages.OffsetForLeaderEpochResponse:
        topics = []
        for t in req.topics:
            parts = []
            for p in t.partitions:
                plog = self.svc.logs.get(TopicPartition(t.topic, p.partition))
                if plog is None:
                    parts.append(messages.EpochEndOffset(error_code=ErrorCode.unknown_topic_or_partition, partition=p.partition))
                elif p.current_leader_epoch > LEADER_EPOCH:
                    parts.append(messages.EpochEndOffset(error_code=ErrorCode.unknown_leader_epoch, partition=p.partition))
                elif p.leader_epoch > LEADER_EPOCH:
                    parts.append(messages.EpochEndOffset(error_code=ErrorCode.none, partition=p.partition))
                else:
                    parts.append(messages.EpochEndOffset(error_code=ErrorCode.none, partition=p.partition,
                                                leader_epoch=LEADER_EPOCH, end_offset=plog.log_end_offset))
            topics.append(messages.OffsetForLeaderTopicResult(topic=t.topic, partitions=tuple(parts)))
        return messages.OffsetForLeaderEpochResponse(throttle_time=ZERO_MS, topics=tuple(topics))
