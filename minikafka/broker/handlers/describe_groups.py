"""DescribeGroups (API 15): state, protocol and members of classic groups.

Kafka: KafkaApis.handleDescribeGroupsRequest, ClassicGroup.describe: member metadata and
assignments only in Stable. A group that does not exist (the empty id too) is described as Dead:
with no error up to v5, with GROUP_ID_NOT_FOUND and a message from v6 (KIP-1043), as Kafka 4.3.1
answers both.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from minikafka.broker import authorized_operations
from minikafka.broker.context import RequestContext
from minikafka.broker.services import BrokerServices
from minikafka.coordinator.group.coordinator import GroupCoordinator
from minikafka.coordinator.group.state import GroupState
from minikafka.protocol import messages
from minikafka.protocol.errors import ErrorCode
from minikafka.protocol.types import ZERO_MS

NOT_FOUND_SINCE = 6  # DescribeGroups v6 (KIP-1043): a missing group is an error, with a message

@dataclass(frozen=True, slots=True)
class DescribeGroupsHandler:
    api_key: ClassVar[int] = 15
    svc: BrokerServices
    groups: GroupCoordinator

    async def __call__(self, ctx: RequestContext, req: Any) -> messages.DescribeGroupsResponse:
        return messages.DescribeGroupsResponse(throttle_time=ZERO_MS, groups=tuple(
            self._describe(g, bool(req.include_authorized_operations), ctx.api_version) for g in req.groups))

    def _describe(self, group_id: str, asked_for_operations: bool, version: int) -> messages.DescribedGroup:
        ops = authorized_operations.answer(asked_for_operations, authorized_operations.GROUP)
        g = self.groups.describe_group(group_id) if group_id else None
        # A consumer (KIP-848), streams (KIP-1071) or share (KIP-932) group is "not a classic group" here.
        not_classic = self.groups.group_type(group_id) in ("consumer", "streams", "share")
        if (g is None or not_classic) and version >= NOT_FOUND_SINCE:
            return messages.DescribedGroup(error_code=ErrorCode.group_id_not_found,
                                           error_message=f"Group {group_id} is not a classic group." if not_classic
                                           else f"Group {group_id} not found.", group_id=group_id,
                                           group_state=GroupState.DEAD.value, protocol_type="", protocol_data="",
                                           members=())
        if g is None or not_classic:
            return messages.DescribedGroup(error_code=ErrorCode.none, group_id=group_id, group_state=GroupState.DEAD.value,
                                  protocol_type="", protocol_data="", members=(),
                                  authorized_operations=ops)
        stable = g.state is GroupState.STABLE
        members = tuple(
            messages.DescribedGroupMember(member_id=m.member_id, group_instance_id=m.group_instance_id,
                                 client_id=m.client_id, client_host=m.client_host,
                                 member_metadata=m.metadata_for(g.protocol_name) if stable else b"",
                                 member_assignment=m.assignment if stable else b"")
            for m in g.members.values())
        return messages.DescribedGroup(error_code=ErrorCode.none, group_id=group_id, group_state=g.state.value,
                              protocol_type=g.protocol_type or "",
                              protocol_data=(g.protocol_name or "") if stable else "", members=members,
                              authorized_operations=ops)
