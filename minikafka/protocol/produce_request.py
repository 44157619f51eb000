"""Produce requests (v3-v12) read straight into their kio entities by the compiled reader
(minikafka.protocol._walk.produce_request), with kio's reader as the reference.

Why: every acknowledged batch arrives in a Produce request, and kio's reader built its three
entities through their frozen dataclass __init__, ~5 us of a small Produce's ~28 us in the
broker's own dispatch (issue 17). The compiled reader fills the same slots the __init__ fills and
returns the same entities, but for each partition's records: a bytearray where kio gives bytes
(equal in value), since the append stamps offsets into its payload in place and would otherwise
copy every produced byte once more to get a buffer of its own. For anything unusual (a fault, a
null where a value must be, any tagged field) it answers None and codec.decode_request runs kio,
which decodes it or names the fault. v13 names topics by id and always takes kio's path.
"""

from __future__ import annotations

import datetime
import functools
from collections.abc import Callable
from typing import Any

from minikafka.protocol import entities, versions

try:
    from minikafka.protocol._walk import produce_request as _produce_request_c
except ImportError:  # pragma: no cover - where no C compiler was available
    _produce_request_c = None

API_KEY = 0
FIRST_VERSION, LAST_VERSION = 3, 12  # v13: topics by id (kio's path)
_FIELDS = (("transactional_id", "acks", "timeout", "topic_data"), ("name", "partition_data"), ("index", "records"))


@functools.lru_cache(maxsize=64)
def _timeout(ms: int) -> datetime.timedelta:
    """The timeout as kio's reader gives it (clients send one value for every request)."""
    return datetime.timedelta(milliseconds=ms)


@functools.cache
def _shape(version: int) -> tuple[Any, ...] | None:
    """(request class, its descriptors, topic class, its, partition class, its) for version."""
    request = versions.request_class(API_KEY, version)
    topic = versions.nested_class(request, "topic_data")
    partition = versions.nested_class(topic, "partition_data")
    try:
        return (request, entities.named_descriptors(request, _FIELDS[0]), topic,
                entities.named_descriptors(topic, _FIELDS[1]), partition,
                entities.named_descriptors(partition, _FIELDS[2]))
    except TypeError:  # a kio whose classes differ: its reader, always
        return None


def reader(version: int) -> Callable[[bytes, int], Any] | None:
    """The compiled reader of this Produce version's body: (frame, body position) -> request
    entity, or None for the reference to decide. None when there is none for the version."""
    if _produce_request_c is None or not FIRST_VERSION <= version <= LAST_VERSION:
        return None
    shape = _shape(version)
    if shape is None:
        return None
    flexible = bool(shape[0].__flexible__)
    read = _produce_request_c

    def read_body(frame: bytes, pos: int) -> Any:
        return read(frame, pos, flexible, shape, _timeout)

    return read_body
