"""UsualProduce (broker/usual_produce.py) answers what the general path would have answered.

Two brokers with the same topics and the same frozen wall clock are given the same Produce
frames, one through UsualProduce and one through dispatch (the path every request took
before it). The answers must be byte for byte the same and so must the partitions' log files. Frames
it must not take get None and leave every log as it was. Last, a confluent-kafka producer
goes through it on a broker serving a real socket.
"""

from __future__ import annotations

import asyncio
import datetime
import time
import uuid
from pathlib import Path

import pytest
from clients import read_all, wait_until
from confluent_kafka import Producer

from minikafka.broker.app import Broker
from minikafka.broker.client_info import ClientInfo
from minikafka.broker.dispatch import dispatch
from minikafka.clock import ControlledClock, SystemClock
from minikafka.config import BrokerConfig
from minikafka.embedded import EmbeddedBroker
from minikafka.protocol import codec, versions
from minikafka.protocol.records import build_batch
from minikafka.protocol.types import TopicPartition
from kio.schema.add_partitions_to_txn.v3.request import AddPartitionsToTxnRequest, AddPartitionsToTxnTopic
from kio.schema.init_producer_id.v4.request import InitProducerIdRequest
from kio.static.primitive import i16, i32, i64
from rawclient import ConnectionClosed, RawClient, create_topics_v7, produce, produce_v9, valid_batch

pytestmark = pytest.mark.integration

NOW = int(time.time() * 1000)
TXN_ID, TXN_PID = "tx", 0
_TIMEOUT = datetime.timedelta(milliseconds=5000)
TOPICS = {"plain": ({}, 2), "appendtime": ({"message.timestamp.type": "LogAppendTime"}, 1),
          "strict": ({"message.timestamp.before.max.ms": "1000"}, 1)}


class _FrozenWallClock(SystemClock):
    def now_ms(self) -> int:
        return NOW


async def _broker(data_dir: Path) -> Broker:
    config = BrokerConfig.build({}, host="127.0.0.1", port=0, data_dir=data_dir)
    broker = Broker(config, clock=ControlledClock(_FrozenWallClock()))
    await broker.start()
    for i, (name, (configs, partitions)) in enumerate(TOPICS.items()):
        answer = await dispatch(broker.registry, _frame(19, 7, create_topics_v7(name, partitions, configs)),
                                1, "test", NOW, ClientInfo())
        assert b"\x00\x00" in bytes(answer.data), f"{name} not created"
    # One open transaction, "tx" (producer id 0, epoch 0 on a fresh broker), holding plain-0.
    init = await dispatch(broker.registry, _frame(22, 4, InitProducerIdRequest(
        transactional_id=TXN_ID, transaction_timeout=_TIMEOUT, producer_id=i64(-1), producer_epoch=i16(-1))),
        1, "test", NOW, ClientInfo())
    _, body = codec.decode_response(22, 4, bytes(init.data)[4:])
    assert (body.error_code, body.producer_id, body.producer_epoch) == (0, TXN_PID, 0)
    add = await dispatch(broker.registry, _frame(24, 3, AddPartitionsToTxnRequest(
        v3_and_below_transactional_id=TXN_ID, v3_and_below_producer_id=i64(TXN_PID),
        v3_and_below_producer_epoch=i16(0),
        v3_and_below_topics=(AddPartitionsToTxnTopic(name="plain", partitions=(i32(0),)),))), 1, "test", NOW,
        ClientInfo())
    _, body = codec.decode_response(24, 3, bytes(add.data)[4:])
    assert body.results_by_topic_v3_and_below[0].results_by_partition[0].partition_error_code == 0
    # The partitions' directories are made off the loop (storage/partition_maker.py).
    wanted = [TopicPartition(name, p) for name, (_, partitions) in TOPICS.items() for p in range(partitions)]
    deadline = time.monotonic() + 30
    while not all((broker.config.data_dir / f"{tp.topic}-{tp.partition}" / f"{0:020d}.log").exists()
                  for tp in wanted):
        assert time.monotonic() < deadline, "the topics' partitions were not made"
        await asyncio.sleep(0.01)
    return broker


