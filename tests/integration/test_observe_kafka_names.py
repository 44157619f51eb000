"""Issue 22: minikafka's /metrics against Apache Kafka 4.3.1 scraped through the Prometheus JMX
exporter (its Java agent from Maven Central, with the Kafka rules in tests/data): one workload on
both, and every family minikafka claims to share with Kafka (metrics.KAFKA_JMX_NAMES) has the
same name, the same labels and, where the workload fixes it, the same value.

Runs with `make conformance` (MINIKAFKA_TARGET=kafka), which starts both brokers; skips otherwise.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from clients import consume_n, consumer, create_topic, produce_all, producer, uniq
# At import, as the other modules do: later, "conftest" may name tests/spark's.
from conftest import KAFKA_EXTRA_PROPS, KAFKA_HEAP, conformance_mode
from confluent_kafka import TopicPartition
from rawclient import RawClient, produce, valid_batch
from test_observe_metrics import Scrape
from txnclients import close_quietly, flush_raising, txn_producer

from minikafka.observe.metrics import KAFKA_JMX_NAMES
from minikafka.protocol.errors import ErrorCode
from minikafka.protocol.records import set_base_offset
from minikafka.testing import BrokerProcess, free_port

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
RULES = REPO / "tests" / "data" / "jmx-exporter-kafka.yml"
AGENT_VERSION = "1.0.1"  # io.prometheus.jmx:jmx_prometheus_javaagent, as Maven Central serves it here
AGENT = REPO / ".cache" / "jmx-exporter" / f"jmx_prometheus_javaagent-{AGENT_VERSION}.jar"
# Labels only Kafka has: its network processor threads (minikafka has one event loop).
KAFKA_ONLY_LABELS = {"networkProcessor"}


def _agent_or_skip() -> Path:
    if AGENT.exists():
        return AGENT
    mvn = os.environ.get("MVN", "mvn")
    proc = subprocess.run([mvn, "-q", "dependency:copy",
                           f"-Dartifact=io.prometheus.jmx:jmx_prometheus_javaagent:{AGENT_VERSION}",
                           f"-DoutputDirectory={AGENT.parent}"], capture_output=True, text=True, timeout=300,
                          check=False)
    if proc.returncode != 0 or not AGENT.exists():
        pytest.skip(f"the JMX exporter's agent could not be fetched with Maven: {proc.stdout[-500:]}{proc.stderr[-500:]}")
    return AGENT


@pytest.fixture
def kafka_with_jmx_exporter(tmp_path: Path) -> Iterator[Any]:
    """Apache Kafka with the JMX exporter's agent: (bootstrap, metrics url)."""
    if not conformance_mode():
        pytest.skip("compares with Apache Kafka: runs with `make conformance`")
    import kafka_ref

    try:
        kafka_ref.ensure_kafka_jars()
    except kafka_ref.KafkaRefError as exc:
        pytest.skip(f"Apache Kafka unavailable: {str(exc).splitlines()[0]}")
    port = free_port()
    kafka = kafka_ref.ApacheKafka(heap_opts=KAFKA_HEAP,
                                  env={"KAFKA_OPTS": f"-javaagent:{_agent_or_skip()}=127.0.0.1:{port}:{RULES}"})
    kafka.start(tmp_path / "kafka", extra_props=KAFKA_EXTRA_PROPS)
    try:
        yield kafka.bootstrap, f"http://127.0.0.1:{port}/metrics"
    finally:
        kafka.stop()


def workload(bs: str) -> dict[str, Any]:
    """The same clients doing the same things on either broker; what the checks need to know."""
    topic, group = "observed", uniq("g")
    create_topic(bs, topic, partitions=2)
    p = producer(bs, **{"enable.idempotence": True})
    produce_all(p, topic, ({"key": f"k{i}", "value": b"v" * 20, "partition": 0} for i in range(10)))
    t = txn_producer(bs, uniq("t"))
    t.begin_transaction()
    for part in (0, 0, 1, 1):
        t.produce(topic, b"committed", partition=part)
    t.commit_transaction(30)
    t.begin_transaction()
    t.produce(topic, b"aborted", partition=0)
    flush_raising(t)
    t.abort_transaction(30)
    hung = txn_producer(bs, uniq("hung"))
    hung.begin_transaction()
    hung.produce(topic, b"open-1", partition=1)
    hung.produce(topic, b"open-2", partition=1)
    flush_raising(hung)
    c = consumer(bs, **{"group.id": group})
    c.subscribe([topic])
    consume_n(c, 11)  # read_uncommitted: 10 + 4 + 1 + 2 = 17 records, 11 is enough
    c.commit(offsets=[TopicPartition(topic, 0, 3)], asynchronous=False)
    corrupt, invalid = valid_batch(2), valid_batch(2)
    corrupt[-1] ^= 0xFF  # not a failed produce for Kafka's meter
    set_base_offset(invalid, 0, 5)  # one
    with RawClient.connect(bs) as raw:
        assert produce(raw, topic, 0, bytes(corrupt)).error_code == ErrorCode.corrupt_message
        assert produce(raw, topic, 0, bytes(invalid)).error_code == ErrorCode.invalid_record
    return {"topic": topic, "clients": (p, t, hung, c)}


