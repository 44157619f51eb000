"""The topic-id door (KIP-516): requests that name topics by id, for handlers that work by name.

Produce v13, Fetch v13+, OffsetCommit v10 and OffsetFetch v10 name each topic by its id alone.
Their handlers read and answer the last version that names topics (protocol.versions.
BY_NAME_UNTIL); a door stands in front of each and, for a by-id version, does what KafkaApis does:
the topics whose ids the broker knows go to the handler by name, and the door maps its answer back
to the ids asked; an id it cannot resolve (the all-zero id included) never reaches the handler (no
log read, nothing appended or committed) and is answered UNKNOWN_TOPIC_ID on every partition asked
for, after the others, as Kafka lists its erroneous partitions after the ones it read. A Produce,
Fetch or OffsetCommit with no known id does not reach its handler at all.

Fetch: a request with known ids long-polls on them alone. Produce: an acks=0 request gets no
answer, and an unknown id closes the connection, as any failed partition of an acks=0 Produce
does. OffsetFetch of every topic (null topics) answers the topics that exist: offsets left by a
deleted topic have no id to answer with (Kafka deletes them with the topic).
"""

from __future__ import annotations

import dataclasses
import functools
import uuid
from collections.abc import Awaitable
from typing import Any

from minikafka.broker.context import RequestContext
from minikafka.broker.dispatch import CloseConnection, Handler
from minikafka.protocol import fetch_response, versions
from minikafka.protocol.errors import ErrorCode
from minikafka.protocol.types import ZERO_MS

PRODUCE, FETCH, OFFSET_COMMIT, OFFSET_FETCH = 0, 1, 8, 9


def door(api_key: int, handler: Handler, logs: Any) -> Handler:
    """`handler` behind the topic-id door of its API, or unchanged for an API that has none."""
    kind = DOORS.get(api_key)
    return handler if kind is None else kind(handler, logs)


class _Door:
    """What every door shares: by-name versions pass through; the handler's other attributes
    (error_response) are the handler's."""

    api_key: int

    def __init__(self, inner: Handler, logs: Any) -> None:
        self.inner = inner
        self.logs = logs  # storage.LogManager (or anything with topic_by_id and topics)
        self.first_by_id = versions.BY_NAME_UNTIL[self.api_key] + 1  # every Produce and Fetch asks

    def __call__(self, ctx: RequestContext, req: Any) -> Awaitable[Any]:
        # The handler's own awaitable, not one more coroutine around it: every Produce and Fetch
        # passes through here, and the extra frame was ~1 us of a small Produce (issue 17).
        if ctx.api_version < self.first_by_id:
            return self.inner(ctx, req)
        return self.serve(ctx, req)

    async def serve(self, ctx: RequestContext, req: Any) -> Any:
        raise NotImplementedError

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self.inner, name)

    def name_of(self, topic_id: Any) -> str | None:
        info = None if topic_id is None else self.logs.topic_by_id(topic_id)
        return None if info is None else info.name

    def by_name(self, topics: Any, topics_field: str, partitions_field: str, name_field: str = "name"
                ) -> tuple[type[Any], list[Any], list[Any], dict[str, Any]]:
        """The handler's request class, the request's topics whose ids are known as its by-name
        topic entries, those whose ids are not, and name -> id of the known ones."""
        request_cls, topic_cls, partition_cls = _named_request(self.api_key, topics_field, partitions_field)
        ids: dict[str, Any] = {}
        known, unknown = self.split(topics, lambda name, t: topic_cls(**{
            name_field: name, partitions_field: _as(partition_cls, getattr(t, partitions_field))}), ids)
        return request_cls, known, unknown, ids

    def split(self, topics: Any, named: Any, ids: dict[str, Any]) -> tuple[list[Any], list[Any]]:
        """The request's topics whose ids are known, each made by-name by named(name, topic), and
        those whose ids are not; `ids` learns name -> id of the known ones."""
        known, unknown = [], []
        for t in topics:
            name = self.name_of(t.topic_id)
            if name is None:
                unknown.append(t)
            else:
                ids[name] = t.topic_id
                known.append(named(name, t))
        return known, unknown


