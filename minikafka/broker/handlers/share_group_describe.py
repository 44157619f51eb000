"""ShareGroupDescribe (API 77, KIP-932): a share group's epochs, assignor and members, each with its
assignment (what `kafka-share-groups.sh --describe --members` prints).

Kafka: KafkaApis.handleShareGroupDescribe, ShareGroup.asDescribedGroup. An empty group id is
INVALID_GROUP_ID; a missing group GROUP_ID_NOT_FOUND "Group X not found."; a group of another type
GROUP_ID_NOT_FOUND "Group X is not a share group."; topics that no longer exist are left out.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from minikafka.broker import authorized_operations
from minikafka.broker.context import RequestContext
from minikafka.broker.handlers.share_group_heartbeat import share_groups_enabled
from minikafka.broker.services import BrokerServices
from minikafka.coordinator.group.coordinator import GroupCoordinator
from minikafka.coordinator.share_group.state import ASSIGNOR_NAME, Partitions, ShareGroupMember, by_topic
from minikafka.protocol import messages
from minikafka.protocol.errors import ErrorCode
from minikafka.protocol.types import ZERO_MS


@dataclass(frozen=True, slots=True)
class ShareGroupDescribeHandler:
    api_key: ClassVar[int] = 77
    svc: BrokerServices
    groups: GroupCoordinator

    async def __call__(self, ctx: RequestContext, req: Any) -> messages.ShareGroupDescribeResponse:
        if not share_groups_enabled(self.svc):
            return self.error_response(req, ErrorCode.unsupported_version)
        ops = authorized_operations.answer(bool(req.include_authorized_operations), authorized_operations.GROUP)
        return messages.ShareGroupDescribeResponse(throttle_time=ZERO_MS, groups=tuple(
            self._describe(gid, ops) for gid in req.group_ids))

    def _describe(self, group_id: str, ops: int) -> Any:
        if not group_id:
            return _error(group_id, ErrorCode.invalid_group_id, None)
        group = self.groups.share.describe(group_id)
        if group is None:
            message = (f"Group {group_id} is not a share group." if self.groups.group_type(group_id) is not None
                       else f"Group {group_id} not found.")
            return _error(group_id, ErrorCode.group_id_not_found, message)
        return messages.ShareGroupDescribedGroup(
            error_code=ErrorCode.none, group_id=group_id, group_state=group.state.value, group_epoch=group.group_epoch,
            assignment_epoch=group.target_assignment_epoch, assignor_name=ASSIGNOR_NAME,
            members=tuple(self._member(m) for _mid, m in sorted(group.members.items())), authorized_operations=ops)

    def _member(self, m: ShareGroupMember) -> Any:
        return messages.ShareGroupDescribeMember(
            member_id=m.member_id, rack_id=m.rack_id, member_epoch=m.member_epoch, client_id=m.client_id,
            client_host=m.client_host, subscribed_topic_names=m.subscribed_topic_names,
            assignment=self._assignment(m.assigned))

    def _assignment(self, assignment: Partitions) -> Any:
        topics = []
        for tid, parts in by_topic(assignment).items():
            info = self.svc.logs.topic_by_id(tid)
            if info is not None:
                topics.append(messages.ShareGroupDescribeTopicPartitions(topic_id=tid, topic_name=info.name,
                                                                         partitions=tuple(parts)))
        return messages.ShareGroupDescribeAssignment(topic_partitions=tuple(topics))

    def error_response(self, req: Any, code: ErrorCode) -> messages.ShareGroupDescribeResponse:
        return messages.ShareGroupDescribeResponse(throttle_time=ZERO_MS, groups=tuple(
            _error(gid, code, None) for gid in req.group_ids))


def _error(group_id: str, code: ErrorCode, message: str | None) -> Any:
    return messages.ShareGroupDescribedGroup(error_code=code, error_message=message, group_id=group_id,
                                             group_state="", group_epoch=0, assignment_epoch=0, assignor_name="",
                                             members=())
