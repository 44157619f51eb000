"""What the authorization door (authorization.py) answers in place of a handler: the entries of
topics, partitions and other items a principal was refused, in the shape of each API's canonical
response, and the whole answer of an API refused outright that has no top-level error code (each
of its items carries the error). Pure: request entities in, response entities out."""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Callable
from typing import Any

from minikafka.broker.dispatch import Handler
from minikafka.protocol import versions
from minikafka.protocol.errors import ErrorCode
from minikafka.protocol.types import ZERO_MS

TOPIC_DENIED = ErrorCode.topic_authorization_failed
ZERO_UUID = uuid.UUID(int=0)


def refuse_create_acls(req: Any, code: ErrorCode) -> Any:
    item = nested(30, "results")
    return versions.canonical_response(30)(throttle_time=ZERO_MS, results=tuple(
        item(error_code=code, error_message=None) for _ in req.creations))


def refuse_delete_acls(req: Any, code: ErrorCode) -> Any:
    item = nested(31, "filter_results")
    return versions.canonical_response(31)(throttle_time=ZERO_MS, filter_results=tuple(
        item(error_code=code, error_message=None, matching_acls=()) for _ in req.filters))


def refuse_create_partitions(req: Any, code: ErrorCode) -> Any:
    item = nested(37, "results")
    return versions.canonical_response(37)(throttle_time=ZERO_MS, results=tuple(
        item(name=t.name, error_code=code, error_message=None) for t in req.topics))


def refuse_alter_client_quotas(req: Any, code: ErrorCode) -> Any:
    item, entity = nested(49, "entries"), nested(49, "entries", "entity")
    return versions.canonical_response(49)(throttle_time=ZERO_MS, entries=tuple(
        item(error_code=code, error_message=None, entity=tuple(
            entity(entity_type=e.entity_type, entity_name=e.entity_name) for e in entry.entity))
        for entry in req.entries))


def refuse_alter_scram(req: Any, code: ErrorCode) -> Any:
    item = nested(51, "results")
    users = dict.fromkeys([d.name for d in req.deletions] + [u.name for u in req.upsertions])
    return versions.canonical_response(51)(throttle_time=ZERO_MS, results=tuple(
        item(user=u, error_code=code, error_message=None) for u in users))


def refuse_delete_groups(req: Any, code: ErrorCode) -> Any:
    item = nested(42, "results")
    return versions.canonical_response(42)(throttle_time=ZERO_MS, results=tuple(
        item(group_id=g, error_code=code) for g in req.groups_names))


def refuse_write_txn_markers(req: Any, code: ErrorCode) -> Any:
    marker, topic, part = nested(27, "markers"), nested(27, "markers", "topics"), \
        nested(27, "markers", "topics", "partitions")
    return versions.canonical_response(27)(markers=tuple(
        marker(producer_id=m.producer_id, topics=tuple(
            topic(name=t.name, partitions=tuple(part(partition_index=p, error_code=code) for p in t.partition_indexes))
            for t in m.topics)) for m in req.markers))


def refuse_describe_producers(req: Any, code: ErrorCode) -> Any:
    topic, part = nested(61, "topics"), nested(61, "topics", "partitions")
    return versions.canonical_response(61)(throttle_time=ZERO_MS, topics=tuple(
        topic(name=t.name, partitions=tuple(part(partition_index=p, error_code=code, error_message=None,
                                                 active_producers=()) for p in t.partition_indexes))
        for t in req.topics))


# The APIs refused as a whole that have no top-level error code: each item answers the error.
REFUSALS: dict[int, Callable[[Any, ErrorCode], Any]] = {
    27: refuse_write_txn_markers, 30: refuse_create_acls, 31: refuse_delete_acls,
    37: refuse_create_partitions, 42: refuse_delete_groups, 49: refuse_alter_client_quotas,
    51: refuse_alter_scram, 61: refuse_describe_producers,
}


