"""Fetch v13-v18 name topics by id only (KIP-516): a known id reads the topic's records, an id
the broker does not know (or the all-zero id) is answered UNKNOWN_TOPIC_ID on every partition
asked for, a partition the topic does not have UNKNOWN_TOPIC_OR_PARTITION; each answer carries the
id it was asked for. The same answers from Apache Kafka 4.3.1 in conformance mode (issue 18, item 3)."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from clients import uniq
from kio.schema.fetch.v18.request import FetchPartition, FetchRequest, FetchTopic
from kio.static.primitive import i8, i32, i64
from rawclient import RawClient, create_topics_v7, metadata_v12, ms, produce, valid_batch

from minikafka.protocol import versions
from minikafka.protocol.records import iter_records, split_batches

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

UNKNOWN_TOPIC_OR_PARTITION, UNKNOWN_TOPIC_ID = 3, 100


def _fetch(topics: list[tuple[uuid.UUID | None, list[int]]], isolation: int = 0, version: int = 18) -> Any:
    """A Fetch request of `version` (v13-v18; built as v18, then in the version's own classes)."""
    return versions.convert(FetchRequest(
        max_wait=ms(0), min_bytes=i32(1), isolation_level=i8(isolation),
        topics=tuple(FetchTopic(topic_id=tid, partitions=tuple(
            FetchPartition(partition=i32(p), fetch_offset=i64(0), partition_max_bytes=i32(1 << 20)) for p in parts))
            for tid, parts in topics),
        forgotten_topics_data=(),
    ), versions.request_class(1, version))


def _values(records: bytes) -> list[bytes]:
    data = bytes(records)
    return [r.value for pos, _h in split_batches(data) for r in iter_records(data, pos)]


@pytest.mark.parametrize("version", [13, 15, 16, 17, 18])
def test_topics_named_by_id(kafka_broker, version: int) -> None:
    topic, other = uniq("byid"), uniq("byid-other")
    stranger, zero = uuid.uuid4(), None  # kio writes None as the all-zero id
    with RawClient.connect(kafka_broker.bootstrap) as c:
        for name, parts in ((topic, 2), (other, 1)):
            created = c.request(create_topics_v7(name, parts), 7)
            assert int(created.topics[0].error_code) == 0
        assert produce(c, topic, 1, valid_batch(3, prefix=b"a")).error_code == 0
        assert produce(c, other, 0, valid_batch(2, prefix=b"b")).error_code == 0
        md = c.request(metadata_v12(topic, other, auto_create=False), 12)
        ids = {t.name: t.topic_id for t in md.topics}
        assert all(ids.values())

        # Unknown ids go in requests of their own: Kafka 4.3.1 fails a v15+ Fetch that mixes known
        # topics, a missing partition and two unknown ids with a NullPointerException
        # (UNKNOWN_SERVER_ERROR), which is not a behaviour to copy.
        got = {}
        for asked in ([(ids[topic], [1, 0, 7]), (ids[other], [0])], [(stranger, [0, 1])], [(zero, [0])],
                      [(ids[other], [0]), (stranger, [0])]):
            resp = c.request(_fetch(asked, version=version), version)
            assert int(resp.error_code) == 0 and resp.session_id == 0
            # Kafka answers the partitions it read first and the failed ones after them, so one topic
            # may appear twice; minikafka keeps the request's order. Either way, every id asked is answered.
            assert {t.topic_id for t in resp.responses} == {tid for tid, _ in asked}
            got.update({(t.topic_id, p.partition_index): p for t in resp.responses for p in t.partitions})
        assert set(got) == {(ids[topic], 1), (ids[topic], 0), (ids[topic], 7), (stranger, 0), (stranger, 1),
                            (ids[other], 0), (zero, 0)}

        assert int(got[ids[topic], 1].error_code) == 0
        assert _values(got[ids[topic], 1].records) == [b"a0", b"a1", b"a2"]
        assert got[ids[topic], 1].high_watermark == 3
        assert int(got[ids[topic], 0].error_code) == 0 and not got[ids[topic], 0].records
        assert _values(got[ids[other], 0].records) == [b"b0", b"b1"]
        assert int(got[ids[topic], 7].error_code) == UNKNOWN_TOPIC_OR_PARTITION
        for key in ((stranger, 0), (stranger, 1), (zero, 0)):
            p = got[key]
            assert int(p.error_code) == UNKNOWN_TOPIC_ID, key
            assert (p.high_watermark, p.last_stable_offset, p.log_start_offset) == (-1, -1, -1)
            assert not p.records


def test_read_committed_by_id_stops_at_the_last_stable_offset(kafka_broker) -> None:
    """The by-id path is the same read: read_committed answers the LSO and no aborted list when
    nothing was aborted."""
    topic = uniq("byid-rc")
    with RawClient.connect(kafka_broker.bootstrap) as c:
        assert int(c.request(create_topics_v7(topic, 1), 7).topics[0].error_code) == 0
        assert produce(c, topic, 0, valid_batch(4)).error_code == 0
        tid = c.request(metadata_v12(topic, auto_create=False), 12).topics[0].topic_id
        resp = c.request(_fetch([(tid, [0])], isolation=1), 18)
        p = resp.responses[0].partitions[0]
        assert resp.responses[0].topic_id == tid
        assert (int(p.error_code), p.high_watermark, p.last_stable_offset) == (0, 4, 4)
        assert len(_values(p.records)) == 4
        assert p.aborted_transactions == ()
