"""The MetadataHash of a consumer or streams group (ConsumerGroupMetadataValue tag 0,
StreamsGroupMetadataValue.MetadataHash), as Kafka 4.1+ computes it (group-coordinator
`Utils.computeTopicHash` / `computeGroupHash`, KIP-1101).

A topic's hash is XXH3-64 (seed 0) over, little-endian: a zero magic byte, the topic id's two
64-bit halves (most significant first), the name (UTF-16 code units, then their count as an int32),
the partition count, and for each partition its index followed by the sorted racks of its replicas
(each as its length, the string, its length again). The group's hash is XXH3-64 over the topic
hashes of the topics it depends on that exist (a consumer group's subscribed topics, a streams
group's source, repartition and changelog topics), in topic-name order; 0 when there are none.

The same value as Kafka's keeps `__consumer_offsets` byte-identical, and a data directory moved
between Kafka and minikafka does not see a metadata change (a needless rebalance) on first use.
"""

from __future__ import annotations

import functools
import struct
import uuid
from collections.abc import Iterable, Mapping

import xxhash

TOPIC_HASH_MAGIC_BYTE = 0


def _java_string(s: str) -> bytes:
    units = s.encode("utf-16-le")
    return units + struct.pack("<i", len(units) // 2)


@functools.lru_cache(maxsize=4096)
def topic_hash(name: str, topic_id: uuid.UUID, partitions: int, racks: tuple[tuple[str, ...], ...] = ()) -> int:
    """`racks[i]` lists the racks of partition i's replicas (empty without broker.rack). Cached:
    every heartbeat checks the group's hash, and a topic changes far less often (Kafka keeps a
    topic hash cache too)."""
    msb, lsb = struct.unpack(">qq", topic_id.bytes)
    out = bytearray(struct.pack("<Bqq", TOPIC_HASH_MAGIC_BYTE, msb, lsb))
    out += _java_string(name) + struct.pack("<i", partitions)
    for i in range(partitions):
        out += struct.pack("<i", i)
        for rack in sorted(racks[i] if i < len(racks) else ()):
            out += struct.pack("<i", len(rack.encode("utf-16-le")) // 2) + _java_string(rack)
    return _signed(xxhash.xxh3_64_intdigest(bytes(out)))


def group_hash(topic_hashes: Mapping[str, int]) -> int:
    if not topic_hashes:
        return 0
    data = b"".join(struct.pack("<q", topic_hashes[name]) for name in sorted(topic_hashes, key=_java_order))
    return _signed(xxhash.xxh3_64_intdigest(data))


def topics_hash(names: Iterable[str], topics: Mapping[str, tuple[uuid.UUID, int]]) -> int:
    """The group hash of the named topics that exist (`topics`: name -> (topic id, partitions))."""
    return group_hash({name: topic_hash(name, *topics[name]) for name in names if name in topics})


def _java_order(s: str) -> bytes:
    # Java's String.compareTo orders by UTF-16 code unit.
    return s.encode("utf-16-be")


def _signed(v: int) -> int:
    return v - (1 << 64) if v >= 1 << 63 else v
