"""ShareGroupHeartbeat (API 76, KIP-932): join, stay in and leave a share group; the coordinator
assigns partitions with the simple assignor (a partition may go to several members).

Kafka: KafkaApis.handleShareGroupHeartbeat, GroupCoordinatorService.shareGroupHeartbeat. With the
`share.version` feature at 0 share groups are off and the request is answered UNSUPPORTED_VERSION,
as Kafka does. v1 only (v0 was Kafka 4.0's early access); the client chooses its member id.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from typing import Any, ClassVar

from minikafka.broker.context import RequestContext
from minikafka.broker.handlers.join_group import client_host
from minikafka.broker.services import BrokerServices
from minikafka.coordinator.group.coordinator import GroupCoordinator
from minikafka.coordinator.share_group.decisions import HeartbeatRequest
from minikafka.coordinator.share_group.state import Partitions, by_topic
from minikafka.features import SHARE_VERSION
from minikafka.protocol import messages
from minikafka.protocol.errors import ErrorCode
from minikafka.protocol.types import ZERO_MS


def share_groups_enabled(svc: BrokerServices) -> bool:
    """share.version >= 1 (Kafka 4.3's default; kafka-features.sh may move it)."""
    return svc.features is None or svc.features.level(SHARE_VERSION) >= 1


def wire_assignment(assignment: Partitions) -> Any:
    return messages.ShareGroupHeartbeatAssignment(topic_partitions=tuple(
        messages.ShareGroupHeartbeatTopicPartitions(topic_id=tid, partitions=tuple(parts))
        for tid, parts in by_topic(assignment).items()))


@dataclass(frozen=True, slots=True)
class ShareGroupHeartbeatHandler:
    api_key: ClassVar[int] = 76
    svc: BrokerServices
    groups: GroupCoordinator

    async def __call__(self, ctx: RequestContext, req: Any) -> messages.ShareGroupHeartbeatResponse:
        if not share_groups_enabled(self.svc):
            return self.error_response(req, ErrorCode.unsupported_version)
        reply = await self.groups.share_group_heartbeat(HeartbeatRequest(
            group_id=req.group_id, member_id=req.member_id, member_epoch=req.member_epoch, rack_id=req.rack_id,
            subscribed_topic_names=None if req.subscribed_topic_names is None else tuple(req.subscribed_topic_names),
            client_id=ctx.client_id or "", client_host=client_host(ctx.peer)), self.svc.clock.now_ms())
        return messages.ShareGroupHeartbeatResponse(
            throttle_time=ZERO_MS, error_code=reply.error, error_message=reply.message, member_id=reply.member_id,
            member_epoch=reply.member_epoch,
            heartbeat_interval=datetime.timedelta(milliseconds=reply.heartbeat_interval_ms),
            assignment=None if reply.assignment is None else wire_assignment(reply.assignment))

    def error_response(self, req: Any, code: ErrorCode) -> messages.ShareGroupHeartbeatResponse:
        return messages.ShareGroupHeartbeatResponse(throttle_time=ZERO_MS, error_code=code, member_epoch=0,
                                                    heartbeat_interval=ZERO_MS)
