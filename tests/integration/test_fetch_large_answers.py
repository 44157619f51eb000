"""A Fetch answer above 4 MiB is written as its parts (protocol/fetch_response.GATHER_ABOVE), not
joined first: through the send thread part by part, through a StreamWriter (no send thread, or TLS)
joined. Either way the consumer reads every record, whole and in order, across many partitions."""

from __future__ import annotations

import hashlib
import uuid

import pytest
from clients import create_topic, read_all
from confluent_kafka import Producer

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

    got = read_all(broker.bootstrap, topic, PARTITIONS, PARTITIONS * PER_PARTITION, timeout=60,
                   **{"fetch.max.bytes": 52428800, "max.partition.fetch.bytes": 1048576})
    assert len(got) == PARTITIONS * PER_PARTITION
    for partition in range(PARTITIONS):
        mine = [m for m in got if m.partition() == partition]
        assert [m.offset() for m in mine] == list(range(PER_PARTITION)), partition
        assert all(m.value() == _value(partition, m.offset()) for m in mine), partition
