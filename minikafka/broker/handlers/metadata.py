"""Metadata (API 3): this one broker, and every requested topic with its partitions led by it.

Kafka: KafkaApis.handleTopicMetadataRequest. A null topic list means all topics; an unknown
topic is created when auto.create.topics.enable and the request allows it (never an internal
topic). Topic ids are real (persisted in partition.metadata); leader epoch is always 0.
"""

from __future__ import annotations

import dataclasses
import functools
import uuid
from dataclasses import dataclass
from typing import Any, ClassVar

from minikafka.broker import authorized_operations
from minikafka.broker.context import RequestContext
from minikafka.broker.services import BrokerServices
from minikafka.protocol import messages, versions
from minikafka.protocol.errors import ErrorCode
from minikafka.protocol.types import ZERO_MS
from minikafka.storage.log_manager import TopicError, TopicInfo, validate_topic_name

ZERO_UUID = uuid.UUID(int=0)


@dataclass(frozen=True, slots=True)
class MetadataHandler:
    api_key: ClassVar[int] = 3
    svc: BrokerServices

    async def __call__(self, ctx: RequestContext, req: Any) -> messages.MetadataResponse:
        logs = self.svc.logs
        topics: list[messages.MetadataResponseTopic] = []
        if req.topics is None or (ctx.api_version == 0 and not req.topics):
            asked = bool(req.include_topic_authorized_operations)
            topics = [self._topic(info, asked) for info in sorted(logs.topics.values(), key=lambda i: i.name)]
        else:
            for t in req.topics:
                name = t.name
                info = None
                if name is None and t.topic_id not in (None, ZERO_UUID):
                    info = logs.topic_by_id(t.topic_id)
                    if info is None:
                        topics.append(_topic_error(None, ErrorCode.unknown_topic_id, t.topic_id))
                        continue
                elif name is not None:
                    info = logs.topics.get(name)
                if info is None and name is not None:
                    try:
                        validate_topic_name(name)
                    except TopicError as exc:
                        topics.append(_topic_error(name, exc.error_code))
                        continue
                    allow = req.allow_auto_topic_creation if ctx.api_version >= 4 else True
                    if allow:
                        info = self.svc.auto_create_topic(name)
                if info is None:
                    topics.append(_topic_error(name, ErrorCode.unknown_topic_or_partition))
                else:
                    topics.append(self._topic(info, bool(req.include_topic_authorized_operations)))
        host, port = self.svc.advertised(ctx.session)
        broker = messages.MetadataResponseBroker(node_id=self.svc.node_id, host=host, port=port, rack=None)
        # v13's top-level error code (KIP-1102) is for REBOOTSTRAP_REQUIRED, which one node never asks.
        response = messages.MetadataResponse(throttle_time=ZERO_MS, brokers=(broker,), cluster_id=self.svc.cluster_id,
                                             controller_id=self.svc.node_id, topics=tuple(topics),
                                             error_code=ErrorCode.none)
        if getattr(ctx.sent, "include_cluster_authorized_operations", False):
            # v8-10 only (the field left Metadata in v11): answered in the client's version's shape,
            # which the dispatcher passes through unchanged.
            return dataclasses.replace(versions.downgrade(response, ctx.api_version),
                                       cluster_authorized_operations=authorized_operations.CLUSTER)
        return response

    def _topic(self, info: TopicInfo, asked_for_operations: bool) -> messages.MetadataResponseTopic:
        return messages.MetadataResponseTopic(error_code=ErrorCode.none, name=info.name, topic_id=info.topic_id,
                                     is_internal=info.internal,
                                     partitions=_partition_entries(self.svc.node_id, info.partitions),
                                     topic_authorized_operations=authorized_operations.answer(
                                         asked_for_operations, authorized_operations.TOPIC))


@functools.lru_cache(maxsize=1024)
def _partition_entries(node: int, count: int) -> tuple[messages.MetadataResponsePartition, ...]:
    """Partitions 0..count-1, each led by this node with epoch 0: the same entries for every topic
    with that many partitions, and immutable, so built once rather than per topic per request
    (a quarter of a full Metadata's time at 4,000 partitions went into building them)."""
    return tuple(
        messages.MetadataResponsePartition(error_code=ErrorCode.none, partition_index=p, leader_id=node,
                                           leader_epoch=0, replica_nodes=(node,), isr_nodes=(node,),
                                           offline_replicas=())
        for p in range(count)
    )


def _topic_error(name: str | None, code: ErrorCode, topic_id: uuid.UUID = ZERO_UUID) -> messages.MetadataResponseTopic:
    return messages.MetadataResponseTopic(error_code=code, name=name, topic_id=topic_id, partitions=())
