"""OffsetFetch v8-9 (KIP-709: several groups in one request; v9 adds member id/epoch, which a
classic group ignores) next to v7 and v1 (one group), over the raw protocol; the same answers from
Apache Kafka 4.3.1 in conformance mode (issue 16, item 3: @platformatic/kafka speaks only v8-9)."""

from __future__ import annotations

import pytest
from clients import consumer, create_topic, uniq
from confluent_kafka import TopicPartition
from kio.schema.offset_fetch.v1.request import OffsetFetchRequest as V1
from kio.schema.offset_fetch.v1.request import OffsetFetchRequestTopic as V1Topic
from kio.schema.offset_fetch.v7.request import OffsetFetchRequest as V7
from kio.schema.offset_fetch.v7.request import OffsetFetchRequestTopic as V7Topic
from kio.schema.offset_fetch.v9.request import OffsetFetchRequest as V9
from kio.schema.offset_fetch.v9.request import OffsetFetchRequestGroup, OffsetFetchRequestTopics
from kio.schema.types import GroupId, TopicName
from kio.static.primitive import i32
from rawclient import RawClient

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]


def _commit(bootstrap: str, group: str, topic: str, offsets: dict[int, int]) -> None:
    c = consumer(bootstrap, **{"group.id": group, "enable.auto.commit": False})
    try:
        c.commit(offsets=[TopicPartition(topic, p, o) for p, o in offsets.items()], asynchronous=False)
    finally:
        c.close()


def test_several_groups_in_one_request_and_the_old_versions(kafka_broker) -> None:
    topic = uniq("ofetch")
    g1, g2, g3 = uniq("g1"), uniq("g2"), uniq("never")
    create_topic(kafka_broker.bootstrap, topic, 2)
    _commit(kafka_broker.bootstrap, g1, topic, {0: 5, 1: 7})
    _commit(kafka_broker.bootstrap, g2, topic, {0: 11})
    parts = (OffsetFetchRequestTopics(name=TopicName(topic), partition_indexes=(i32(0), i32(1))),)
    with RawClient.connect(kafka_broker.bootstrap) as c:
        v9 = c.request(V9(groups=(
            OffsetFetchRequestGroup(group_id=GroupId(g1), topics=parts),
            OffsetFetchRequestGroup(group_id=GroupId(g2), member_id="someone", member_epoch=i32(3), topics=parts),
            OffsetFetchRequestGroup(group_id=GroupId(g3), topics=None),
        ), require_stable=True), 9)
        got = {g.group_id: (int(g.error_code), {(t.name, p.partition_index): p.committed_offset
                                                 for t in g.topics for p in t.partitions}) for g in v9.groups}
        assert got == {
            g1: (0, {(topic, 0): 5, (topic, 1): 7}),
            g2: (0, {(topic, 0): 11, (topic, 1): -1}),
            g3: (0, {}),  # a null topic list: every partition with an offset, here none
        }
        v7 = c.request(V7(group_id=GroupId(g1), topics=(V7Topic(name=TopicName(topic), partition_indexes=(i32(1),)),),
                          require_stable=False), 7)
        assert int(v7.error_code) == 0
        assert [(t.name, p.partition_index, p.committed_offset) for t in v7.topics for p in t.partitions] == [
            (topic, 1, 7)]
        v1 = c.request(V1(group_id=GroupId(g2), topics=(V1Topic(name=TopicName(topic), partition_indexes=(i32(0),)),)), 1)
        assert [(p.committed_offset, int(p.error_code)) for t in v1.topics for p in t.partitions] == [(11, 0)]
