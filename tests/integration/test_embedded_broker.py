"""The in-process broker (minikafka.embedded, the kafka_broker fixture's `minikafka_in_process`
mode): the same broker on a thread of the test process, driven by confluent-kafka over loopback.
It keeps the transactional guarantees, restarts cleanly on its data, runs beside another in the
same process, refuses a data directory another broker holds, and skips what needs a process."""

from __future__ import annotations

from pathlib import Path

import pytest
from clients import consumer, create_topic, produce_all, producer, read_to_eof, uniq
from confluent_kafka import TopicPartition

from minikafka.embedded import EmbeddedBroker
from minikafka.storage.errors import StartupError
from minikafka.testing import TEST_OVERRIDES, InProcessBroker

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]


def _transactions(bootstrap: str, topic: str) -> None:
    """Two transactions, the first aborted, the second committed: five records each."""
    p = producer(bootstrap, **{"transactional.id": uniq("emb"), "enable.idempotence": True})
    try:
        p.init_transactions(30)
        for commit in (False, True):
            p.begin_transaction()
            for i in range(5):
                p.produce(topic, value=f"{'c' if commit else 'a'}{i}".encode())
            if commit:
                p.commit_transaction(30)
            else:
                assert p.flush(30) == 0  # on the broker before the abort (abort drops unsent records)
                p.abort_transaction(30)
    finally:
        p.flush(10)
        p.close()


def _committed_values(bootstrap: str, topic: str) -> list[bytes]:
    return [r[4] for r in read_to_eof(bootstrap, [(topic, 0)], "read_committed")]


@pytest.mark.minikafka_in_process
def test_in_process_broker_keeps_transactions_across_a_clean_restart(kafka_broker) -> None:
    topic = uniq("emb-txn")
    create_topic(kafka_broker.bootstrap, topic)
    _transactions(kafka_broker.bootstrap, topic)
    committed = [f"c{i}".encode() for i in range(5)]
    assert _committed_values(kafka_broker.bootstrap, topic) == committed
    # Five aborted records, their abort marker, five committed and their commit marker.
    c = consumer(kafka_broker.bootstrap)
    try:
        assert c.get_watermark_offsets(TopicPartition(topic, 0), 10) == (0, 12)
    finally:
        c.close()
    if kafka_broker.external:
        return
    assert kafka_broker.in_process
    port = kafka_broker.port
    kafka_broker.restart()
    assert kafka_broker.port == port
    assert _committed_values(kafka_broker.bootstrap, topic) == committed


def test_two_embedded_brokers_in_one_process_keep_their_own_data(tmp_path: Path) -> None:
    with EmbeddedBroker(tmp_path / "a", overrides=TEST_OVERRIDES).start() as a, \
            EmbeddedBroker(tmp_path / "b", overrides=TEST_OVERRIDES).start() as b:
        assert a.port != b.port
        for broker, n in ((a, 3), (b, 7)):
            create_topic(broker.bootstrap, "t")
            p = producer(broker.bootstrap)
            try:
                produce_all(p, "t", [{"value": f"{broker.port}-{i}".encode()} for i in range(n)])
            finally:
                p.close()
        for broker, n in ((a, 3), (b, 7)):
            values = [r[4] for r in read_to_eof(broker.bootstrap, [("t", 0)], "read_uncommitted")]
            assert values == [f"{broker.port}-{i}".encode() for i in range(n)]
    assert not a.running and not b.running


def test_embedded_broker_refuses_a_data_dir_another_broker_holds(tmp_path: Path) -> None:
    with EmbeddedBroker(tmp_path / "data", overrides=TEST_OVERRIDES).start() as first:
        second = EmbeddedBroker(tmp_path / "data", overrides=TEST_OVERRIDES)
        with pytest.raises(StartupError, match="in use by another broker"):
            second.start()
        assert not second.running
        # The first keeps serving, its data untouched.
        create_topic(first.bootstrap, "still-here")
        p = producer(first.bootstrap)
        try:
            produce_all(p, "still-here", [{"value": b"x"}])
        finally:
            p.close()
        assert [r[4] for r in read_to_eof(first.bootstrap, [("still-here", 0)], "read_uncommitted")] == [b"x"]


def test_in_process_fixture_skips_what_needs_a_process(tmp_path: Path) -> None:
    broker = InProcessBroker(tmp_path / "data")
    for ask in (lambda: broker.kill9(), lambda: broker.pause(), lambda: broker.restart(hard=True)):
        with pytest.raises(pytest.skip.Exception, match="needs a broker process"):
            ask()