def make(cls: Any, **fields: Any) -> Any:
    """An entity of `cls` from the fields it has (a field one version lacks is left out)."""
    names = {f.name for f in dataclasses.fields(cls)}
    return cls(**{k: v for k, v in fields.items() if k in names})


def via_error_response(field: str, answer_field: str) -> Callable[[Handler, Any, tuple[Any, ...]], tuple[Any, ...]]:
    """Denied topics answered by the handler's own error_response for a request of just them."""
    def build(handler: Handler, req: Any, denied: tuple[Any, ...]) -> tuple[Any, ...]:
        response = handler.error_response(dataclasses.replace(req, **{field: denied}), TOPIC_DENIED)  # type: ignore[attr-defined]
        return tuple(getattr(response, answer_field))
    return build


def nested(api_key: int, *path: str) -> Any:
    cls = versions.canonical_response(api_key)
    for p in path:
        cls = versions.nested_class(cls, p)
    return cls


def fetch_denied(handler: Handler, req: Any, denied: tuple[Any, ...]) -> tuple[Any, ...]:
    topic_cls, part_cls = nested(1, "responses"), nested(1, "responses", "partitions")
    return tuple(make(topic_cls, topic=t.topic, topic_id=getattr(t, "topic_id", ZERO_UUID), partitions=tuple(
        make(part_cls, partition_index=p.partition, error_code=TOPIC_DENIED, high_watermark=-1, last_stable_offset=-1,
              log_start_offset=-1, aborted_transactions=None, preferred_read_replica=-1, records=b"")
        for p in t.partitions)) for t in denied)


def list_offsets_denied(handler: Handler, req: Any, denied: tuple[Any, ...]) -> tuple[Any, ...]:
    topic_cls, part_cls = nested(2, "topics"), nested(2, "topics", "partitions")
    return tuple(topic_cls(name=t.name, partitions=tuple(
        part_cls(partition_index=p.partition_index, error_code=TOPIC_DENIED, timestamp=-1, offset=-1, leader_epoch=-1)
        for p in t.partitions)) for t in denied)


def delete_records_denied(handler: Handler, req: Any, denied: tuple[Any, ...]) -> tuple[Any, ...]:
    topic_cls, part_cls = nested(21, "topics"), nested(21, "topics", "partitions")
    return tuple(topic_cls(name=t.name, partitions=tuple(
        part_cls(partition_index=p.partition_index, low_watermark=-1, error_code=TOPIC_DENIED) for p in t.partitions))
        for t in denied)


def leader_epoch_denied(handler: Handler, req: Any, denied: tuple[Any, ...]) -> tuple[Any, ...]:
    topic_cls, part_cls = nested(23, "topics"), nested(23, "topics", "partitions")
    return tuple(topic_cls(topic=t.topic, partitions=tuple(
        part_cls(error_code=TOPIC_DENIED, partition=p.partition, leader_epoch=-1, end_offset=-1) for p in t.partitions))
        for t in denied)


def topic_partitions_denied(handler: Handler, req: Any, denied: tuple[Any, ...]) -> tuple[Any, ...]:
    cls = nested(75, "topics")
    return tuple(cls(error_code=TOPIC_DENIED, name=t.name, topic_id=ZERO_UUID, is_internal=False, partitions=(),
                     topic_authorized_operations=-2147483648) for t in denied)


def create_topics_denied(handler: Handler, req: Any, denied: tuple[Any, ...]) -> tuple[Any, ...]:
    cls = nested(19, "topics")
    return tuple(cls(name=t.name, topic_id=ZERO_UUID, error_code=TOPIC_DENIED,
                     error_message="Authorization failed.", topic_config_error_code=TOPIC_DENIED,
                     num_partitions=-1, replication_factor=-1, configs=None) for t in denied)


def delete_topics_denied(handler: Handler, req: Any, denied: tuple[Any, ...]) -> tuple[Any, ...]:
    cls = nested(20, "responses")
    return tuple(cls(name=t.name, topic_id=t.topic_id, error_code=TOPIC_DENIED, error_message=None) for t in denied)
