"""DeleteRecords (API 21): move a partition's log start offset forward and delete the segments
wholly below it (kafka-delete-records.sh, Admin.deleteRecords, Kafka Streams' repartition purge).

Kafka: ReplicaManager.deleteRecords, Partition.deleteRecordsOnLeader, UnifiedLog.
maybeIncrementLogStartOffset. Offset -1 means the high watermark; any other negative offset or one
past the high watermark is OFFSET_OUT_OF_RANGE; an offset at or below the current log start changes
nothing; a topic whose cleanup.policy lacks `delete` is POLICY_VIOLATION. The answer's low
watermark is the log start offset afterwards. The new log start offset is checkpointed at once
(log-start-offset-checkpoint), so records deleted stay deleted across a kill -9.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import structlog

from minikafka.broker.context import RequestContext
from minikafka.broker.services import BrokerServices
from minikafka.protocol import messages
from minikafka.protocol.errors import ErrorCode
from minikafka.protocol.types import ZERO_MS, TopicPartition

log = structlog.get_logger("minikafka.broker")

HIGH_WATERMARK = -1  # DeleteRecordsRequest.HIGH_WATERMARK


@dataclass(frozen=True, slots=True)
class DeleteRecordsHandler:
    api_key: ClassVar[int] = 21
    svc: BrokerServices

    async def __call__(self, ctx: RequestContext, req: Any) -> messages.DeleteRecordsResponse:
        topics = []
        moved = False
        for t in req.topics:
            parts = []
            for p in t.partitions:
                code, low = self._one(TopicPartition(t.name, p.partition_index), p.offset)
                moved |= code == ErrorCode.none
                parts.append(messages.DeleteRecordsPartitionResult(
                    partition_index=p.partition_index, low_watermark=low, error_code=code))
            topics.append(messages.DeleteRecordsTopicResult(name=t.name, partitions=tuple(parts)))
        if moved:
            self.svc.logs.checkpoint()
        return messages.DeleteRecordsResponse(throttle_time=ZERO_MS, topics=tuple(topics))

    def _one(self, tp: TopicPartition, offset: int) -> tuple[ErrorCode, int]:
        plog = self.svc.logs.get(tp)
        if plog is None:
            return ErrorCode.unknown_topic_or_partition, -1
        if not plog.deletes_records:
            return ErrorCode.policy_violation, -1
        target = plog.high_watermark if offset == HIGH_WATERMARK else offset
        if target < 0 or target > plog.high_watermark:
            return ErrorCode.offset_out_of_range, -1
        before = plog.log_start_offset
        deleted = plog.delete_records_before(target)
        if plog.log_start_offset != before:
            log.info("log_start_offset_moved", topic=tp.topic, partition=tp.partition, from_offset=before,
                     to_offset=plog.log_start_offset, segments_deleted=deleted, reason="delete_records")
        return ErrorCode.none, plog.log_start_offset
