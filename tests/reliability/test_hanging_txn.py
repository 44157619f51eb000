"""T-HANG-1 (test-plan.md section 4): the hanging-transaction defence (KIP-890 part 1, protocol.md P-14).

A late transactional Produce that arrives after the transaction's markers must not open a
partition-level transaction the coordinator does not know about: the LSO would be stuck forever.
The raw client (tests/rawclient.py, minikafka's own codec) plays a producer that misbehaves on
purpose, which no real client library does:

1. FindCoordinator(transaction), InitProducerId(txn id), AddPartitionsToTxn(p0), Produce(p0, seq 0),
   EndTxn(ABORT); wait for the marker (LSO == HWM).
2. A late Produce(p0, same pid and epoch, seq 1) with no new AddPartitionsToTxn.
3. A transactional Produce for p1, which was never added.
4. InitProducerId again (the epoch is bumped), then step 2 again with the old epoch.

Pass: every late Produce is rejected (INVALID_TXN_STATE for 2 and 3; INVALID_PRODUCER_EPOCH or
PRODUCER_FENCED for 4), nothing is appended (HWM unchanged), LSO == HWM on p0 and p1 afterwards, and
the aborted record of step 1 is invisible to read_committed. Afterwards the producer, with its new
epoch, can still run a normal transaction on both partitions (the defence must not wedge it).
"""

from __future__ import annotations

import os
import time
import uuid
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaError, TopicPartition
from kio.schema.add_partitions_to_txn.v3.request import AddPartitionsToTxnRequest, AddPartitionsToTxnTopic
from kio.schema.end_txn.v3.request import EndTxnRequest
from kio.schema.find_coordinator.v4.request import FindCoordinatorRequest
from kio.schema.init_producer_id.v4.request import InitProducerIdRequest
from kio.schema.produce.v9.request import PartitionProduceData, ProduceRequest, TopicProduceData
from kio.static.primitive import i8, i16, i32, i64
from rawclient import RawClient, create_topics_v7, latest, ms, retry_while, wait_for_topic, wait_stable

from minikafka.protocol.records import build_batch

pytestmark = [pytest.mark.integration, pytest.mark.reliability, pytest.mark.timeout(120)]

AGAINST_KAFKA = bool(os.environ.get("KAFKA_BOOTSTRAP")) or os.environ.get("MINIKAFKA_TARGET", "").lower() == "kafka"

NONE = 0
TRANSACTIONAL_ID_AUTHORIZATION_FAILED = 53
INVALID_PRODUCER_EPOCH = 47
INVALID_TXN_STATE = 48
PRODUCER_FENCED = 90
# Retried while the coordinator loads or finishes a previous transition.
RETRIABLE_COORDINATOR = {14, 15, 16, 51}  # LOAD_IN_PROGRESS, NOT_AVAILABLE, NOT_COORDINATOR, CONCURRENT_TRANSACTIONS


def retry(call: Any, what: str, timeout: float = 20.0) -> Any:
    """Repeat a coordinator request while it answers a retriable coordinator error."""
    return retry_while(call, what, RETRIABLE_COORDINATOR, timeout)


class TxnSession:
    """One transactional producer's protocol steps over a raw connection."""

    def __init__(self, c: RawClient, tid: str) -> None:
        self.c = c
        self.tid = tid
        self.pid = -1
        self.epoch = -1

    def find_coordinator(self) -> None:
        def call() -> tuple[Any, int]:
            resp = self.c.request(FindCoordinatorRequest(key_type=i8(1), coordinator_keys=(self.tid,)), 4)
            coord = resp.coordinators[0]
            return coord, int(coord.error_code)

        coord, code = retry(call, "FindCoordinator")
        assert code == NONE, coord
        # Single node: the coordinator is the broker we talk to.
        assert int(coord.port) == self.c.port, coord

    def init_producer_id(self, *, timeout_ms: int = 60_000, expected: tuple[int, int] = (-1, -1),
                         expect_error: int = NONE) -> tuple[int, int]:
        """InitProducerId v4; `expected` is the KIP-360 (producer id, epoch) the client already holds."""
        def call() -> tuple[Any, int]:
            resp = self.c.request(InitProducerIdRequest(
                transactional_id=self.tid, transaction_timeout=ms(timeout_ms),
                producer_id=i64(expected[0]), producer_epoch=i16(expected[1])), 4)
            return resp, int(resp.error_code)

        resp, code = retry(call, "InitProducerId")
        assert code == expect_error, resp
        if code != NONE:
            return -1, -1
        self.pid, self.epoch = int(resp.producer_id), int(resp.producer_epoch)
        return self.pid, self.epoch

    def add_partitions(self, topic: str, *partitions: int) -> None:
        def call() -> tuple[Any, int]:
            resp = self.c.request(AddPartitionsToTxnRequest(
                v3_and_below_transactional_id=self.tid, v3_and_below_producer_id=i64(self.pid),
                v3_and_below_producer_epoch=i16(self.epoch),
                v3_and_below_topics=(AddPartitionsToTxnTopic(name=topic, partitions=tuple(i32(p) for p in partitions)),),
            ), 3)
            codes = {int(r.partition_error_code) for t in resp.results_by_topic_v3_and_below
                     for r in t.results_by_partition}
            return resp, max(codes) if codes != {NONE} else NONE

        resp, code = retry(call, "AddPartitionsToTxn")
        assert code == NONE, resp

    def end_txn(self, commit: bool) -> None:
        def call() -> tuple[Any, int]:
            resp = self.c.request(EndTxnRequest(transactional_id=self.tid, producer_id=i64(self.pid),
                                                producer_epoch=i16(self.epoch), committed=commit), 3)
            return resp, int(resp.error_code)

        resp, code = retry(call, "EndTxn")
        assert code == NONE, resp

    def produce(self, topic: str, partition: int, seq: int, value: bytes, *, epoch: int | None = None,
                with_transactional_id: bool = True) -> Any:
        """A transactional Produce v9 of one record; returns the partition response."""
        batch = build_batch([(b"k", value)], timestamp_ms=int(time.time() * 1000), producer_id=self.pid,
                            producer_epoch=self.epoch if epoch is None else epoch, base_sequence=seq,
                            transactional=True)
        resp = self.c.request(ProduceRequest(
            transactional_id=self.tid if with_transactional_id else None, acks=i16(-1), timeout=ms(10_000),
            topic_data=(TopicProduceData(name=topic, partition_data=(
                PartitionProduceData(index=i32(partition), records=bytes(batch)),)),),
        ), 9)
        return resp.responses[0].partition_responses[0]


