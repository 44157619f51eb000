"""Fetch (API 1): raw batches from the segment files, long-polled until min_bytes or max_wait.

Kafka: KafkaApis.handleFetchRequest, ReplicaManager.fetchMessages, DelayedFetch. The request's
max_bytes bounds the whole response, partition_max_bytes each partition; the first batch of the
first partition with data is returned whole even when larger (KIP-74). read_committed reads stop
at the last stable offset. Records are never null (librdkafka rejects a null MessageSet).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any, ClassVar

import structlog

from minikafka.broker.context import RequestContext
from minikafka.broker.services import BrokerServices
from minikafka.protocol import messages
from minikafka.protocol.errors import CorruptRecord, ErrorCode
from minikafka.protocol.types import ZERO_MS, IsolationLevel, TopicPartition, ms
from minikafka.storage.errors import OffsetOutOfRange

log = structlog.get_logger("minikafka.broker")


@dataclass(frozen=True, slots=True)
class FetchHandler:
    api_key: ClassVar[int] = 1
    svc: BrokerServices

    async def __call__(self, ctx: RequestContext, req: Any) -> messages.FetchResponse:
        if req.isolation_level not in (IsolationLevel.READ_UNCOMMITTED, IsolationLevel.READ_COMMITTED):
            # Kafka's IsolationLevel.forId throws for it (an UNKNOWN_SERVER_ERROR there).
            return self.error_response(req, ErrorCode.invalid_request)
        response, total = self._read(req)
        max_wait_ms = ms(req.max_wait)
        if total >= req.min_bytes or max_wait_ms <= 0 or _has_error(response):
            return response
        watched = [TopicPartition(t.topic, p.partition) for t in req.topics for p in t.partitions]
        loop = asyncio.get_running_loop()
        deadline = loop.time() + max_wait_ms / 1000
        while True:
            remaining = deadline - loop.time()
            if remaining <= 0:
                return response
            fut = self.svc.purgatory.watch(watched)
            try:
                await asyncio.wait_for(fut, remaining)
            except TimeoutError:
                return self._read(req)[0]
            finally:
                self.svc.purgatory.unwatch(watched, fut)
            response, total = self._read(req)
            if total >= req.min_bytes or _has_error(response):
                return response

    def _read(self, req: Any) -> tuple[messages.FetchResponse, int]:
        read_committed = req.isolation_level == IsolationLevel.READ_COMMITTED
        budget = req.max_bytes if req.max_bytes > 0 else 2**31 - 1
        total = 0
        topics = []
        for t in req.topics:
            parts = []
            for p in t.partitions:
                data, part = self._read_partition(TopicPartition(t.topic, p.partition), p,
                                                  read_committed, budget, min_one=total == 0)
                total += len(data)
                budget = max(0, budget - len(data))
                parts.append(part)
            topics.append(messages.FetchableTopicResponse(topic=t.topic, partitions=tuple(parts)))
        return messages.FetchResponse(throttle_time=ZERO_MS, error_code=ErrorCode.none, session_id=0,
                             responses=tuple(topics)), total

    def _read_partition(self, tp: TopicPartition, p: Any, read_committed: bool, budget: int,
                        min_one: bool) -> tuple[bytes | memoryview, messages.PartitionData]:
        plog = self.svc.logs.get(tp)
        if plog is None:
            return b"", _error(tp.partition, ErrorCode.unknown_topic_or_partition)
        hw = plog.high_watermark
        lso = plog.last_stable_offset
        upper = lso if read_committed else hw
        max_bytes = min(p.partition_max_bytes, budget)
        try:
            data, end = plog.read_range(p.fetch_offset, max_bytes, upper_offset=upper, min_one=min_one) \
                if max_bytes > 0 or min_one else (b"", p.fetch_offset)
        except OffsetOutOfRange:
            return b"", _error(tp.partition, ErrorCode.offset_out_of_range, hw, lso, plog.log_start_offset)
        except CorruptRecord as exc:
            # Never served as data: the consumer gets the error at that offset, everything before
            # it stays readable.
            log.warning("corrupt_batch_not_served", topic=tp.topic, partition=tp.partition,
                        fetch_offset=p.fetch_offset, reason=str(exc))
            return b"", _error(tp.partition, ErrorCode.corrupt_message, hw, lso, plog.log_start_offset)
        aborted = None
        if read_committed:
            # The aborted transactions overlapping the returned range, so the client can drop them.
            aborted = tuple(messages.AbortedTransaction(producer_id=a.producer_id, first_offset=a.first_offset)
                            for a in plog.collect_aborted(p.fetch_offset, end)) if data else ()
        return data, messages.PartitionData(
            partition_index=tp.partition,
            error_code=ErrorCode.none,
            high_watermark=hw,
            last_stable_offset=lso,
            log_start_offset=plog.log_start_offset,
            aborted_transactions=aborted,
            preferred_read_replica=-1,
            records=data,
        )

    def error_response(self, req: Any, code: ErrorCode) -> messages.FetchResponse:
        return messages.FetchResponse(throttle_time=ZERO_MS, error_code=code, session_id=0, responses=())


def _error(partition: int, code: ErrorCode, hw: int = -1, lso: int = -1, log_start: int = -1) -> messages.PartitionData:
    return messages.PartitionData(partition_index=partition, error_code=code, high_watermark=hw,
                         last_stable_offset=lso, log_start_offset=log_start,
                         aborted_transactions=None, preferred_read_replica=-1, records=b"")


def _has_error(response: messages.FetchResponse) -> bool:
    return any(p.error_code is not ErrorCode.none for t in response.responses for p in t.partitions)
