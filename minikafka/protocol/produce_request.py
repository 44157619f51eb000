"""Produce requests (v3-v12) read straight into their kio entities by the compiled reader
(minikafka.protocol._walk.produce_request), with kio's reader as the reference.

Why: every acknowledged batch arrives in a Produce request, and kio's reader built its three
entities through their frozen dataclass __init__, ~5 us of a small Produce's ~28 us in the
broker's own dispatch (issue 17). The compiled reader fills the same slots the __init__ fills and
returns the same entities; for anything unusual (a fault, a null where a value must be, any
tagged field) it answers None and codec.decode_request runs kio, which decodes it or names the
fault. v13 names topics by id and always takes kio's path.
"""

from __future__ import annotations

import dataclasses
import functools
import struct
from collections.abc import Callable
from typing import Any

from kio._kio_native import read_timedelta_i32

from minikafka.protocol import versions

try:
    from minikafka.protocol._walk import produce_request as _produce_request_c
except ImportError:  # pragma: no cover - where no C compiler was available
    _produce_request_c = None

API_KEY = 0
FIRST_VERSION, LAST_VERSION = 3, 12  # v13: topics by id (kio's path)
_FIELDS = (("transactional_id", "acks", "timeout", "topic_data"), ("name", "partition_data"), ("index", "records"))


@functools.lru_cache(maxsize=64)
def _timeout(ms: int) -> Any:
    """The timeout as kio's reader gives it (clients send one value for every request)."""
    return read_timedelta_i32(struct.pack(">i", ms), 0)[0]


def _descriptors(cls: type[Any], names: tuple[str, ...]) -> tuple[Any, ...]:
    """The slot descriptors of cls's fields, in `names` order; ValueError unless those are exactly
    its fields, each a slot (the shape the compiled reader fills)."""
    if tuple(f.name for f in dataclasses.fields(cls)) != names:
        raise ValueError(f"{cls.__name__} has fields {[f.name for f in dataclasses.fields(cls)]}, not {names}")
    return tuple(cls.__dict__[name] for name in names)


def _nested(cls: type[Any], name: str) -> type[Any]:
    return versions.nested_class(cls, name)


@functools.cache
def _shape(version: int) -> tuple[Any, ...] | None:
    """(request class, its descriptors, topic class, its, partition class, its) for version."""
    request = versions.request_class(API_KEY, version)
    topic = _nested(request, "topic_data")
    partition = _nested(topic, "partition_data")
    try:
        return (request, _descriptors(request, _FIELDS[0]), topic, _descriptors(topic, _FIELDS[1]),
                partition, _descriptors(partition, _FIELDS[2]))
    except (ValueError, KeyError):  # a kio whose classes differ: its reader, always
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
