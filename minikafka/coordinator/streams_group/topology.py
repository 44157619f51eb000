"""A streams group's topology against the broker's topics (Kafka: InternalTopicManager and its
helpers RepartitionTopics, CopartitionedTopicsEnforcer, ChangelogTopics).

Pure: (topology, topic name -> partition count) -> ConfiguredTopology. In order:

1. every topic listed as a source topic must exist, else MISSING_SOURCE_TOPICS
   ("Source topics a, b are missing.") and the group stays NOT_READY;
2. repartition topics get a partition count: the declared one, or the largest count among the
   sources of a subtopology that writes to them, iterated until nothing more can be decided;
3. copartition groups must agree: external topics all alike (else INCORRECTLY_PARTITIONED_TOPICS),
   flexible repartition topics take their count;
4. changelog topics get the task count of their subtopology;
5. internal topics that do not exist are returned to be created (the broker creates them, as
   Kafka's KafkaApis does through its AutoTopicCreationManager), with MISSING_INTERNAL_TOPICS
   until they exist; an existing one with another partition count is INCORRECTLY_PARTITIONED_TOPICS.

A topology that cannot be resolved at all (a repartition topic nobody writes, a loop) raises
InvalidTopology: the heartbeat fails with STREAMS_INVALID_TOPOLOGY.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from minikafka.coordinator.streams_group.state import ConfiguredTopology, Subtopology, TopicInfo, Topology

# StreamsGroupHeartbeatResponse.Status codes
STALE_TOPOLOGY = 0
MISSING_SOURCE_TOPICS = 1
INCORRECTLY_PARTITIONED_TOPICS = 2
MISSING_INTERNAL_TOPICS = 3
SHUTDOWN_APPLICATION = 4
ASSIGNMENT_DELAYED = 5


class InvalidTopology(Exception):
    """STREAMS_INVALID_TOPOLOGY, with Kafka's message."""


class _TopicConfiguration(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def summarize(topics: list[str]) -> str:
    """Kafka's summarizeTopics: the first three, then how many more."""
    if not topics:
        return "<none>"
    shown = ", ".join(topics[:3])
    return shown + (f" and {len(topics) - 3} additional topics" if len(topics) > 3 else "")


def required_topics(topology: Topology) -> frozenset[str]:
    """Source, repartition source and changelog topics (StreamsTopology.requiredTopics): what the
    group's metadata hash covers."""
    out: set[str] = set()
    for s in topology.subtopologies:
        out.update(s.source_topics)
        out.update(t.name for t in s.repartition_source_topics)
        out.update(t.name for t in s.state_changelog_topics)
    return frozenset(out)


def sources(s: Subtopology) -> list[str]:
    """The topics a subtopology reads: its source topics, then its repartition topics."""
    return [*s.source_topics, *(t.name for t in s.repartition_source_topics)]


def _counter(partitions: Mapping[str, int], decided: Mapping[str, int]) -> Callable[[str], int]:
    """A topic's partition count: the broker's, or the one decided for an internal topic to create."""
    return lambda topic: partitions[topic] if topic in partitions else decided[topic]


def source_topic_subtopologies(topology: Topology) -> dict[str, str]:
    """topic -> the subtopology that reads it (offset commits are checked against its tasks)."""
    return {topic: s.subtopology_id for s in topology.subtopologies for topic in sources(s)}


def java_string_hash(s: str) -> int:
    """java.lang.String.hashCode (over UTF-16 code units, int arithmetic)."""
    h = 0
    data = s.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + (data[i] << 8 | data[i + 1])) & 0xFFFFFFFF
    return h


def java_hash_order(keys: list[str]) -> list[str]:
    """The iteration order of a java.util.HashMap the keys were put into in this order: by bucket
    (the spread hash masked by the table size, which doubles past 3/4 full from 16), then, in one
    bucket, in insertion order."""
    size = 16
    while len(keys) > size * 3 // 4:
        size *= 2

    def bucket(k: str) -> int:
        h = java_string_hash(k)
        return (h ^ (h >> 16)) & (size - 1)

    return [k for _i, k in sorted(enumerate(keys), key=lambda e: (bucket(e[1]), e[0]))]


def _java_map(counts: Mapping[str, int]) -> str:
    """A TreeMap's toString, as Kafka's messages print one."""
    return "{" + ", ".join(f"{k}={v}" for k, v in sorted(counts.items())) + "}"


