"""A consume-transform-produce copier with confluent-kafka, exactly-once as Kafka means it: the
consumer's offsets go into the producer's transaction (send_offsets_to_transaction), so a record
is copied and marked consumed in one atomic step. Run it, break it, check it:

    python examples/eos_copier.py --bootstrap 127.0.0.1:9092 --input orders --output orders-copy
    minikafka check-eos --input orders --output orders-copy --key-by value

`--mode commit-after` is the classic mistake: the consumer commits its own offsets after each
transaction, outside it. Stopped between the two (`--stop-after N` stops after N transactions, as if
killed there), the next run copies that transaction's records again: check-eos reports them
duplicated. tests/integration/test_eos_examples.py runs both under minikafka's fault scenarios.
"""

from __future__ import annotations

import argparse
import sys

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition


def copy(bootstrap: str, source: str, target: str, group: str, transactional_id: str, *,
         mode: str = "correct", stop_after: int | None = None, idle_polls: int = 3,
         client_config: dict[str, object] | None = None) -> int:
    """Copy every partition of `source` to `target` (same key and value) until nothing new comes
    for `idle_polls` polls of a second; returns the number of transactions committed."""
    extra = dict(client_config or {})
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False,
                         "auto.offset.reset": "earliest", "isolation.level": "read_committed", **extra})
    # message.timeout.ms at half of transaction.timeout.ms (librdkafka's default: 60 s): an abort that
    # waits for a Produce lost with a dead broker then completes before the coordinator fences the
    # producer (README, "A third: an abort while the broker dies").
    txn_timeout_ms = int(extra.get("transaction.timeout.ms", 60000))
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": transactional_id,
                         "linger.ms": 5, "message.timeout.ms": txn_timeout_ms // 2, **extra})
    committed = 0
    try:
        producer.init_transactions(60)
        partitions = consumer.list_topics(source, timeout=30).topics[source].partitions
        consumer.assign([TopicPartition(source, p) for p in partitions])
        idle = 0
        while idle < idle_polls:
            batch = [m for m in consumer.consume(50, timeout=1.0) if m.error() is None]
            if not batch:
                idle += 1
                continue
            idle = 0
            producer.begin_transaction()
            for m in batch:
                producer.produce(target, key=m.key(), value=m.value())
            if mode == "correct":
                producer.send_offsets_to_transaction(consumer.position(consumer.assignment()),
                                                     consumer.consumer_group_metadata(), 60)
            _commit(producer)
            committed += 1
            if stop_after is not None and committed >= stop_after:
                return committed  # stopped as if killed: a commit-after copier never commits these offsets
            if mode == "commit-after":
                consumer.commit(asynchronous=False)
        return committed
    finally:
        consumer.close()


def _commit(producer: Producer) -> None:
    """commit_transaction, retried while the error says so; aborted when it must be (the records
    then come again from the last committed offsets)."""
    while True:
        try:
            producer.commit_transaction(60)
            return
        except KafkaException as exc:
            err = exc.args[0]
            if err.retriable():
                continue
            if err.txn_requires_abort():
                producer.abort_transaction(60)
                raise
            raise


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--bootstrap", default="127.0.0.1:9092")
    p.add_argument("--input", required=True)
    p.add_argument("--output", required=True)
    p.add_argument("--group", default="eos-copier")
    p.add_argument("--transactional-id", default="eos-copier-1")
    p.add_argument("--mode", choices=("correct", "commit-after"), default="correct")
    p.add_argument("--stop-after", type=int, default=None)
    a = p.parse_args(argv)
    n = copy(a.bootstrap, a.input, a.output, a.group, a.transactional_id, mode=a.mode, stop_after=a.stop_after)
    print(f"{n} transactions committed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
