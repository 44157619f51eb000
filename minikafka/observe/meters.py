"""The counters the broker's hot paths increment, and nothing else.

Produce, Fetch, the connection loop and the transaction coordinator's listeners add to plain ints
in dicts here: no lock, no label lookup, no allocation but a dict key the first time a topic or
API is seen. Everything else the metrics show (sizes, offsets, lag, states) is read from the
broker at scrape time through the read-only view (ports.py), so a broker nobody scrapes pays only
for these additions. The Prometheus names are given to them in metrics.py.

Request latency is a histogram in milliseconds, as Kafka's RequestMetrics TotalTimeMs: from the
whole request read to its answer handed to the socket.
"""

from __future__ import annotations

import bisect
from collections import defaultdict

# Upper bounds (ms) of the request latency buckets: sub-millisecond answers up to long-poll
# fetches (fetch.max.wait.ms is 500 by default) and slow transactional appends.
LATENCY_BUCKETS_MS: tuple[float, ...] = (0.25, 0.5, 1, 2.5, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000)


class Latency:
    """One API's latency histogram: counts per bucket (the last one: above every bound) and sum."""

    __slots__ = ("buckets", "count", "sum_ms")

    def __init__(self) -> None:
        self.buckets = [0] * (len(LATENCY_BUCKETS_MS) + 1)
        self.count = 0
        self.sum_ms = 0.0

    def observe(self, ms: float) -> None:
        self.buckets[bisect.bisect_left(LATENCY_BUCKETS_MS, ms)] += 1
        self.count += 1
        self.sum_ms += ms


class Meters:
    """Counters since the broker started (Prometheus counters: only ever grow)."""

    def __init__(self) -> None:
        # Records and batch bytes appended per topic: by Produce, and, as Kafka counts them, the
        # transaction markers and the coordinators' own appends to their internal topics.
        self.messages_in: defaultdict[str, int] = defaultdict(int)
        self.bytes_in: defaultdict[str, int] = defaultdict(int)
        self.bytes_out: defaultdict[str, int] = defaultdict(int)     # record bytes answered by Fetch
        # Appends refused as Kafka counts them (invalid records, sequence and epoch errors; not corrupt
        # or too-large batches): a topic appears once one failed, as Kafka creates the meter lazily.
        self.failed_produce: defaultdict[str, int] = defaultdict(int)
        self.requests: defaultdict[tuple[int, int], int] = defaultdict(int)  # (api key, version)
        self.latency: dict[int, Latency] = {}                        # api key
        # Transactions ended (Ongoing -> PrepareCommit / PrepareAbort: the decision, in the log before
        # the markers), aborts by the client, a timeout or a fence alike; an EndTxn(abort) with
        # nothing open (transactions v2 allows it) ends no transaction and is not counted.
        self.txn_committed = 0
        self.txn_aborted = 0
        self.txn_timed_out = 0        # aborted by the coordinator for transaction.timeout.ms
        self.producers_fenced = 0     # an ongoing transaction fenced by a new instance (InitProducerId)
        self.markers_written: defaultdict[bool, int] = defaultdict(int)  # committed? -> markers

    # The hot paths' doors --------------------------------------------------------------------
    def produced(self, topic: str, records: int, size: int) -> None:
        self.messages_in[topic] += records
        self.bytes_in[topic] += size

    def fetched(self, topic: str, size: int) -> None:
        self.bytes_out[topic] += size

    def failed(self, topic: str) -> None:
        self.failed_produce[topic] += 1

    def forget_topic(self, topic: str) -> None:
        """A deleted topic's counters go (Kafka removes a topic's meters when it is deleted)."""
        for per_topic in (self.messages_in, self.bytes_in, self.bytes_out, self.failed_produce):
            per_topic.pop(topic, None)

    def request(self, api_key: int, api_version: int, ms: float) -> None:
        self.requests[(api_key, api_version)] += 1
        latency = self.latency.get(api_key)
        if latency is None:
            latency = self.latency[api_key] = Latency()
        latency.observe(ms)

    # The coordinator's listeners -------------------------------------------------------------
    def transaction_transition(self, cause: str, before: object, after: object) -> None:
        """The transaction coordinator's transition listener: `before` and `after.state` are its
        TxnState values, compared by their Kafka names so this module imports nothing."""
        state = after.state.kafka_name  # type: ignore[attr-defined]
        was = None if before is None else before.kafka_name  # type: ignore[attr-defined]
        if was != "Ongoing":
            return
        if state == "PrepareCommit":
            self.txn_committed += 1
        elif state == "PrepareAbort":
            self.txn_aborted += 1
            if cause == "timeout":
                self.txn_timed_out += 1
            elif cause == "InitProducerId":  # a new instance fenced the open transaction
                self.producers_fenced += 1

    def marker_written(self, committed: bool) -> None:
        self.markers_written[committed] += 1