def _frame(api_key: int, version: int, body, *, correlation_id: int = 7, client_id: str | None = "c1") -> bytes:
    assert body.__api_key__ == api_key
    return codec.encode_request(version, correlation_id, client_id, body)[4:]  # without the size prefix


def _produce(version: int, parts: list[tuple[str, int, bytes]], *, acks: int = -1,
             transactional_id: str | None = None, **kw) -> bytes:
    request = versions.request_class(0, version)
    topic_cls = versions.nested_class(request, "topic_data")
    partition_cls = versions.nested_class(topic_cls, "partition_data")
    by_topic: dict[str, list] = {}
    for topic, index, records in parts:
        by_topic.setdefault(topic, []).append(partition_cls(index=index, records=bytes(records)))
    body = request(transactional_id=transactional_id, acks=acks, timeout=_TIMEOUT, topic_data=tuple(
        topic_cls(name=t, partition_data=tuple(ps)) for t, ps in by_topic.items()))
    return _frame(0, version, body, **kw)


def _batch(n: int = 1, *, ts: int = NOW - 10, **kw) -> bytes:
    return bytes(build_batch([(b"k%d" % i, b"v%d" % i) for i in range(n)], timestamp_ms=ts, **kw))


def _corrupt(batch: bytes) -> bytes:
    b = bytearray(batch)
    b[-1] ^= 0xFF  # a record byte: the CRC no longer matches
    return bytes(b)


def _logs(broker: Broker) -> dict[str, bytes]:
    """The test topics' .log files, by partition directory and name (not the internal topics',
    whose partitions are made in the background)."""
    out = {}
    for path in sorted(broker.config.data_dir.glob("*/*.log")):
        if path.parent.name.rpartition("-")[0] in TOPICS:
            out[f"{path.parent.name}/{path.name}"] = path.read_bytes()
    return out


# Each case: (what it is, the frames sent in order). Sent to both brokers; every frame is taken
# by UsualProduce.
TAKEN = [
    ("one batch, v3 to v12", [_produce(v, [("plain", 0, _batch(3))]) for v in range(3, 13)]),
    ("acks=1", [_produce(9, [("plain", 1, _batch(2))], acks=1)]),
    ("no client id", [_produce(9, [("plain", 0, _batch())], client_id=None)]),
    ("topics and partitions in one request", [_produce(
        8, [("plain", 0, _batch(2)), ("plain", 1, _batch(1)), ("appendtime", 0, _batch(4))])]),
    ("LogAppendTime", [_produce(11, [("appendtime", 0, _batch(2, ts=5))])]),
    ("an unknown partition beside a known one", [_produce(9, [("plain", 7, _batch()), ("plain", 0, _batch())])]),
    ("an unknown topic", [_produce(5, [("nosuch", 0, _batch())])]),
    ("a corrupt batch beside a sound one", [_produce(9, [("plain", 0, _corrupt(_batch(2))), ("plain", 1, _batch())])]),
    ("a timestamp out of range (record errors)", [_produce(9, [("strict", 0, _batch(2, ts=NOW - 60_000))])]),
    ("an empty records field", [_produce(9, [("plain", 0, b"")])]),
    ("idempotent: in order, a duplicate, out of order", [
        _produce(9, [("plain", 0, _batch(2, producer_id=4000, producer_epoch=0, base_sequence=0))]),
        _produce(9, [("plain", 0, _batch(1, producer_id=4000, producer_epoch=0, base_sequence=2))]),
        _produce(9, [("plain", 0, _batch(1, producer_id=4000, producer_epoch=0, base_sequence=2))]),
        _produce(9, [("plain", 0, _batch(1, producer_id=4000, producer_epoch=0, base_sequence=9))]),
    ]),
    ("a transactional batch without a transactional id", [_produce(
        9, [("plain", 0, _batch(1, producer_id=4001, producer_epoch=0, base_sequence=0, transactional=True))])]),
    ("two batches in one partition's records", [_produce(9, [("plain", 0, _batch(1) + _batch(1))])]),
    ("transactional below v12: in the transaction, then outside it", [
        _produce(9, [("plain", 0, _batch(2, producer_id=TXN_PID, producer_epoch=0, base_sequence=0,
                                        transactional=True))], transactional_id=TXN_ID),
        _produce(11, [("plain", 0, _batch(1, producer_id=TXN_PID, producer_epoch=0, base_sequence=2,
                                         transactional=True))], transactional_id=TXN_ID),
        _produce(9, [("plain", 1, _batch(1, producer_id=TXN_PID, producer_epoch=0, base_sequence=0,
                                        transactional=True))], transactional_id=TXN_ID),
    ]),
    ("a transactional id with a batch that is not transactional", [
        _produce(9, [("plain", 1, _batch(1))], transactional_id=TXN_ID)]),
]


