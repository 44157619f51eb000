"""The iteration order of a java.util.HashMap, for answers whose order Kafka leaves to one.

Kafka's DescribeClientQuotas and its SCRAM credential APIs list entities, values and users in
HashMap order, and kafka-configs.sh prints them in the order received; answering in the same
order keeps the tool's output identical.
The order is Java's: a key's bucket is (h ^ h >>> 16) & (capacity - 1), with h the key's
hashCode; buckets in index order, keys within a bucket in insertion order.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TypeVar

T = TypeVar("T")


def _int32(n: int) -> int:
    n &= 0xFFFFFFFF
    return n - (1 << 32) if n & 0x80000000 else n


def string_hash(s: str | None) -> int:
    """java.lang.String.hashCode (0 for null, as Objects.hashCode)."""
    if s is None:
        return 0
    h = 0
    for unit in s.encode("utf-16-be").hex(" ", 2).split():  # UTF-16 code units, as Java's chars
        h = (31 * h + int(unit, 16)) & 0xFFFFFFFF
    return _int32(h)


def map_hash(pairs: Iterable[tuple[str, str | None]]) -> int:
    """java.util.AbstractMap.hashCode of a Map<String, String>: the sum of key ^ value hashes."""
    return _int32(sum(string_hash(k) ^ string_hash(v) for k, v in pairs))


def _capacity(size: int) -> int:
    cap = 16
    while size > cap * 3 // 4:
        cap *= 2
    return cap


def hashmap_order(items: Iterable[T], hash_of: Callable[[T], int]) -> list[T]:
    """`items` (in insertion order) in the order a HashMap holding them iterates."""
    items = list(items)
    mask = _capacity(len(items)) - 1

    def bucket(item: T) -> int:
        h = hash_of(item) & 0xFFFFFFFF
        return (h ^ (h >> 16)) & mask

    return sorted(items, key=bucket)  # sorted() is stable: insertion order within a bucket
