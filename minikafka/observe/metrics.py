"""Prometheus exposition of the broker, with Apache Kafka's metric names as the Prometheus JMX
exporter's standard Kafka rules render them (lower-cased `kafka_<domain>_<type>_<name>`, a
`_total` suffix on the *PerSec meters' counts), so dashboards and alerts written for Kafka read
minikafka unchanged. Where Kafka has no broker metric (consumer lag) the kafka_exporter names
are used; where neither has one (the transaction states) the name follows Kafka's coordinator
domain, `kafka_coordinator_transaction_*`.

Collected at scrape time: counters from observe/meters.py, everything else from the read-only
view (ports.py). `NAMES` lists every family this exports; the Grafana dashboard is checked
against it (tests), and so is a live scrape.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator

from prometheus_client import CollectorRegistry, ProcessCollector, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric

from minikafka.observe.meters import LATENCY_BUCKETS_MS
from minikafka.observe.ports import BrokerView
from minikafka.protocol.versions import api_name

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

# The kafka.* families (the process_* ones come from prometheus_client's ProcessCollector).
TXN_STATES = ("Empty", "Ongoing", "PrepareCommit", "PrepareAbort", "CompleteCommit", "CompleteAbort",
              "Dead", "PrepareEpochFence")
NAMES: tuple[str, ...] = (
    "kafka_server_brokertopicmetrics_messagesin_total",
    "kafka_server_brokertopicmetrics_bytesin_total",
    "kafka_server_brokertopicmetrics_bytesout_total",
    "kafka_server_brokertopicmetrics_failedproducerequests_total",
    "kafka_network_requestmetrics_requests_total",
    "kafka_network_requestmetrics_totaltimems",   # a histogram: _bucket, _sum, _count
    "kafka_log_log_size",
    "kafka_log_log_logendoffset",
    "kafka_log_log_logstartoffset",
    "kafka_log_log_numlogsegments",
    "kafka_cluster_partition_laststableoffset",
    "kafka_cluster_partition_laststableoffsetlag",
    "kafka_server_replicamanager_partitioncount",
    "kafka_server_replicamanager_leadercount",
    "kafka_server_replicamanager_produceridcount",
    "kafka_server_socket_server_metrics_connection_count",
    "kafka_consumergroup_current_offset",
    "kafka_consumergroup_lag",
    "kafka_consumergroup_lag_sum",
    "kafka_consumergroup_members",
    "kafka_coordinator_transaction_transactions",
    "kafka_coordinator_transaction_transactional_ids",
    "kafka_coordinator_transaction_partitioncount",
    "kafka_coordinator_transaction_ongoing_partitions",
    "kafka_coordinator_transaction_transactions_committed_total",
    "kafka_coordinator_transaction_transactions_aborted_total",
    "kafka_coordinator_transaction_transactions_timed_out_total",
    "kafka_coordinator_transaction_producers_fenced_total",
    "kafka_coordinator_transaction_markers_written_total",
)
# The families Apache Kafka's broker has under the same name and labels when scraped through the
# JMX exporter's standard Kafka rules (checked against Kafka 4.3.1 by `make conformance`,
# tests/integration/test_observe_kafka_names.py). Kafka's TotalTimeMs comes out as quantile
# gauges and a Count (`_count`, or `_count_total` from exporter 1.x) where minikafka has a
# Prometheus histogram (`_bucket`, `_sum`, `_count`). The rest of NAMES are kafka_exporter's
# (consumer groups) or minikafka's own (transaction coordinator, last stable offset).
KAFKA_JMX_NAMES: tuple[str, ...] = (
    "kafka_server_brokertopicmetrics_messagesin_total",
    "kafka_server_brokertopicmetrics_bytesin_total",
    "kafka_server_brokertopicmetrics_bytesout_total",
    "kafka_server_brokertopicmetrics_failedproducerequests_total",
    "kafka_network_requestmetrics_requests_total",
    "kafka_log_log_size",
    "kafka_log_log_logendoffset",
    "kafka_log_log_logstartoffset",
    "kafka_log_log_numlogsegments",
    "kafka_cluster_partition_laststableoffsetlag",
    "kafka_server_replicamanager_partitioncount",
    "kafka_server_replicamanager_leadercount",
    "kafka_server_replicamanager_produceridcount",
    "kafka_server_socket_server_metrics_connection_count",
)
PROCESS_NAMES: tuple[str, ...] = ("process_resident_memory_bytes", "process_cpu_seconds_total",
                                  "process_open_fds", "process_start_time_seconds")


FETCH = 1


@functools.cache
def _api(api_key: int) -> str:
    return api_name(api_key)


def _request_names(api_key: int) -> tuple[str, ...]:
    """Kafka records a Fetch under both "Fetch" and "FetchConsumer" (or "FetchFollower": there are
    no followers on one node), so dashboards written for either read it."""
    return (_api(api_key), "FetchConsumer") if api_key == FETCH else (_api(api_key),)


def _per_topic(name: str, doc: str, counts: dict[str, int]) -> Metric:
    """A counter per topic plus Kafka's all-topics meter (the same name without the topic label)."""
    family = Metric(name.removesuffix("_total"), doc, "counter")
    family.add_sample(name, {}, float(sum(counts.values())))
    for topic, n in sorted(counts.items()):
        family.add_sample(name, {"topic": topic}, float(n))
    return family