@pytest.fixture
async def pair(tmp_path):
    usual_broker, general_broker = await _broker(tmp_path / "usual"), await _broker(tmp_path / "general")
    assert usual_broker.server.usual_produce is not None
    yield usual_broker, general_broker
    await usual_broker.shutdown()
    await general_broker.shutdown()


@pytest.mark.parametrize("case", [c[1] for c in TAKEN], ids=[c[0] for c in TAKEN])
async def test_usual_requests_are_answered_and_appended_as_by_the_general_path(pair, case) -> None:
    usual_broker, general_broker = pair
    usual = usual_broker.server.usual_produce
    for frame in case:
        client = ClientInfo()
        by_usual = usual.answer(frame, NOW, client, 1)
        assert by_usual is not None, "a usual request was not taken"
        general_client = ClientInfo()
        by_general = await dispatch(general_broker.registry, frame, 1, "test", NOW, general_client)
        assert bytes(by_usual) == bytes(by_general.data)
        assert client.client_id == general_client.client_id
    assert _logs(usual_broker) == _logs(general_broker)
    assert usual.taken == len(case)


def _v13() -> bytes:
    request = versions.request_class(0, 13)
    topic_cls = versions.nested_class(request, "topic_data")
    partition_cls = versions.nested_class(topic_cls, "partition_data")
    body = request(transactional_id=None, acks=-1, timeout=_TIMEOUT, topic_data=(topic_cls(
        topic_id=uuid.uuid4(), partition_data=(partition_cls(index=0, records=_batch()),)),))
    return _frame(0, 13, body)


def _with_header_tag(frame: bytes) -> bytes:
    """A v9 frame whose request header carries one (unknown) tagged field."""
    pos = 10 + int.from_bytes(frame[8:10], "big", signed=True)
    assert frame[pos] == 0
    return frame[:pos] + b"\x01\x05\x01\x00" + frame[pos + 1:]


def _bad_client_id(frame: bytes) -> bytes:
    return frame[:10] + b"\xff\xfe" + frame[12:]


DECLINED = {
    "acks=0": _produce(9, [("plain", 0, _batch())], acks=0),
    "acks=2": _produce(9, [("plain", 0, _batch())], acks=2),
    # v12+: the request enrolls its partitions in the transaction, which waits on the coordinator
    "a transactional id at v12": _produce(12, [("plain", 0, _batch(1, producer_id=TXN_PID, producer_epoch=0,
                                                                   base_sequence=0, transactional=True))],
                                          transactional_id=TXN_ID),
    "v13, topics by id": _v13(),
    "a tagged field in the header": _with_header_tag(_produce(9, [("plain", 0, _batch())])),
    "a client id that is not UTF-8": _bad_client_id(_produce(9, [("plain", 0, _batch())], client_id="ab")),
    "a body cut short": _produce(9, [("plain", 0, _batch())])[:-7],
    "a header cut short": _produce(9, [("plain", 0, _batch())])[:9],
}


