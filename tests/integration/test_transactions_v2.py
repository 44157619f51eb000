"""Transactions v2 (KIP-890 part 2) over the raw protocol, as a Kafka 4.x client speaks them: no
AddPartitionsToTxn or AddOffsetsToTxn (Produce v12 and TxnOffsetCommit v5 add their partitions),
and EndTxn v5 bumps the epoch and answers the identity the producer goes on with. A transactions
v1 client (Produce v9, AddPartitionsToTxn v3, EndTxn v3) runs against the same broker at once.
The same tests pass against Apache Kafka 4.3.1 in conformance mode (issue 18, item 1).

The anomaly transactions v2 closes (the late-write finding of Jepsen's Kafka/Bufstream analysis):
a Produce of a committed transaction that reaches the broker late, once the producer has begun
its next transaction on the same partition, is appended into that next transaction under v1 (the
same epoch, the next sequence, the partition added again); under v2 the commit bumped the epoch,
so the late write is refused and nothing is appended.
"""

from __future__ import annotations

import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from clients import read_to_eof
from kio.schema.add_partitions_to_txn.v3.request import AddPartitionsToTxnRequest, AddPartitionsToTxnTopic
from kio.schema.api_versions.v4.request import ApiVersionsRequest
from kio.schema.end_txn.v3.request import EndTxnRequest as EndTxnV3
from kio.schema.end_txn.v5.request import EndTxnRequest as EndTxnV5
from kio.schema.find_coordinator.v4.request import FindCoordinatorRequest
from kio.schema.init_producer_id.v5.request import InitProducerIdRequest
from kio.schema.produce.v12.request import PartitionProduceData, ProduceRequest, TopicProduceData
from kio.schema.txn_offset_commit.v5.request import (
    TxnOffsetCommitRequest,
    TxnOffsetCommitRequestPartition,
    TxnOffsetCommitRequestTopic,
)
from kio.static.primitive import i8, i16, i32, i64
from rawclient import RawClient, create_topics_v7, latest, ms, retry_while, wait_stable

from minikafka.protocol import versions
from minikafka.protocol.records import build_batch

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

NONE, INVALID_PRODUCER_EPOCH, INVALID_TXN_STATE, PRODUCER_FENCED = 0, 47, 48, 90
# Retried as clients retry them: a coordinator loading or busy, a verification not yet possible.
# (and NOT_LEADER_OR_FOLLOWER: Kafka answers it for a moment after a topic is created).
RETRIABLE = {6, 14, 15, 16, 19, 51}  # + LOAD_IN_PROGRESS, NOT_AVAILABLE, NOT_COORDINATOR, NOT_ENOUGH_REPLICAS, CONCURRENT


def _retry(call: Any, what: str) -> tuple[Any, int]:
    return retry_while(call, what, RETRIABLE, timeout=30.0)


