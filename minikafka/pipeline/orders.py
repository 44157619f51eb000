"""Order events for the pipeline, written by a transactional confluent-kafka producer.

Events are deterministic for a seed: event i belongs to transaction i // txn_size, its key is the
customer (`customer-007`) and its value is JSON `{"order_id", "customer", "amount", "txn"}` with the
amount a decimal number with two places (exact in Spark's DECIMAL and Python's Decimal). Every
`abort_every`-th transaction is aborted after its records have been flushed to the broker, so the
aborted records are in the log, between markers, and only isolation keeps them out of the results.

The producer reports which transactions it committed (`ProduceSummary.committed_txns`); the verifier
recomputes the expected aggregates from exactly those events.
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from decimal import Decimal
from typing import Any

CENTS = Decimal("0.01")


@dataclass(frozen=True, slots=True)
class Order:
    order_id: str
    customer: str
    amount: Decimal
    txn: int

    def value(self) -> bytes:
        # written by hand so the amount keeps its exact two decimal places (json.dumps would go
        # through float)
        return (f'{{"order_id":{json.dumps(self.order_id)},"customer":{json.dumps(self.customer)},'
                f'"amount":{self.amount:f},"txn":{self.txn}}}').encode()


@dataclass(frozen=True, slots=True)
class OrderSpec:
    """Everything that determines the events (stored in the manifest the verifier reads)."""

    events: int = 2000
    txn_size: int = 20
    abort_every: int = 5       # transaction t is aborted when (t + 1) % abort_every == 0; 0 = never
    customers: int = 50
    seed: int = 7

    @property
    def transactions(self) -> int:
        return (self.events + self.txn_size - 1) // self.txn_size

    def aborts(self, txn: int) -> bool:
        return self.abort_every > 0 and (txn + 1) % self.abort_every == 0


def generate(spec: OrderSpec) -> list[Order]:
    rng = random.Random(spec.seed)
    out = []
    for i in range(spec.events):
        customer = f"customer-{rng.randrange(spec.customers):03d}"
        amount = (Decimal(rng.randrange(100, 50_000)) / 100).quantize(CENTS)  # 1.00 .. 499.99
        out.append(Order(f"order-{i:07d}", customer, amount, i // spec.txn_size))
    return out


@dataclass(slots=True)
class ProduceSummary:
    spec: OrderSpec
    topic: str
    committed_txns: list[int] = field(default_factory=list)
    aborted_txns: list[int] = field(default_factory=list)
    committed_events: int = 0
    aborted_events: int = 0
    seconds: float = 0.0

    def to_json(self) -> dict[str, Any]:
        d = asdict(self)
        d["spec"] = asdict(self.spec)
        return d

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> ProduceSummary:
        return cls(**{**d, "spec": OrderSpec(**d["spec"])})


def ensure_topic(bootstrap: str, topic: str, partitions: int, timeout: float = 30.0) -> None:
    """Create the topic (replication factor 1 is all one node has; a cluster uses its default)."""
    from confluent_kafka import KafkaError, KafkaException
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 3})
    future = admin.create_topics([NewTopic(topic, partitions)], operation_timeout=timeout)[topic]
    try:
        future.result(timeout)
    except KafkaException as exc:
        if exc.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
            raise
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        t = admin.list_topics(topic, timeout=5).topics.get(topic)
        if t is not None and t.error is None and t.partitions:
            return
        time.sleep(0.05)
    raise TimeoutError(f"topic {topic} not visible after {timeout}s")


def produce_orders(bootstrap: str, topic: str, spec: OrderSpec, *, transactional_id: str,
                   txns: Sequence[int] | None = None, timeout: float = 60.0,
                   summary: ProduceSummary | None = None) -> ProduceSummary:
    """Write the transactions `txns` (default: all) of the spec, committing or aborting each."""
    from confluent_kafka import Producer

    summary = summary or ProduceSummary(spec, topic)
    orders = generate(spec)
    t0 = time.monotonic()
    p = Producer({"bootstrap.servers": bootstrap, "transactional.id": transactional_id,
                  "linger.ms": 5, "log_level": 3})
    p.init_transactions(timeout)
    for t in (txns if txns is not None else range(spec.transactions)):
        batch = orders[t * spec.txn_size : (t + 1) * spec.txn_size]
        p.begin_transaction()
        for o in batch:
            p.produce(topic, key=o.customer.encode(), value=o.value())
            p.poll(0)
        if spec.aborts(t):
            if p.flush(timeout) != 0:
                raise TimeoutError("aborted transaction's records were not delivered")
            p.abort_transaction(timeout)
            summary.aborted_txns.append(t)
            summary.aborted_events += len(batch)
        else:
            p.commit_transaction(timeout)
            summary.committed_txns.append(t)
            summary.committed_events += len(batch)
    summary.seconds += time.monotonic() - t0
    return summary