def configure(topology: Topology, partitions: Mapping[str, int]) -> ConfiguredTopology:
    """`partitions`: the partition count of every topic the broker has."""
    try:
        decided = _decide_partition_counts(topology, partitions)
    except _TopicConfiguration as exc:
        return ConfiguredTopology(topology.epoch, error=(exc.status, str(exc)))

    count = _counter(partitions, decided)
    task_counts = {s.subtopology_id: max(count(t) for t in sources(s)) for s in topology.subtopologies}

    to_create: dict[str, TopicInfo] = {}
    for s in sorted(topology.subtopologies, key=lambda s: s.subtopology_id):
        for infos in (s.repartition_source_topics, s.state_changelog_topics):
            by_name = {info.name: info for info in infos}
            for name in java_hash_order(list(by_name)):
                info = by_name[name]
                to_create[name] = TopicInfo(name, info.partitions or decided[name], info.replication_factor,
                                            info.configs)
    inserted = list(to_create)
    internal = {name: info.partitions for name, info in to_create.items()}
    for name in sorted(required_topics(topology)):
        if name in partitions and name in to_create:
            expected = to_create.pop(name).partitions
            if partitions[name] != expected:
                return ConfiguredTopology(topology.epoch, error=(
                    INCORRECTLY_PARTITIONED_TOPICS,
                    f"Existing topic {name} has different number of partitions: expected {expected}, "
                    f"found {partitions[name]}"))
    # Kafka collects them in a java.util.HashMap and names them in its order.
    missing = tuple(to_create[name] for name in java_hash_order(inserted) if name in to_create)
    error = None
    if missing:
        error = (MISSING_INTERNAL_TOPICS, "Internal topics are missing: " + summarize([t.name for t in missing]))
    return ConfiguredTopology(topology.epoch, task_counts=task_counts, internal_topics_to_create=missing,
                              internal_partitions=internal, error=error)


def _decide_partition_counts(topology: Topology, partitions: Mapping[str, int]) -> dict[str, int]:
    subs = topology.subtopologies
    repartition = {t.name for s in subs for t in s.repartition_source_topics}
    # Every listed source topic must exist (Kafka's throwOnMissingSourceTopics): repartition
    # topics are declared apart, in repartition_source_topics, and are not checked here.
    missing = sorted({t for s in subs for t in s.source_topics if t not in partitions})
    if missing:
        raise _TopicConfiguration(MISSING_SOURCE_TOPICS, f"Source topics {summarize(missing)} are missing.")
    decided = _repartition_counts(subs, partitions)
    count = _counter(partitions, decided)

    fixed = {t.name for s in subs for t in s.repartition_source_topics if t.partitions != 0}
    flexible = repartition - fixed
    for s in subs:
        for group in s.copartition_groups:
            topics = {s.source_topics[i] for i in group.source_topics}
            topics |= {s.repartition_source_topics[i].name for i in group.repartition_source_topics}
            decided.update(_enforce_copartitioning(topics, fixed, flexible, count))
    for s in subs:
        if not sources(s):
            raise InvalidTopology(f"No source topics found for subtopology {s.subtopology_id}")
        n = max(count(t) for t in sources(s))
        for info in s.state_changelog_topics:
            decided[info.name] = n
    return decided


def _repartition_counts(subs: tuple[Subtopology, ...], partitions: Mapping[str, int]) -> dict[str, int]:
    counts = {t.name: t.partitions for s in subs for t in s.repartition_source_topics if t.partitions != 0}
    while True:
        needed = progress = False
        for s in subs:
            for sink in s.repartition_sink_topics:
                if sink in counts:
                    continue
                candidates = [counts[t.name] for t in s.repartition_source_topics if t.name in counts]
                candidates += [partitions[t] for t in s.source_topics if t in partitions]
                if candidates:
                    counts[sink] = max(candidates)
                    progress = True
                else:
                    needed = True
        if not needed:
            break
        if not progress:
            raise InvalidTopology("Failed to compute number of partitions for all repartition topics. There may be "
                                  "loops in the topology that cannot be resolved.")
    for s in subs:
        if any(t.name not in counts for t in s.repartition_source_topics):
            raise InvalidTopology("Failed to compute number of partitions for all repartition topics, because a "
                                  "repartition source topic is never used as a sink topic.")
    return counts


def _enforce_copartitioning(topics: set[str], fixed: set[str], flexible: set[str],
                            count: Callable[[str], int]) -> dict[str, int]:
    if not topics:
        return {}
    repartition = {t: count(t) for t in topics if t in fixed or t in flexible}
    external = {t: count(t) for t in topics if t not in repartition}
    if set(repartition) == topics:
        if fixed:
            fixed_counts = {count(t) for t in fixed}
            if len(fixed_counts) > 1:
                raise _TopicConfiguration(INCORRECTLY_PARTITIONED_TOPICS, "Following topics do not have the same "
                                          f"number of partitions: [{_java_map(repartition)}]")
            n = fixed_counts.pop()
        else:
            n = max(repartition.values(), default=0)
            if n == 0:
                raise InvalidTopology("All topics in the copartition group had undefined partition number: "
                                      f"[{', '.join(sorted(repartition))}]")
    else:
        if len(set(external.values())) > 1:
            raise _TopicConfiguration(INCORRECTLY_PARTITIONED_TOPICS, "Following topics do not have the same number "
                                      f"of partitions: [{_java_map(external)}]")
        n = next(iter(external.values()))
    for t, have in repartition.items():
        if t in fixed and have != n:
            raise _TopicConfiguration(INCORRECTLY_PARTITIONED_TOPICS, f"Number of partitions [{have}] of repartition "
                                      f"topic [{t}] doesn't match number of partitions [{n}] of the source topic.")
    return {t: n for t in repartition}