@pytest.mark.parametrize("frame", list(DECLINED.values()), ids=list(DECLINED))
async def test_the_unusual_is_left_to_the_general_path(pair, frame) -> None:
    usual_broker, _ = pair
    before = _logs(usual_broker)
    client = ClientInfo()
    assert usual_broker.server.usual_produce.answer(frame, NOW, client, 1) is None
    assert _logs(usual_broker) == before
    assert client.client_id is None
    assert usual_broker.server.usual_produce.taken == 0


async def test_none_where_an_authorizer_or_the_monitor_sees_every_request(tmp_path) -> None:
    config = BrokerConfig.build({"authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer"},
                                host="127.0.0.1", port=0, data_dir=tmp_path)
    assert Broker(config).server.usual_produce is None
    config = BrokerConfig.build({}, host="127.0.0.1", port=0, data_dir=tmp_path / "checked")
    assert Broker(config, check_invariants=True).server.usual_produce is None


def test_a_confluent_kafka_producer_is_answered_by_it(tmp_path) -> None:
    with EmbeddedBroker(tmp_path / "data").start() as broker:
        usual = broker._broker.server.usual_produce
        p = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 0})
        for i in range(50):
            p.produce("usual", key=b"k", value=b"v%d" % i)
            p.flush(10)
        assert usual.taken >= 50
        assert [m.value() for m in read_all(broker.bootstrap, "usual", 1, 50)] == [b"v%d" % i for i in range(50)]


def test_a_failure_inside_it_closes_that_connection_and_returns_its_memory(tmp_path) -> None:
    """A bug in the shortcut must cost what a failing handler costs in dispatch: that connection,
    logged; the request memory granted to its frame is returned and the broker serves on."""
    with EmbeddedBroker(tmp_path / "data").start() as broker:
        server = broker._broker.server
        with RawClient("127.0.0.1", broker.port) as c:
            c.request(create_topics_v7("usual"), 7)
            assert produce(c, "usual", 0, valid_batch()).error_code == 0

        def broken(*_args):
            raise RuntimeError("injected into UsualProduce.answer")

        server.usual_produce.answer = broken  # the instance's, in front of the method
        try:
            with RawClient("127.0.0.1", broker.port) as c:
                _, data = c.encode(produce_v9("usual", 0, valid_batch()), 9)
                c.send_bytes(data[:30])  # part of a frame: its size is granted before the rest is read
                wait_until(lambda: server.memory.available < server.memory.capacity, 10, "a grant for the frame",
                           interval=0.005)
                c.send_bytes(data[30:])
                with pytest.raises(ConnectionClosed):
                    c.recv_frame(timeout=10)
            wait_until(lambda: server.memory.available == server.memory.capacity, 10, "the frame's grant returned",
                       interval=0.005)
        finally:
            del server.usual_produce.answer
        with RawClient("127.0.0.1", broker.port) as c:
            assert produce(c, "usual", 0, valid_batch()).error_code == 0


def test_a_transactional_confluent_kafka_producer_is_answered_by_it(tmp_path) -> None:
    """librdkafka's transactional Produce (below v12) is taken too; what read_committed shows is
    the committed transaction only."""
    with EmbeddedBroker(tmp_path / "data").start() as broker:
        usual = broker._broker.server.usual_produce
        p = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": "usual-tx", "linger.ms": 0})
        p.init_transactions(30)
        for commit in (True, False, True):
            p.begin_transaction()
            for i in range(5):
                p.produce("usual-tx", value=b"%s-%d" % (b"c" if commit else b"a", i))
                p.flush(10)
            (p.commit_transaction if commit else p.abort_transaction)(30)
        assert usual.taken >= 15
        got = read_all(broker.bootstrap, "usual-tx", 1, 10, **{"isolation.level": "read_committed"})
        assert [m.value() for m in got] == [b"c-%d" % i for i in range(5)] * 2
