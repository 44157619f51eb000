"""Round trips with confluent-kafka: codecs, keys, headers, timestamps, partitions, offsets."""

from __future__ import annotations

import time

import pytest
from clients import admin, consume_n, consumer, create_topic, produce_all, producer, read_all, wait_until
from confluent_kafka import TopicPartition
from confluent_kafka.admin import ConfigResource, NewPartitions

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4", "zstd"])
def test_roundtrip_every_codec(kafka_broker, codec):
    topic = f"codec-{codec}"
    create_topic(kafka_broker.bootstrap, topic, 1)
    p = producer(kafka_broker.bootstrap, **{"compression.type": codec, "batch.num.messages": 50})
    base_ts = int(time.time() * 1000) - 10_000
    sent = [
        {"key": None if i % 7 == 0 else f"k{i}".encode(), "value": (f"v{i}-" * (i % 13)).encode() or None,
         "headers": [("h", f"{i}".encode()), ("empty", None)] if i % 2 else None, "timestamp": base_ts + i}
        for i in range(300)
    ]
    produce_all(p, topic, sent)
    got = read_all(kafka_broker.bootstrap, topic, 1, len(sent))
    assert len(got) == len(sent)
    for i, (m, s) in enumerate(zip(got, sent, strict=True)):
        assert m.offset() == i
        assert m.key() == s["key"]
        assert m.value() == s["value"]
        assert m.timestamp() == (1, base_ts + i)  # CreateTime
        hdrs = m.headers()
        if s["headers"]:
            assert hdrs == [("h", f"{i}".encode()), ("empty", None)]
        else:
            assert not hdrs


def test_several_partitions_offsets_and_watermarks(kafka_broker):
    topic = "multi"
    create_topic(kafka_broker.bootstrap, topic, 4)
    p = producer(kafka_broker.bootstrap)
    delivered = produce_all(p, topic, [{"value": f"{i}".encode(), "partition": i % 4} for i in range(400)])
    per_partition: dict[int, list[int]] = {}
    for m in delivered:
        per_partition.setdefault(m.partition(), []).append(m.offset())
    for offsets in per_partition.values():
        assert sorted(offsets) == list(range(100))
    c = consumer(kafka_broker.bootstrap)
    try:
        for part in range(4):
            assert c.get_watermark_offsets(TopicPartition(topic, part), timeout=10, cached=False) == (0, 100)
        c.assign([TopicPartition(topic, 2, 50)])
        msgs = consume_n(c, 50)
        assert [m.offset() for m in msgs] == list(range(50, 100))
        assert all(int(m.value()) % 4 == 2 for m in msgs)
    finally:
        c.close()


def test_offsets_for_times(kafka_broker):
    topic = "times"
    create_topic(kafka_broker.bootstrap, topic, 1)
    p = producer(kafka_broker.bootstrap, **{"compression.type": "lz4"})
    t0 = 1_700_000_000_000
    # Timestamps not in offset order inside batches, to check the exact record is found.
    stamps = [t0 + 10 * i for i in range(200)]
    produce_all(p, topic, [{"value": b"x", "timestamp": ts} for ts in stamps])
    c = consumer(kafka_broker.bootstrap)
    try:
        for target, expected in [(t0, 0), (t0 + 5, 1), (t0 + 10 * 150, 150), (t0 + 10 * 199, 199),
                                 (t0 - 1, 0)]:
            res = c.offsets_for_times([TopicPartition(topic, 0, target)], timeout=10)
            assert res[0].offset == expected, target
        res = c.offsets_for_times([TopicPartition(topic, 0, t0 + 10 * 200)], timeout=10)
        assert res[0].offset == -1  # nothing that late: Kafka answers -1 (OFFSET_END in the client)
    finally:
        c.close()


def test_topic_auto_creation_on_metadata(kafka_broker):
    p = producer(kafka_broker.bootstrap)
    produce_all(p, "auto-created", [{"value": b"hello"}])
    md = admin(kafka_broker.bootstrap).list_topics("auto-created", timeout=10)
    assert len(md.topics["auto-created"].partitions) == 1
    got = read_all(kafka_broker.bootstrap, "auto-created", 1, 1)
    assert [m.value() for m in got] == [b"hello"]


def test_admin_create_describe_grow_delete(kafka_broker):
    a = admin(kafka_broker.bootstrap)
    create_topic(kafka_broker.bootstrap, "adm", 2, {"retention.ms": "123456", "cleanup.policy": "delete"})
    res = a.describe_configs([ConfigResource(ConfigResource.Type.TOPIC, "adm")])
    configs = list(res.values())[0].result(10)
    assert configs["retention.ms"].value == "123456"
    assert configs["cleanup.policy"].value == "delete"
    assert configs["max.message.bytes"].value == "1048588"
    # Growing the partition count.
    a.create_partitions([NewPartitions("adm", 5)])["adm"].result(10)
    deadline = time.monotonic() + 10
    while len(a.list_topics("adm", timeout=5).topics["adm"].partitions) != 5:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    # Shrinking is refused with INVALID_PARTITIONS.
    with pytest.raises(Exception) as err:
        a.create_partitions([NewPartitions("adm", 3)])["adm"].result(10)
    assert "INVALID_PARTITIONS" in str(err.value) or "partitions" in str(err.value).lower()
    # Creating it again is TOPIC_ALREADY_EXISTS.
    with pytest.raises(Exception) as err:
        a.create_topics([__import__("confluent_kafka.admin", fromlist=["NewTopic"]).NewTopic("adm", 1, 1)])["adm"].result(10)
    assert "TOPIC_ALREADY_EXISTS" in str(err.value)
    a.delete_topics(["adm"], operation_timeout=10)["adm"].result(10)
    deadline = time.monotonic() + 10
    while "adm" in a.list_topics(timeout=5).topics:
        assert time.monotonic() < deadline
        time.sleep(0.05)


