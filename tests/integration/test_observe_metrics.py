"""Issue 22: /metrics during a scripted workload with confluent-kafka, the counters checked against
what the clients did (records in, bytes in and out, transactions committed / aborted / timed out /
fenced, markers, LSO lag, group lag = high watermark - committed offset, connections).

minikafka only: Apache Kafka exposes these through JMX (the Prometheus JMX exporter renders the
same names), not over HTTP from the broker.
"""

from __future__ import annotations

import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest
from clients import consume_n, consumer, create_topic, produce_all, producer, uniq, wait_until
from confluent_kafka import KafkaException, TopicPartition
from prometheus_client.parser import text_string_to_metric_families
from rawclient import RawClient, produce, valid_batch
from txnclients import close_quietly, flush_raising, txn_producer

from minikafka.observe.metrics import NAMES, PROCESS_NAMES
from minikafka.protocol.errors import ErrorCode
from minikafka.protocol.records import set_base_offset

pytestmark = pytest.mark.integration


class Scrape:
    """One GET /metrics, parsed: value(name, **labels) for one sample."""

    def __init__(self, url: str) -> None:
        with urllib.request.urlopen(url, timeout=10) as answer:
            assert answer.status == 200
            assert answer.headers["Content-Type"].startswith("text/plain; version=0.0.4")
            self.text = answer.read().decode()
        self.families = {f.name: f for f in text_string_to_metric_families(self.text)}
        self.samples: dict[tuple[str, frozenset[tuple[str, str]]], float] = {
            (s.name, frozenset(s.labels.items())): s.value for f in self.families.values() for s in f.samples}

    def value(self, name: str, **labels: Any) -> float | None:
        return self.samples.get((name, frozenset((k, str(v)) for k, v in labels.items())))

    def sum(self, name: str, **labels: Any) -> float:
        want = {(k, str(v)) for k, v in labels.items()}
        return sum(v for (n, ls), v in self.samples.items() if n == name and want <= ls)


@pytest.fixture
def observed(broker_factory: Any) -> Iterator[Any]:
    b = broker_factory(observe=True)
    b.scrape = lambda: Scrape(b.metrics_url)
    yield b


def test_records_and_bytes_in_and_out_count_exactly_what_the_clients_moved(observed):
    bs = observed.bootstrap
    topic = uniq("metered")
    create_topic(bs, topic, partitions=3)
    p = producer(bs, **{"enable.idempotence": True})
    produce_all(p, topic, ({"key": f"k{i}", "value": b"x" * (i % 50)} for i in range(300)))
    s = observed.scrape()
    assert s.value("kafka_server_brokertopicmetrics_messagesin_total", topic=topic) == 300
    assert s.value("kafka_server_brokertopicmetrics_messagesin_total") == 300  # all topics
    # Every byte appended is in the partitions' logs (no markers on a plain topic).
    log_size = s.sum("kafka_log_log_size", topic=topic)
    assert log_size > 300 * 8
    assert s.value("kafka_server_brokertopicmetrics_bytesin_total", topic=topic) == log_size
    assert s.sum("kafka_log_log_logendoffset", topic=topic) == 300
    # One idempotent producer on three partitions: three producer states, as Kafka counts them.
    assert s.value("kafka_server_replicamanager_produceridcount") == 3
    assert s.value("kafka_server_replicamanager_partitioncount") >= 3
    assert s.value("kafka_server_brokertopicmetrics_bytesout_total", topic=topic) in (None, 0)

    c = consumer(bs, **{"group.id": uniq("g")})
    c.subscribe([topic])
    assert len(consume_n(c, 300)) == 300
    s = observed.scrape()
    # A consumer reading each record once fetched every stored batch once.
    assert s.value("kafka_server_brokertopicmetrics_bytesout_total", topic=topic) == log_size
    assert s.value("kafka_server_socket_server_metrics_connection_count", listener="PLAINTEXT") >= 1
    produce_requests = s.sum("kafka_network_requestmetrics_requests_total", request="Produce")
    assert produce_requests >= 1
    assert s.value("kafka_network_requestmetrics_totaltimems_count", request="Produce") == produce_requests
    assert s.value("kafka_network_requestmetrics_totaltimems_bucket", request="Produce", le="+Inf") == produce_requests
    fetches = s.sum("kafka_network_requestmetrics_requests_total", request="Fetch")
    assert fetches >= 1 and s.sum("kafka_network_requestmetrics_requests_total", request="FetchConsumer") == fetches
    c.close()
    p.flush(5)
    del p
    # Connections closed by the clients leave the gauge (the scrape itself is HTTP, not Kafka).
    wait_until(lambda: observed.scrape().value("kafka_server_socket_server_metrics_connection_count",
                                               listener="PLAINTEXT") == 0, 15, "connections to close")


