"""ConsumerGroupDescribe (API 69, KIP-848): a consumer group's epochs, assignor and members, each
with its current assignment (assigned and still being revoked) and its target assignment.

Kafka: KafkaApis.handleConsumerGroupDescribe, GroupMetadataManager.consumerGroupDescribe,
ConsumerGroup.asDescribedGroup. An empty group id is INVALID_GROUP_ID; a missing group and a
classic one are GROUP_ID_NOT_FOUND with Kafka's messages; topics that no longer exist are left out
of the assignments.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from minikafka.broker import authorized_operations
from minikafka.broker.context import RequestContext
from minikafka.broker.handlers.consumer_group_heartbeat import consumer_protocol_enabled
from minikafka.broker.services import BrokerServices
from minikafka.coordinator.consumer_group.decisions import preferred_assignor
from minikafka.coordinator.consumer_group.state import Assignment, ConsumerGroup, ConsumerGroupMember, by_topic
from minikafka.coordinator.group.coordinator import GroupCoordinator
from minikafka.protocol import messages
from minikafka.protocol.errors import ErrorCode
from minikafka.protocol.types import ZERO_MS

MEMBER_TYPE_CLASSIC, MEMBER_TYPE_CONSUMER = 0, 1  # v1: a classic member of a mixed group, or one of the new protocol


@dataclass(frozen=True, slots=True)
class ConsumerGroupDescribeHandler:
    api_key: ClassVar[int] = 69
    svc: BrokerServices
    groups: GroupCoordinator

    async def __call__(self, ctx: RequestContext, req: Any) -> messages.ConsumerGroupDescribeResponse:
        if not consumer_protocol_enabled(self.svc):
            return self.error_response(req, ErrorCode.unsupported_version)
        ops = authorized_operations.answer(bool(req.include_authorized_operations), authorized_operations.GROUP)
        return messages.ConsumerGroupDescribeResponse(throttle_time=ZERO_MS, groups=tuple(
            self._describe(gid, ops) for gid in req.group_ids))

    def _describe(self, group_id: str, ops: int) -> Any:
        if not group_id:
            return _error(group_id, ErrorCode.invalid_group_id, None)
        consumer = self.groups.consumer
        group = None if consumer is None else consumer.describe(group_id)
        if group is None:
            message = (f"Group {group_id} is not a consumer group." if self.groups.group_type(group_id) is not None
                       else f"Group {group_id} not found.")
            return _error(group_id, ErrorCode.group_id_not_found, message)
        assert consumer is not None
        return messages.ConsumerGroupDescribedGroup(
            error_code=ErrorCode.none, group_id=group_id, group_state=group.state.value, group_epoch=group.group_epoch,
            assignment_epoch=group.target_assignment_epoch, assignor_name=preferred_assignor(group, consumer.config),
            members=tuple(self._member(group, m) for m in group.members.values()), authorized_operations=ops)

    def _member(self, group: ConsumerGroup, m: ConsumerGroupMember) -> Any:
        return messages.ConsumerGroupDescribeMember(
            member_id=m.member_id, instance_id=m.instance_id, rack_id=m.rack_id, member_epoch=m.member_epoch,
            client_id=m.client_id, client_host=m.client_host, subscribed_topic_names=m.subscribed_topic_names,
            subscribed_topic_regex=m.subscribed_topic_regex or "",
            assignment=self._assignment(m.assigned | m.pending_revocation),
            target_assignment=self._assignment(group.target_of(m.member_id)),
            member_type=MEMBER_TYPE_CLASSIC if m.uses_classic_protocol else MEMBER_TYPE_CONSUMER)

    def _assignment(self, assignment: Assignment) -> Any:
        topics = []
        for tid, parts in by_topic(assignment).items():
            info = self.svc.logs.topic_by_id(tid)
            if info is not None:
                topics.append(messages.ConsumerGroupDescribeTopicPartitions(topic_id=tid, topic_name=info.name,
                                                                            partitions=tuple(parts)))
        return messages.ConsumerGroupDescribeAssignment(topic_partitions=tuple(topics))

    def error_response(self, req: Any, code: ErrorCode) -> messages.ConsumerGroupDescribeResponse:
        return messages.ConsumerGroupDescribeResponse(throttle_time=ZERO_MS, groups=tuple(
            _error(gid, code, None) for gid in req.group_ids))


def _error(group_id: str, code: ErrorCode, message: str | None) -> Any:
    return messages.ConsumerGroupDescribedGroup(error_code=code, error_message=message, group_id=group_id,
                                                group_state="", group_epoch=0, assignment_epoch=0, assignor_name="",
                                                members=())
