"""The topic-id door (broker/topic_ids.py) without sockets: a Fetch v13+ request reaches the by-name
handler with names, and its answer goes back with the ids asked for, UNKNOWN_TOPIC_ID for an id no
topic has; by-name versions pass through untouched."""

from __future__ import annotations

import asyncio
import uuid
from types import SimpleNamespace
from typing import Any

import pytest
from kio.schema.fetch.v12.request import FetchRequest as FetchRequestV12
from kio.schema.fetch.v16.request import FetchPartition, FetchRequest, FetchTopic
from kio.static.primitive import i32, i64

from minikafka.broker.context import RequestContext
from minikafka.broker.topic_ids import FetchByTopicId
from minikafka.protocol import messages
from minikafka.protocol.errors import ErrorCode
from minikafka.protocol.types import ZERO_MS

pytestmark = pytest.mark.unit

KNOWN, OTHER, STRANGER = uuid.uuid4(), uuid.uuid4(), uuid.uuid4()


class Logs:
    def __init__(self) -> None:
        self.topics = {KNOWN: SimpleNamespace(name="known"), OTHER: SimpleNamespace(name="other")}

    def topic_by_id(self, topic_id: uuid.UUID) -> Any:
        return self.topics.get(topic_id)


class ByName:
    """Answers every partition asked for with its topic's name length as the high watermark, or
    UNKNOWN_TOPIC_OR_PARTITION for a topic it does not have, as the Fetch handler would."""

    api_key = 1

    def __init__(self) -> None:
        self.seen: list[Any] = []

    async def __call__(self, ctx: RequestContext, req: Any) -> Any:
        self.seen.append(req)
        topics = []
        for t in req.topics:
            known = t.topic in ("known", "other")
            parts = tuple(messages.PartitionData(
                partition_index=p.partition, error_code=ErrorCode.none if known else ErrorCode.unknown_topic_or_partition,
                high_watermark=len(t.topic) if known else -1, last_stable_offset=-1, log_start_offset=-1,
                aborted_transactions=None, preferred_read_replica=-1, records=b"r" if known else b"")
                for p in t.partitions)
            topics.append(messages.FetchableTopicResponse(topic=t.topic, partitions=parts))
        return messages.FetchResponse(throttle_time=ZERO_MS, error_code=ErrorCode.none, session_id=0,
                                      responses=tuple(topics))

    def error_response(self, req: Any, code: ErrorCode) -> Any:
        return messages.FetchResponse(throttle_time=ZERO_MS, error_code=code, session_id=0, responses=())


def _ctx(version: int) -> RequestContext:
    return RequestContext(1, "peer", 1, version, 7, "c", 0)


def _request(*topics: tuple[uuid.UUID | None, tuple[int, ...]]) -> FetchRequest:
    return FetchRequest(max_wait=ZERO_MS, min_bytes=i32(1), topics=tuple(
        FetchTopic(topic_id=tid, partitions=tuple(
            FetchPartition(partition=i32(p), fetch_offset=i64(5), partition_max_bytes=i32(100)) for p in parts))
        for tid, parts in topics), forgotten_topics_data=())


def test_ids_are_resolved_for_the_handler_and_put_back_in_its_answer() -> None:
    inner = ByName()
    door = FetchByTopicId(inner, Logs())
    req = _request((KNOWN, (0, 2)), (STRANGER, (1,)), (OTHER, (0,)), (None, (0,)), (KNOWN, (3,)))
    answer = asyncio.run(door(_ctx(16), req))

    named = inner.seen[0]
    assert isinstance(named, FetchRequestV12)
    assert [t.topic for t in named.topics] == ["known", "other", "known"]  # the unknown ids never reach it
    assert [p.fetch_offset for t in named.topics for p in t.partitions] == [5, 5, 5, 5]
    assert answer.__version__ == 18
    got = [(t.topic_id, p.partition_index, int(p.error_code), p.high_watermark)
           for t in answer.responses for p in t.partitions]
    # the ones read first, in request order, then the unknown ids, as Kafka orders its answer
    assert got == [(KNOWN, 0, 0, 5), (KNOWN, 2, 0, 5), (OTHER, 0, 0, 5), (KNOWN, 3, 0, 5), (STRANGER, 1, 100, -1),
                   (None, 0, 100, -1)]


def test_a_fetch_of_unknown_ids_alone_does_not_reach_the_handler() -> None:
    inner = ByName()
    answer = asyncio.run(FetchByTopicId(inner, Logs())(_ctx(13), _request((STRANGER, (0, 4)))))
    assert inner.seen == []
    assert (int(answer.error_code), answer.session_id) == (0, 0)
    assert [(t.topic_id, p.partition_index, int(p.error_code), p.high_watermark, p.last_stable_offset,
             p.log_start_offset, p.aborted_transactions, bytes(p.records))
            for t in answer.responses for p in t.partitions] == [
        (STRANGER, 0, 100, -1, -1, -1, None, b""), (STRANGER, 4, 100, -1, -1, -1, None, b"")]


def test_by_name_versions_and_top_level_errors_pass_through() -> None:
    inner = ByName()
    door = FetchByTopicId(inner, Logs())
    v12 = FetchRequestV12(max_wait=ZERO_MS, min_bytes=i32(1), topics=(), forgotten_topics_data=())
    answer = asyncio.run(door(_ctx(12), v12))
    assert inner.seen == [v12] and answer.__version__ == 12
    assert door.error_response(v12, ErrorCode.invalid_request).error_code == ErrorCode.invalid_request