def test_failed_produces_are_counted_as_kafka_counts_them(observed):
    """An invalid batch counts as a failed produce; a corrupt one does not (Kafka's ReplicaManager
    leaves corrupt, too large and storage failures out of FailedProduceRequestsPerSec)."""
    topic = uniq("failing")
    create_topic(observed.bootstrap, topic)
    corrupt = valid_batch(3)
    corrupt[-1] ^= 0xFF  # the CRC no longer matches
    invalid = valid_batch(3)
    set_base_offset(invalid, 0, 5)  # a client's batch must start at offset 0 (not covered by the CRC)
    with RawClient.connect(observed.bootstrap) as c:
        assert produce(c, topic, 0, bytes(corrupt)).error_code == ErrorCode.corrupt_message
        s = observed.scrape()
        assert s.value("kafka_server_brokertopicmetrics_failedproducerequests_total", topic=topic) is None
        assert produce(c, topic, 0, bytes(invalid)).error_code == ErrorCode.invalid_record
        assert produce(c, topic, 0, bytes(valid_batch(2))).error_code == ErrorCode.none
    s = observed.scrape()
    assert s.value("kafka_server_brokertopicmetrics_failedproducerequests_total", topic=topic) == 1
    assert s.value("kafka_server_brokertopicmetrics_failedproducerequests_total") == 1
    assert s.value("kafka_server_brokertopicmetrics_messagesin_total", topic=topic) == 2


def test_transactions_committed_aborted_fenced_and_timed_out_and_the_lso_lag(observed):
    bs = observed.bootstrap
    topic = uniq("txn-metered")
    create_topic(bs, topic, partitions=2)
    p = txn_producer(bs, uniq("t"))
    for _ in range(2):  # two commits over both partitions: 4 COMMIT markers
        p.begin_transaction()
        for part in (0, 1):
            p.produce(topic, b"c", partition=part)
        p.commit_transaction(30)
    for _ in range(3):  # three aborts on partition 0: 3 ABORT markers
        p.begin_transaction()
        p.produce(topic, b"a", partition=0)
        flush_raising(p)  # sent (and the partition added) before the abort
        p.abort_transaction(30)
    s = observed.scrape()
    assert s.value("kafka_coordinator_transaction_transactions_committed_total") == 2
    assert s.value("kafka_coordinator_transaction_transactions_aborted_total") == 3
    assert s.value("kafka_coordinator_transaction_markers_written_total", result="commit") == 4
    assert s.value("kafka_coordinator_transaction_markers_written_total", result="abort") == 3
    assert s.value("kafka_server_brokertopicmetrics_messagesin_total", topic=topic) == 7 + 4 + 3  # aborted data and markers too, as Kafka counts
    assert s.value("kafka_coordinator_transaction_transactions", state="CompleteAbort") == 1
    assert s.sum("kafka_cluster_partition_laststableoffsetlag", topic=topic) == 0

    # A hanging transaction holds partition 1's last stable offset back by its two records.
    hung_id = uniq("hung")
    hung = txn_producer(bs, hung_id)
    hung.begin_transaction()
    hung.produce(topic, b"h1", partition=1)
    hung.produce(topic, b"h2", partition=1)
    flush_raising(hung)
    s = observed.scrape()
    assert s.value("kafka_cluster_partition_laststableoffsetlag", topic=topic, partition=1) == 2
    assert s.value("kafka_cluster_partition_laststableoffsetlag", topic=topic, partition=0) == 0
    assert s.value("kafka_coordinator_transaction_transactions", state="Ongoing") == 1
    assert s.value("kafka_coordinator_transaction_ongoing_partitions") == 1
    assert s.value("kafka_coordinator_transaction_transactional_ids") == 2

    # A new instance with the same id fences it: aborted, its records no longer hold the LSO.
    successor = txn_producer(bs, hung_id)
    s = observed.scrape()
    assert s.value("kafka_coordinator_transaction_producers_fenced_total") == 1
    assert s.value("kafka_coordinator_transaction_transactions_aborted_total") == 4
    assert s.value("kafka_cluster_partition_laststableoffsetlag", topic=topic, partition=1) == 0
    with pytest.raises(KafkaException):
        hung.commit_transaction(10)

    # A transaction past its timeout is aborted by the coordinator (virtual time: no waiting).
    successor.begin_transaction()
    successor.produce(topic, b"late", partition=0)
    flush_raising(successor)
    observed.clock.pause()
    observed.clock.advance(61)  # transaction.timeout.ms is librdkafka's 60 s
    s = observed.scrape()
    assert s.value("kafka_coordinator_transaction_transactions_timed_out_total") == 1
    assert s.value("kafka_coordinator_transaction_transactions_aborted_total") == 5
    assert s.value("kafka_coordinator_transaction_producers_fenced_total") == 1  # a timeout is not a fence
    assert s.value("kafka_coordinator_transaction_transactions", state="Ongoing") == 0
    observed.clock.resume()
    close_quietly(p)
    for fenced in (hung, successor):  # both fenced: closing reports it, which is expected
        with pytest.raises(KafkaException):
            fenced.close()


