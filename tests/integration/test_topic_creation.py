"""CreateTopics answers once the topic is named durably; its partitions' files are made after, off
the event loop (storage/partition_maker.py), as Kafka's broker makes a log after its controller
answered. Whatever the moment, a client sees every partition at once, and a kill -9 at any point
after the answer loses no partition."""

from __future__ import annotations

import uuid

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic

from minikafka.storage import files

pytestmark = pytest.mark.integration

TOPICS, PARTITIONS = 10, 12  # 120 partitions: the maker is often still at work when the client produces


def _create(bootstrap: str, prefix: str) -> list[str]:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    names = [f"{prefix}-{i}" for i in range(TOPICS)]
    for f in admin.create_topics([NewTopic(n, PARTITIONS, 1) for n in names], operation_timeout=60).values():
        f.result(60)
    return names


def _produce_everywhere(bootstrap: str, names: list[str], tag: str) -> None:
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True})
    errors: list[object] = []
    for n in names:
        for part in range(PARTITIONS):
            p.produce(n, value=f"{tag}-{part}".encode(), partition=part,
                      on_delivery=lambda err, _m: errors.append(err) if err else None)
    assert p.flush(60) == 0
    assert errors == []


def _consume_all(bootstrap: str, names: list[str], expected: int) -> set[tuple[str, int, str]]:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"g-{uuid.uuid4().hex[:6]}",
                  "enable.auto.commit": False})
    c.assign([TopicPartition(n, p, OFFSET_BEGINNING) for n in names for p in range(PARTITIONS)])
    got: set[tuple[str, int, str]] = set()
    try:
        for _ in range(600):  # bounded: 600 polls of at most 0.5 s
            if len(got) >= expected:
                break
            m = c.poll(0.5)
            if m is not None and m.error() is None:
                got.add((m.topic(), m.partition(), m.value().decode()))
    finally:
        c.close()
    return got


def test_every_partition_takes_records_as_soon_as_the_topic_is_created(kafka_broker) -> None:
    names = _create(kafka_broker.bootstrap, f"born-{uuid.uuid4().hex[:6]}")
    _produce_everywhere(kafka_broker.bootstrap, names, "first")
    got = _consume_all(kafka_broker.bootstrap, names, TOPICS * PARTITIONS)
    assert got == {(n, p, f"first-{p}") for n in names for p in range(PARTITIONS)}


def test_kill9_right_after_create_topics_loses_no_partition(broker_factory) -> None:
    broker = broker_factory()
    names = _create(broker.bootstrap, "early")
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_partitions([NewPartitions(names[0], PARTITIONS + 5)])[names[0]].result(60)
    broker.kill9()  # the partition maker may be anywhere in its work
    broker.start()
    _produce_everywhere(broker.bootstrap, names, "after")
    got = _consume_all(broker.bootstrap, names, TOPICS * PARTITIONS)
    assert got == {(n, p, f"after-{p}") for n in names for p in range(PARTITIONS)}
    broker.term()
    # Kafka's files, made for every partition: the grown topic's too.
    for n in names:
        for p in range(PARTITIONS + (5 if n == names[0] else 0)):
            d = broker.data_dir / f"{n}-{p}"
            assert files.read_partition_metadata(d) is not None, d
            assert (d / files.segment_name(0, files.LOG_SUFFIX)).exists(), d
