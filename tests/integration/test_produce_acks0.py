"""An acks=0 Produce gets no answer; when one of its partitions fails (a topic that does not
exist, here), the broker closes the connection, as Kafka's KafkaApis.handleProduceRequest does, so
a client that hears nothing reconnects and refreshes its metadata. The partitions that did not
fail are appended. The same assertions pass against Apache Kafka 4.3.1 in conformance mode."""

from __future__ import annotations

import time

import pytest
from clients import uniq
from kio.schema.produce.v9.request import PartitionProduceData, ProduceRequest, TopicProduceData
from kio.static.primitive import i16, i32
from rawclient import RawClient, create_topics_v7, high_watermark, ms, produce, valid_batch

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]


def test_acks0_with_a_failed_partition_closes_the_connection(kafka_broker) -> None:
    topic = uniq("acks0")
    with RawClient.connect(kafka_broker.bootstrap) as c:
        assert int(c.request(create_topics_v7(topic, 1), 7).topics[0].error_code) == 0
        deadline = time.monotonic() + 15
        while produce(c, topic, 0, valid_batch(1)).error_code != 0:  # Kafka: a leader to serve it first
            assert time.monotonic() < deadline
            time.sleep(0.1)
        c.send(ProduceRequest(transactional_id=None, acks=i16(0), timeout=ms(10_000), topic_data=(
            TopicProduceData(name=topic, partition_data=(PartitionProduceData(index=i32(0), records=bytes(valid_batch(2))),)),)), 9)
        deadline = time.monotonic() + 10
        while high_watermark(c, topic) != 3:  # no answer, and the connection stays open
            assert time.monotonic() < deadline, "the acks=0 batch was not appended"
            time.sleep(0.05)
        c.send(ProduceRequest(transactional_id=None, acks=i16(0), timeout=ms(10_000), topic_data=(
            TopicProduceData(name=topic, partition_data=(PartitionProduceData(index=i32(0), records=bytes(valid_batch(1))),)),
            TopicProduceData(name=uniq("acks0-missing"), partition_data=(
                PartitionProduceData(index=i32(0), records=bytes(valid_batch(1))),)))), 9)
        assert c.is_closed(), "an acks=0 Produce with a failed partition left the connection open"
    with RawClient.connect(kafka_broker.bootstrap) as c:
        assert high_watermark(c, topic) == 4  # the partition that did not fail was appended
