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


@pytest.mark.parametrize("stop", ["clean", "kill9"])
def test_corrupt_internal_batches_are_cut_out_and_state_rebuilt(broker_factory, stop):
    broker = broker_factory()
    boot = broker.bootstrap
    p = Producer({"bootstrap.servers": boot, "transactional.id": "txn-a", "linger.ms": 0})
    p.init_transactions(30)
    for t in range(2):
        p.begin_transaction()
        for i in range(5):
            p.produce(TOPIC, f"t{t}-{i}".encode(), partition=0)
        p.commit_transaction(30)
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
