"""Virtual time (issue 20, item 2): the broker's clock paused and moved forward by a test, so
timeouts of minutes or days fire at once and deterministically, with confluent-kafka clients on
real sockets. Clients keep their own clocks (README: "Virtual time").

minikafka only: Kafka's clock cannot be moved (the tests skip against it).
"""

from __future__ import annotations

import time

import pytest
from clients import create_topic, read_to_eof, uniq, wait_until
from confluent_kafka import Consumer, KafkaException, Producer
from rawclient import RawClient, describe_producers, describe_transaction, latest
from txnclients import txn_producer

pytestmark = pytest.mark.integration
READ_COMMITTED = 1  # ListOffsets isolation level


def raw(bootstrap: str) -> RawClient:
    host, port = bootstrap.rsplit(":", 1)
    return RawClient(host, int(port))


@pytest.mark.minikafka_in_process
def test_a_15_minute_transaction_timeout_fires_when_the_clock_is_advanced(kafka_broker):
    """transaction.timeout.ms = 15 min: paused, nothing happens however long the test waits;
    advanced by 15 min, the coordinator has aborted the transaction and fenced the producer by the
    time the call returns, and read_committed readers move past its records."""
    started = time.monotonic()
    topic, txn_id = uniq("vt-timeout"), uniq("t")
    create_topic(kafka_broker.bootstrap, topic)
    p = txn_producer(kafka_broker.bootstrap, txn_id, **{"transaction.timeout.ms": 15 * 60 * 1000})
    p.begin_transaction()
    p.produce(topic, b"never committed")
    assert p.flush(10) == 0
    clock = kafka_broker.clock
    clock.pause()
    c = raw(kafka_broker.bootstrap)
    try:
        before = describe_transaction(c, txn_id)
        assert before.transaction_state == "Ongoing"
        assert latest(c, topic, 0, READ_COMMITTED) == 0  # the LSO waits (a consumer's end, read_committed)
        clock.advance(15 * 60 - 1)
        assert describe_transaction(c, txn_id).transaction_state == "Ongoing"  # 1 s short of it
        clock.advance(2)
        after = describe_transaction(c, txn_id)
        assert after.transaction_state == "CompleteAbort", after
        assert (after.producer_id, after.producer_epoch) != (before.producer_id, before.producer_epoch)
        assert latest(c, topic, 0, READ_COMMITTED) == 2  # past the record and the ABORT marker
    finally:
        c.close()
    assert read_to_eof(kafka_broker.bootstrap, [(topic, 0)], "read_committed") == []
    with pytest.raises(KafkaException):
        p.commit_transaction(10)  # the producer learns it was fenced by the timeout
    print(f"15-minute transaction timeout in {time.monotonic() - started:.2f} s of wall time")


def test_ids_and_producers_expire_when_days_pass(kafka_broker):
    """transactional.id.expiration.ms (7 days) and producer.id.expiration.ms (1 day)."""
    topic, txn_id = uniq("vt-expiry"), uniq("t")
    create_topic(kafka_broker.bootstrap, topic, config={"retention.ms": "-1"})  # 8 days would delete it
    p = txn_producer(kafka_broker.bootstrap, txn_id)
    p.begin_transaction()
    p.produce(topic, b"kept")
    p.commit_transaction(30)
    idem = Producer({"bootstrap.servers": kafka_broker.bootstrap, "enable.idempotence": True})
    idem.produce(topic, b"idempotent")
    assert idem.flush(10) == 0
    clock = kafka_broker.clock
    clock.pause()
    c = raw(kafka_broker.bootstrap)
    try:
        assert len(describe_producers(c, topic, 0)) == 2
        clock.advance(24 * 3600 + 60)  # past producer.id.expiration.ms
        assert describe_producers(c, topic, 0) == []
        assert describe_transaction(c, txn_id).transaction_state == "CompleteCommit"
        clock.advance(7 * 24 * 3600)  # past transactional.id.expiration.ms
        assert int(describe_transaction(c, txn_id).error_code) == 105  # TRANSACTIONAL_ID_NOT_FOUND
    finally:
        c.close()
    assert [r[4] for r in read_to_eof(kafka_broker.bootstrap, [(topic, 0)], "read_committed")] == [
        b"kept", b"idempotent"]


def test_retention_and_time_based_roll_follow_the_clock(kafka_broker):
    """segment.ms and retention.ms of one hour: a record written two hours after the first rolls
    the first segment, and half an hour later that segment is past retention and deleted; the log
    starts at the newer record."""
    topic = uniq("vt-retention")
    # LogAppendTime: the records carry the broker's (virtual) time; with CreateTime they carry the
    # producer's own clock, which virtual time does not move (both would be past retention here)
    create_topic(kafka_broker.bootstrap, topic, config={"segment.ms": "3600000", "retention.ms": "3600000",
                                                        "message.timestamp.type": "LogAppendTime"})
    p = Producer({"bootstrap.servers": kafka_broker.bootstrap})
    p.produce(topic, b"old")
    assert p.flush(10) == 0
    clock = kafka_broker.clock
    clock.pause()
    clock.advance(2 * 3600)
    p.produce(topic, b"new")  # appended after segment.ms: the old segment rolls
    assert p.flush(10) == 0
    clock.advance(1800)  # the old segment's record is 2.5 h old now, the new one 0.5 h
    c = Consumer({"bootstrap.servers": kafka_broker.bootstrap, "group.id": uniq("g")})
    try:
        from confluent_kafka import TopicPartition

        low, high = c.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)
    finally:
        c.close()
    assert (low, high) == (1, 2)


def test_a_session_timeout_expires_a_member_in_virtual_time(kafka_broker):
    """A member heartbeats in real time; advancing the broker's clock past session.timeout.ms
    expires it anyway (its last heartbeat is now that far in the past): its partitions are taken
    away, and the client, told on its next heartbeat, joins again and gets them back."""
    topic, group = uniq("vt-session"), uniq("g")
    create_topic(kafka_broker.bootstrap, topic)
    assigned: list[int] = []
    c = Consumer({"bootstrap.servers": kafka_broker.bootstrap, "group.id": group, "session.timeout.ms": 45000,
                  "heartbeat.interval.ms": 500})
    try:
        c.subscribe([topic], on_assign=lambda _c, parts: assigned.append(len(parts)))
        wait_until(lambda: (c.poll(0.1), assigned)[1] == [1], 30, "the first assignment")
        kafka_broker.clock.pause()
        kafka_broker.clock.advance(46)
        kafka_broker.clock.resume()
        wait_until(lambda: (c.poll(0.1), len(assigned))[1] >= 2, 30, "the member expired and joined again")
        assert assigned[-1] == 1
    finally:
        c.close()
