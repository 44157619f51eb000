"""Transactional copier process for the exactly-once tests (test-plan.md T-EOS-1/2).

Reads `input` with read_committed, copies each record to the same partition number of `output`
inside a transaction together with the consumer's offsets, aborts about one transaction in three
and rewinds to the committed offsets after every abort (the consumer does not rewind by itself).
Prints JSON status lines; exits 0 once nothing is left to copy, 1 on a fatal error.

    python copier.py BOOTSTRAP TRANSACTIONAL_ID INPUT OUTPUT GROUP --partition P | --subscribe
                     [--max-per-txn 200] [--seed S] [--txn-timeout-ms 10000]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import sys
import time

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, Producer, TopicPartition


def emit(**kw: object) -> None:
    print(json.dumps(kw), flush=True)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("bootstrap")
    ap.add_argument("transactional_id")
    ap.add_argument("input")
    ap.add_argument("output")
    ap.add_argument("group")
    ap.add_argument("--partition", type=int)
    ap.add_argument("--subscribe", action="store_true")
    ap.add_argument("--max-per-txn", type=int, default=200)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--txn-timeout-ms", type=int, default=10000)
    ap.add_argument("--deadline-s", type=float, default=240)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    stopping = False

    def on_term(*_: object) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGTERM, on_term)

    # librdkafka 2.16 re-bootstraps (KIP-899) when its only broker goes down and then keeps a
    # decommissioned broker handle as the group coordinator, so TxnOffsetCommit never leaves the
    # client after a broker bounce (seen in the debug log; a one-broker Apache Kafka triggers the
    # same path). With one broker there is nothing to re-bootstrap to, so the tests turn it off.
    no_rebootstrap = {"metadata.recovery.strategy": "none"}
    debug = {"debug": os.environ["COPIER_DEBUG"]} if os.environ.get("COPIER_DEBUG") else {}
    consumer = Consumer({
        **debug, **no_rebootstrap,
        "bootstrap.servers": args.bootstrap, "group.id": args.group, "enable.auto.commit": False,
        "auto.offset.reset": "earliest", "isolation.level": "read_committed",
        "session.timeout.ms": 10000, "heartbeat.interval.ms": 1000,
    })
    producer = Producer({
        **debug, **no_rebootstrap,
        "bootstrap.servers": args.bootstrap, "transactional.id": args.transactional_id,
        "transaction.timeout.ms": args.txn_timeout_ms, "batch.size": 512, "linger.ms": 5,
        "max.in.flight.requests.per.connection": 5,
    })
    if args.subscribe:
        consumer.subscribe([args.input])
    else:
        consumer.assign([TopicPartition(args.input, args.partition)])
    producer.init_transactions(60)

    def assignment() -> list[TopicPartition]:
        return consumer.assignment()

    def rewind() -> None:
        """Back to the group's committed offsets (the consumer does not rewind after an abort)."""
        parts = assignment()
        if not parts:
            return
        committed = [TopicPartition(tp.topic, tp.partition, tp.offset if tp.offset >= 0 else OFFSET_BEGINNING)
                     for tp in consumer.committed(parts, timeout=30)]
        if args.subscribe:
            for tp in committed:
                consumer.seek(tp)
        else:
            consumer.assign(committed)  # valid in any fetch state, unlike seek()

    def remaining() -> int:
        total = 0
        parts = assignment()
        if not parts:
            return -1
        positions = consumer.position(parts)
        # position() is unknown (-1001) until a message was consumed; then the committed offset is
        # where this instance starts (a restarted copier may have nothing left to copy).
        committed = {(tp.topic, tp.partition): tp.offset for tp in consumer.committed(parts, timeout=30)}
        for tp in positions:
            lo, hi = consumer.get_watermark_offsets(TopicPartition(tp.topic, tp.partition), timeout=10, cached=False)
            pos = tp.offset if tp.offset >= 0 else committed.get((tp.topic, tp.partition), -1)
            pos = pos if pos >= 0 else lo
            total += max(0, hi - pos)
        return total

    def retry(call, *a):  # type: ignore[no-untyped-def]
        while True:
            try:
                return call(*a)
            except KafkaException as exc:
                err = exc.args[0]
                if err.retriable():
                    continue
                raise

    consumed = 0
    txns = 0
    idle_since = time.monotonic()
    deadline = time.monotonic() + args.deadline_s
    try:
        while not stopping and time.monotonic() < deadline:
            msgs = [m for m in consumer.consume(args.max_per_txn, timeout=0.2) if not m.error()]
            if not msgs:
                if assignment() and time.monotonic() - idle_since > 1.0:
                    left = remaining()
                    emit(stage="ProcessLoop", consumed=consumed, remaining=left, transactions=txns)
                    if left == 0:
                        break
                    idle_since = time.monotonic()
                continue
            idle_since = time.monotonic()
            in_transaction = False
            try:
                producer.begin_transaction()
                in_transaction = True
                for m in msgs:
                    producer.produce(args.output, key=m.key(), value=m.value(), partition=m.partition())
                    producer.poll(0)
                offsets = consumer.position(assignment())
                producer.send_offsets_to_transaction(offsets, consumer.consumer_group_metadata(), 30)
                txns += 1
                if rng.random() < 1 / 3:
                    producer.abort_transaction(30)
                    rewind()
                else:
                    retry(producer.commit_transaction, 30)  # resumable: never abort after a commit timeout
                    consumed += len(msgs)
            except KafkaException as exc:
                err = exc.args[0]
                if err.code() == KafkaError._FENCED or err.fatal():
                    emit(stage="Fatal", error=str(err))
                    return 1
                if not in_transaction:  # begin_transaction failed: the batch was not processed
                    rewind()
                    if err.retriable():
                        continue
                    raise
                # Any other failure inside the transaction (a retriable send_offsets_to_transaction
                # error while the broker restarts, an abortable error) leaves records consumed but
                # not committed: abort and go back to the committed offsets, as Kafka's
                # TransactionalMessageCopier does. Continuing with the transaction open would skip
                # those records (the consumer's position is already past them).
                retry(producer.abort_transaction, 30)
                rewind()
                continue
            emit(stage="ProcessLoop", consumed=consumed, remaining=-1, transactions=txns)
    finally:
        emit(stage="ShutdownComplete", consumed=consumed, transactions=txns)
        try:
            consumer.close()
        except Exception:
            pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
