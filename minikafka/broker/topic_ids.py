"""The topic-id door (KIP-516): requests that name topics by id, for handlers that work by name.

Fetch v13+ names each topic by its id alone. The Fetch handler reads and answers the last version
that names topics (protocol.versions.BY_NAME_UNTIL); this door stands in front of it and, for a
by-id version, resolves the ids to names before the handler and puts the ids back into its answer.
Kafka does the same in one class (FetchRequest.fetchData resolves ids through the metadata cache;
an id it cannot resolve is answered UNKNOWN_TOPIC_ID on every partition asked for, and nothing is
read for it).

An id this broker does not know becomes a name no topic can have (a NUL is not a legal topic
character), so the handler finds no log under it and answers that topic like any missing one; the
door then turns those answers into UNKNOWN_TOPIC_ID. The handler answers one topic entry per
requested topic, in request order, so the answer's entries are matched to the request's ids by
position (a request may name one id twice, or an unknown id twice, and each gets its own answer).
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any

from minikafka.broker.context import RequestContext
from minikafka.broker.dispatch import Handler
from minikafka.protocol import fetch_response, versions
from minikafka.protocol.errors import ErrorCode

FETCH = 1
_UNKNOWN = "\x00unknown topic id "  # + the id: a name validate_topic_name never lets a topic have


def door(api_key: int, handler: Handler, logs: Any) -> Handler:
    """`handler` behind the topic-id door of its API, or unchanged for an API that has none."""
    if api_key == FETCH:
        return FetchByTopicId(handler, logs)
    return handler


class FetchByTopicId:
    """Fetch v13-v18 (topic ids) answered by the by-name Fetch handler (v12 shape)."""

    api_key = FETCH

    def __init__(self, inner: Handler, logs: Any) -> None:
        self.inner = inner
        self.logs = logs  # storage.LogManager (or anything with topic_by_id)

    async def __call__(self, ctx: RequestContext, req: Any) -> Any:
        if not versions.by_topic_id(FETCH, ctx.api_version):
            return await self.inner(ctx, req)
        named = self._by_name(req)
        answer = await self.inner(ctx, named)
        return self._by_id(req, answer)

    def __getattr__(self, name: str) -> Any:  # error_response and the like, from the handler
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self.inner, name)

    def _by_name(self, req: Any) -> Any:
        request_cls, topic_cls, partition_cls = _named_request_classes()
        topics = []
        for t in req.topics:
            info = None if t.topic_id is None else self.logs.topic_by_id(t.topic_id)
            name = info.name if info is not None else f"{_UNKNOWN}{t.topic_id}"
            topics.append(topic_cls(topic=name, partitions=_as(partition_cls, t.partitions)))
        # Forgotten topics belong to fetch sessions (KIP-227), which this broker does not keep:
        # every Fetch is answered as sessionless (session id 0) and lists all it asks for.
        return request_cls(
            replica_id=-1, max_wait=req.max_wait, min_bytes=req.min_bytes, max_bytes=req.max_bytes,
            isolation_level=req.isolation_level, session_id=req.session_id,
            session_epoch=req.session_epoch, topics=tuple(topics), forgotten_topics_data=(),
            rack_id=req.rack_id,
        )

    def _by_id(self, req: Any, answer: Any) -> Any:
        response_cls, topic_cls, partition_cls = _by_id_response_classes()
        if len(answer.responses) != len(req.topics):
            # A top-level error (no topics at all): nothing to put ids into.
            return response_cls(throttle_time=answer.throttle_time, error_code=answer.error_code,
                                session_id=answer.session_id, responses=())
        topics = []
        for asked, t in zip(req.topics, answer.responses, strict=True):
            unknown = t.topic.startswith(_UNKNOWN)
            parts = tuple(_partition_by_id(partition_cls, p, unknown) for p in t.partitions)
            topics.append(topic_cls(topic_id=asked.topic_id, partitions=parts))
        return response_cls(throttle_time=answer.throttle_time, error_code=answer.error_code,
                            session_id=answer.session_id, responses=tuple(topics))


def _as(cls: type[Any], entities: tuple[Any, ...]) -> tuple[Any, ...]:
    """Request entities as `cls`: handed on as they are when their class has the same fields (the
    partition entries of Fetch v12-v16 do; the handler reads fields, not classes), converted when
    not."""
    if not entities or versions.same_shape(type(entities[0]), cls):
        return entities
    return tuple(versions.convert(e, cls) for e in entities)


def _partition_by_id(cls: type[Any], p: Any, unknown_id: bool) -> Any:
    """One partition entry of the handler's answer in the by-id class. Built field by field
    (2 us, where the generic conversion takes 6 us: it converts the three tagged entities too, and
    a Fetch can answer 10,000 partitions); the generic conversion only when a tagged field is set,
    which a single node never does."""
    if not fetch_response.tagged_fields_default(p):
        p = versions.convert(p, cls)
        return dataclasses.replace(p, error_code=ErrorCode.unknown_topic_id) if unknown_id else p
    return cls(partition_index=p.partition_index,
               error_code=ErrorCode.unknown_topic_id if unknown_id else p.error_code,
               high_watermark=p.high_watermark, last_stable_offset=p.last_stable_offset,
               log_start_offset=p.log_start_offset, aborted_transactions=p.aborted_transactions,
               preferred_read_replica=p.preferred_read_replica, records=p.records)


@functools.cache
def _named_request_classes() -> tuple[type[Any], type[Any], type[Any]]:
    request_cls = versions.canonical_request(FETCH)
    topic_cls = versions.nested_class(request_cls, "topics")
    return request_cls, topic_cls, versions.nested_class(topic_cls, "partitions")


@functools.cache
def _by_id_response_classes() -> tuple[type[Any], type[Any], type[Any]]:
    response_cls = versions.response_class(FETCH, versions.SUPPORTED[FETCH].max)
    topic_cls = versions.nested_class(response_cls, "responses")
    return response_cls, topic_cls, versions.nested_class(topic_cls, "partitions")

