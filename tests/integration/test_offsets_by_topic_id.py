"""OffsetCommit v10 and OffsetFetch v10 name topics by id only (KIP-516): known ids commit and
fetch as names did, an unknown or all-zero id is UNKNOWN_TOPIC_ID on each partition and commits
nothing, a partition the topic lacks is UNKNOWN_TOPIC_OR_PARTITION on commit; fetching every topic
answers with ids and leaves out a deleted topic. The same assertions pass against Apache Kafka
4.3.1 in conformance mode (issue 18, item 3)."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from clients import uniq
from kio.schema.delete_topics.v6.request import DeleteTopicsRequest, DeleteTopicState
from kio.schema.find_coordinator.v4.request import FindCoordinatorRequest
from kio.static.primitive import i8
from rawclient import RawClient, create_topics_v7, metadata_v12, ms, retry_while

from minikafka.protocol import versions

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

UNKNOWN_TOPIC_OR_PARTITION, UNKNOWN_TOPIC_ID = 3, 100
COORDINATOR_RETRIABLE = {14, 15, 16}  # LOAD_IN_PROGRESS, NOT_AVAILABLE, NOT_COORDINATOR
COMMIT = versions.request_class(8, 10)
COMMIT_TOPIC = versions.nested_class(COMMIT, "topics")
COMMIT_PARTITION = versions.nested_class(COMMIT_TOPIC, "partitions")
FETCH = versions.request_class(9, 10)
FETCH_GROUP = versions.nested_class(FETCH, "groups")
FETCH_TOPIC = versions.nested_class(FETCH_GROUP, "topics")


def _commit(c: RawClient, group: str, topics: list[tuple[Any, list[int]]], offset: int) -> dict[Any, int]:
    resp = c.request(COMMIT(group_id=group, generation_id_or_member_epoch=-1, member_id="", group_instance_id=None,
                            topics=tuple(COMMIT_TOPIC(topic_id=t, partitions=tuple(COMMIT_PARTITION(
                                partition_index=p, committed_offset=offset, committed_leader_epoch=-1,
                                committed_metadata="m") for p in parts)) for t, parts in topics)), 10)
    return {(t.topic_id, p.partition_index): int(p.error_code) for t in resp.topics for p in t.partitions}


def _fetch(c: RawClient, group: str, topics: list[tuple[Any, list[int]]] | None) -> dict[Any, tuple[int, str, int]]:
    resp = c.request(FETCH(groups=(FETCH_GROUP(group_id=group, topics=None if topics is None else tuple(
        FETCH_TOPIC(topic_id=t, partition_indexes=tuple(parts)) for t, parts in topics)),), require_stable=False), 10)
    (g,) = resp.groups
    assert int(g.error_code) == 0
    return {(t.topic_id, p.partition_index): (p.committed_offset, p.metadata, int(p.error_code))
            for t in g.topics for p in t.partitions}


def test_offsets_committed_and_fetched_by_topic_id(kafka_broker) -> None:
    topic, doomed, group = uniq("oc10"), uniq("oc10-doomed"), uniq("oc10-group")
    stranger = uuid.uuid4()
    with RawClient.connect(kafka_broker.bootstrap) as c:
        for name, parts in ((topic, 2), (doomed, 1)):
            assert int(c.request(create_topics_v7(name, parts), 7).topics[0].error_code) == 0
        md = c.request(metadata_v12(topic, doomed, auto_create=False), 12)
        ids = {t.name: t.topic_id for t in md.topics}
        tid, did = ids[topic], ids[doomed]

        # Kafka: the group's coordinator must be found (and __consumer_offsets created and loaded) first
        def find() -> tuple[Any, int]:
            coord = c.request(FindCoordinatorRequest(key_type=i8(0), coordinator_keys=(group,)), 4).coordinators[0]
            return coord, int(coord.error_code)

        assert retry_while(find, "FindCoordinator", COORDINATOR_RETRIABLE)[1] == 0

        def first_commit() -> tuple[Any, int]:
            got = _commit(c, group, [(tid, [0, 1]), (did, [0])], 5)
            return got, max(got.values())

        got, _ = retry_while(first_commit, "OffsetCommit v10", COORDINATOR_RETRIABLE)
        assert got == {(tid, 0): 0, (tid, 1): 0, (did, 0): 0}
        assert _commit(c, group, [(stranger, [0])], 6) == {(stranger, 0): UNKNOWN_TOPIC_ID}
        assert _commit(c, group, [(None, [0])], 6) == {(None, 0): UNKNOWN_TOPIC_ID}
        assert _commit(c, group, [(tid, [0, 7]), (stranger, [0, 1])], 9) == {
            (tid, 0): 0, (tid, 7): UNKNOWN_TOPIC_OR_PARTITION, (stranger, 0): UNKNOWN_TOPIC_ID,
            (stranger, 1): UNKNOWN_TOPIC_ID}

        assert _fetch(c, group, [(tid, [0, 1, 5])]) == {
            (tid, 0): (9, "m", 0), (tid, 1): (5, "m", 0), (tid, 5): (-1, "", 0)}
        for unknown in (stranger, None):
            assert _fetch(c, group, [(unknown, [0])]) == {(unknown, 0): (-1, "", UNKNOWN_TOPIC_ID)}
        every = _fetch(c, group, None)
        assert every == {(tid, 0): (9, "m", 0), (tid, 1): (5, "m", 0), (did, 0): (5, "m", 0)}

        deleted = c.request(DeleteTopicsRequest(topics=(DeleteTopicState(name=doomed, topic_id=None),),
                                                timeout=ms(30_000)), 6)
        assert int(deleted.responses[0].error_code) == 0
        assert _fetch(c, group, [(did, [0])]) == {(did, 0): (-1, "", UNKNOWN_TOPIC_ID)}
        assert _fetch(c, group, None) == {(tid, 0): (9, "m", 0), (tid, 1): (5, "m", 0)}
