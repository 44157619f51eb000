"""The share groups' server-side assignor, Kafka's "simple" (group.share.assignors): pure.

Unlike a consumer group, a share group may give one partition to several members (its records
are shared record by record, under acquisition locks), so every member gets work even when members
outnumber partitions. Kafka 4.3's SimpleAssignor, step for step:

Every member subscribed to the same topics (homogeneous):
1. the target partitions are every partition of those topics, one list; the desired count per
   member is ceil(partitions / members);
2. each member is placed on one partition by the hash of its id (Java's String.hashCode, modulo
   the list's length), so the same member lands on the same partition whatever else changes;
   several members may meet there;
3. what each member held before is kept while it stays under the desired count, unless step 2
   placed someone on that partition (stickiness);
4. partitions still without a member go round-robin to the members, each taking at most one more
   than the desired count (hash collisions can need it); a member past that leaves the rotation.

Different subscriptions (heterogeneous): each member is hashed onto one partition of its own
topics; partitions neither hashed nor held before go round-robin, topic by topic, to that topic's
subscribers; then what members held before is kept where they still subscribe and no hash placed
anyone.

Kafka walks members and topics in Java HashMap order; here members go in id order and topics in
name order, so with several topics or colliding hashes which member gets which partition may
differ from Kafka's (the rules, and so the balance, are the same).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from minikafka.java_order import string_hash

TopicPartition = tuple[str, int]
Assignment = dict[str, set[TopicPartition]]  # member id -> (topic, partition)


def _hash_onto(member_id: str, partitions: Sequence[TopicPartition]) -> TopicPartition:
    return partitions[abs(string_hash(member_id)) % len(partitions)]


def assign(members: Mapping[str, Sequence[str]], partitions: Mapping[str, int],
           current: Mapping[str, set[TopicPartition]] | None = None) -> Assignment:
    """`members`: member id -> subscribed topic names; `partitions`: topic -> partition count
    (topics that do not exist are left out); `current`: what each member was given last time."""
    ids = sorted(members)
    subs = {m: sorted({t for t in members[m] if partitions.get(t, 0) > 0}) for m in ids}
    held: dict[TopicPartition, list[str]] = {}
    for m in sorted(current or {}):
        for tp in sorted((current or {})[m]):
            held.setdefault(tp, []).append(m)
    out: Assignment = {m: set() for m in ids}
    if not ids:
        return out
    if len({tuple(s) for s in subs.values()}) == 1:
        _homogeneous(ids, subs[ids[0]], partitions, held, out)
    else:
        _heterogeneous(ids, subs, partitions, held, out)
    return out


def _homogeneous(ids: list[str], topics: list[str], partitions: Mapping[str, int],
                 held: Mapping[TopicPartition, list[str]], out: Assignment) -> None:
    target = [(t, p) for t in topics for p in range(partitions[t])]
    if not target:
        return
    desired = math.ceil(len(target) / len(ids))
    hashed: dict[TopicPartition, list[str]] = {}
    for m in ids:
        hashed.setdefault(_hash_onto(m, target), []).append(m)
    served: set[TopicPartition] = set(hashed)
    for tp, ms in hashed.items():
        for m in ms:
            out[m].add(tp)
    wanted = set(target)
    for tp, ms in held.items():
        if tp not in wanted or tp in hashed:
            continue
        for m in ms:
            if m in out and len(out[m]) < desired:
                out[m].add(tp)
                served.add(tp)
    _round_robin_with_count(ids, [tp for tp in target if tp not in served], out, desired)


def _round_robin_with_count(ids: list[str], unassigned: list[TopicPartition], out: Assignment,
                            desired: int) -> None:
    rotation = list(ids)
    i = k = 0
    while k < len(unassigned):
        if i >= len(rotation):
            i = 0
            if not rotation:   # cannot happen: (desired + 1) x members >= partitions
                raise ValueError("no member left to take a partition")
        m = rotation[i]
        if len(out[m]) <= desired:   # one more than desired is allowed (hash collisions)
            out[m].add(unassigned[k])
            k += 1
            i += 1
        else:
            rotation.pop(i)          # full: out of the rotation, the partition goes to the next one


def _heterogeneous(ids: list[str], subs: Mapping[str, list[str]], partitions: Mapping[str, int],
                   held: Mapping[TopicPartition, list[str]], out: Assignment) -> None:
    member_parts = {m: [(t, p) for t in subs[m] for p in range(partitions[t])] for m in ids if subs[m]}
    subscribers: dict[str, list[str]] = {}
    for m in member_parts:
        for t in subs[m]:
            subscribers.setdefault(t, []).append(m)
    placed: dict[TopicPartition, list[str]] = {}
    for m, parts in member_parts.items():
        placed.setdefault(_hash_onto(m, parts), []).append(m)
    unassigned: dict[str, list[TopicPartition]] = {}
    seen: set[TopicPartition] = set()
    for parts in member_parts.values():
        for tp in parts:
            if tp not in seen and tp not in placed and tp not in held:
                unassigned.setdefault(tp[0], []).append(tp)
            seen.add(tp)
    for t in sorted(unassigned):
        for n, tp in enumerate(unassigned[t]):
            placed.setdefault(tp, []).append(subscribers[t][n % len(subscribers[t])])
    for tp, ms in placed.items():
        for m in ms:
            out[m].add(tp)
    for tp, ms in held.items():
        if tp in placed:
            continue
        for m in ms:
            if m in subscribers.get(tp[0], ()):
                out[m].add(tp)
