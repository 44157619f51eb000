"""LeaveGroup (API 13): members leave (v3+ in batches, KIP-345); the others rebalance.

Kafka: KafkaApis.handleLeaveGroupRequest, GroupMetadataManager.classicGroupLeave. v0-2 carry one
member id (versions.REQUEST_FIXUPS makes it a one-member batch and RESPONSE_FIXUPS lifts its error
to the top level).
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
class LeaveGroupHandler:
    api_key: ClassVar[int] = 13
    svc: BrokerServices
    groups: GroupCoordinator

    async def __call__(self, ctx: RequestContext, req: Any) -> messages.LeaveGroupResponse:
        if not req.group_id:
            return messages.LeaveGroupResponse(throttle_time=ZERO_MS, error_code=ErrorCode.invalid_group_id, members=())
        leaving = [(m.member_id, m.group_instance_id) for m in req.members]
        top, codes = await self.groups.leave_group(req.group_id, leaving, self.svc.clock.now_ms())
        if top is not ErrorCode.none:
            return messages.LeaveGroupResponse(throttle_time=ZERO_MS, error_code=top, members=())
        return messages.LeaveGroupResponse(throttle_time=ZERO_MS, error_code=ErrorCode.none, members=tuple(
            messages.MemberResponse(member_id=mid, group_instance_id=iid, error_code=code)
            for (mid, iid), code in zip(leaving, codes, strict=True)))
