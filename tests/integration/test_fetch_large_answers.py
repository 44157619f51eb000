"""A Fetch answer above 4 MiB is written as its parts (protocol/fetch_response.GATHER_ABOVE), not
joined first: through the send thread part by part, through a StreamWriter (no send thread, or TLS)
joined. Either way the consumer reads every record, whole and in order, across many partitions."""

from __future__ import annotations

import hashlib
import time
import uuid

import pytest
from clients import create_topic
from confluent_kafka import Consumer, Producer, TopicPartition

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

PARTITIONS = 10
PER_PARTITION = 12
VALUE = 100 * 1024  # 10 partitions x 1.2 MB: the first answers are ~10 MB (1 MB per partition)


def _value(partition: int, i: int) -> bytes:
    seed = hashlib.sha256(b"%d-%d" % (partition, i)).digest()
    return (seed * (VALUE // len(seed) + 1))[:VALUE]


@pytest.mark.parametrize("send_thread", ["on", "off"])
def test_a_catch_up_read_across_partitions_gets_every_record(broker_factory, send_thread: str) -> None:
    broker = broker_factory(env={"MINIKAFKA_SEND_THREAD": "0"} if send_thread == "off" else None)
    topic = f"large-{uuid.uuid4().hex[:6]}"
    create_topic(broker.bootstrap, topic, partitions=PARTITIONS)
    p = Producer({"bootstrap.servers": broker.bootstrap, "acks": "all", "linger.ms": 5})
    for partition in range(PARTITIONS):
        for i in range(PER_PARTITION):
            p.produce(topic, _value(partition, i), key=b"%d" % i, partition=partition)
    assert p.flush(60) == 0

    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": f"g-{uuid.uuid4().hex[:6]}",
                  "enable.auto.commit": False, "log_level": 3, "fetch.max.bytes": 52428800,
                  "max.partition.fetch.bytes": 1048576})
    c.assign([TopicPartition(topic, partition, 0) for partition in range(PARTITIONS)])
    got: dict[int, list[tuple[int, bytes]]] = {partition: [] for partition in range(PARTITIONS)}
    deadline = time.monotonic() + 60
    try:
        while sum(map(len, got.values())) < PARTITIONS * PER_PARTITION and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is not None:
                assert m.error() is None, m.error()
                got[m.partition()].append((m.offset(), m.value()))
    finally:
        c.close()
    for partition in range(PARTITIONS):
        assert [o for o, _ in got[partition]] == list(range(PER_PARTITION)), partition
        assert all(v == _value(partition, o) for o, v in got[partition]), partition