class BrokerCollector:
    """A prometheus_client collector: every family, built anew on each scrape."""

    def __init__(self, view: BrokerView) -> None:
        self.view = view

    def collect(self) -> Iterator[Metric]:
        m = self.view.meters
        yield _per_topic("kafka_server_brokertopicmetrics_messagesin_total", "Records appended (by producers, transaction markers and the coordinators)",
                         dict(m.messages_in))
        yield _per_topic("kafka_server_brokertopicmetrics_bytesin_total", "Record batch bytes appended",
                         dict(m.bytes_in))
        yield _per_topic("kafka_server_brokertopicmetrics_bytesout_total", "Record bytes answered by Fetch",
                         dict(m.bytes_out))
        yield _per_topic("kafka_server_brokertopicmetrics_failedproducerequests_total",
                         "Appends refused as Kafka counts them (not corrupt or too-large batches)",
                         dict(m.failed_produce))

        requests = CounterMetricFamily("kafka_network_requestmetrics_requests",
                                       "Requests handled, per API and version", labels=("request", "version"))
        for (key, version), n in sorted(dict(m.requests).items()):
            for name in _request_names(key):
                requests.add_metric((name, str(version)), n)
        yield requests
        latency = HistogramMetricFamily("kafka_network_requestmetrics_totaltimems",
                                        "Time from a request read to its answer sent, in ms",
                                        labels=("request",))
        for key, lat in sorted(dict(m.latency).items()):
            cumulative, buckets = 0, []
            for bound, n in zip((*map(str, LATENCY_BUCKETS_MS), "+Inf"), lat.buckets, strict=True):
                cumulative += n
                buckets.append((bound, cumulative))
            for name in _request_names(key):
                latency.add_metric((name,), buckets, lat.sum_ms)
        yield latency

        yield from self._partitions()
        yield from self._groups()
        yield from self._transactions()

    def _partitions(self) -> Iterator[Metric]:
        labels = ("topic", "partition")
        size = GaugeMetricFamily("kafka_log_log_size", "Bytes of the partition's segments", labels=labels)
        leo = GaugeMetricFamily("kafka_log_log_logendoffset", "Log end offset", labels=labels)
        lso_start = GaugeMetricFamily("kafka_log_log_logstartoffset", "Log start offset", labels=labels)
        segments = GaugeMetricFamily("kafka_log_log_numlogsegments", "Segments", labels=labels)
        lso = GaugeMetricFamily("kafka_cluster_partition_laststableoffset", "Last stable offset", labels=labels)
        lso_lag = GaugeMetricFamily("kafka_cluster_partition_laststableoffsetlag",
                                    "High watermark minus last stable offset (held back by open transactions)",
                                    labels=labels)
        count = 0
        for p in self.view.partitions():
            key = (p.topic, str(p.partition))
            size.add_metric(key, p.size_bytes)
            leo.add_metric(key, p.high_watermark)
            lso_start.add_metric(key, p.log_start_offset)
            segments.add_metric(key, p.segments)
            lso.add_metric(key, p.last_stable_offset)
            lso_lag.add_metric(key, p.lso_lag)
            count += 1
        yield from (size, leo, lso_start, segments, lso, lso_lag)
        summary = self.view.summary()
        yield GaugeMetricFamily("kafka_server_replicamanager_partitioncount", "Partitions on this broker", value=count)
        yield GaugeMetricFamily("kafka_server_replicamanager_leadercount", "Partitions this broker leads", value=count)
        yield GaugeMetricFamily("kafka_server_replicamanager_produceridcount",
                                "Producer states kept, summed over the partitions (KIP-854)",
                                value=summary.producer_ids)
        conns = GaugeMetricFamily("kafka_server_socket_server_metrics_connection_count", "Open connections",
                                  labels=("listener",))
        for listener, n in sorted(summary.connections.items()):
            conns.add_metric((listener,), n)
        yield conns
        yield GaugeMetricFamily("kafka_coordinator_transaction_partitioncount",
                                "Partitions of __transaction_state the coordinator owns",
                                value=summary.txn_log_partitions)

    def _groups(self) -> Iterator[Metric]:
        current = GaugeMetricFamily("kafka_consumergroup_current_offset", "Committed offset",
                                    labels=("consumergroup", "topic", "partition"))
        lag = GaugeMetricFamily("kafka_consumergroup_lag", "High watermark minus committed offset",
                                labels=("consumergroup", "topic", "partition"))
        lag_sum = GaugeMetricFamily("kafka_consumergroup_lag_sum", "The group's lag over its partitions",
                                    labels=("consumergroup",))
        members = GaugeMetricFamily("kafka_consumergroup_members", "Members", labels=("consumergroup",))
        for g in self.view.groups():
            for o in g.offsets:
                key = (g.group_id, o.topic, str(o.partition))
                current.add_metric(key, o.committed)
                if o.lag is not None:
                    lag.add_metric(key, o.lag)
            lag_sum.add_metric((g.group_id,), g.lag)
            members.add_metric((g.group_id,), len(g.members))
        yield from (current, lag, lag_sum, members)

    def _transactions(self) -> Iterator[Metric]:
        m = self.view.meters
        txns = self.view.transactions()
        by_state = dict.fromkeys(TXN_STATES, 0)
        for t in txns:
            by_state[t.state] = by_state.get(t.state, 0) + 1
        states = GaugeMetricFamily("kafka_coordinator_transaction_transactions",
                                   "Transactional ids by the state of their transaction", labels=("state",))
        for state, n in by_state.items():
            states.add_metric((state,), n)
        yield states
        yield GaugeMetricFamily("kafka_coordinator_transaction_transactional_ids", "Transactional ids known",
                                value=len(txns))
        yield GaugeMetricFamily("kafka_coordinator_transaction_ongoing_partitions",
                                "Partitions enrolled in open transactions",
                                value=sum(len(t.partitions) for t in txns if t.open))
        for name, doc, value in (
                ("kafka_coordinator_transaction_transactions_committed", "Transactions ended by commit (decided; markers follow)",
                 m.txn_committed),
                ("kafka_coordinator_transaction_transactions_aborted", "Transactions ended by abort (the client's, a timeout's or a fence's)",
                 m.txn_aborted),
                ("kafka_coordinator_transaction_transactions_timed_out",
                 "Transactions aborted by the coordinator for transaction.timeout.ms", m.txn_timed_out),
                ("kafka_coordinator_transaction_producers_fenced",
                 "Open transactions fenced by a newer producer epoch", m.producers_fenced)):
            yield CounterMetricFamily(name, doc, value=value)
        markers = CounterMetricFamily("kafka_coordinator_transaction_markers_written",
                                      "Transaction markers written to partitions", labels=("result",))
        markers.add_metric(("commit",), m.markers_written[True])
        markers.add_metric(("abort",), m.markers_written[False])
        yield markers


class MetricsPage:
    """The registry the /metrics page renders: the broker's families and the process's."""

    def __init__(self, view: BrokerView) -> None:
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(BrokerCollector(view))
        ProcessCollector(registry=self.registry)

    def render(self) -> bytes:
        return generate_latest(self.registry)
