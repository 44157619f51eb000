"""The broker-side invariant monitor (issue 20, item 3; `minikafka serve --check-invariants`) on
real traffic: a transactional copy with aborts, an idempotent producer and read_committed readers
break nothing; a marker lost by a fault rule is a transaction that ended without its marker,
which the monitor reports. minikafka only."""

from __future__ import annotations

import pytest
from clients import create_topic, read_to_eof, uniq, wait_until
from confluent_kafka import Consumer, Producer, TopicPartition

pytestmark = pytest.mark.integration


def test_clean_transactional_traffic_breaks_no_invariant(broker_factory):
    broker = broker_factory(invariants=True)
    topic = uniq("inv")
    create_topic(broker.bootstrap, topic, 2)
    p = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": uniq("t"), "linger.ms": 5})
    group = uniq("g")
    # read_uncommitted: its OffsetFetch does not ask for stable offsets (read_committed would wait
    # out the open transaction's with UNSTABLE_OFFSET_COMMIT), so the committed one is answered
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": group, "enable.auto.commit": False,
                  "isolation.level": "read_uncommitted"})
    p.init_transactions(30)
    for t in range(20):
        p.begin_transaction()
        for i in range(10):
            p.produce(topic, b"%d-%d" % (t, i), partition=i % 2)
        p.send_offsets_to_transaction([TopicPartition(topic, 0, t + 1)], c.consumer_group_metadata(), 30)
        # the group's offset as others see it mid-transaction: the last committed transaction's
        last_committed = -1001 if t == 0 else t if (t - 1) % 4 != 3 else t - 1
        assert c.committed([TopicPartition(topic, 0)], timeout=10)[0].offset == last_committed
        if t % 4 == 3:
            p.abort_transaction(30)
        else:
            p.commit_transaction(30)
    c.close()
    idem = Producer({"bootstrap.servers": broker.bootstrap, "enable.idempotence": True, "linger.ms": 5})
    for i in range(200):
        idem.produce(topic, b"plain-%d" % i, partition=i % 2)
    assert idem.flush(30) == 0
    values = [r[4] for r in read_to_eof(broker.bootstrap, [(topic, 0), (topic, 1)], "read_committed")]
    assert len(values) == 15 * 10 + 200 and not any(v.startswith((b"3-", b"7-", b"11-")) for v in values)
    report = broker.faults.invariants()
    assert report["violations"] == {"sequence_gap": 0, "above_lso": 0, "aborted_visible": 0, "missing_marker": 0,
                                    "txn_offset_visible": 0}
    assert report["checked"]["appended"] > 0 and report["checked"]["read_committed"] > 0
    assert report["checked"]["offset_fetch"] >= 20


def test_a_lost_marker_is_reported_as_a_missing_marker(broker_factory):
    broker = broker_factory(invariants=True)
    topic = uniq("inv-hang")
    create_topic(broker.bootstrap, topic, 2)
    broker.faults.scenario("hanging_transaction", topic=topic, partition=1)
    p = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": uniq("t")})
    p.init_transactions(30)
    p.begin_transaction()
    p.produce(topic, b"a", partition=0)
    p.produce(topic, b"b", partition=1)
    p.commit_transaction(30)
    wait_until(lambda: broker.faults.invariants()["violations"]["missing_marker"] == 1, 15,
               "the monitor saw the transaction end without its marker on partition 1")
    recent = broker.faults.invariants()["recent"]
    assert [(v["kind"], v["topic"], v["partition"], v["offset"]) for v in recent] == [
        ("missing_marker", topic, 1, 0)]
