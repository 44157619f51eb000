"""SyncGroup (API 14): the leader brings the assignment; every member receives its own.

Kafka: KafkaApis.handleSyncGroupRequest, GroupMetadataManager.classicGroupSync. Followers park
until the leader's assignment is persisted in `__consumer_offsets`. v5 checks protocol type/name.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from minikafka.broker.context import RequestContext
from minikafka.broker.services import BrokerServices
from minikafka.coordinator.group.coordinator import GroupCoordinator
from minikafka.coordinator.group.decisions import SyncRequest
from minikafka.protocol import messages
from minikafka.protocol.errors import ErrorCode
from minikafka.protocol.types import ZERO_MS


@dataclass(frozen=True, slots=True)
class SyncGroupHandler:
    api_key: ClassVar[int] = 14
    svc: BrokerServices
    groups: GroupCoordinator

    async def __call__(self, ctx: RequestContext, req: Any) -> messages.SyncGroupResponse:
        if not req.group_id:
            return _error(ErrorCode.invalid_group_id)
        result = await self.groups.sync_group(SyncRequest(
            group_id=req.group_id, generation_id=req.generation_id, member_id=req.member_id,
            group_instance_id=req.group_instance_id, protocol_type=req.protocol_type,
            protocol_name=req.protocol_name,
            assignments={a.member_id: a.assignment for a in req.assignments},
        ), self.svc.clock.now_ms())
        return messages.SyncGroupResponse(throttle_time=ZERO_MS, error_code=result.error,
                                 protocol_type=result.protocol_type, protocol_name=result.protocol_name,
                                 assignment=result.assignment)


def _error(code: ErrorCode) -> messages.SyncGroupResponse:
    return messages.SyncGroupResponse(throttle_time=ZERO_MS, error_code=code, assignment=b"")