class Producer:
    """A transactional producer's protocol steps, v2 (`tv=2`) or v1 (`tv=1`)."""

    def __init__(self, c: RawClient, tid: str, tv: int) -> None:
        self.c, self.tid, self.tv = c, tid, tv
        self.pid, self.epoch = -1, -1
        self.seq: dict[tuple[str, int], int] = {}

    def init(self) -> None:
        def find() -> tuple[Any, int]:
            coord = self.c.request(FindCoordinatorRequest(key_type=i8(1), coordinator_keys=(self.tid,)), 4).coordinators[0]
            return coord, int(coord.error_code)

        assert _retry(find, "FindCoordinator")[1] == NONE

        def call() -> tuple[Any, int]:
            resp = self.c.request(InitProducerIdRequest(transactional_id=self.tid, transaction_timeout=ms(60_000),
                                                        producer_id=i64(-1), producer_epoch=i16(-1)), 5)
            return resp, int(resp.error_code)

        resp, code = _retry(call, "InitProducerId")
        assert code == NONE, resp
        self.pid, self.epoch = int(resp.producer_id), int(resp.producer_epoch)
        self.seq.clear()

    def batch(self, topic: str, partition: int, value: bytes, *, epoch: int | None = None) -> bytes:
        """The next transactional batch of one record for the partition (its sequence taken)."""
        seq = self.seq.get((topic, partition), 0)
        self.seq[(topic, partition)] = seq + 1
        return bytes(build_batch([(b"k", value)], timestamp_ms=int(time.time() * 1000), producer_id=self.pid,
                                 producer_epoch=self.epoch if epoch is None else epoch, base_sequence=seq,
                                 transactional=True))

    def produce_batch(self, topic: str, partition: int, batch: bytes) -> int:
        """Produce v12 (v2) or v9 (v1, after AddPartitionsToTxn); the partition's error code."""
        def call() -> tuple[Any, int]:
            resp = self.c.request(ProduceRequest(
                transactional_id=self.tid, acks=i16(-1), timeout=ms(10_000),
                topic_data=(TopicProduceData(name=topic, partition_data=(
                    PartitionProduceData(index=i32(partition), records=batch),)),)), 12 if self.tv == 2 else 9)
            p = resp.responses[0].partition_responses[0]
            return p, int(p.error_code)

        return _retry(call, "Produce")[1]

    def produce(self, topic: str, partition: int, value: bytes) -> None:
        if self.tv == 1:
            self.add_partition(topic, partition)
        assert self.produce_batch(topic, partition, self.batch(topic, partition, value)) == NONE

    def add_partition(self, topic: str, partition: int) -> None:
        def call() -> tuple[Any, int]:
            resp = self.c.request(AddPartitionsToTxnRequest(
                v3_and_below_transactional_id=self.tid, v3_and_below_producer_id=i64(self.pid),
                v3_and_below_producer_epoch=i16(self.epoch),
                v3_and_below_topics=(AddPartitionsToTxnTopic(name=topic, partitions=(i32(partition),)),)), 3)
            return resp, max(int(r.partition_error_code) for t in resp.results_by_topic_v3_and_below
                             for r in t.results_by_partition)

        assert _retry(call, "AddPartitionsToTxn")[1] == NONE

    def end(self, commit: bool, *, epoch: int | None = None) -> tuple[int, int, int]:
        """EndTxn v5 (v2) or v3 (v1); (error, producer id, epoch) answered. v2 takes the answer's
        identity, as a Kafka 4.x producer does."""
        asked = self.epoch if epoch is None else epoch

        def call() -> tuple[Any, int]:
            if self.tv == 2:
                resp = self.c.request(EndTxnV5(transactional_id=self.tid, producer_id=i64(self.pid),
                                               producer_epoch=i16(asked), committed=commit), 5)
            else:
                resp = self.c.request(EndTxnV3(transactional_id=self.tid, producer_id=i64(self.pid),
                                               producer_epoch=i16(asked), committed=commit), 3)
            return resp, int(resp.error_code)

        resp, code = _retry(call, "EndTxn")
        answered = (code, int(getattr(resp, "producer_id", -1)), int(getattr(resp, "producer_epoch", -1)))
        if self.tv == 2 and code == NONE:
            self.pid, self.epoch = answered[1], answered[2]
            self.seq.clear()
        return answered


def _topic(c: RawClient, partitions: int = 2) -> str:
    name = f"tv2-{uuid.uuid4().hex[:8]}"
    assert int(c.request(create_topics_v7(name, partitions), 7).topics[0].error_code) == 0
    return name


def _read_committed(bootstrap: str, topic: str, partitions: int) -> list[bytes]:
    """Every value a read_committed consumer sees, to the end of each partition, sorted."""
    return sorted(v for *_, v in read_to_eof(bootstrap, [(topic, p) for p in range(partitions)], "read_committed"))


