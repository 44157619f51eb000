"""StreamsGroupDescribe (API 89, KIP-1071): a streams group's epochs, topology and members, each
with its tasks and its target tasks (what `kafka-streams-groups.sh --describe` prints).

Kafka: KafkaApis.handleStreamsGroupDescribe, StreamsGroup.asDescribedGroup. The topology is the
configured one (internal topics with their decided partition counts) once it is ready, the declared
one before. A group id of another type is GROUP_ID_NOT_FOUND "Group X is not a streams group.".
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from minikafka.broker import authorized_operations
from minikafka.broker.context import RequestContext
from minikafka.broker.handlers.streams_group_heartbeat import streams_protocol_enabled
from minikafka.broker.services import BrokerServices
from minikafka.coordinator.group.coordinator import GroupCoordinator
from minikafka.coordinator.streams_group.state import StreamsGroup, StreamsGroupMember, TopicInfo, by_subtopology
from minikafka.protocol import messages
from minikafka.protocol.errors import ErrorCode
from minikafka.protocol.types import ZERO_MS


@dataclass(frozen=True, slots=True)
class StreamsGroupDescribeHandler:
    api_key: ClassVar[int] = 89
    svc: BrokerServices
    groups: GroupCoordinator

    async def __call__(self, ctx: RequestContext, req: Any) -> messages.StreamsGroupDescribeResponse:
        if not streams_protocol_enabled(self.svc):
            return self.error_response(req, ErrorCode.unsupported_version)
        ops = authorized_operations.answer(bool(req.include_authorized_operations), authorized_operations.GROUP)
        return messages.StreamsGroupDescribeResponse(throttle_time=ZERO_MS, groups=tuple(
            self._describe(gid, ops) for gid in req.group_ids))

    def _describe(self, group_id: str, ops: int) -> Any:
        if not group_id:
            return _error(group_id, ErrorCode.invalid_group_id, None)
        group = self.groups.streams.describe(group_id)
        if group is None:
            message = (f"Group {group_id} is not a streams group." if self.groups.group_type(group_id) is not None
                       else f"Group {group_id} not found.")
            return _error(group_id, ErrorCode.group_id_not_found, message)
        return messages.StreamsGroupDescribedGroup(
            error_code=ErrorCode.none, error_message=None, group_id=group_id, group_state=group.state.value,
            group_epoch=group.group_epoch, assignment_epoch=group.target_assignment_epoch,
            topology=_topology(group), members=tuple(_member(group, m) for _mid, m in sorted(group.members.items())),
            authorized_operations=ops)

    def error_response(self, req: Any, code: ErrorCode) -> messages.StreamsGroupDescribeResponse:
        return messages.StreamsGroupDescribeResponse(throttle_time=ZERO_MS, groups=tuple(
            _error(gid, code, None) for gid in req.group_ids))


def _topology(group: StreamsGroup) -> Any:
    if group.topology is None:
        return None
    configured = group.configured
    ready = configured is not None and configured.is_ready and configured.topology_epoch == group.topology.epoch

    def info(t: TopicInfo) -> Any:
        partitions = configured.internal_partitions.get(t.name, t.partitions) if ready and configured else t.partitions
        return messages.StreamsGroupDescribeTopicInfo(
            name=t.name, partitions=partitions, replication_factor=t.replication_factor,
            topic_configs=tuple(messages.StreamsGroupDescribeKeyValue(key=k, value=v) for k, v in t.configs))

    return messages.StreamsGroupDescribeTopology(epoch=group.topology.epoch, subtopologies=tuple(
        messages.StreamsGroupDescribeSubtopology(
            subtopology_id=s.subtopology_id, source_topics=tuple(sorted(s.source_topics)),
            repartition_sink_topics=tuple(sorted(s.repartition_sink_topics)),
            state_changelog_topics=tuple(info(t) for t in sorted(s.state_changelog_topics, key=lambda t: t.name)),
            repartition_source_topics=tuple(info(t) for t in sorted(s.repartition_source_topics,
                                                                     key=lambda t: t.name)))
        for s in sorted(group.topology.subtopologies, key=lambda s: s.subtopology_id)))


def _assignment(active: frozenset[tuple[str, int]], standby: frozenset[tuple[str, int]],
                warmup: frozenset[tuple[str, int]]) -> Any:
    def ids(tasks: frozenset[tuple[str, int]]) -> tuple[Any, ...]:
        return tuple(messages.StreamsGroupDescribeTaskIds(subtopology_id=sub, partitions=tuple(parts))
                     for sub, parts in by_subtopology(tasks).items())

    return messages.StreamsGroupDescribeAssignment(active_tasks=ids(active), standby_tasks=ids(standby),
                                                   warmup_tasks=ids(warmup))


def _member(group: StreamsGroup, m: StreamsGroupMember) -> Any:
    target = group.target_assignment.get(m.member_id)
    return messages.StreamsGroupDescribeMember(
        member_id=m.member_id, member_epoch=m.member_epoch, instance_id=m.instance_id, rack_id=m.rack_id,
        client_id=m.client_id, client_host=m.client_host, topology_epoch=m.topology_epoch, process_id=m.process_id,
        user_endpoint=None if m.user_endpoint is None else messages.StreamsGroupDescribeEndpoint(
            host=m.user_endpoint[0], port=m.user_endpoint[1]),
        client_tags=tuple(messages.StreamsGroupDescribeKeyValue(key=k, value=v) for k, v in m.client_tags),
        task_offsets=(), task_end_offsets=(),
        assignment=_assignment(m.assigned.active, m.assigned.standby, m.assigned.warmup),
        target_assignment=_assignment(frozenset(), frozenset(), frozenset()) if target is None
        else _assignment(target.active, target.standby, target.warmup),
        is_classic=False)


def _error(group_id: str, code: ErrorCode, message: str | None) -> Any:
    return messages.StreamsGroupDescribedGroup(error_code=code, error_message=message, group_id=group_id,
                                               group_state="", group_epoch=0, assignment_epoch=0, topology=None,
                                               members=())