def read_values(bootstrap: str, topic: str, partition: int, isolation: str, timeout: float = 20.0) -> list[bytes]:
    """Values from offset 0 to partition EOF with a confluent-kafka consumer."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"hang-{uuid.uuid4().hex[:8]}",
                  "enable.auto.commit": False, "isolation.level": isolation, "enable.partition.eof": True,
                  "log_level": 3})
    out: list[bytes] = []
    try:
        c.assign([TopicPartition(topic, partition, 0)])
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for m in c.consume(100, timeout=0.2):
                err = m.error()
                if err is None:
                    out.append(m.value())
                elif err.code() == KafkaError._PARTITION_EOF:
                    return out
                else:
                    raise AssertionError(f"consume error: {err}")
        raise AssertionError(f"no EOF within {timeout}s")
    finally:
        c.close()


def make_topic(c: RawClient, topic: str, partitions: int) -> None:
    resp = c.request(create_topics_v7(topic, partitions), 7)
    assert int(resp.topics[0].error_code) == NONE, resp
    wait_for_topic(c, topic)
    for p in range(partitions):  # every partition ready (ListOffsets answers)
        deadline = time.monotonic() + 10
        while True:
            try:
                latest(c, topic, p, 0)
                break
            except AssertionError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)


def test_t_hang_1_late_transactional_produce_rejected(kafka_broker) -> None:
    bs = kafka_broker.bootstrap
    topic = f"hang-{uuid.uuid4().hex[:8]}"
    tid = f"hang-{uuid.uuid4().hex[:8]}"
    with RawClient.connect(bs) as c:
        make_topic(c, topic, 2)
        txn = TxnSession(c, tid)
        txn.find_coordinator()
        pid, epoch = txn.init_producer_id()
        assert pid >= 0 and epoch >= 0

        # Step 1: a real transaction with one record on p0, aborted; wait for the marker.
        txn.add_partitions(topic, 0)
        r = txn.produce(topic, 0, 0, b"aborted-1")
        assert int(r.error_code) == NONE, r
        assert int(r.base_offset) == 0
        assert latest(c, topic, 0, 1) == 0, "LSO not held back by the open transaction"
        txn.end_txn(commit=False)
        assert wait_stable(c, topic, 0) == 2  # the record and the abort marker
        hwm0, hwm1 = latest(c, topic, 0, 0), latest(c, topic, 1, 0)
        assert (hwm0, hwm1) == (2, 0)

        # Step 2: late Produce on p0, same pid and epoch, next sequence, no AddPartitionsToTxn.
        r = txn.produce(topic, 0, 1, b"late-2")
        assert int(r.error_code) == INVALID_TXN_STATE, r
        assert latest(c, topic, 0, 0) == hwm0, "the late produce was appended"

        # Step 3: transactional Produce for p1, which was never added to any transaction.
        r = txn.produce(topic, 1, 0, b"late-3")
        assert int(r.error_code) == INVALID_TXN_STATE, r
        assert latest(c, topic, 1, 0) == hwm1, "the never-added partition was appended to"

        # Step 4: the epoch is bumped by a new InitProducerId; the late Produce carries the old one.
        pid2, epoch2 = txn.init_producer_id()
        assert pid2 == pid and epoch2 == epoch + 1, (pid, epoch, pid2, epoch2)
        r = txn.produce(topic, 0, 1, b"late-4", epoch=epoch)
        print("step 4 (p0, old epoch):", int(r.error_code))
        assert int(r.error_code) in (INVALID_PRODUCER_EPOCH, PRODUCER_FENCED), r
        assert latest(c, topic, 0, 0) == hwm0, "the stale-epoch produce was appended"
        r = txn.produce(topic, 1, 0, b"late-4b", epoch=epoch)
        print("step 4 (p1, old epoch):", int(r.error_code))
        assert int(r.error_code) in (INVALID_TXN_STATE, INVALID_PRODUCER_EPOCH, PRODUCER_FENCED), r
        assert latest(c, topic, 1, 0) == hwm1

        # No hanging transaction anywhere.
        assert wait_stable(c, topic, 0) == hwm0
        assert wait_stable(c, topic, 1) == hwm1

    assert read_values(bs, topic, 0, "read_committed") == []
    assert read_values(bs, topic, 0, "read_uncommitted") == [b"aborted-1"]
    assert read_values(bs, topic, 1, "read_uncommitted") == []

    # The producer is not wedged: with its new epoch a normal transaction on both partitions commits.
    with RawClient.connect(bs) as c:
        txn = TxnSession(c, tid)
        txn.pid, txn.epoch = pid2, epoch2
        txn.add_partitions(topic, 0, 1)
        for p in (0, 1):
            r = txn.produce(topic, p, 0, b"committed-%d" % p)
            assert int(r.error_code) == NONE, r
        txn.end_txn(commit=True)
        assert wait_stable(c, topic, 0) == hwm0 + 2
        assert wait_stable(c, topic, 1) == hwm1 + 2
    assert read_values(bs, topic, 0, "read_committed") == [b"committed-0"]
    assert read_values(bs, topic, 1, "read_committed") == [b"committed-1"]


def test_transactional_batch_without_transactional_id_rejected(kafka_broker) -> None:
    """A transactional batch in a Produce request that names no transactional id is refused with
    TRANSACTIONAL_ID_AUTHORIZATION_FAILED (Kafka's KafkaApis check) and not appended, even though the
    partition is in the producer's ongoing transaction; the same batch with the id is accepted."""
    bs = kafka_broker.bootstrap
    topic = f"hang-noid-{uuid.uuid4().hex[:8]}"
    with RawClient.connect(bs) as c:
        make_topic(c, topic, 1)
        txn = TxnSession(c, f"hang-noid-{uuid.uuid4().hex[:8]}")
        txn.find_coordinator()
        txn.init_producer_id()
        txn.add_partitions(topic, 0)
        r = txn.produce(topic, 0, 0, b"no-id", with_transactional_id=False)
        assert int(r.error_code) == TRANSACTIONAL_ID_AUTHORIZATION_FAILED, r
        assert latest(c, topic, 0, 0) == 0, "appended without a transactional id"
        r = txn.produce(topic, 0, 0, b"with-id")
        assert int(r.error_code) == NONE and int(r.base_offset) == 0, r
        txn.end_txn(commit=True)
        assert wait_stable(c, topic, 0) == 2
    assert read_values(bs, topic, 0, "read_committed") == [b"with-id"]


def test_timed_out_transaction_producer_recovers_with_its_epoch(kafka_broker) -> None:
    """KIP-588: the broker aborts a timed-out transaction under epoch E+1 (the abort marker carries
    it); the producer, still holding (pid, E), then calls InitProducerId(pid, E) to recover. Apache
    Kafka 4.3.1 answers NO_ERROR with (pid, E+1) (E counts as the last epoch, like a retried bump)
    and the producer can run its next transaction; a stale epoch older than that stays fenced."""
    bs = kafka_broker.bootstrap
    topic = f"kip588-{uuid.uuid4().hex[:8]}"
    with RawClient.connect(bs) as c:
        make_topic(c, topic, 1)
        txn = TxnSession(c, f"kip588-{uuid.uuid4().hex[:8]}")
        txn.find_coordinator()
        pid, epoch = txn.init_producer_id(timeout_ms=1000)
        txn.add_partitions(topic, 0)
        r = txn.produce(topic, 0, 0, b"timed-out")
        assert int(r.error_code) == NONE, r
        assert wait_stable(c, topic, 0, timeout=20) == 2, "the broker did not abort the timed-out transaction"
        r = txn.produce(topic, 0, 1, b"late")
        assert int(r.error_code) in (INVALID_PRODUCER_EPOCH, PRODUCER_FENCED), r

        # Neither the current epoch (E+1) nor the last one (E): fenced, and nothing changes.
        txn.init_producer_id(expected=(pid, epoch + 7), expect_error=PRODUCER_FENCED)
        pid2, epoch2 = txn.init_producer_id(timeout_ms=60_000, expected=(pid, epoch))
        assert (pid2, epoch2) == (pid, epoch + 1)
        txn.add_partitions(topic, 0)
        r = txn.produce(topic, 0, 0, b"recovered")
        assert int(r.error_code) == NONE, r
        txn.end_txn(commit=True)
        assert wait_stable(c, topic, 0) == 4
    assert read_values(bs, topic, 0, "read_committed") == [b"recovered"]