def test_transaction_version_2_is_advertised(kafka_broker) -> None:
    with RawClient.connect(kafka_broker.bootstrap) as c:
        resp = c.request(ApiVersionsRequest(client_software_name="rawclient", client_software_version="1"), 4)
        supported = {f.name: (f.min_version, f.max_version) for f in resp.supported_features}
        finalized = {f.name: (f.min_version_level, f.max_version_level) for f in resp.finalized_features}
        assert supported["transaction.version"] == (0, 2)
        assert finalized["transaction.version"] == (2, 2)
        assert resp.finalized_features_epoch >= 0
        served = {k.api_key: k.max_version for k in resp.api_keys}
        # what the Java client checks before it speaks v2 (TransactionManager)
        assert served[0] >= 12 and served[26] >= 5 and served[28] >= 5


@pytest.mark.parametrize("level", [0, 1])
def test_the_finalized_level_is_a_broker_property(broker_factory, level: int) -> None:
    """transaction.version set below 2 (as `kafka-storage format --feature` would): advertised at
    that level, and not at all at 0 (a level-0 feature is not listed), so Kafka 4.x clients stay
    on transactions v1 (minikafka's own settings only)."""
    broker = broker_factory(overrides={"transaction.version": str(level)})
    with RawClient.connect(broker.bootstrap) as c:
        resp = c.request(ApiVersionsRequest(client_software_name="rawclient", client_software_version="1"), 4)
        tv = "transaction.version"
        assert [(f.name, f.min_version, f.max_version) for f in resp.supported_features if f.name == tv] == [
            (tv, 0, 2)]
        assert [(f.name, f.min_version_level, f.max_version_level) for f in resp.finalized_features
                if f.name == tv] == ([(tv, level, level)] if level else [])


def test_commit_and_abort_bump_the_epoch(kafka_broker) -> None:
    with RawClient.connect(kafka_broker.bootstrap) as c:
        topic = _topic(c)
        p = Producer(c, f"tv2-{uuid.uuid4().hex[:8]}", tv=2)
        p.init()
        pid, epoch = p.pid, p.epoch
        p.produce(topic, 0, b"c1")
        p.produce(topic, 1, b"c2")
        assert latest(c, topic, 0, 1) == 0  # the open transaction holds the LSO
        assert p.end(True) == (NONE, pid, epoch + 1)
        assert wait_stable(c, topic, 0) == 2 and wait_stable(c, topic, 1) == 2  # record + marker

        p.produce(topic, 0, b"a1")  # the next transaction, epoch + 1 from sequence 0
        assert p.end(False) == (NONE, pid, epoch + 2)
        # a retry of the abort (the answer lost) is known by its epoch and changes nothing
        assert p.end(False, epoch=epoch + 1) == (NONE, pid, epoch + 2)
        assert p.end(True, epoch=epoch + 1) == (INVALID_TXN_STATE, -1, -1)
        assert p.end(True, epoch=epoch + 7)[0] == PRODUCER_FENCED
        assert wait_stable(c, topic, 0) == 4
        assert _read_committed(kafka_broker.bootstrap, topic, 2) == [b"c1", b"c2"]


def test_offsets_committed_in_the_transaction_without_add_offsets(kafka_broker) -> None:
    """TxnOffsetCommit v5 adds the group's offsets partition itself; the offsets show once the
    transaction commits."""
    group = f"tv2-group-{uuid.uuid4().hex[:8]}"
    with RawClient.connect(kafka_broker.bootstrap) as c:
        topic = _topic(c, 1)
        p = Producer(c, f"tv2-{uuid.uuid4().hex[:8]}", tv=2)
        p.init()
        p.produce(topic, 0, b"out")

        def commit() -> tuple[Any, int]:
            resp = c.request(TxnOffsetCommitRequest(
                transactional_id=p.tid, group_id=group, producer_id=i64(p.pid), producer_epoch=i16(p.epoch),
                generation_id=i32(-1), member_id="", group_instance_id=None,
                topics=(TxnOffsetCommitRequestTopic(name=topic, partitions=(TxnOffsetCommitRequestPartition(
                    partition_index=i32(0), committed_offset=i64(42), committed_leader_epoch=i32(-1),
                    committed_metadata="m"),)),)), 5)
            return resp, int(resp.topics[0].partitions[0].error_code)

        assert _retry(commit, "TxnOffsetCommit")[1] == NONE
        assert p.end(True)[0] == NONE
        fetch_cls = versions.request_class(9, 9)
        group_cls = versions.nested_class(fetch_cls, "groups")
        topic_cls = versions.nested_class(group_cls, "topics")
        deadline = time.monotonic() + 15
        while True:
            resp = c.request(fetch_cls(groups=(group_cls(group_id=group, topics=(
                topic_cls(name=topic, partition_indexes=(i32(0),)),)),), require_stable=True), 9)
            part = resp.groups[0].topics[0].partitions[0]
            if int(part.error_code) == NONE and part.committed_offset == 42:
                break
            assert time.monotonic() < deadline, part
            time.sleep(0.05)


