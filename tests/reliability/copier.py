"""Transactional copier process for the exactly-once tests (test-plan.md T-EOS-1/2).

Reads `input` with read_committed, copies each record to the same partition number of `output`
inside a transaction together with the consumer's offsets, aborts about one transaction in three
and rewinds to the committed offsets after every abort (the consumer does not rewind by itself).
Prints JSON status lines; exits 0 once nothing is left to copy, 1 on a fatal error.

The copier is correct even when its client library misbehaves, which is the pattern users should
copy (README, "Exactly-once copiers"):
- It seeks and assigns only to concrete offsets: the committed offset, or the low watermark when
  nothing is committed, never OFFSET_BEGINNING/END. librdkafka (2.16) resolves a logical offset
  with a ListOffsets query; if that query fails after a later seek moved the partition to a real
  offset (a broker bounce does it), its 500 ms retry timer stays armed ("timed offset query for
  offset BEGINNING in state active"), fires, and moves the fetch position back to the start, so
  records already copied and committed would be copied again (test_offset_query_pitfall.py
  reproduces it). This happened against Apache Kafka 4.3.1 as against minikafka.
- It keeps the next offset it expects per partition (NextOffsets) and drops any record below it,
  whatever the consumer hands back.
- The offsets it commits with a transaction are computed from the records it copied, never from
  `position()`, which a stale reset may have moved.
- Its reconnect backoff stays below its transaction timeout, and its message timeout at half of it
  (see ONE_BROKER and producer_config()).

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

from confluent_kafka import Consumer, KafkaError, KafkaException, Message, Producer, TopicPartition


def emit(**kw: object) -> None:
    print(json.dumps(kw), flush=True)


class NextOffsets:
    """The next offset to copy per (topic, partition): the one fact an exactly-once copier needs.

    `start()` records where a partition (re)starts, from the committed offset or the low watermark;
    `accept()` says whether a consumed record is new (at or after the expected offset; read_committed
    consumers skip markers and aborted records, so gaps are normal) and moves past it; `offsets()`
    is what the transaction commits for the group."""

    def __init__(self) -> None:
        self.next: dict[tuple[str, int], int] = {}
        self.dropped = 0

    def start(self, topic: str, partition: int, offset: int) -> None:
        self.next[(topic, partition)] = offset

    def forget(self, topic: str, partition: int) -> None:
        self.next.pop((topic, partition), None)

    def accept(self, topic: str, partition: int, offset: int) -> bool:
        expected = self.next.get((topic, partition))
        if expected is None or offset < expected:
            self.dropped += 1  # stale (a reset moved the fetch back) or not ours (revoked)
            return False
        self.next[(topic, partition)] = offset + 1
        return True

    def offsets(self) -> list[TopicPartition]:
        return [TopicPartition(t, p, o) for (t, p), o in sorted(self.next.items())]


def concrete_start_offsets(consumer: Consumer, parts: list[TopicPartition]) -> list[TopicPartition]:
    """Committed offset per partition, or its low watermark when the group has none: never a
    logical offset (see the module docstring)."""
    out = []
    for tp in consumer.committed(parts, timeout=30):
        offset = tp.offset
        if offset < 0:
            offset, _ = consumer.get_watermark_offsets(TopicPartition(tp.topic, tp.partition), timeout=30, cached=False)
        out.append(TopicPartition(tp.topic, tp.partition, offset))
    return out


# librdkafka 2.16 re-bootstraps (KIP-899) when its only broker goes down and then keeps a
# decommissioned broker handle as the group coordinator, so TxnOffsetCommit never leaves the
# client after a broker bounce (seen in the debug log; a one-broker Apache Kafka triggers the
# same path). With one broker there is nothing to re-bootstrap to, so the tests turn it off.
# librdkafka doubles its reconnect delay after every failed attempt and resets it only after a
# connection stayed up for reconnect.backoff.max.ms (10 s). Bounces a few seconds apart (the
# hard-bounce tests) push the delay to the transaction coordinator to 10 s, the transaction
# timeout of the CI tier: the broker then aborts the open transaction and fences the copier,
# as Kafka would (seen in loaded runs: "TxnCoordinator/1: Delaying next reconnect by 9999ms").
ONE_BROKER: dict[str, object] = {"metadata.recovery.strategy": "none", "reconnect.backoff.max.ms": 1000}


def producer_config(bootstrap: str, transactional_id: str, txn_timeout_ms: int) -> dict[str, object]:
    """The copier's transactional producer (test_abort_in_flight_pitfall.py uses it as well)."""
    return {
        **ONE_BROKER,
        "bootstrap.servers": bootstrap, "transactional.id": transactional_id,
        "transaction.timeout.ms": txn_timeout_ms, "batch.size": 512, "linger.ms": 5,
        "max.in.flight.requests.per.connection": 5,
        # librdkafka 2.16 sends a transactional producer's messages only in the InTransaction and
        # BeginCommit states. If the connection breaks while an abort waits for a Produce in flight,
        # its messages go back to the partition's queue and never leave it: the abort waits for them
        # to time out. By default that takes transaction.timeout.ms, and by then the coordinator
        # has aborted the transaction for its timeout and bumped the epoch, so the abort's EndTxn
        # is fenced, a fatal error (the hard-bounce test, seed 3104821253). At half the
        # transaction timeout they time out while the transaction is still this producer's to
        # abort (test_abort_in_flight_pitfall.py).
        "message.timeout.ms": txn_timeout_ms // 2,
    }


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

    debug = {"debug": os.environ["COPIER_DEBUG"]} if os.environ.get("COPIER_DEBUG") else {}
    consumer = Consumer({
        **debug, **ONE_BROKER,
        "bootstrap.servers": args.bootstrap, "group.id": args.group, "enable.auto.commit": False,
        "auto.offset.reset": "earliest", "isolation.level": "read_committed",
        # The broker's minimum session: a copier killed with -9 holds its partitions for 6 s.
        "session.timeout.ms": 6000, "heartbeat.interval.ms": 1000,
    })
    producer = Producer({**debug, **producer_config(args.bootstrap, args.transactional_id, args.txn_timeout_ms)})
    tracker = NextOffsets()

    def on_assign(c: Consumer, parts: list[TopicPartition]) -> None:
        # Start every newly assigned partition at a concrete offset (the default would resolve
        # a partition without a committed offset through auto.offset.reset: a logical offset).
        start = concrete_start_offsets(c, parts)
        for tp in start:
            tracker.start(tp.topic, tp.partition, tp.offset)
        c.assign(start)

    def on_revoke(c: Consumer, parts: list[TopicPartition]) -> None:
        for tp in parts:
            tracker.forget(tp.topic, tp.partition)
        c.unassign()

    # Transactions first, as Kafka's TransactionalMessageCopier does: init_transactions() fences a
    # previous instance of this transactional id and aborts its open transaction. Until then offsets
    # it sent with that transaction are pending, and a read_committed consumer's committed() (an
    # OffsetFetch that requires stable offsets) is answered UNSTABLE_OFFSET_COMMIT until the
    # transaction times out: 40 s in the soak tier, longer than committed()'s 30 s (seen in
    # test_soak_eos_copy[unordered-clients-hard], a copier restarted after kill -9).
    producer.init_transactions(60)
    if args.subscribe:
        consumer.subscribe([args.input], on_assign=on_assign, on_revoke=on_revoke, on_lost=on_revoke)
    else:
        on_assign(consumer, [TopicPartition(args.input, args.partition)])

    def assignment() -> list[TopicPartition]:
        return consumer.assignment()

    def rewind() -> None:
        """Back to the group's committed offsets (the consumer does not rewind after an abort)."""
        parts = assignment()
        if not parts:
            return
        start = concrete_start_offsets(consumer, parts)
        for tp in start:
            tracker.start(tp.topic, tp.partition, tp.offset)
        if args.subscribe:
            for tp in start:
                consumer.seek(tp)
        else:
            consumer.assign(start)  # valid in any fetch state, unlike seek()

    def remaining() -> int:
        total = 0
        parts = assignment()
        if not parts:
            return -1
        for tp in parts:
            pos = tracker.next.get((tp.topic, tp.partition))
            if pos is None:
                return -1  # assigned, not started yet
            _, hi = consumer.get_watermark_offsets(TopicPartition(tp.topic, tp.partition), timeout=10, cached=False)
            total += max(0, hi - pos)
        return total

    def fresh(batch: list[Message]) -> list[Message]:
        return [m for m in batch if not m.error() and tracker.accept(m.topic(), m.partition(), m.offset())]

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
            msgs = fresh(consumer.consume(args.max_per_txn, timeout=0.2))
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
                # What was copied decides what is committed, not position() (see the docstring).
                producer.send_offsets_to_transaction(tracker.offsets(), consumer.consumer_group_metadata(), 30)
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
        emit(stage="ShutdownComplete", consumed=consumed, transactions=txns, stale_dropped=tracker.dropped)
        try:
            consumer.close()
        except Exception:
            pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
