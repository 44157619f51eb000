"""A corrupt batch in an internal topic, after a clean stop and after kill -9 (issue 14, item 3).

Internal topics hold the coordinators' state. minikafka re-validates them at every start (they are
small), truncates a partition at a batch whose CRC fails, appends the intact batches found after it
again, and the coordinators rebuild from that, with one warning per group or transactional id
living on the damaged partition. Before, the broker refused to start after a clean stop
(`CorruptRecord ... __consumer_offsets`) and, after kill -9, dropped every record after the damage:
a group's latest committed offset, a transaction's completion.
"""

from __future__ import annotations

import os
import time

import pytest
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from rawclient import RawClient, describe_transaction

from minikafka.coordinator.group import offsets_log
from minikafka.coordinator.transaction import txn_log
from minikafka.protocol import records

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]

TOPIC = "data"


def _batches(path) -> list[tuple[int, int, list[records.Record]]]:
    data = path.read_bytes()
    out = []
    pos = 0
    while pos + 61 <= len(data):
        _, size = records.peek_size(data, pos)
        out.append((pos, size, list(records.iter_records(data, pos))))
        pos += size
    return out


def _flip_byte_in(path, pos: int, size: int) -> None:
    with open(path, "r+b") as f:  # a byte of the records area: only the CRC can tell
        f.seek(pos + size - 3)
        b = f.read(1)
        f.seek(pos + size - 3)
        f.write(bytes([b[0] ^ 0x5A]))


def _committed(bootstrap: str, group: str) -> int:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
    try:
        return c.committed([TopicPartition(TOPIC, 0)], timeout=30)[0].offset
    finally:
        c.close()


def _commit(bootstrap: str, group: str, offset: int) -> None:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
    try:
        c.commit(offsets=[TopicPartition(TOPIC, 0, offset)], asynchronous=False)
    finally:
        c.close()


