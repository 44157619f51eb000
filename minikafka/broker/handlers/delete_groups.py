"""DeleteGroups (API 42): an Empty group and its offsets are tombstoned in `__consumer_offsets`.

Kafka: KafkaApis.handleDeleteGroupsRequest, GroupMetadataManager.validateDeleteGroup (unknown ->
GROUP_ID_NOT_FOUND, members left -> NON_EMPTY_GROUP).
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
class DeleteGroupsHandler:
    api_key: ClassVar[int] = 42
    svc: BrokerServices
    groups: GroupCoordinator

    async def __call__(self, ctx: RequestContext, req: Any) -> messages.DeleteGroupsResponse:
        results = await self.groups.delete_groups(list(dict.fromkeys(req.groups_names)), self.svc.clock.now_ms())
        if self.svc.share is not None:   # a deleted share group's share-partitions leave memory too
            for gid, code in results.items():
                if code is ErrorCode.none:
                    self.svc.share.forget_group(gid)
        return messages.DeleteGroupsResponse(throttle_time=ZERO_MS, results=tuple(
            messages.DeletableGroupResult(group_id=gid, error_code=code) for gid, code in results.items()))
