"""The share groups' server-side assignor, Kafka's "simple" (group.share.assignors): pure.

Unlike a consumer group, a share group may give one partition to several members (its records
are shared record by record, under acquisition locks), so every member gets work even when members
outnumber partitions. The rules, as Kafka 4.3's SimpleAssignor applies them:
1. balance first: a member's partition count differs from any other's by at most one; the target
   is ceil(partitions / members) for the members subscribed to them;
2. each member is first placed on one partition by the hash of its id (Java's String.hashCode,
   so the same member lands on the same partition whatever else changes), several members may
   meet there;
3. then what each member held before is kept while it stays under the target (stickiness);
4. partitions still without a member are handed out round-robin to the members with room.
With different subscriptions, each topic's partitions are shared among that topic's subscribers
by the same rules.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from minikafka.java_order import string_hash

Assignment = dict[str, set[tuple[str, int]]]  # member id -> (topic, partition)


def assign(members: Mapping[str, Sequence[str]], partitions: Mapping[str, int],
           current: Mapping[str, set[tuple[str, int]]] | None = None) -> Assignment:
    """`members`: member id -> subscribed topic names; `partitions`: topic -> partition count
    (topics that do not exist are left out); `current`: what each member holds now."""
    current = current or {}
    out: Assignment = {m: set() for m in members}
    by_topic: dict[str, list[str]] = {}
    for m in sorted(members):
        for t in members[m]:
            if partitions.get(t, 0) > 0:
                by_topic.setdefault(t, []).append(m)
    for topic in sorted(by_topic):
        subscribers = by_topic[topic]
        count = partitions[topic]
        target = math.ceil(count / len(subscribers))
        load = {m: 0 for m in subscribers}
        hashed: set[int] = set()
        # 1. each member on the partition its id hashes to
        for m in subscribers:
            p = abs(string_hash(m)) % count
            out[m].add((topic, p))
            load[m] += 1
            hashed.add(p)
        # 2. stickiness: partitions a member held, not placed by the hash, while it has room
        taken: set[int] = set(hashed)
        for m in subscribers:
            for t, p in sorted(current.get(m, ())):
                if t == topic and p < count and p not in taken and load[m] < target:
                    out[m].add((topic, p))
                    load[m] += 1
                    taken.add(p)
        # 3. the rest round-robin over the members with room, least loaded first
        rest = [p for p in range(count) if p not in taken]
        for p in rest:
            m = min(subscribers, key=lambda s: (load[s], subscribers.index(s)))
            out[m].add((topic, p))
            load[m] += 1
    return out
