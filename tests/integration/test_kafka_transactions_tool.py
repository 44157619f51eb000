"""Kafka's own kafka-transactions.sh (TransactionsCommand, KIP-664) against the broker.

list and describe read the coordinator (ListTransactions, DescribeTransactions),
describe-producers reads a partition's producer state (DescribeProducers), find-hanging
cross-checks the two, and abort ends a transaction with WriteTxnMarkers sent by the admin client.
Runs against minikafka and, in the conformance run, against Apache Kafka.
"""

from __future__ import annotations

import time
import uuid

import pytest
from clients import create_topic, wait_until, watermarks
from confluent_kafka import Producer, TopicPartition

pytestmark = [pytest.mark.integration, pytest.mark.kafka_reference]

TOOL = "org.apache.kafka.tools.TransactionsCommand"


@pytest.fixture(scope="module")
def kafka_ref_tools():
    import kafka_ref

    kafka_ref.jars_or_skip("kafka-transactions.sh")
    return kafka_ref


def _rows(stdout: str) -> list[dict[str, str]]:
    lines = [line for line in stdout.splitlines() if line.strip()]
    if not lines:
        return []
    header = [h.strip() for h in lines[0].split("\t") if h.strip()]
    return [dict(zip(header, [c.strip() for c in line.split("\t")], strict=False)) for line in lines[1:]]



def test_list_describe_and_abort_an_open_transaction(kafka_broker, kafka_ref_tools):
    suffix = uuid.uuid4().hex[:8]
    topic, txn_id = f"tool-{suffix}", f"tool-txn-{suffix}"
    create_topic(kafka_broker.bootstrap, topic, 1)
    p = Producer({"bootstrap.servers": kafka_broker.bootstrap, "transactional.id": txn_id,
                  "transaction.timeout.ms": 600000})
    p.init_transactions(30)
    p.begin_transaction()
    p.produce(topic, value=b"left open", partition=0)
    assert p.flush(30) == 0
    tp = TopicPartition(topic, 0)
    lso, hwm = watermarks(kafka_broker.bootstrap, tp)
    assert (lso, hwm) == (0, 1)  # the open transaction holds the LSO back

    def tool(*args: str) -> list[dict[str, str]]:
        proc = kafka_ref_tools.kafka_tool(TOOL, "--bootstrap-server", kafka_broker.bootstrap, *args)
        assert proc.returncode == 0, proc.stderr[-2000:]
        return _rows(proc.stdout)

    listed = {r["TransactionalId"]: r for r in tool("list")}
    assert listed[txn_id]["TransactionState"] == "Ongoing"
    described = tool("describe", "--transactional-id", txn_id)
    assert described[0]["TransactionState"] == "Ongoing"
    assert described[0]["TopicPartitions"] == f"{topic}-0"
    producers = tool("describe-producers", "--topic", topic, "--partition", "0")
    assert [r["CurrentTransactionStartOffset"] for r in producers] == ["0"]
    assert producers[0]["ProducerId"] == listed[txn_id]["ProducerId"]

    # The coordinator knows this transaction, so it is not hanging.
    assert tool("find-hanging", "--topic", topic, "--partition", "0", "--max-transaction-timeout", "0") == []

    # An admin abort writes the ABORT marker through WriteTxnMarkers; the LSO catches up.
    tool("abort", "--topic", topic, "--partition", "0", "--start-offset", "0")
    deadline = time.monotonic() + 30
    while watermarks(kafka_broker.bootstrap, tp) != (2, 2):
        assert time.monotonic() < deadline, watermarks(kafka_broker.bootstrap, tp)
        time.sleep(0.1)
    producers = tool("describe-producers", "--topic", topic, "--partition", "0")
    assert [r["CurrentTransactionStartOffset"] for r in producers] == ["None"]


def test_a_hanging_transaction_made_by_a_lost_marker_is_found_and_aborted(kafka_broker, kafka_ref_tools):
    """minikafka's hanging_transaction scenario loses the COMMIT marker on one partition: the
    coordinator completes the transaction, the partition keeps it open and its LSO stays behind.
    Kafka's own find-hanging finds it there (and only there), and abort ends it."""
    suffix = uuid.uuid4().hex[:8]
    topic, txn_id = f"hang-{suffix}", f"hang-txn-{suffix}"
    create_topic(kafka_broker.bootstrap, topic, 2)
    rule = kafka_broker.faults.scenario("hanging_transaction", topic=topic, partition=1)[0]
    p = Producer({"bootstrap.servers": kafka_broker.bootstrap, "transactional.id": txn_id})
    p.init_transactions(30)
    p.begin_transaction()
    p.produce(topic, value=b"kept", partition=0)
    p.produce(topic, value=b"hangs", partition=1)
    p.commit_transaction(30)
    assert kafka_broker.faults.get(rule["id"])["fired"] == 1
    assert watermarks(kafka_broker.bootstrap, TopicPartition(topic, 0)) == (2, 2)
    assert watermarks(kafka_broker.bootstrap, TopicPartition(topic, 1)) == (0, 1)  # held back

    def tool(*args: str) -> list[dict[str, str]]:
        proc = kafka_ref_tools.kafka_tool(TOOL, "--bootstrap-server", kafka_broker.bootstrap, *args)
        assert proc.returncode == 0, proc.stderr[-2000:]
        return _rows(proc.stdout)

    assert tool("describe", "--transactional-id", txn_id)[0]["TransactionState"] == "CompleteCommit"
    hanging = tool("find-hanging", "--topic", topic, "--max-transaction-timeout", "0")
    assert [(r["Topic"], r["Partition"], r["StartOffset"]) for r in hanging] == [(topic, "1", "0")]
    tool("abort", "--topic", topic, "--partition", "1", "--start-offset", "0")
    wait_until(lambda: watermarks(kafka_broker.bootstrap, TopicPartition(topic, 1)) == (2, 2), 30,
               "the LSO past the aborted transaction")
    assert tool("find-hanging", "--topic", topic, "--max-transaction-timeout", "0") == []
