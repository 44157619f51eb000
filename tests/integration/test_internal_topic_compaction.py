"""The internal topics stay bounded: once a partition of __consumer_offsets or __transaction_state
rolls, its coordinator writes the live state again and the older segments are deleted; a restart
replays the bounded log to the same offsets and transactional ids."""

from __future__ import annotations

import time

import pytest
from clients import create_topic
from confluent_kafka import Consumer, Producer, TopicPartition

pytestmark = pytest.mark.integration

SMALL = {"offsets.topic.segment.bytes": "16384", "transaction.state.log.segment.bytes": "16384"}


def _segments(data_dir, topic: str) -> list:
    return sorted((data_dir / f"{topic}-0").glob("*.log"))


def _wait_bounded(data_dir, topic: str, timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while len(_segments(data_dir, topic)) > 2:
        assert time.monotonic() < deadline, f"{topic} still has {len(_segments(data_dir, topic))} segments"
        time.sleep(0.1)


def test_consumer_offsets_and_transaction_state_stay_bounded(broker_factory):
    broker = broker_factory(overrides=SMALL)
    create_topic(broker.bootstrap, "src", 4)
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "bounded", "enable.auto.commit": False})
    for i in range(600):  # each commit appends a batch; 16 KiB segments roll many times
        c.commit(offsets=[TopicPartition("src", i % 4, i)], asynchronous=False)
    p = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": "bounded-txn"})
    p.init_transactions(30)
    for i in range(150):  # three records in __transaction_state per transaction
        p.begin_transaction()
        p.produce("src", value=b"x", partition=0)
        p.commit_transaction(30)
    _wait_bounded(broker.data_dir, "__consumer_offsets")
    _wait_bounded(broker.data_dir, "__transaction_state")
    expected = {tp.partition: tp.offset for tp in c.committed([TopicPartition("src", p) for p in range(4)], timeout=10)}
    assert expected == {0: 596, 1: 597, 2: 598, 3: 599}
    c.close()

    broker.restart(hard=True)  # replay of the bounded logs
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "bounded", "enable.auto.commit": False})
    after = {tp.partition: tp.offset for tp in c.committed([TopicPartition("src", p) for p in range(4)], timeout=10)}
    c.close()
    assert after == expected
    p2 = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": "bounded-txn"})
    p2.init_transactions(30)  # the transactional id survived compaction: same producer, next epoch
    p2.begin_transaction()
    p2.produce("src", value=b"after", partition=0)
    p2.commit_transaction(30)
