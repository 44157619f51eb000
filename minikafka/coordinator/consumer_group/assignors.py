"""The server-side assignors of the consumer protocol: `uniform` and `range`
(`group.consumer.assignors`, Kafka's UniformAssignor and RangeAssignor).

An assignor is a pure function from the members' subscriptions, the subscribed topics' ids and
partition counts, and the current target assignment, to the next target assignment. `uniform` is
sticky: a member keeps the partitions it was given as long as that keeps the assignment balanced,
so a rebalance moves as few partitions as it can (every moved partition costs a revocation round);
`range` is not, as Kafka's is not. Kafka's `uniform` walks members in Java HashMap order, so which
member gets which partitions can differ from Kafka's; the balance and the stickiness are the same.

uniform: spreads all subscribed partitions as evenly as possible over the members. When every
  member subscribes to the same topics the counts differ by at most one; members keep their
  current partitions up to their share and the rest are handed out in topic and partition order.
  With different subscriptions each partition goes to the least loaded member subscribed to its
  topic, then partitions move from heavier to lighter eligible members until no move helps.
range: per topic, the subscribers (static members first by instance id, then the others by member
  id) get contiguous ranges, the first `partitions % members` one partition more, so co-partitioned
  topics line up. Not sticky, as Kafka's.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from typing import Final

from minikafka.coordinator.consumer_group.state import Assignment, TopicIdPartition, partition_order

# member id -> subscribed topic names; topic name -> (topic id, partitions); member id -> current
# target; member id -> group.instance.id
Assignor = Callable[[Mapping[str, frozenset[str]], Mapping[str, tuple[uuid.UUID, int]], Mapping[str, Assignment],
                     Mapping[str, str | None]], dict[str, Assignment]]


def _partitions(topics: frozenset[str], metadata: Mapping[str, tuple[uuid.UUID, int]]) -> list[TopicIdPartition]:
    out: list[TopicIdPartition] = []
    for name in sorted(topics):
        if name in metadata:
            tid, count = metadata[name]
            out.extend((tid, p) for p in range(count))
    return out


def uniform(subscriptions: Mapping[str, frozenset[str]], metadata: Mapping[str, tuple[uuid.UUID, int]],
            current: Mapping[str, Assignment], instance_ids: Mapping[str, str | None] | None = None
            ) -> dict[str, Assignment]:
    members = sorted(subscriptions)
    if not members:
        return {}
    eligible = {m: _partitions(subscriptions[m], metadata) for m in members}
    if len({subscriptions[m] for m in members}) == 1:
        return _uniform_homogeneous(members, eligible[members[0]], current)
    return _uniform_heterogeneous(members, eligible, current)


def _uniform_homogeneous(members: list[str], partitions: list[TopicIdPartition],
                         current: Mapping[str, Assignment]) -> dict[str, Assignment]:
    universe = set(partitions)
    order = {tp: i for i, tp in enumerate(partitions)}
    kept = {m: sorted((tp for tp in current.get(m, ()) if tp in universe), key=order.__getitem__) for m in members}
    base, extra = divmod(len(partitions), len(members))
    # The one-more slots go to the members that already hold the most (fewer moves).
    by_holding = sorted(members, key=lambda m: (-len(kept[m]), m))
    quota = {m: base + (1 if i < extra else 0) for i, m in enumerate(by_holding)}
    result = {m: kept[m][: quota[m]] for m in members}
    taken = {tp for parts in result.values() for tp in parts}
    free = [tp for tp in partitions if tp not in taken]
    free.reverse()
    for m in members:
        while len(result[m]) < quota[m] and free:
            result[m].append(free.pop())
    return {m: frozenset(parts) for m, parts in result.items()}


def _uniform_heterogeneous(members: list[str], eligible: Mapping[str, list[TopicIdPartition]],
                           current: Mapping[str, Assignment]) -> dict[str, Assignment]:
    owner: dict[TopicIdPartition, str] = {}
    result: dict[str, set[TopicIdPartition]] = {m: set() for m in members}
    allowed = {m: set(eligible[m]) for m in members}
    for m in members:
        for tp in sorted(current.get(m, ()), key=partition_order):
            if tp in allowed[m] and tp not in owner:
                owner[tp] = m
                result[m].add(tp)
    every = sorted({tp for m in members for tp in eligible[m]}, key=partition_order)
    subscribers = {tp: [m for m in members if tp in allowed[m]] for tp in every}
    for tp in every:
        if tp not in owner:
            m = min(subscribers[tp], key=lambda x: (len(result[x]), x))
            owner[tp] = m
            result[m].add(tp)
    # Balance: move a partition from a member to an eligible one holding two or more fewer, while
    # such a move exists (each move lowers the sum of squared loads, so this ends).
    for _ in range(len(every) * len(members) + 1):
        move = next(((tp, src, dst) for tp in every for src in [owner[tp]] for dst in subscribers[tp]
                     if len(result[src]) > len(result[dst]) + 1), None)
        if move is None:
            break
        tp, src, dst = move
        result[src].discard(tp)
        result[dst].add(tp)
        owner[tp] = dst
    return {m: frozenset(parts) for m, parts in result.items()}


def range_(subscriptions: Mapping[str, frozenset[str]], metadata: Mapping[str, tuple[uuid.UUID, int]],
           current: Mapping[str, Assignment], instance_ids: Mapping[str, str | None] | None = None
           ) -> dict[str, Assignment]:
    """Not sticky: the same members and topics always give the same ranges."""
    ids = instance_ids or {}

    def order(m: str) -> tuple[int, str]:
        # Kafka's RangeAssignor.sortMemberIds: static members first, by instance id; then by member id.
        iid = ids.get(m)
        return (0, iid) if iid is not None else (1, m)

    result: dict[str, set[TopicIdPartition]] = {m: set() for m in subscriptions}
    topics = sorted({t for subs in subscriptions.values() for t in subs if t in metadata})
    for name in topics:
        tid, count = metadata[name]
        subscribers = sorted((m for m, subs in subscriptions.items() if name in subs), key=order)
        base, extra = divmod(count, len(subscribers))
        start = 0
        for i, m in enumerate(subscribers):
            n = base + (1 if i < extra else 0)
            result[m].update((tid, p) for p in range(start, start + n))
            start += n
    return {m: frozenset(parts) for m, parts in result.items()}


ASSIGNORS: Final[Mapping[str, Assignor]] = {"uniform": uniform, "range": range_}