class FetchByTopicId(_Door):
    """Fetch v13-v18 (topic ids) answered by the by-name Fetch handler (v12 shape)."""

    api_key = FETCH

    async def serve(self, ctx: RequestContext, req: Any) -> Any:
        request_cls, known, unknown, ids = self.by_name(req.topics, "topics", "partitions", name_field="topic")
        response_cls, topic_cls, partition_cls = _by_id_response(FETCH, "responses", "partitions")
        throttle, error, session_id, topics = ZERO_MS, ErrorCode.none, 0, []
        # A Fetch of a session (KIP-227) reaches the handler even when it names no known topic: an
        # incremental one reads the session's partitions, a full one closes or replaces it.
        if known or req.session_id != 0:
            forgotten_cls = _named_request(FETCH, "forgotten_topics_data", "partitions")[1]
            forgotten = tuple(forgotten_cls(topic=name, partitions=t.partitions)
                              for t in (req.forgotten_topics_data or ()) if (name := self.name_of(t.topic_id)))
            answer = await self.inner(ctx, request_cls(
                replica_id=-1, max_wait=req.max_wait, min_bytes=req.min_bytes, max_bytes=req.max_bytes,
                isolation_level=req.isolation_level, session_id=req.session_id, session_epoch=req.session_epoch,
                topics=tuple(known), forgotten_topics_data=forgotten, rack_id=req.rack_id))
            throttle, error, session_id = answer.throttle_time, answer.error_code, answer.session_id
            if error is not ErrorCode.none:  # a top-level error answers no topic at all
                return response_cls(throttle_time=throttle, error_code=error, session_id=session_id, responses=())
            topics = [topic_cls(topic_id=self.id_of(t.topic, ids), partitions=tuple(
                _partition_by_id(partition_cls, p) for p in t.partitions)) for t in answer.responses]
        topics += [topic_cls(topic_id=t.topic_id, partitions=tuple(partition_cls(
            partition_index=p.partition, error_code=ErrorCode.unknown_topic_id, high_watermark=-1,
            last_stable_offset=-1, log_start_offset=-1, aborted_transactions=None, preferred_read_replica=-1,
            records=b"") for p in t.partitions)) for t in unknown]
        return response_cls(throttle_time=throttle, error_code=error, session_id=session_id, responses=tuple(topics))

    def id_of(self, name: str, asked: dict[str, Any]) -> Any:
        """The id a partition of the answer is named by: the one asked, or for a partition of the
        session the topic's id now."""
        if name in asked:
            return asked[name]
        info = self.logs.topics.get(name)
        return info.topic_id if info is not None else uuid.UUID(int=0)   # deleted since: the zero id


class ProduceByTopicId(_Door):
    """Produce v13 (topic ids) answered by the by-name Produce handler (v12 shape)."""

    api_key = PRODUCE

    async def serve(self, ctx: RequestContext, req: Any) -> Any:
        request_cls, known, unknown, ids = self.by_name(req.topic_data, "topic_data", "partition_data")
        response_cls, answer_topic_cls, answer_partition_cls = _by_id_response(
            PRODUCE, "responses", "partition_responses")
        answer = None
        if known:
            answer = await self.inner(ctx, request_cls(transactional_id=req.transactional_id, acks=req.acks,
                                                       timeout=req.timeout, topic_data=tuple(known)))
        if req.acks == 0:  # nothing is answered; a failed partition closes the connection, as Kafka does
            if unknown:
                raise CloseConnection("acks=0 Produce named unknown topic ids")
            return None
        topics = [] if answer is None else [answer_topic_cls(topic_id=ids[t.name], partition_responses=tuple(
            versions.convert(p, answer_partition_cls) for p in t.partition_responses)) for t in answer.responses]
        topics += [answer_topic_cls(topic_id=t.topic_id, partition_responses=tuple(
            answer_partition_cls(index=p.index, error_code=ErrorCode.unknown_topic_id, base_offset=-1,
                                 record_errors=()) for p in t.partition_data)) for t in unknown]
        return response_cls(responses=tuple(topics), throttle_time=ZERO_MS if answer is None else answer.throttle_time)


class OffsetCommitByTopicId(_Door):
    """OffsetCommit v10 (topic ids) answered by the by-name handler (v9 shape)."""

    api_key = OFFSET_COMMIT

    async def serve(self, ctx: RequestContext, req: Any) -> Any:
        request_cls, known, unknown, ids = self.by_name(req.topics, "topics", "partitions")
        response_cls, answer_topic_cls, answer_partition_cls = _by_id_response(OFFSET_COMMIT, "topics", "partitions")
        topics = []
        throttle = ZERO_MS
        if known:  # Kafka asks the coordinator only when some topic is left to commit
            named = dataclasses.replace(versions.convert(dataclasses.replace(req, topics=()), request_cls),
                                        topics=tuple(known))
            answer = await self.inner(ctx, named)
            throttle = answer.throttle_time
            topics = [answer_topic_cls(topic_id=ids.get(t.name), partitions=tuple(
                versions.convert(p, answer_partition_cls) for p in t.partitions)) for t in answer.topics]
        topics += [answer_topic_cls(topic_id=t.topic_id, partitions=tuple(
            answer_partition_cls(partition_index=p.partition_index, error_code=ErrorCode.unknown_topic_id)
            for p in t.partitions)) for t in unknown]
        return response_cls(throttle_time=throttle, topics=tuple(topics))


