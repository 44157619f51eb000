"""Fetch (API 1): raw batches from the segment files, long-polled until min_bytes or max_wait.

Kafka: KafkaApis.handleFetchRequest, ReplicaManager.fetchMessages, DelayedFetch. The request's
max_bytes bounds the whole response, partition_max_bytes each partition; the first batch of the
first partition with data is returned whole even when larger (KIP-74). read_committed reads stop
at the last stable offset. Records are never null (librdkafka rejects a null MessageSet).

Fetch sessions (KIP-227, v7+): broker/fetch_sessions.py decides which partitions a request reads
(all of its session's, for an incremental one) and which of them the answer lists; this handler
reads and long-polls over them. Partitions are answered in the order read, consecutive partitions
of one topic under one topic entry, as Kafka's FetchResponse.of groups them.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any, ClassVar

import structlog

from minikafka.broker.context import RequestContext
from minikafka.broker.fetch_sessions import FetchContext, FetchSessionCache, Read, Wanted
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
    # KIP-227 incremental fetch sessions (max.incremental.fetch.session.cache.slots): the broker's
    # one cache, made with its one Fetch handler, at the first Fetch.
    sessions: FetchSessionCache = field(init=False)

    def __post_init__(self) -> None:
        slots = int(self.svc.config["max.incremental.fetch.session.cache.slots"])
        object.__setattr__(self, "sessions", FetchSessionCache(slots))  # a frozen field, set once

    async def __call__(self, ctx: RequestContext, req: Any) -> messages.FetchResponse:
        if req.isolation_level not in (IsolationLevel.READ_UNCOMMITTED, IsolationLevel.READ_COMMITTED):
            # Kafka's IsolationLevel.forId throws for it (an UNKNOWN_SERVER_ERROR there).
            return self.error_response(req, ErrorCode.invalid_request)
        context = self._context(ctx, req)
        if context.kind == "error":
            return self.error_response(req, context.error)
        parts, total = self._read(req, context)
        max_wait_ms = ms(req.max_wait)
        # Nothing to wait for without partitions (Kafka's fetchMessages answers such a Fetch at once).
        if context.partitions and not (total >= req.min_bytes or max_wait_ms <= 0 or _has_error(parts)):
            watched = [w.tp for w in context.partitions]
            loop = asyncio.get_running_loop()
            deadline = loop.time() + max_wait_ms / 1000
            while (remaining := deadline - loop.time()) > 0:  # none left: the last read is the answer
                if not await self.svc.purgatory.wait(watched, remaining):
                    parts = self._read(req, context)[0]  # max_wait passed, or the broker stops
                    break
                parts, total = self._read(req, context)
                if total >= req.min_bytes or _has_error(parts):
                    break
        return self._answer(req, context, parts)

    def _context(self, ctx: RequestContext, req: Any) -> FetchContext:
        wanted = tuple(Wanted(TopicPartition(t.topic, p.partition), p.fetch_offset, p.partition_max_bytes)
                       for t in req.topics for p in t.partitions)
        if ctx.api_version < 7:   # sessions came with v7
            return FetchContext("sessionless", wanted)
        forgotten = [TopicPartition(t.topic, p) for t in (req.forgotten_topics_data or ()) for p in t.partitions]
        return self.sessions.new_context(ctx.api_version, req.session_id, req.session_epoch, wanted, forgotten,
                                    self.svc.clock.now_ms())

    def _answer(self, req: Any, context: FetchContext, parts: list[tuple[TopicPartition, int, Any]]
                ) -> messages.FetchResponse:
        """The partitions the context says to send, grouped by consecutive topic."""
        if context.kind == "sessionless":
            error, session_id, send = ErrorCode.none, 0, None
        else:
            error, session_id, sent = self.sessions.answer(
                context, [Read(tp, size > 0, pd.high_watermark, pd.log_start_offset, pd.error_code)
                          for tp, size, pd in parts], self.svc.clock.now_ms(), req.session_epoch)
            send = set(sent)
        if error is not ErrorCode.none:
            return messages.FetchResponse(throttle_time=ZERO_MS, error_code=error, session_id=session_id,
                                          responses=())
        topics: list[tuple[str, list[Any]]] = []
        meters = self.svc.meters
        for tp, size, pd in parts:
            if send is not None and tp not in send:
                continue
            if size:
                meters.fetched(tp.topic, size)
            if topics and topics[-1][0] == tp.topic:
                topics[-1][1].append(pd)
            else:
                topics.append((tp.topic, [pd]))
        return messages.FetchResponse(throttle_time=ZERO_MS, error_code=ErrorCode.none, session_id=session_id,
                                      responses=tuple(messages.FetchableTopicResponse(topic=t, partitions=tuple(ps))
                                                      for t, ps in topics))

    def _read(self, req: Any, context: FetchContext) -> tuple[list[tuple[TopicPartition, int, Any]], int]:
        """Every partition of the context, in its order: (partition, bytes read, its answer)."""
        read_committed = req.isolation_level == IsolationLevel.READ_COMMITTED
        budget = req.max_bytes if req.max_bytes > 0 else 2**31 - 1
        total = 0
        out = []
        for w in context.partitions:
            data, part = self._read_partition(w.tp, w.fetch_offset, w.max_bytes, read_committed, budget,
                                              min_one=total == 0)
            total += len(data)
            budget = max(0, budget - len(data))
            out.append((w.tp, len(data), part))
        return out, total

    def _read_partition(self, tp: TopicPartition, fetch_offset: int, partition_max_bytes: int, read_committed: bool,
                        budget: int, min_one: bool) -> tuple[bytes | memoryview, messages.PartitionData]:
        plog = self.svc.logs.get(tp)
        if plog is None:
            return b"", _error(tp.partition, ErrorCode.unknown_topic_or_partition)
        hw = plog.high_watermark
        lso = plog.last_stable_offset
        upper = lso if read_committed else hw
        max_bytes = min(partition_max_bytes, budget)
        try:
            data, end = plog.read_range(fetch_offset, max_bytes, upper_offset=upper, min_one=min_one) \
                if max_bytes > 0 or min_one else (b"", fetch_offset)
        except OffsetOutOfRange:
            return b"", _error(tp.partition, ErrorCode.offset_out_of_range, hw, lso, plog.log_start_offset)
        except CorruptRecord as exc:
            # Never served as data: the consumer gets the error at that offset, everything before
            # it stays readable.
            log.warning("corrupt_batch_not_served", topic=tp.topic, partition=tp.partition,
                        fetch_offset=fetch_offset, reason=str(exc))
            return b"", _error(tp.partition, ErrorCode.corrupt_message, hw, lso, plog.log_start_offset)
        aborted = None
        if read_committed:
            # The aborted transactions overlapping the returned range, so the client can drop them.
            aborted = tuple(messages.AbortedTransaction(producer_id=a.producer_id, first_offset=a.first_offset)
                            for a in plog.collect_aborted(fetch_offset, end)) if data else ()
            if self.svc.invariants is not None and data:
                self.svc.invariants.served_read_committed(
                    (tp.topic, tp.partition), data, ((a.producer_id, a.first_offset) for a in aborted), lso)
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


def _has_error(parts: list[tuple[TopicPartition, int, Any]]) -> bool:
    return any(pd.error_code is not ErrorCode.none for _tp, _n, pd in parts)
