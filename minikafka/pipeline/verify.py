"""Check the job's results against the events the producer committed.

The expected totals are recomputed from the generator (same spec and seed) keeping only the
transactions the producer reports as committed. Three independent checks:

1. source: a read_committed confluent-kafka consumer sees exactly the committed order ids on the
   orders topic (the broker's isolation, without Spark);
2. Parquet: the latest row per customer (highest batch id) equals the expected count and sum;
3. topic: the latest value per customer on the results topic (highest batch id, then offset) equals
   the expected count and sum.

A customer counted with an aborted event, an event counted twice or a lost event changes a count or a
sum, so equality on all customers is "each committed event exactly once, no aborted one".
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from minikafka.pipeline.orders import ProduceSummary, generate

Totals = dict[str, tuple[int, Decimal]]


def expected_totals(summary: ProduceSummary) -> Totals:
    committed = set(summary.committed_txns)
    out: dict[str, tuple[int, Decimal]] = {}
    for o in generate(summary.spec):
        if o.txn in committed:
            n, s = out.get(o.customer, (0, Decimal(0)))
            out[o.customer] = (n + 1, s + o.amount)
    return out


def committed_order_ids(summary: ProduceSummary) -> set[str]:
    committed = set(summary.committed_txns)
    return {o.order_id for o in generate(summary.spec) if o.txn in committed}


@dataclass(slots=True)
class Verification:
    expected_customers: int
    expected_events: int
    source_events: int = 0
    parquet_rows: int = 0
    topic_records: int = 0
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems

    def to_json(self) -> dict[str, Any]:
        return {"ok": self.ok, "expected_customers": self.expected_customers,
                "expected_events": self.expected_events, "source_events": self.source_events,
                "parquet_rows": self.parquet_rows, "topic_records": self.topic_records,
                "problems": self.problems[:20]}


def _compare(where: str, got: Totals, expected: Totals, problems: list[str]) -> None:
    for customer in sorted(set(got) | set(expected)):
        g, e = got.get(customer), expected.get(customer)
        if g != e:
            problems.append(f"{where}: {customer}: got {g}, expected {e}")


def _read_topic(bootstrap: str, topic: str, isolation: str, timeout: float) -> list[Any]:
    """Every record from the start to the end offsets seen at call time (bounded wait)."""
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"minikafka-verify-{time.monotonic_ns()}",
                  "enable.auto.commit": False, "isolation.level": isolation, "log_level": 3})
    try:
        md = c.list_topics(topic, timeout=10).topics[topic]
        parts = sorted(md.partitions)
        ends = {p: c.get_watermark_offsets(TopicPartition(topic, p), timeout=10, cached=False) for p in parts}
        c.assign([TopicPartition(topic, p, lo) for p, (lo, _) in ends.items()])
        remaining = {p for p, (lo, hi) in ends.items() if hi > lo}
        out: list[Any] = []
        deadline = time.monotonic() + timeout
        while remaining and time.monotonic() < deadline:
            for m in c.consume(1000, timeout=0.5):
                if m.error():
                    raise RuntimeError(f"reading {topic}: {m.error()}")
                out.append(m)
                if m.offset() + 1 >= ends[m.partition()][1]:
                    remaining.discard(m.partition())
            # read_committed: the last offsets may be markers, which are never delivered
            for p in list(remaining):
                pos = c.position([TopicPartition(topic, p)])[0].offset
                if pos >= ends[p][1]:
                    remaining.discard(p)
        if remaining:
            raise TimeoutError(f"reading {topic}: partitions {sorted(remaining)} not read to the end in {timeout}s")
        return out
    finally:
        c.close()


def verify(summary: ProduceSummary, *, bootstrap: str, results_topic: str, results_path: str | None,
           spark: Any | None = None, timeout: float = 60.0) -> Verification:
    expected = expected_totals(summary)
    v = Verification(expected_customers=len(expected), expected_events=summary.committed_events)

    # 1. the source topic, read_committed, without Spark
    ids = [json.loads(m.value())["order_id"] for m in _read_topic(bootstrap, summary.topic, "read_committed", timeout)]
    v.source_events = len(ids)
    want = committed_order_ids(summary)
    if len(ids) != len(set(ids)):
        v.problems.append(f"source: {len(ids) - len(set(ids))} duplicate order ids under read_committed")
    if set(ids) != want:
        v.problems.append(f"source: read_committed shows {len(set(ids) - want)} ids not committed "
                          f"and misses {len(want - set(ids))} committed ones")

    # 2. Parquet: latest row per customer
    if results_path is not None and spark is not None:
        rows = spark.read.parquet(results_path).collect()
        v.parquet_rows = len(rows)
        latest: dict[str, Any] = {}
        for r in rows:
            if r.customer not in latest or r.batch_id > latest[r.customer].batch_id:
                latest[r.customer] = r
        _compare("parquet", {c: (int(r.orders), Decimal(r.amount)) for c, r in latest.items()}, expected, v.problems)

    # 3. the results topic: latest value per customer
    msgs = _read_topic(bootstrap, results_topic, "read_committed", timeout)
    v.topic_records = len(msgs)
    newest: dict[str, tuple[int, int, dict[str, Any]]] = {}
    for m in msgs:
        value = json.loads(m.value(), parse_float=Decimal)
        key = m.key().decode()
        if key != value["customer"]:
            v.problems.append(f"topic: key {key!r} holds customer {value['customer']!r}")
        rank = (int(value["batch_id"]), m.offset())
        if key not in newest or rank > newest[key][:2]:
            newest[key] = (*rank, value)
    _compare("topic", {k: (int(val["orders"]), Decimal(val["amount"])) for k, (_, _, val) in newest.items()},
             expected, v.problems)
    return v
