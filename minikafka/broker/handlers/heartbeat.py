"""Heartbeat (API 12): keeps a member's session alive; REBALANCE_IN_PROGRESS asks it to rejoin.

Kafka: KafkaApis.handleHeartbeatRequest, GroupMetadataManager.classicGroupHeartbeat.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from minikafka.broker.context import RequestContext
from minikafka.broker.services import BrokerServices
from minikafka.coordinator.group.coordinator import GroupCoordinator
from minikafka.protocol import messages
from minikafka.protocol.errors import ErrorCode
from minikafka.protocol.types import ZERO_MS


@dataclass(frozen=True, slots=True)
class HeartbeatHandler:
    api_key: ClassVar[int] = 12
    svc: BrokerServices
    groups: GroupCoordinator

    async def __call__(self, ctx: RequestContext, req: Any) -> messages.HeartbeatResponse:
        if not req.group_id:
            return messages.HeartbeatResponse(throttle_time=ZERO_MS, error_code=ErrorCode.invalid_group_id)
        code = self.groups.heartbeat(req.group_id, req.member_id, req.group_instance_id, req.generation_id,
                                     self.svc.clock.now_ms())
        return messages.HeartbeatResponse(throttle_time=ZERO_MS, error_code=code)