def _read_committed(bootstrap: str, expect: int) -> list[bytes]:
    """Every committed value of the partition: read until its end (the LSO) once at least `expect`
    values came, so a value too many is seen too."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "reader", "enable.auto.commit": False,
                  "isolation.level": "read_committed", "enable.partition.eof": True})
    try:
        c.assign([TopicPartition(TOPIC, 0, 0)])
        out: list[bytes] = []
        at_end = False
        deadline = time.monotonic() + 30
        while not (at_end and len(out) >= expect) and time.monotonic() < deadline:
            for m in c.consume(100, timeout=0.5):
                if m.error() is None:
                    out.append(m.value())
                    at_end = False
                elif m.error().code() == KafkaError._PARTITION_EOF:
                    at_end = True
        return out
    finally:
        c.close()


def _two_committed_transactions(p: Producer) -> None:
    """Values t0-0..t0-4 and t1-0..t1-4 in two committed transactions of p."""
    p.init_transactions(30)
    for t in range(2):
        p.begin_transaction()
        for i in range(5):
            p.produce(TOPIC, f"t{t}-{i}".encode(), partition=0)
        p.commit_transaction(30)


@pytest.mark.parametrize("stop", ["clean", "kill9"])
def test_corrupt_internal_batches_are_cut_out_and_state_rebuilt(broker_factory, stop):
    broker = broker_factory()
    boot = broker.bootstrap
    p = Producer({"bootstrap.servers": boot, "transactional.id": "txn-a", "linger.ms": 0})
    _two_committed_transactions(p)
    p.flush(10)
    for group, offset in (("g1", 10), ("g1", 20), ("g1", 30), ("g2", 5)):
        _commit(boot, group, offset)
    with RawClient.connect(boot) as c:
        assert describe_transaction(c, "txn-a").transaction_state == "CompleteCommit"
    if stop == "clean":
        assert broker.term() == 0
    else:
        broker.kill9()

    # Damage g1's commit of 20, and the second transaction's PrepareCommit record.
    offsets_path = broker.data_dir / "__consumer_offsets-0" / ("0" * 20 + ".log")
    target = [(pos, size) for pos, size, recs in _batches(offsets_path)
              if any(isinstance(offsets_log.decode_key(r.key), offsets_log.OffsetKey) and r.value
                     and offsets_log.decode_offset_value(r.value).offset == 20 for r in recs)]
    assert len(target) == 1
    _flip_byte_in(offsets_path, *target[0])
    txn_path = broker.data_dir / "__transaction_state-0" / ("0" * 20 + ".log")
    prepares = [(pos, size) for pos, size, recs in _batches(txn_path)
                if any(r.value and txn_log.decode_value("txn-a", r.value).state.name == "PREPARE_COMMIT" for r in recs)]
    assert len(prepares) == 2
    _flip_byte_in(txn_path, *prepares[1])
    size_before = os.path.getsize(txn_path)

    broker.start()  # it starts (it used to refuse after a clean stop)
    boot = broker.bootstrap
    # Rebuilt from what is intact: g1's later commit, g2's, and the transaction's completion.
    assert _committed(boot, "g1") == 30
    assert _committed(boot, "g2") == 5
    with RawClient.connect(boot) as c:
        state = describe_transaction(c, "txn-a")
    assert state.transaction_state == "CompleteCommit", state  # never re-opened
    assert os.path.getsize(txn_path) < size_before  # the damaged batch is gone from the file
    values = _read_committed(boot, 10)
    assert sorted(values) == sorted(f"t{t}-{i}".encode() for t in range(2) for i in range(5))
    # The id carries on: a new producer instance fences the old epoch and commits.
    p2 = Producer({"bootstrap.servers": boot, "transactional.id": "txn-a"})
    p2.init_transactions(30)
    p2.begin_transaction()
    p2.produce(TOPIC, b"after", partition=0)
    p2.commit_transaction(30)
    assert b"after" in _read_committed(boot, 11)
    # Loud: one line per group and per transactional id on a damaged partition.
    text = broker.log_tail(200_000)
    assert "internal_log_damaged" in text
    for line in ("group_state_possibly_lost", "transaction_state_possibly_lost"):
        assert line in text
    assert "group_id=g1" in text and "transactional_id=txn-a" in text
    # A restart after the repair finds nothing more to repair.
    assert broker.term() == 0
    broker.start()
    assert _committed(broker.bootstrap, "g1") == 30


def _txn_batches(path, txn_id: str) -> list[tuple[int, int, str]]:
    """(position, size, state) of each batch of `__transaction_state` holding a record of txn_id."""
    out = []
    for pos, size, recs in _batches(path):
        for r in recs:
            if r.key is not None and txn_log.decode_key(r.key) == txn_id and r.value:
                out.append((pos, size, txn_log.decode_value(txn_id, r.value).state.name))
    return out


def test_a_transaction_whose_completion_was_lost_is_finished_not_reopened(broker_factory):
    """PrepareCommit and CompleteCommit of the last transaction are both unreadable: the id rebuilds
    as Ongoing. The COMMIT marker in the data partition says it was committed, so the broker
    finishes it as committed at start; left Ongoing, it would be aborted at its timeout and the
    producer fenced (the run this issue reports)."""
    broker = broker_factory()
    p = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": "txn-b", "linger.ms": 0})
    try:
        _two_committed_transactions(p)
        broker.kill9()
        txn_path = broker.data_dir / "__transaction_state-0" / ("0" * 20 + ".log")
        batches = _txn_batches(txn_path, "txn-b")
        assert [s for _p, _s, s in batches][-3:] == ["ONGOING", "PREPARE_COMMIT", "COMPLETE_COMMIT"]
        for pos, size, _state in batches[-2:]:
            _flip_byte_in(txn_path, pos, size)

        broker.start()
        with RawClient.connect(broker.bootstrap) as c:
            state = describe_transaction(c, "txn-b")
        assert state.transaction_state == "CompleteCommit", state
        text = broker.log_tail(200_000)
        assert "transaction_state_repaired" in text and "rebuilt_state=Ongoing" in text
        # The same producer instance carries on with its epoch: it was not fenced.
        p.begin_transaction()
        p.produce(TOPIC, b"after", partition=0)
        p.commit_transaction(30)
        values = _read_committed(broker.bootstrap, 11)
        assert sorted(values) == sorted([f"t{t}-{i}".encode() for t in range(2) for i in range(5)] + [b"after"])
    finally:
        p.flush(5)


def test_a_transaction_whose_start_was_lost_is_restored_from_its_open_data(broker_factory):
    """The Ongoing record of an open transaction is unreadable: the id rebuilds as CompleteCommit
    while its records wait, unmarked, in the data partition. Left so, nothing would ever end them
    (a hanging transaction: read_committed stalls at them for ever) and the producer's commit
    would be answered as a retried one. The broker restores the transaction from the open data."""
    broker = broker_factory()
    p = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": "txn-c", "linger.ms": 0})
    try:
        p.init_transactions(30)
        p.begin_transaction()
        p.produce(TOPIC, b"first", partition=0)
        p.commit_transaction(30)
        p.begin_transaction()
        for i in range(3):
            p.produce(TOPIC, f"open-{i}".encode(), partition=0)
        p.flush(30)  # acknowledged, inside the open transaction
        broker.kill9()
        txn_path = broker.data_dir / "__transaction_state-0" / ("0" * 20 + ".log")
        batches = _txn_batches(txn_path, "txn-c")
        assert [s for _p, _s, s in batches][-2:] == ["COMPLETE_COMMIT", "ONGOING"]
        _flip_byte_in(txn_path, *batches[-1][:2])

        broker.start()
        with RawClient.connect(broker.bootstrap) as c:
            state = describe_transaction(c, "txn-c")
        assert state.transaction_state == "Ongoing", state
        assert state.topics == {TOPIC: [0]}
        p.commit_transaction(30)
        values = _read_committed(broker.bootstrap, 4)
        assert sorted(values) == [b"first", b"open-0", b"open-1", b"open-2"]
    finally:
        p.flush(5)
