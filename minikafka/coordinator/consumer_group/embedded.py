"""The consumer protocol embedded in classic JoinGroup/SyncGroup (Kafka's ConsumerProtocol): what
a classic member of a consumer group subscribes to and owns, and the assignment it is handed.

ConsumerProtocolSubscription (non-flexible): version int16, Topics [string], UserData nullable
bytes, then v1+ OwnedPartitions [{Topic string, Partitions [int32]}], v2+ GenerationId int32,
v3+ RackId nullable string. ConsumerProtocolAssignment: version int16, AssignedPartitions
[{Topic string, Partitions [int32]}], UserData nullable bytes (the same fields in v0-3). A newer
version than known is read as its known prefix, as Kafka's deserializer does.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping
from dataclasses import dataclass

from minikafka.protocol.binary import Reader

_H, _I = struct.Struct(">h"), struct.Struct(">i")
MAX_ASSIGNMENT_VERSION = 3


class MalformedConsumerProtocol(Exception):
    """Embedded metadata that does not parse (Kafka: SchemaException)."""


@dataclass(frozen=True, slots=True)
class Subscription:
    version: int
    topics: tuple[str, ...]
    owned: Mapping[str, tuple[int, ...]]
    rack_id: str | None = None


def _reader(data: bytes) -> Reader:
    return Reader(data, MalformedConsumerProtocol)


def _topic_partitions(r: Reader) -> dict[str, tuple[int, ...]]:
    out: dict[str, tuple[int, ...]] = {}
    for _ in range(r.count()):
        topic = r.string()
        out[topic] = tuple(r.i32() for _ in range(r.count()))
    return out


def version_of(metadata: bytes) -> int:
    """The version of embedded metadata (Kafka's ConsumerProtocol.deserializeVersion)."""
    if len(metadata) < 2:
        raise MalformedConsumerProtocol("no version")
    return int(_H.unpack_from(metadata, 0)[0])


def decode_subscription(metadata: bytes) -> Subscription:
    r = _reader(metadata)
    version = r.i16()
    if version < 0:
        raise MalformedConsumerProtocol(f"version {version}")
    topics = tuple(r.string() for _ in range(r.count()))
    r.nbytes()  # user data
    owned: dict[str, tuple[int, ...]] = {}
    rack = None
    if version >= 1:
        owned = _topic_partitions(r)
    if version >= 2:
        r.i32()  # generation id
    if version >= 3:
        rack = r.nstring()
    return Subscription(version, topics, owned, rack)


def decode_assignment(data: bytes) -> dict[str, tuple[int, ...]]:
    if not data:
        return {}
    r = _reader(data)
    r.i16()
    return _topic_partitions(r)


def encode_assignment(partitions: Mapping[str, list[int]], version: int) -> bytes:
    """ConsumerProtocolAssignment at `version` (no user data: the server assigned it)."""
    out = bytearray(_H.pack(max(0, min(version, MAX_ASSIGNMENT_VERSION))))
    out += _I.pack(len(partitions))
    for topic in sorted(partitions):
        raw = topic.encode()
        parts = sorted(partitions[topic])
        out += _H.pack(len(raw)) + raw + _I.pack(len(parts)) + struct.pack(f">{len(parts)}i", *parts)
    out += _I.pack(-1)
    return bytes(out)
