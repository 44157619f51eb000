"""AlterPartitionReassignments (API 45): on one node the only valid assignment of a partition is
the one it has ([this node]), which completes at once; anything else is refused as Kafka's
controller refuses it (kafka-reassign-partitions.sh --execute, Admin.alterPartitionReassignments).

Kafka (KRaft): ReplicationControlManager.alterPartitionReassignments / validateManualPartition-
Assignment. Per partition: unknown -> UNKNOWN_TOPIC_OR_PARTITION; replicas null (cancel) with
nothing in progress -> NO_REASSIGNMENT_IN_PROGRESS; an empty list, a duplicate or a broker that is
not registered -> INVALID_REPLICA_ASSIGNMENT (with one broker, any other replica count is one of
these, so allow_replication_factor_change never matters); the current assignment -> NONE.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from minikafka.broker.context import RequestContext
from minikafka.broker.services import BrokerServices
from minikafka.protocol import messages
from minikafka.protocol.errors import ErrorCode
from minikafka.protocol.types import ZERO_MS, TopicPartition


@dataclass(frozen=True, slots=True)
class AlterPartitionReassignmentsHandler:
    api_key: ClassVar[int] = 45
    svc: BrokerServices

    async def __call__(self, ctx: RequestContext, req: Any) -> messages.AlterPartitionReassignmentsResponse:
        responses = []
        for t in req.topics:
            parts = []
            for p in t.partitions:
                code, message = self._one(TopicPartition(t.name, p.partition_index), p.replicas)
                parts.append(messages.ReassignablePartitionResponse(
                    partition_index=p.partition_index, error_code=code, error_message=message))
            responses.append(messages.ReassignableTopicResponse(name=t.name, partitions=tuple(parts)))
        return messages.AlterPartitionReassignmentsResponse(
            throttle_time=ZERO_MS, allow_replication_factor_change=req.allow_replication_factor_change,
            error_code=ErrorCode.none, error_message=None, responses=tuple(responses))

    def _one(self, tp: TopicPartition, replicas: tuple[int, ...] | None) -> tuple[ErrorCode, str | None]:
        if self.svc.logs.get(tp) is None:
            return ErrorCode.unknown_topic_or_partition, None
        if replicas is None:
            return ErrorCode.no_reassignment_in_progress, None
        node = self.svc.node_id
        if not replicas:
            return ErrorCode.invalid_replica_assignment, "The manual partition assignment includes an empty replica list."
        if len(set(replicas)) != len(replicas):
            return ErrorCode.invalid_replica_assignment, "The manual partition assignment includes duplicate replicas."
        for r in replicas:
            if r != node:
                return (ErrorCode.invalid_replica_assignment,
                        f"The manual partition assignment includes broker {r}, but no such broker is registered.")
        return ErrorCode.none, None
