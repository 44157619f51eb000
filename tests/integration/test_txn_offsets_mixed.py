"""A transaction's offsets against a plain OffsetCommit of the same group and partition.

Kafka keeps the most recent of the two by their place in __consumer_offsets: a plain commit made
while the transaction is open, after its TxnOffsetCommit, survives the transaction's COMMIT marker;
a plain commit made before the TxnOffsetCommit is replaced by it. Runs against Apache Kafka in
conformance mode; the restart check needs minikafka.
"""

from __future__ import annotations

import pytest
from clients import create_topic, uniq, wait_until
from confluent_kafka import Consumer, Producer, TopicPartition

pytestmark = [pytest.mark.integration]

QUIET = {"log_level": 3}


def _commit(bs: str, group: str, tp: TopicPartition) -> None:
    c = Consumer({"bootstrap.servers": bs, "group.id": group, "enable.auto.commit": False, **QUIET})
    try:
        c.commit(offsets=[tp], asynchronous=False)
    finally:
        c.close()


def _committed(bs: str, group: str, topic: str) -> int:
    c = Consumer({"bootstrap.servers": bs, "group.id": group, "enable.auto.commit": False, **QUIET})
    try:
        return c.committed([TopicPartition(topic, 0)], timeout=10)[0].offset
    finally:
        c.close()


def _transaction_with_offsets(bs: str, topic: str, group: str, offset: int, plain_between: int | None) -> None:
    p = Producer({"bootstrap.servers": bs, "transactional.id": uniq("mixed"), **QUIET})
    p.init_transactions(30)
    p.begin_transaction()
    p.produce(topic, value=b"x", partition=0)
    meta = Consumer({"bootstrap.servers": bs, "group.id": group, **QUIET})
    try:
        p.send_offsets_to_transaction([TopicPartition(topic, 0, offset)], meta.consumer_group_metadata(), 30)
    finally:
        meta.close()
    if plain_between is not None:
        _commit(bs, group, TopicPartition(topic, 0, plain_between))
    p.commit_transaction(30)


@pytest.mark.parametrize("order", ["plain-after-txn", "plain-before-txn"])
def test_most_recent_commit_wins(kafka_broker, order: str) -> None:
    bs = kafka_broker.bootstrap
    topic, group = uniq("mixed-offsets"), uniq("mixed-group")
    create_topic(bs, topic, 1)
    if order == "plain-after-txn":
        _transaction_with_offsets(bs, topic, group, 5, plain_between=9)
        expected = 9
    else:
        _commit(bs, group, TopicPartition(topic, 0, 9))
        _transaction_with_offsets(bs, topic, group, 5, plain_between=None)
        expected = 5
    # The marker reaches __consumer_offsets after EndTxn is answered: wait for the offsets to settle
    # (the pending offset answers as unstable until then), then check they stay.
    wait_until(lambda: _committed(bs, group, topic) == expected, 10, f"committed offset {expected}")
    if not getattr(kafka_broker, "external", False):
        kafka_broker.restart()
        assert _committed(bs, group, topic) == expected
        kafka_broker.restart(hard=True)
        assert _committed(bs, group, topic) == expected


def _log_start(data_dir) -> int:
    """Base offset of the oldest __consumer_offsets segment (it moves when a compaction drops some)."""
    return min(int(f.stem) for f in (data_dir / "__consumer_offsets-0").glob("*.log"))


@pytest.mark.parametrize("order", ["plain-after-txn", "plain-before-txn"])
def test_most_recent_commit_wins_across_compaction_and_restart(broker_factory, order: str) -> None:
    """As above, with __consumer_offsets compacted while the transaction is open (its coordinator
    writes the live state again, after the pending TxnOffsetCommit): the order of the two commits
    must survive the rewrite, live and after a kill -9 restart."""
    # The cleaner looks again every log.cleaner.backoff.ms after a pass with nothing to do: at
    # Kafka's 15 s a look made during fill() leaves the wait below to a race with that backoff.
    broker = broker_factory(overrides={"offsets.topic.segment.bytes": "16384", "log.cleaner.backoff.ms": "100"})
    bs = broker.bootstrap
    topic, group, filler = uniq("mixed-offsets"), uniq("mixed-group"), uniq("filler-group")
    create_topic(bs, topic, 1)
    filler_consumer = Consumer({"bootstrap.servers": bs, "group.id": filler, "enable.auto.commit": False, **QUIET})

    def fill(n: int) -> None:  # each commit appends a batch to the single __consumer_offsets partition
        for i in range(n):
            filler_consumer.commit(offsets=[TopicPartition(topic, 0, i)], asynchronous=False)

    try:
        fill(200)
        if order == "plain-before-txn":
            _commit(bs, group, TopicPartition(topic, 0, 9))
        p = Producer({"bootstrap.servers": bs, "transactional.id": uniq("mixed"), **QUIET})
        p.init_transactions(30)
        p.begin_transaction()
        p.produce(topic, value=b"x", partition=0)
        meta = Consumer({"bootstrap.servers": bs, "group.id": group, **QUIET})
        p.send_offsets_to_transaction([TopicPartition(topic, 0, 5)], meta.consumer_group_metadata(), 30)
        meta.close()
        if order == "plain-after-txn":
            _commit(bs, group, TopicPartition(topic, 0, 9))
        start = _log_start(broker.data_dir)
        fill(300)
        wait_until(lambda: _log_start(broker.data_dir) > start, 20, "a compaction of __consumer_offsets")
        p.commit_transaction(30)
    finally:
        filler_consumer.close()
    expected = 9 if order == "plain-after-txn" else 5
    wait_until(lambda: _committed(bs, group, topic) == expected, 10, f"committed offset {expected}")
    broker.restart(hard=True)
    assert _committed(bs, group, topic) == expected


def test_deleting_the_group_drops_its_pending_transactional_offsets(kafka_broker) -> None:
    """DeleteGroups while a transaction holds a TxnOffsetCommit for the group: the transaction's
    COMMIT must not bring the offsets (or the group) back."""
    from confluent_kafka.admin import AdminClient

    bs = kafka_broker.bootstrap
    topic, group = uniq("mixed-offsets"), uniq("deleted-group")
    create_topic(bs, topic, 1)
    _commit(bs, group, TopicPartition(topic, 0, 1))
    tid = uniq("mixed")
    p = Producer({"bootstrap.servers": bs, "transactional.id": tid, **QUIET})
    p.init_transactions(30)
    p.begin_transaction()
    p.produce(topic, value=b"x", partition=0)
    meta = Consumer({"bootstrap.servers": bs, "group.id": group, **QUIET})
    try:
        p.send_offsets_to_transaction([TopicPartition(topic, 0, 5)], meta.consumer_group_metadata(), 30)
    finally:
        meta.close()
    admin = AdminClient({"bootstrap.servers": bs, **QUIET})
    admin.delete_consumer_groups([group], request_timeout=30)[group].result(30)
    p.commit_transaction(30)
    # InitProducerId with the same id answers only once the transaction is complete, markers and
    # all (Kafka answers EndTxn before it writes them): then the offset must still be unset.
    Producer({"bootstrap.servers": bs, "transactional.id": tid, **QUIET}).init_transactions(30)
    assert _committed(bs, group, topic) == -1001  # OFFSET_INVALID: no committed offset
    if not getattr(kafka_broker, "external", False):
        kafka_broker.restart(hard=True)
        assert _committed(bs, group, topic) == -1001

