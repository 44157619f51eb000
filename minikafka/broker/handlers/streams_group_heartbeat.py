"""StreamsGroupHeartbeat (API 88, KIP-1071): a Kafka Streams client joins, stays in and leaves a
streams group; the coordinator assigns tasks (coordinator/streams_group).

Kafka: KafkaApis.handleStreamsGroupHeartbeat. With `streams.version` at 0 the protocol is off and
the request is answered UNSUPPORTED_VERSION. Before the coordinator, the topology's topics are
checked: Kafka's own internal topics and invalid names are STREAMS_INVALID_TOPOLOGY. After it, the
internal topics it found missing (repartition and changelog topics) are created here, as Kafka's
AutoTopicCreationManager does; the answer still says MISSING_INTERNAL_TOPICS, and the next
heartbeat finds them.
"""

from __future__ import annotations

import dataclasses
import datetime
from dataclasses import dataclass
from typing import Any, ClassVar

import structlog

from minikafka.broker.context import RequestContext
from minikafka.broker.handlers.join_group import client_host
from minikafka.broker.services import BrokerServices
from minikafka.coordinator.group.coordinator import GroupCoordinator
from minikafka.coordinator.streams_group import topology as topo
from minikafka.coordinator.streams_group.decisions import HeartbeatReply, HeartbeatRequest
from minikafka.coordinator.streams_group.state import (
    CopartitionGroup,
    Subtopology,
    TasksTuple,
    TopicInfo,
    Topology,
    by_subtopology,
    from_subtopologies,
)
from minikafka.features import STREAMS_VERSION
from minikafka.protocol import messages
from minikafka.protocol.errors import ErrorCode
from minikafka.protocol.types import ZERO_MS, ms
from minikafka.storage.log_manager import TopicError, validate_topic_name

log = structlog.get_logger("minikafka.broker")

# Topic.isInternal: the topics of Kafka's own coordinators.
KAFKA_INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state", "__share_group_state"})


def streams_protocol_enabled(svc: BrokerServices) -> bool:
    """streams.version >= 1 (Kafka 4.3's default; kafka-features.sh may move it)."""
    return svc.features is None or svc.features.level(STREAMS_VERSION) >= 1


def _topic_info(t: Any) -> TopicInfo:
    return TopicInfo(t.name, int(t.partitions), int(t.replication_factor),
                     tuple((kv.key, kv.value) for kv in t.topic_configs))


def topology_from_request(t: Any) -> Topology:
    return Topology(int(t.epoch), tuple(
        Subtopology(s.subtopology_id, tuple(s.source_topics), tuple(s.source_topic_regex),
                    tuple(_topic_info(x) for x in s.state_changelog_topics), tuple(s.repartition_sink_topics),
                    tuple(_topic_info(x) for x in s.repartition_source_topics),
                    tuple(CopartitionGroup(tuple(int(i) for i in g.source_topics),
                                           tuple(int(i) for i in g.source_topic_regex),
                                           tuple(int(i) for i in g.repartition_source_topics))
                          for g in s.copartition_groups))
        for s in t.subtopologies))


def _tasks(entries: Any) -> frozenset[tuple[str, int]] | None:
    return None if entries is None else from_subtopologies((e.subtopology_id, e.partitions) for e in entries)


def _wire_tasks(tasks: frozenset[tuple[str, int]]) -> tuple[Any, ...]:
    return tuple(messages.StreamsGroupHeartbeatTaskIds(subtopology_id=sub, partitions=tuple(parts))
                 for sub, parts in by_subtopology(tasks).items())


def _valid_name(name: str) -> bool:
    try:
        validate_topic_name(name)
    except TopicError:
        return False
    return True


