"""ListOffsets v7-v11 and the special timestamps (issue 16, item 3: `kafka-get-offsets --time -4`
needs v8). Expected answers are what Apache Kafka 4.3.1 answered for a 10-record partition with
record timestamps 1000..1009 (no tiered storage); conformance mode runs the same table against it.
"""

from __future__ import annotations

import importlib

import pytest
from clients import create_topic, produce_all, producer, uniq
from kio.schema.types import TopicName
from kio.static.primitive import i8, i32, i64
from rawclient import RawClient, ms

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

UNSUPPORTED_VERSION = 35
# timestamp -> (error, offset, timestamp, leader epoch) when the version knows it
KNOWN = {-1: (0, 10, -1, 0), -2: (0, 0, -1, 0), -3: (0, 9, 1009, 0), -4: (0, 0, -1, 0),
         -5: (0, -1, -1, -1), -6: (0, -1, -1, -1), 1005: (0, 5, 1005, 0)}
SINCE = {-4: 8, -5: 9, -6: 11}
REFUSED = (UNSUPPORTED_VERSION, -1, -1, -1)


def _expected(version: int, ts: int) -> tuple[int, int, int, int]:
    if ts == -7 or version < SINCE.get(ts, 0):
        return REFUSED
    return KNOWN[ts]


def test_special_timestamps_by_version(kafka_broker) -> None:
    topic = uniq("lo")
    create_topic(kafka_broker.bootstrap, topic, 1)
    produce_all(producer(kafka_broker.bootstrap),
                topic, [{"value": b"x", "partition": 0, "timestamp": 1000 + i} for i in range(10)])
    got, want = {}, {}
    for version in (7, 8, 9, 10, 11):
        m = importlib.import_module(f"kio.schema.list_offsets.v{version}.request")
        for ts in (-1, -2, -3, -4, -5, -6, -7, 1005):
            body = {"replica_id": i32(-1), "isolation_level": i8(0), "topics": (m.ListOffsetsTopic(
                name=TopicName(topic), partitions=(m.ListOffsetsPartition(
                    partition_index=i32(0), current_leader_epoch=i32(-1), timestamp=i64(ts)),)),)}
            if version >= 10:
                body["timeout"] = ms(5000)
            with RawClient.connect(kafka_broker.bootstrap) as c:
                p = c.request(m.ListOffsetsRequest(**body), version).topics[0].partitions[0]
            got[(version, ts)] = (int(p.error_code), p.offset, p.timestamp, p.leader_epoch)
            want[(version, ts)] = _expected(version, ts)
    assert got == want