class OffsetFetchByTopicId(_Door):
    """OffsetFetch v10 (topic ids) answered by the by-name handler (v9 shape)."""

    api_key = OFFSET_FETCH

    async def serve(self, ctx: RequestContext, req: Any) -> Any:
        request_cls, group_cls, topic_cls = _named_request(OFFSET_FETCH, "groups", "topics")
        ids: dict[str, Any] = {}
        unknown: dict[int, list[Any]] = {}  # group's position -> its topics whose ids are unknown
        groups = []
        for i, g in enumerate(req.groups):
            topics = None
            if g.topics is not None:
                known, unknown[i] = self.split(
                    g.topics, lambda name, t: topic_cls(name=name, partition_indexes=t.partition_indexes), ids)
                topics = tuple(known)
            groups.append(group_cls(group_id=g.group_id, member_id=g.member_id, member_epoch=g.member_epoch,
                                    topics=topics))
        answer = await self.inner(ctx, request_cls(groups=tuple(groups), require_stable=req.require_stable))
        response_cls, answer_group_cls, answer_topic_cls, answer_partition_cls = _by_id_response(
            OFFSET_FETCH, "groups", "topics", "partitions")
        answered = []
        for i, g in enumerate(answer.groups):
            topics = []
            for t in g.topics:
                topic_id = ids.get(t.name)
                if topic_id is None:  # every topic was asked for: the ones that exist have ids
                    info = self.logs.topics.get(t.name)
                    if info is None:
                        continue
                    topic_id = info.topic_id
                topics.append(answer_topic_cls(topic_id=topic_id, partitions=tuple(
                    versions.convert(p, answer_partition_cls) for p in t.partitions)))
            if g.error_code == ErrorCode.none:
                topics += [answer_topic_cls(topic_id=t.topic_id, partitions=tuple(
                    answer_partition_cls(partition_index=p, committed_offset=-1, committed_leader_epoch=-1,
                                         metadata="", error_code=ErrorCode.unknown_topic_id)
                    for p in t.partition_indexes)) for t in unknown.get(i, ())]
            answered.append(answer_group_cls(group_id=g.group_id, topics=tuple(topics), error_code=g.error_code))
        return response_cls(throttle_time=answer.throttle_time, groups=tuple(answered))


DOORS: dict[int, type[_Door]] = {PRODUCE: ProduceByTopicId, FETCH: FetchByTopicId,
                                 OFFSET_COMMIT: OffsetCommitByTopicId, OFFSET_FETCH: OffsetFetchByTopicId}


def _as(cls: type[Any], entities: tuple[Any, ...]) -> tuple[Any, ...]:
    """Request entities as `cls`: handed on as they are when their class has the same fields (the
    partition entries of Fetch v12-v16 do; the handler reads fields, not classes), converted when
    not."""
    if not entities or versions.same_shape(type(entities[0]), cls):
        return entities
    return tuple(versions.convert(e, cls) for e in entities)


def _partition_by_id(cls: type[Any], p: Any) -> Any:
    """One partition entry of the handler's answer in the by-id class. Built field by field
    (2 us, where the generic conversion takes 6 us: it converts the three tagged entities too, and
    a Fetch can answer 10,000 partitions); the generic conversion only when a tagged field is set,
    which a single node never does."""
    if not fetch_response.tagged_fields_default(p):
        return versions.convert(p, cls)
    return cls(partition_index=p.partition_index, error_code=p.error_code, high_watermark=p.high_watermark,
               last_stable_offset=p.last_stable_offset, log_start_offset=p.log_start_offset,
               aborted_transactions=p.aborted_transactions, preferred_read_replica=p.preferred_read_replica,
               records=p.records)


@functools.cache
def _named_request(api_key: int, *path: str) -> tuple[type[Any], ...]:
    """The handler's (by-name) request class of the API and its nested classes along `path`."""
    return _chain(versions.canonical_request(api_key), path)


@functools.cache
def _by_id_response(api_key: int, *path: str) -> tuple[type[Any], ...]:
    """The by-id (highest) response class of the API and its nested classes along `path`."""
    return _chain(versions.response_class(api_key, versions.SUPPORTED[api_key].max), path)


def _chain(cls: type[Any], path: tuple[str, ...]) -> tuple[type[Any], ...]:
    out = [cls]
    for field_name in path:
        out.append(versions.nested_class(out[-1], field_name))
    return tuple(out)

