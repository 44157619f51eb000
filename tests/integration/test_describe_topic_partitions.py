"""DescribeTopicPartitions (API 75, KIP-966) over the raw protocol: sorted topics, the error of each
kind of missing topic, pages of partitions with their cursor, and the cursors Kafka refuses; the
same assertions pass against Apache Kafka 4.3.1 in conformance mode (issue 18, item 5)."""

from __future__ import annotations

from typing import Any

import pytest
from clients import uniq
from kio.schema.describe_topic_partitions.v0.request import Cursor, DescribeTopicPartitionsRequest, TopicRequest
from kio.static.primitive import i32
from rawclient import RawClient, create_topics_v7

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

UNKNOWN_SERVER_ERROR, UNKNOWN_TOPIC_OR_PARTITION, INVALID_TOPIC, INVALID_REQUEST = -1, 3, 17, 42
TOPIC_OPS, OMITTED = 3576, -(2**31)


def _ask(c: RawClient, names: list[str], limit: int = 2000, cursor: tuple[str, int] | None = None) -> Any:
    return c.request(DescribeTopicPartitionsRequest(
        topics=tuple(TopicRequest(name=n) for n in names), response_partition_limit=i32(limit),
        cursor=None if cursor is None else Cursor(topic_name=cursor[0], partition_index=i32(cursor[1]))), 0)


def _page(resp: Any) -> tuple[list[tuple[str, int, list[int]]], tuple[str, int] | None]:
    nxt = resp.next_cursor
    return ([(t.name, int(t.error_code), [p.partition_index for p in t.partitions]) for t in resp.topics],
            None if nxt is None else (nxt.topic_name, nxt.partition_index))


@pytest.fixture
def two_topics(kafka_broker) -> tuple[RawClient, str, str, str]:
    base = uniq("dtp")
    a, b = f"{base}-a", f"{base}-b"
    c = RawClient.connect(kafka_broker.bootstrap)
    for name, parts in ((a, 3), (b, 2)):
        assert int(c.request(create_topics_v7(name, parts), 7).topics[0].error_code) == 0
    yield c, base, a, b
    c.close()


def test_named_topics_sorted_with_their_errors(two_topics) -> None:
    c, base, a, b = two_topics
    missing, bad = f"{base}-m", f"{base} bad!"
    resp = _ask(c, [b, missing, a, bad, a])
    assert _page(resp) == ([(bad, INVALID_TOPIC, []), (a, 0, [0, 1, 2]), (b, 0, [0, 1]),
                            (missing, UNKNOWN_TOPIC_OR_PARTITION, [])], None)
    by_name = {t.name: t for t in resp.topics}
    for name in (bad, missing):
        assert by_name[name].topic_id is None and by_name[name].topic_authorized_operations == TOPIC_OPS
    topic = by_name[a]
    assert topic.topic_id is not None and not topic.is_internal and topic.topic_authorized_operations == TOPIC_OPS
    for p in topic.partitions:
        leader = p.leader_id
        assert (p.leader_epoch, p.replica_nodes, p.isr_nodes, p.eligible_leader_replicas, p.last_known_elr,
                p.offline_replicas) == (0, (leader,), (leader,), (), (), ())
    empty = _ask(c, [""]).topics[0]
    assert (int(empty.error_code), empty.topic_authorized_operations) == (UNKNOWN_SERVER_ERROR, OMITTED)


def test_pages_and_their_cursors(two_topics) -> None:
    c, base, a, b = two_topics
    missing = f"{base}-m"
    assert _page(_ask(c, [a, b, missing], 2)) == ([(a, 0, [0, 1])], (a, 2))
    assert _page(_ask(c, [a, b, missing], 2, (a, 2))) == ([(a, 0, [2]), (b, 0, [0])], (b, 1))
    assert _page(_ask(c, [a, b, missing], 2, (b, 1))) == ([(b, 0, [1]), (missing, UNKNOWN_TOPIC_OR_PARTITION, [])],
                                                          None)
    # a page that ends with a topic points at the next topic's first partition
    assert _page(_ask(c, [a, b], 3)) == ([(a, 0, [0, 1, 2])], (b, 0))
    assert _page(_ask(c, [a], 3)) == ([(a, 0, [0, 1, 2])], None)
    # a limit below one still answers one partition; above 2,000 it is 2,000
    for limit in (0, -5):
        assert _page(_ask(c, [a], limit)) == ([(a, 0, [0])], (a, 1))
    assert _page(_ask(c, [a, b], 5000)) == ([(a, 0, [0, 1, 2]), (b, 0, [0, 1])], None)
    # a cursor past a topic's partitions answers it with none and goes on
    assert _page(_ask(c, [a, b], 10, (a, 9))) == ([(a, 0, []), (b, 0, [0, 1])], None)


def test_cursors_kafka_refuses(two_topics) -> None:
    c, base, a, b = two_topics
    for cursor in ((f"{base}-x", 0), (a, -1)):
        resp = _ask(c, [b, a], 10, cursor)
        assert _page(resp) == ([(b, INVALID_REQUEST, []), (a, INVALID_REQUEST, [])], None)  # the request's order
        assert {t.topic_authorized_operations for t in resp.topics} == {OMITTED}
    assert _page(_ask(c, [b], 10, (a, 0))) == ([(b, INVALID_REQUEST, [])], None)


def test_every_topic_page_by_page(two_topics) -> None:
    """No names: every topic, internal ones included, sorted; read to the end with the cursor."""
    c, base, a, b = two_topics
    seen: list[tuple[str, list[int]]] = []
    internal = {}
    cursor = None
    for _ in range(200):
        resp = _ask(c, [], 500, cursor)
        for t in resp.topics:
            assert int(t.error_code) == 0
            if seen and seen[-1][0] == t.name:
                seen[-1][1].extend(p.partition_index for p in t.partitions)
            else:
                seen.append((t.name, [p.partition_index for p in t.partitions]))
            internal[t.name] = t.is_internal
        cursor = _page(resp)[1]
        if cursor is None:
            break
    assert cursor is None
    names = [n for n, _ in seen]
    assert names == sorted(names) and len(names) == len(set(names))
    assert dict(seen)[a] == [0, 1, 2] and dict(seen)[b] == [0, 1]
    # Kafka's own topics are internal, this test's are not (other "__" names a shared broker may
    # hold are left out: a user may create "__x", which Kafka does not flag).
    wrong = {n: internal[n] for n in names if (n in ("__consumer_offsets", "__transaction_state")) != internal[n]
             and (n.startswith(base) or n.startswith("__consumer") or n.startswith("__transaction"))}
    assert not wrong, wrong