@pytest.mark.parametrize("tv", [1, 2])
def test_a_late_write_of_a_committed_transaction(kafka_broker, tv: int) -> None:
    """The anomaly v2 closes: under v1 the late write joins the next transaction (the same epoch,
    the next sequence, the partition added again), under v2 it is refused and nothing is appended."""
    with RawClient.connect(kafka_broker.bootstrap) as c:
        topic = _topic(c, 1)
        p = Producer(c, f"late-{tv}-{uuid.uuid4().hex[:8]}", tv=tv)
        p.init()
        p.produce(topic, 0, b"t1-a")
        if tv == 1:
            p.add_partition(topic, 0)
        late = p.batch(topic, 0, b"t1-late")  # built in transaction 1, delayed in the network
        assert p.end(True)[0] == NONE
        assert wait_stable(c, topic, 0) == 2

        if tv == 2:
            p.produce(topic, 0, b"t2-a")  # transaction 2 begins on the same partition
            assert p.produce_batch(topic, 0, late) == INVALID_PRODUCER_EPOCH  # Kafka 4.3.1's answer too
            assert p.end(True)[0] == NONE
            assert _read_committed(kafka_broker.bootstrap, topic, 1) == [b"t1-a", b"t2-a"]
        else:
            p.add_partition(topic, 0)  # transaction 2 begins on the same partition (v1: same epoch)
            assert p.produce_batch(topic, 0, late) == NONE  # the late write is taken into transaction 2
            p.produce(topic, 0, b"t2-a")
            assert p.end(True)[0] == NONE
            assert _read_committed(kafka_broker.bootstrap, topic, 1) == [b"t1-a", b"t1-late", b"t2-a"]


def test_transaction_log_records_kafka_decodes(broker_factory) -> None:
    """__transaction_state written under v2 is TransactionLogValue v1 with its tagged fields, and
    Kafka's DumpLogSegments --transaction-log-decoder reads it (minikafka's files only)."""
    import kafka_ref

    kafka_ref.jars_or_skip("DumpLogSegments")
    broker = broker_factory()
    tid = f"tv2-log-{uuid.uuid4().hex[:8]}"
    with RawClient.connect(broker.bootstrap) as c:
        topic = _topic(c, 1)
        p = Producer(c, tid, tv=2)
        p.init()
        p.produce(topic, 0, b"x")
        assert p.end(True)[0] == NONE
        assert wait_stable(c, topic, 0) == 2
    assert broker.term() == 0, broker.log_tail()
    logs = sorted(str(f) for f in Path(broker.data_dir).glob("__transaction_state-*/*.log"))
    dump = kafka_ref.dump_log_segments(logs, "--transaction-log-decoder")
    assert dump.returncode == 0 and "Exception" not in dump.stderr, dump.stderr[-3000:]
    states = [ln for ln in dump.stdout.splitlines() if f'"transactionalId":"{tid}"' in ln]
    assert len(states) >= 3, dump.stdout[-3000:]  # Empty (init), Ongoing, PrepareCommit, CompleteCommit
    last = states[-1]
    assert '"version":"1"' in last and '"transactionStatus":4' in last, last
    assert '"producerEpoch":1' in last and '"clientTransactionVersion":2' in last, last
