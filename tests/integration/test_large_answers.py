"""Large Fetch answers cost the broker no fresh memory once it is warm (broker/allocator.py).

A catch-up read across ten partitions gets answers of up to 10 MiB: a buffer of up to 1 MiB per
partition read from the segment files, and what the socket does not take at once queued for the
send thread. With glibc's defaults those buffers came as fresh pages, 350-500 page faults per MB
served (2026-11-29); the broker's process keeps them in its heap instead. The test counts the
broker process's minor page faults (BrokerProcess.minor_faults) over repeated reads of the same
data, and checks every read is whole. minikafka's own: it looks at the broker's process.
"""

from __future__ import annotations

import sys
import time

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from clients import create_topic

pytestmark = [pytest.mark.integration,
              pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's allocator, /proc")]

PARTITIONS = 10
RECORDS = 20_000
VALUE = b"v" * 1024


def _read_all(bootstrap: str, topic: str) -> int:
    """Every record from the beginning, as the bench's catch-up consumer reads (batches of up to
    10,000, short queue back-off), until all are in or 60 s pass."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "large-answers", "enable.auto.commit": False,
                  "fetch.queue.backoff.ms": 10, "fetch.wait.max.ms": 500, "queued.min.messages": 100_000})
    try:
        c.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
        got = 0
        deadline = time.monotonic() + 60
        while got < RECORDS and time.monotonic() < deadline:
            for m in c.consume(num_messages=min(10_000, RECORDS - got), timeout=0.5):
                if m.error() is None:
                    assert m.value() == VALUE
                    got += 1
        return got
    finally:
        c.close()


def test_a_catch_up_read_across_ten_partitions_takes_no_fresh_pages_once_warm(broker_factory) -> None:
    broker = broker_factory()
    topic = "large-answers"
    create_topic(broker.bootstrap, topic, PARTITIONS)
    p = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 20, "batch.size": 1_000_000})
    for i in range(RECORDS):
        while True:
            try:
                p.produce(topic, VALUE, partition=i % PARTITIONS)
                break
            except BufferError:
                p.poll(0.1)
    assert p.flush(60) == 0

    megabytes = RECORDS * len(VALUE) / 1e6
    per_mb = []
    for _ in range(3):  # the first read grows the heap to what the answers need
        before = broker.minor_faults()
        assert _read_all(broker.bootstrap, topic) == RECORDS
        per_mb.append((broker.minor_faults() - before) / megabytes)
    # glibc's defaults: 350-500 per MB in every read (this test, the bench); kept in the heap: below 1 once warm.
    assert min(per_mb[1:]) < 50, f"minor page faults per MB served, read by read: {per_mb}"
