"""A request carrying tagged fields its version does not define (as a newer client may send) is
answered normally: Kafka skips unknown tagged fields in the header and at every level of the body.
Runs against Apache Kafka in conformance mode too."""

from __future__ import annotations

import pytest
from clients import create_topic, uniq
from rawclient import RawClient, metadata_v12

from minikafka.protocol import codec

pytestmark = [pytest.mark.integration]


def test_metadata_with_unknown_tagged_fields_is_answered(kafka_broker) -> None:
    topic = uniq("tagged")
    create_topic(kafka_broker.bootstrap, topic, 2)
    with RawClient.connect(kafka_broker.bootstrap) as c:
        corr = c.next_correlation_id()
        frame = codec.encode_request(12, corr, "raw", metadata_v12(topic, auto_create=False))[4:]
        header_end = codec._header_walk(frame, True)
        topic_tags = header_end + 1 + 16 + 1 + len(topic)  # array length, topic id, compact name
        assert frame[header_end - 1] == frame[topic_tags] == frame[-1] == 0
        tagged = (frame[:header_end - 1] + bytes([1, 5, 2, 0xAB, 0xCD])            # header: tag 5
                  + frame[header_end:topic_tags] + bytes([1, 9, 1, 0x01])         # topic entry: tag 9
                  + frame[topic_tags + 1:-1] + bytes([2, 3, 0, 77, 3, 1, 2, 3]))  # body: tags 3, 77
        c.send_frame(tagged)
        got, resp = c.receive(3, 12)
        assert got == corr
        [t] = resp.topics
        assert (t.name, t.error_code, len(t.partitions)) == (topic, 0, 2)
        # The connection stays usable.
        assert c.request(metadata_v12(topic, auto_create=False), 12).topics[0].error_code == 0