def test_group_lag_is_the_high_watermark_minus_the_committed_offset(observed):
    bs = observed.bootstrap
    topic, group = uniq("lagging"), uniq("g")
    create_topic(bs, topic, partitions=2)
    p = producer(bs)
    produce_all(p, topic, ({"value": b"r", "partition": i % 2} for i in range(40)))  # 20 per partition
    c = consumer(bs, **{"group.id": group})
    c.subscribe([topic])
    consume_n(c, 40)
    commits = [TopicPartition(topic, 0, 5), TopicPartition(topic, 1, 17)]
    c.commit(offsets=commits, asynchronous=False)
    s = observed.scrape()
    committed = {tp.partition: tp.offset for tp in c.committed([TopicPartition(topic, 0), TopicPartition(topic, 1)],
                                                                  timeout=10)}
    for part in (0, 1):
        high = c.get_watermark_offsets(TopicPartition(topic, part), timeout=10, cached=False)[1]
        assert s.value("kafka_consumergroup_current_offset", consumergroup=group, topic=topic,
                       partition=part) == committed[part]
        assert s.value("kafka_consumergroup_lag", consumergroup=group, topic=topic,
                       partition=part) == high - committed[part]
    assert s.value("kafka_consumergroup_lag_sum", consumergroup=group) == (20 - 5) + (20 - 17)
    assert s.value("kafka_consumergroup_members", consumergroup=group) == 1
    produce_all(p, topic, ({"value": b"more", "partition": 0} for _ in range(4)))
    assert observed.scrape().value("kafka_consumergroup_lag", consumergroup=group, topic=topic, partition=0) == 19
    c.close()
    wait_until(lambda: observed.scrape().value("kafka_consumergroup_members", consumergroup=group) == 0, 15,
               "the member to leave")


def test_every_documented_family_is_exported(observed):
    """metrics.NAMES (what the Grafana dashboard may use) is what a scrape has, after a workload
    that gives every family a sample."""
    bs = observed.bootstrap
    topic = uniq("all")
    create_topic(bs, topic)
    p = txn_producer(bs, uniq("t"))
    p.begin_transaction()
    p.produce(topic, b"v")
    p.commit_transaction(30)
    c = consumer(bs, **{"group.id": uniq("g")})
    c.subscribe([topic])
    consume_n(c, 1)
    c.commit(asynchronous=False)
    s = observed.scrape()
    exported = set(s.families)
    expected = {n.removesuffix("_total") for n in NAMES} | {n.removesuffix("_total") for n in PROCESS_NAMES}
    assert expected <= exported, sorted(expected - exported)
    undocumented = {n for n in exported - expected if n.startswith("kafka_")}
    assert undocumented == set()
    for family in expected - {"process_open_fds", "process_start_time_seconds"}:
        assert s.families[family].samples, family
    assert s.value("process_resident_memory_bytes") > 10 * 2**20
    c.close()
    close_quietly(p)