def test_replication_factor_above_one_is_refused(kafka_broker):
    from confluent_kafka.admin import NewTopic

    a = admin(kafka_broker.bootstrap)
    fut = a.create_topics([NewTopic("rf3", 1, 3)])["rf3"]
    with pytest.raises(Exception) as err:
        fut.result(10)
    assert "INVALID_REPLICATION_FACTOR" in str(err.value)


def test_a_clean_stop_answers_a_parked_fetch_at_once(tmp_path):
    """A Fetch parked for 30 s when the broker is asked to stop gets its (empty) answer, as every
    request in hand does. Before, a wake-up without new data parked it again: the stop waited out
    its whole grace period and then closed the connection with the Fetch unanswered."""
    from concurrent.futures import ThreadPoolExecutor

    from rawclient import RawClient, fetch_v12

    from minikafka.embedded import EmbeddedBroker

    broker = EmbeddedBroker(tmp_path / "data").start()
    try:
        create_topic(broker.bootstrap, "parked", 1)
        with RawClient("127.0.0.1", broker.port, timeout=30) as c, ThreadPoolExecutor(1) as pool:
            answer = pool.submit(c.request, fetch_v12("parked", 0, 0, max_wait_ms=30_000), 12)
            wait_until(lambda: broker._broker.purgatory.parked == 1, 10, "the Fetch parked")
            broker.term()
            p = answer.result(timeout=30).responses[0].partitions[0]
            assert (p.error_code, p.high_watermark, p.records or b"") == (0, 0, b"")
    finally:
        if broker.running:
            broker.term()


def test_a_clean_stop_closes_a_connection_whose_waiting_request_it_answered(tmp_path):
    """A JoinGroup waiting out the group's initial rebalance delay (30 s) when the broker is asked
    to stop is answered NOT_COORDINATOR, and its connection is closed then. Before, the request
    finished in the connection's lane and nothing closed the connection: the stop waited out its
    5 s grace period before cancelling it."""
    import datetime
    from concurrent.futures import ThreadPoolExecutor

    from kio.schema.join_group.v3.request import JoinGroupRequest, JoinGroupRequestProtocol
    from kio.static.primitive import i32Timedelta
    from rawclient import RawClient

    from minikafka.embedded import EmbeddedBroker
    from minikafka.testing import TEST_OVERRIDES

    join = JoinGroupRequest(group_id="g", session_timeout=i32Timedelta.parse(datetime.timedelta(seconds=10)),
                            rebalance_timeout=i32Timedelta.parse(datetime.timedelta(seconds=60)), member_id="",
                            protocol_type="consumer",
                            protocols=(JoinGroupRequestProtocol(name="range", metadata=b""),))
    broker = EmbeddedBroker(tmp_path / "data", overrides={
        **TEST_OVERRIDES, "group.initial.rebalance.delay.ms": "30000"}).start()
    try:
        with RawClient("127.0.0.1", broker.port, timeout=30) as c, ThreadPoolExecutor(1) as pool:
            answer = pool.submit(c.request, join, 3)

            def parked() -> bool:
                groups = broker._broker.services.started_groups
                return groups is not None and "g" in groups.groups and len(groups.groups["g"].members) == 1
            wait_until(parked, 10, "the JoinGroup waiting out the initial delay")
            started = time.monotonic()
            broker.term()
            # Milliseconds when the connection is closed at once; the grace period is 5 s.
            assert time.monotonic() - started < 2.5
            assert answer.result(timeout=30).error_code == 16  # NOT_COORDINATOR
    finally:
        if broker.running:
            broker.term()


def test_parked_fetch_wakes_on_append(kafka_broker):
    """A consumer waiting with a long fetch.wait.max.ms gets a record as soon as it is appended:
    the test's own deadline (5 s) is far below the 30 s the fetch would otherwise wait."""
    topic = "longpoll"
    create_topic(kafka_broker.bootstrap, topic, 1)
    c = consumer(kafka_broker.bootstrap, **{"fetch.wait.max.ms": 30000, "fetch.min.bytes": 1})
    try:
        c.assign([TopicPartition(topic, 0, 0)])
        assert c.consume(1, timeout=1.0) == []  # the fetch is now parked at the log end
        p = producer(kafka_broker.bootstrap, **{"linger.ms": 0})
        produce_all(p, topic, [{"value": b"wake"}])
        got = consume_n(c, 1, timeout=5)
        assert [m.value() for m in got] == [b"wake"]
    finally:
        c.close()