def _label_sets(s: Scrape, name: str) -> set[frozenset[str]]:
    return {frozenset(k for k, _ in labels if k not in KAFKA_ONLY_LABELS)
            for (n, labels) in s.samples if n == name}


def test_the_families_shared_with_kafka_have_its_names_labels_and_values(kafka_with_jmx_exporter, tmp_path):
    kafka_bs, kafka_metrics = kafka_with_jmx_exporter
    mini = BrokerProcess(tmp_path / "minikafka", observe=True).start()
    runs = {}
    try:
        for name, bs in (("kafka", kafka_bs), ("minikafka", mini.bootstrap)):
            runs[name] = workload(bs)
        scrapes = {"kafka": Scrape(kafka_metrics), "minikafka": Scrape(mini.metrics_url)}
    finally:
        for run in runs.values():
            p, t, hung, c = run["clients"]
            c.close()
            close_quietly(p, t, hung)
        mini.stop()
    kafka, ours = scrapes["kafka"], scrapes["minikafka"]
    (Path(tmp_path) / "kafka-metrics.txt").write_text(kafka.text)
    topic = runs["minikafka"]["topic"]

    missing = [n for n in KAFKA_JMX_NAMES if not _label_sets(kafka, n)]
    assert missing == [], f"not in Kafka's scrape: {missing}"
    differing = {n: (sorted(map(sorted, _label_sets(ours, n))), sorted(map(sorted, _label_sets(kafka, n))))
                 for n in KAFKA_JMX_NAMES if not _label_sets(ours, n) <= _label_sets(kafka, n)}
    assert differing == {}, f"label names differ (minikafka, Kafka): {differing}"

    def both(name: str, **labels: Any) -> tuple[float | None, float | None]:
        return ours.value(name, **labels), kafka.value(name, **labels)

    same = {
        "records in": both("kafka_server_brokertopicmetrics_messagesin_total", topic=topic),
        "records in, offsets": both("kafka_server_brokertopicmetrics_messagesin_total", topic="__consumer_offsets"),
        "bytes in, offsets": both("kafka_server_brokertopicmetrics_bytesin_total", topic="__consumer_offsets"),
        "bytes in": both("kafka_server_brokertopicmetrics_bytesin_total", topic=topic),
        "records in, txn log": both("kafka_server_brokertopicmetrics_messagesin_total", topic="__transaction_state"),
        "bytes in, txn log": both("kafka_server_brokertopicmetrics_bytesin_total", topic="__transaction_state"),
        "log size 0": both("kafka_log_log_size", topic=topic, partition=0),
        "log size 1": both("kafka_log_log_size", topic=topic, partition=1),
        "bytes out": both("kafka_server_brokertopicmetrics_bytesout_total", topic=topic),
        "failed produce": both("kafka_server_brokertopicmetrics_failedproducerequests_total", topic=topic),
        "log end 0": both("kafka_log_log_logendoffset", topic=topic, partition=0),
        "log end 1": both("kafka_log_log_logendoffset", topic=topic, partition=1),
        "log start 0": both("kafka_log_log_logstartoffset", topic=topic, partition=0),
        "segments 0": both("kafka_log_log_numlogsegments", topic=topic, partition=0),
        "LSO lag 0": both("kafka_cluster_partition_laststableoffsetlag", topic=topic, partition=0),
        "LSO lag 1": both("kafka_cluster_partition_laststableoffsetlag", topic=topic, partition=1),
        "partitions": both("kafka_server_replicamanager_partitioncount"),
        "leaders": both("kafka_server_replicamanager_leadercount"),
        "producer ids": both("kafka_server_replicamanager_produceridcount"),
    }
    # This comparison found three differences in what the coordinators write, all fixed: the
    # GroupMetadata record of a group a JoinGroup creates ("records in, offsets"), OffsetCommitValue
    # v4 with the topic id ("bytes in, offsets") and the PreviousProducerId tag on every
    # __transaction_state record ("bytes in, txn log").
    print("\n".join(f"{k}: minikafka {a}, Kafka {b}" for k, (a, b) in same.items()))
    assert {k: v for k, v in same.items() if v[0] != v[1]} == {}, "values differ (minikafka, Kafka)"
    assert same["LSO lag 1"] == (2, 2)  # the open transaction's two records
