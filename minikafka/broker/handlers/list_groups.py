"""ListGroups (API 16): every group this coordinator knows, filtered by state (v4) and type (v5).

Kafka: KafkaApis.handleListGroupsRequest, GroupMetadataManager.listGroups: classic groups and the
consumer groups of KIP-848 (protocol type "consumer", type "consumer").
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
class ListGroupsHandler:
    api_key: ClassVar[int] = 16
    svc: BrokerServices
    groups: GroupCoordinator

    async def __call__(self, ctx: RequestContext, req: Any) -> messages.ListGroupsResponse:
        listed = self.groups.list_groups(req.states_filter, req.types_filter)
        return messages.ListGroupsResponse(throttle_time=ZERO_MS, error_code=ErrorCode.none, groups=tuple(
            messages.ListedGroup(group_id=g.group_id, protocol_type=g.protocol_type, group_state=g.state,
                                 group_type=g.group_type)
            for g in listed))
