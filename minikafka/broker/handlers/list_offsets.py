"""ListOffsets (API 2): earliest (-2), latest (-1: the LSO under read_committed, else the high
watermark), max timestamp (-3), or the first offset whose timestamp is >= the one asked; and the
tiered-storage positions of KIP-1005/KIP-1023, answered as Kafka answers them with no tiered
storage: earliest local (-4, v8+) is the log start offset, latest tiered (-5, v9+) and earliest
pending upload (-6, v11+) are "none" (offset, timestamp and leader epoch -1). A special timestamp
the request's version does not know is UNSUPPORTED_VERSION, as in Kafka 4.3.1.

Kafka: Partition.fetchOffsetForTimestamp; a timestamp match at or past the last fetchable
offset is reported as not found (offset -1, timestamp -1).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import structlog

from minikafka.broker.context import RequestContext
from minikafka.broker.services import BrokerServices
from minikafka.protocol import messages
from minikafka.protocol.errors import CorruptRecord, ErrorCode
from minikafka.protocol.types import (
    EARLIEST_LOCAL_TIMESTAMP,
    EARLIEST_PENDING_UPLOAD_TIMESTAMP,
    EARLIEST_TIMESTAMP,
    LATEST_TIERED_TIMESTAMP,
    LATEST_TIMESTAMP,
    MAX_TIMESTAMP,
    ZERO_MS,
    IsolationLevel,
    TopicPartition,
)

log = structlog.get_logger("minikafka.broker")

# The first ListOffsets version that knows each special timestamp.
_SINCE_VERSION = {EARLIEST_LOCAL_TIMESTAMP: 8, LATEST_TIERED_TIMESTAMP: 9, EARLIEST_PENDING_UPLOAD_TIMESTAMP: 11}


@dataclass(frozen=True, slots=True)
class ListOffsetsHandler:
    api_key: ClassVar[int] = 2
    svc: BrokerServices

    async def __call__(self, ctx: RequestContext, req: Any) -> messages.ListOffsetsResponse:
        read_committed = req.isolation_level == IsolationLevel.READ_COMMITTED
        # Kafka's IsolationLevel.forId throws for any other value (an UNKNOWN_SERVER_ERROR there).
        known = req.isolation_level in (IsolationLevel.READ_UNCOMMITTED, IsolationLevel.READ_COMMITTED)
        topics = []
        for t in req.topics:
            parts = tuple(self._one(TopicPartition(t.name, p.partition_index), p.timestamp, read_committed,
                                    ctx.api_version)
                          if known else messages.ListOffsetsPartitionResponse(
                              partition_index=p.partition_index, error_code=ErrorCode.invalid_request)
                          for p in t.partitions)
            topics.append(messages.ListOffsetsTopicResponse(name=t.name, partitions=parts))
        return messages.ListOffsetsResponse(throttle_time=ZERO_MS, topics=tuple(topics))

    def _one(self, tp: TopicPartition, timestamp: int, read_committed: bool,
             api_version: int) -> messages.ListOffsetsPartitionResponse:
        plog = self.svc.logs.get(tp)
        if plog is None:
            return messages.ListOffsetsPartitionResponse(partition_index=tp.partition,
                                                error_code=ErrorCode.unknown_topic_or_partition)
        fetchable = plog.last_stable_offset if read_committed else plog.high_watermark
        offset, ts = -1, -1
        if timestamp in _SINCE_VERSION and api_version < _SINCE_VERSION[timestamp]:
            return messages.ListOffsetsPartitionResponse(partition_index=tp.partition,
                                                         error_code=ErrorCode.unsupported_version)
        if timestamp in (EARLIEST_TIMESTAMP, EARLIEST_LOCAL_TIMESTAMP):  # all of the log is local
            offset = plog.log_start_offset
        elif timestamp in (LATEST_TIERED_TIMESTAMP, EARLIEST_PENDING_UPLOAD_TIMESTAMP):  # nothing is tiered
            return messages.ListOffsetsPartitionResponse(partition_index=tp.partition, error_code=ErrorCode.none,
                                                         timestamp=-1, offset=-1, leader_epoch=-1)
        elif timestamp == LATEST_TIMESTAMP:
            offset = fetchable
        elif timestamp == MAX_TIMESTAMP or timestamp >= 0:
            try:
                found = plog.max_timestamp_offset() if timestamp == MAX_TIMESTAMP else \
                    plog.offset_for_timestamp(timestamp)
            except CorruptRecord as exc:
                log.warning("corrupt_batch_not_served", topic=tp.topic, partition=tp.partition, reason=str(exc))
                return messages.ListOffsetsPartitionResponse(partition_index=tp.partition,
                                                             error_code=ErrorCode.corrupt_message)
            if found is not None and found[0] < fetchable:
                offset, ts = found
        else:
            return messages.ListOffsetsPartitionResponse(partition_index=tp.partition,
                                                error_code=ErrorCode.unsupported_version)
        return messages.ListOffsetsPartitionResponse(partition_index=tp.partition, error_code=ErrorCode.none,
                                            timestamp=ts, offset=offset, leader_epoch=0)
