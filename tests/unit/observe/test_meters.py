"""observe/meters.py: what the hot paths and the coordinator's listener add up, without sockets."""

from __future__ import annotations

import pytest
from prometheus_client.parser import text_string_to_metric_families

from minikafka.coordinator.transaction.state import TxnMetadata, TxnState
from minikafka.observe.meters import LATENCY_BUCKETS_MS, Latency, Meters
from minikafka.observe.metrics import NAMES, MetricsPage
from minikafka.observe.model import BrokerSummary

pytestmark = pytest.mark.unit


def _meta(state: TxnState) -> TxnMetadata:
    return TxnMetadata(transactional_id="t", producer_id=1, timeout_ms=1000, last_update_ms=0, state=state)


@pytest.mark.parametrize(("ms", "bucket"), [
    (0.0, 0), (0.25, 0), (0.26, 1), (1, 2), (1.0001, 3), (10000, len(LATENCY_BUCKETS_MS) - 1),
    (10000.5, len(LATENCY_BUCKETS_MS)),
])
def test_a_latency_falls_in_the_first_bucket_whose_bound_it_does_not_exceed(ms, bucket):
    lat = Latency()
    lat.observe(ms)
    assert lat.buckets.index(1) == bucket and lat.count == 1 and lat.sum_ms == ms


@pytest.mark.parametrize(("cause", "before", "after", "counted"), [
    ("EndTxn", TxnState.ONGOING, TxnState.PREPARE_COMMIT, {"txn_committed"}),
    ("EndTxn", TxnState.ONGOING, TxnState.PREPARE_ABORT, {"txn_aborted"}),                 # the client's abort
    ("timeout", TxnState.ONGOING, TxnState.PREPARE_ABORT, {"txn_aborted", "txn_timed_out"}),
    ("InitProducerId", TxnState.ONGOING, TxnState.PREPARE_ABORT, {"txn_aborted", "producers_fenced"}),
    ("repair", TxnState.ONGOING, TxnState.PREPARE_ABORT, {"txn_aborted"}),
    ("markers", TxnState.PREPARE_COMMIT, TxnState.COMPLETE_COMMIT, set()),                 # counted when decided
    ("markers", TxnState.PREPARE_ABORT, TxnState.COMPLETE_ABORT, set()),
    ("EndTxn", TxnState.COMPLETE_COMMIT, TxnState.PREPARE_ABORT, set()),   # TV2: an abort with nothing open
    ("EndTxn", TxnState.EMPTY, TxnState.PREPARE_ABORT, set()),
    ("InitProducerId", TxnState.EMPTY, TxnState.EMPTY, set()),            # a new epoch, nothing open
    ("InitProducerId", None, TxnState.EMPTY, set()),                      # a new transactional id
    ("AddPartitionsToTxn", TxnState.EMPTY, TxnState.ONGOING, set()),
    ("expiry", TxnState.COMPLETE_COMMIT, TxnState.DEAD, set()),
])
def test_the_transition_listener_counts_ended_transactions_timeouts_and_fences(cause, before, after, counted):
    m = Meters()
    m.transaction_transition(cause, before, _meta(after))
    counts = {k: getattr(m, k) for k in ("txn_committed", "txn_aborted", "txn_timed_out", "producers_fenced")}
    assert counts == {k: int(k in counted) for k in counts}


def test_a_deleted_topics_counters_go():
    m = Meters()
    m.produced("gone", 1, 10)
    m.fetched("gone", 10)
    m.failed("gone")
    m.produced("kept", 2, 20)
    m.forget_topic("gone")
    assert (dict(m.messages_in), dict(m.bytes_out), dict(m.failed_produce)) == ({"kept": 2}, {}, {})


def test_produce_fetch_and_requests_add_up_per_topic_and_api():
    m = Meters()
    m.produced("a", 3, 300)
    m.produced("a", 2, 100)
    m.produced("b", 1, 50)
    m.fetched("a", 400)
    m.request(0, 9, 1.5)
    m.request(0, 9, 3.0)
    m.request(0, 11, 0.1)
    assert (m.messages_in, m.bytes_in, m.bytes_out) == ({"a": 5, "b": 1}, {"a": 400, "b": 50}, {"a": 400})
    assert m.requests == {(0, 9): 2, (0, 11): 1}
    assert m.latency[0].count == 3 and m.latency[0].sum_ms == pytest.approx(4.6)


class _EmptyView:
    """The view of a broker with no partitions, groups or transactions (only the counters move)."""

    def __init__(self, meters: Meters) -> None:
        self.meters = meters

    def now_ms(self) -> int:
        return 0

    def summary(self) -> BrokerSummary:
        return BrokerSummary(node_id=1, cluster_id="c", listeners=(("PLAINTEXT", "127.0.0.1", 9092),),
                             connections={"PLAINTEXT": 2}, producer_ids=0, txn_log_partitions=50)

    def partitions(self, topic=None):
        return []

    def groups(self):
        return []

    def transactions(self):
        return []


def test_the_rendering_uses_kafkas_names_and_a_cumulative_histogram():
    m = Meters()
    m.produced("orders", 7, 700)
    for ms in (0.1, 0.3, 700):
        m.request(0, 9, ms)
    m.request(1, 16, 2)
    text = MetricsPage(_EmptyView(m)).render().decode()
    assert 'kafka_server_brokertopicmetrics_messagesin_total{topic="orders"} 7.0' in text
    assert "kafka_server_brokertopicmetrics_messagesin_total 7.0" in text  # Kafka's all-topics meter
    assert 'kafka_network_requestmetrics_requests_total{request="Produce",version="9"} 3.0' in text
    assert 'kafka_network_requestmetrics_requests_total{request="FetchConsumer",version="16"} 1.0' in text
    assert 'kafka_network_requestmetrics_totaltimems_bucket{le="0.25",request="Produce"} 1.0' in text
    assert 'kafka_network_requestmetrics_totaltimems_bucket{le="0.5",request="Produce"} 2.0' in text
    assert 'kafka_network_requestmetrics_totaltimems_bucket{le="500",request="Produce"} 2.0' in text
    assert 'kafka_network_requestmetrics_totaltimems_bucket{le="1000",request="Produce"} 3.0' in text
    assert 'kafka_network_requestmetrics_totaltimems_count{request="Produce"} 3.0' in text
    assert 'kafka_coordinator_transaction_transactions{state="PrepareEpochFence"} 0.0' in text
    assert 'kafka_server_socket_server_metrics_connection_count{listener="PLAINTEXT"} 2.0' in text
    families = {f.name for f in text_string_to_metric_families(text)}
    assert {n.removesuffix("_total") for n in NAMES} <= families
