"""ConsumerGroupHeartbeat (API 68, KIP-848): join, stay in and leave a consumer group of the new
protocol; the coordinator computes the assignment and hands it out one step at a time.

Kafka: KafkaApis.handleConsumerGroupHeartbeat, GroupCoordinatorService.consumerGroupHeartbeat. With
the `group.version` feature at 0 the protocol is off and the request is answered
UNSUPPORTED_VERSION, as Kafka does. Partitions travel by topic id both ways.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from typing import Any, ClassVar

from minikafka.broker.context import RequestContext
from minikafka.broker.handlers.join_group import client_host
from minikafka.broker.services import BrokerServices
from minikafka.coordinator.consumer_group.decisions import HeartbeatRequest
from minikafka.coordinator.consumer_group.state import Assignment, by_topic, from_topics
from minikafka.coordinator.group.coordinator import GroupCoordinator
from minikafka.features import GROUP_VERSION
from minikafka.protocol import messages
from minikafka.protocol.errors import ErrorCode
from minikafka.protocol.types import ZERO_MS, ms


def consumer_protocol_enabled(svc: BrokerServices) -> bool:
    """group.version >= 1 (KIP-848 is on from Kafka 4.0's default; kafka-features.sh may move it)."""
    return svc.features is None or svc.features.level(GROUP_VERSION) >= 1


def wire_assignment(assignment: Assignment) -> Any:
    return messages.ConsumerGroupHeartbeatAssignment(topic_partitions=tuple(
        messages.ConsumerGroupHeartbeatTopicPartitions(topic_id=tid, partitions=tuple(parts))
        for tid, parts in by_topic(assignment).items()))


@dataclass(frozen=True, slots=True)
class ConsumerGroupHeartbeatHandler:
    api_key: ClassVar[int] = 68
    svc: BrokerServices
    groups: GroupCoordinator

    async def __call__(self, ctx: RequestContext, req: Any) -> messages.ConsumerGroupHeartbeatResponse:
        if not consumer_protocol_enabled(self.svc):
            return self.error_response(req, ErrorCode.unsupported_version)
        owned = None if req.topic_partitions is None else from_topics(
            (tp.topic_id, tp.partitions) for tp in req.topic_partitions)
        reply = await self.groups.consumer_group_heartbeat(HeartbeatRequest(
            group_id=req.group_id, member_id=req.member_id, member_epoch=req.member_epoch,
            instance_id=req.instance_id, rack_id=req.rack_id,
            rebalance_timeout_ms=ms(req.rebalance_timeout),
            subscribed_topic_names=None if req.subscribed_topic_names is None else tuple(req.subscribed_topic_names),
            subscribed_topic_regex=req.subscribed_topic_regex,
            server_assignor=req.server_assignor, owned=owned, client_id=ctx.client_id or "",
            client_host=client_host(ctx.peer), api_version=ctx.api_version), self.svc.clock.now_ms())
        return messages.ConsumerGroupHeartbeatResponse(
            throttle_time=ZERO_MS, error_code=reply.error, error_message=reply.message, member_id=reply.member_id,
            member_epoch=reply.member_epoch, heartbeat_interval=datetime.timedelta(milliseconds=reply.heartbeat_interval_ms),
            assignment=None if reply.assignment is None else wire_assignment(reply.assignment))

    def error_response(self, req: Any, code: ErrorCode) -> messages.ConsumerGroupHeartbeatResponse:
        return messages.ConsumerGroupHeartbeatResponse(throttle_time=ZERO_MS, error_code=code, member_epoch=0,
                                                       heartbeat_interval=ZERO_MS)