@dataclass(frozen=True, slots=True)
class StreamsGroupHeartbeatHandler:
    api_key: ClassVar[int] = 88
    svc: BrokerServices
    groups: GroupCoordinator

    async def __call__(self, ctx: RequestContext, req: Any) -> messages.StreamsGroupHeartbeatResponse:
        if not streams_protocol_enabled(self.svc):
            return self.error_response(req, ErrorCode.unsupported_version)
        topology = None
        if req.topology is not None:
            required: list[str] = []
            for s in req.topology.subtopologies:
                for name in (*s.source_topics, *s.repartition_sink_topics,
                             *(t.name for t in s.repartition_source_topics),
                             *(t.name for t in s.state_changelog_topics)):
                    if name not in required:
                        required.append(name)
            prohibited = [n for n in required if n in KAFKA_INTERNAL_TOPICS]
            if prohibited:
                return self._reply(HeartbeatReply(
                    error=ErrorCode.streams_invalid_topology,
                    message=f"Use of Kafka internal topics {','.join(prohibited)} in a Kafka Streams topology is "
                            f"prohibited."))
            invalid = [n for n in required if not _valid_name(n)]
            if invalid:
                return self._reply(HeartbeatReply(error=ErrorCode.streams_invalid_topology,
                                                  message=f"Topic names {','.join(invalid)} are not valid topic names."))
            topology = topology_from_request(req.topology)
        endpoint = None if req.user_endpoint is None else (req.user_endpoint.host, int(req.user_endpoint.port))
        result = await self.groups.streams_group_heartbeat(HeartbeatRequest(
            group_id=req.group_id, member_id=req.member_id, member_epoch=req.member_epoch,
            endpoint_information_epoch=req.endpoint_information_epoch, instance_id=req.instance_id,
            rack_id=req.rack_id, rebalance_timeout_ms=ms(req.rebalance_timeout), topology=topology,
            active=_tasks(req.active_tasks), standby=_tasks(req.standby_tasks), warmup=_tasks(req.warmup_tasks),
            process_id=req.process_id, user_endpoint=endpoint,
            client_tags=None if req.client_tags is None else tuple((kv.key, kv.value) for kv in req.client_tags),
            task_offsets_set=req.task_offsets is not None or req.task_end_offsets is not None,
            shutdown_application=bool(req.shutdown_application), client_id=ctx.client_id or "",
            client_host=client_host(ctx.peer)), self.svc.clock.now_ms())
        reply = result.reply
        if result.topics_to_create:
            reply = self._create_internal_topics(reply, result.topics_to_create)
        return self._reply(reply)

    def _create_internal_topics(self, reply: HeartbeatReply, topics: tuple[TopicInfo, ...]) -> HeartbeatReply:
        """Create the missing internal topics (replication factor 1 on one node); a failure is added
        to the MISSING_INTERNAL_TOPICS status, as Kafka adds its creation errors."""
        failed: list[str] = []
        for t in topics:
            if t.name in self.svc.logs.topics:
                continue
            try:
                self.svc.create_topic(t.name, t.partitions, dict(t.configs))
            except TopicError as exc:
                if exc.error_code is not ErrorCode.topic_already_exists:
                    failed.append(f"{t.name} ({exc.error_code.name.upper()})")
                continue
            except OSError as exc:
                failed.append(f"{t.name} (KAFKA_STORAGE_ERROR)")
                log.warning("streams_internal_topic_failed", topic=t.name, reason=str(exc))
                continue
            log.info("streams_internal_topic_created", topic=t.name, partitions=t.partitions)
        if not failed:
            return reply
        detail = f"; Creation failed: {', '.join(failed[:3])}" + (f" and {len(failed) - 3} more" if len(failed) > 3
                                                                   else "") + "."
        status = tuple((code, text + detail) if code == topo.MISSING_INTERNAL_TOPICS else (code, text)
                       for code, text in reply.status)
        return dataclasses.replace(reply, status=status)

    def _reply(self, reply: HeartbeatReply) -> messages.StreamsGroupHeartbeatResponse:
        tasks: TasksTuple | None = reply.tasks
        if reply.error is not ErrorCode.none:
            return self.error_response(None, reply.error, reply.message)
        by_endpoint = None
        if reply.partitions_by_user_endpoint is not None:
            by_endpoint = tuple(messages.StreamsGroupHeartbeatEndpointToPartitions(
                user_endpoint=messages.StreamsGroupHeartbeatEndpoint(host=e.endpoint[0], port=e.endpoint[1]),
                active_partitions=tuple(messages.StreamsGroupHeartbeatTopicPartition(topic=t, partitions=p)
                                        for t, p in e.active),
                standby_partitions=tuple(messages.StreamsGroupHeartbeatTopicPartition(topic=t, partitions=p)
                                         for t, p in e.standby))
                for e in reply.partitions_by_user_endpoint)
        return messages.StreamsGroupHeartbeatResponse(
            throttle_time=ZERO_MS, error_code=ErrorCode.none, error_message=None, member_id=reply.member_id or "",
            member_epoch=reply.member_epoch,
            heartbeat_interval=datetime.timedelta(milliseconds=reply.heartbeat_interval_ms),
            acceptable_recovery_lag=0, task_offset_interval=ZERO_MS,
            status=tuple(messages.StreamsGroupHeartbeatStatus(status_code=code, status_detail=detail)
                         for code, detail in reply.status),
            active_tasks=None if tasks is None else _wire_tasks(tasks.active),
            standby_tasks=None if tasks is None else _wire_tasks(tasks.standby),
            warmup_tasks=None if tasks is None else _wire_tasks(tasks.warmup),
            endpoint_information_epoch=reply.endpoint_information_epoch,
            partitions_by_user_endpoint=by_endpoint)

    def error_response(self, req: Any, code: ErrorCode, message: str | None = None) -> messages.StreamsGroupHeartbeatResponse:
        return messages.StreamsGroupHeartbeatResponse(
            throttle_time=ZERO_MS, error_code=code, error_message=message, member_id="", member_epoch=0,
            heartbeat_interval=ZERO_MS, acceptable_recovery_lag=0, task_offset_interval=ZERO_MS, status=None,
            active_tasks=None, standby_tasks=None, warmup_tasks=None, endpoint_information_epoch=0,
            partitions_by_user_endpoint=None)
