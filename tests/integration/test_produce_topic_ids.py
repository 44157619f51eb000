"""Produce v13 names topics by id only (KIP-516): batches for a known id are appended as by name,
for an unknown or all-zero id they are not, and each of their partitions is answered
UNKNOWN_TOPIC_ID; acks=0 gets no answer, and a failed partition closes the connection. The same assertions pass against Apache Kafka 4.3.1 in
conformance mode (issue 18, item 3)."""

from __future__ import annotations

import time
import uuid
from typing import Any

import pytest
from clients import uniq
from kio.schema.produce.v13.request import PartitionProduceData, ProduceRequest, TopicProduceData
from kio.static.primitive import i16, i32
from rawclient import (
    RawClient,
    create_topics_v7,
    high_watermark,
    metadata_v12,
    ms,
    retry_while,
    valid_batch,
)

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

NOT_LEADER_OR_FOLLOWER, UNKNOWN_TOPIC_OR_PARTITION, UNKNOWN_TOPIC_ID = 6, 3, 100


def _produce(c: RawClient, topics: list[tuple[Any, list[int]]], acks: int = -1) -> ProduceRequest:
    return ProduceRequest(transactional_id=None, acks=i16(acks), timeout=ms(10_000), topic_data=tuple(
        TopicProduceData(topic_id=tid, partition_data=tuple(
            PartitionProduceData(index=i32(p), records=bytes(valid_batch(2, prefix=b"v13-"))) for p in parts))
        for tid, parts in topics))


def test_produce_by_topic_id(kafka_broker) -> None:
    topic = uniq("p13")
    stranger = uuid.uuid4()
    with RawClient.connect(kafka_broker.bootstrap) as c:
        assert int(c.request(create_topics_v7(topic, 2), 7).topics[0].error_code) == 0
        tid = c.request(metadata_v12(topic, auto_create=False), 12).topics[0].topic_id

        for partition in (0, 1):  # one request each: Kafka answers NOT_LEADER_OR_FOLLOWER for a moment
            def known() -> tuple[Any, int]:  # after creation, and a retry must not append twice
                resp = c.request(_produce(c, [(tid, [partition])]), 13)  # noqa: B023 - called at once
                return resp, int(resp.responses[0].partition_responses[0].error_code)

            resp, code = retry_while(known, "Produce v13", {NOT_LEADER_OR_FOLLOWER})
            assert code == 0
            assert [(t.topic_id, [p.index for p in t.partition_responses]) for t in resp.responses] == [
                (tid, [partition])]
        assert (high_watermark(c, topic, 0), high_watermark(c, topic, 1)) == (2, 2)

        for unknown in (stranger, None):
            resp = c.request(_produce(c, [(unknown, [0, 3])]), 13)
            got = {(t.topic_id, p.index): (int(p.error_code), p.base_offset) for t in resp.responses
                   for p in t.partition_responses}
            assert got == {(unknown, 0): (UNKNOWN_TOPIC_ID, -1), (unknown, 3): (UNKNOWN_TOPIC_ID, -1)}

        resp = c.request(_produce(c, [(tid, [0, 9]), (stranger, [0])]), 13)
        got = {(t.topic_id, p.index): int(p.error_code) for t in resp.responses for p in t.partition_responses}
        assert got == {(tid, 0): 0, (tid, 9): UNKNOWN_TOPIC_OR_PARTITION, (stranger, 0): UNKNOWN_TOPIC_ID}
        assert high_watermark(c, topic, 0) == 4

        # acks=0: appended for the known id, nothing answered; as for any acks=0 Produce with a
        # failed partition, the broker closes the connection (the client hears nothing otherwise)
        c.send(_produce(c, [(tid, [1])], acks=0), 13)
        deadline = time.monotonic() + 10
        while high_watermark(c, topic, 1) != 4:
            assert time.monotonic() < deadline, "the acks=0 batch was not appended"
            time.sleep(0.05)
        c.send(_produce(c, [(tid, [1]), (stranger, [0])], acks=0), 13)
        assert c.is_closed(), "an acks=0 Produce with a failed partition left the connection open"
    with RawClient.connect(kafka_broker.bootstrap) as c:
        assert high_watermark(c, topic, 1) == 6  # the known partition of that request was appended
