"""Transactions seen from confluent-kafka: atomic visibility, isolation levels, LSO, zombie fencing.

Real transactional producers and consumers over loopback against the `kafka_broker` fixture
(minikafka, or Apache Kafka in conformance mode). Oracles (test-plan.md 0.4):

- LSO probe: a read_committed consumer's `get_watermark_offsets(tp, cached=False)` high mark is the
  last stable offset (ListOffsets latest at isolation 1); a read_uncommitted consumer's is the HWM.
- Contents: a consumer assigned from offset 0 that reads until partition EOF on every partition
  (librdkafka's EOF is reached at the LSO for read_committed and at the HWM for read_uncommitted),
  so "nothing visible" is a positive observation (EOF at offset 0), not the absence of records
  within a timeout.

Every name carries a per-test suffix: in conformance mode one Kafka broker serves the whole session.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any

import pytest
from clients import create_topic, end_position, read_to_eof, uniq, wait_until
from confluent_kafka import (
    Consumer,
    KafkaError,
    KafkaException,
    Producer,
    TopicPartition,
)

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

QUIET = {"log_level": 3}


# -- helpers ------------------------------------------------------------------------------------




def txn_producer(bootstrap: str, tid: str, **conf: Any) -> Producer:
    p = Producer({"bootstrap.servers": bootstrap, "transactional.id": tid, "linger.ms": 5, **QUIET, **conf})
    p.init_transactions(30)
    return p


def plain_producer(bootstrap: str, **conf: Any) -> Producer:
    return Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "enable.idempotence": True, **QUIET, **conf})


def send(p: Producer, records: Iterable[tuple[str, int, bytes | None, bytes]], timeout: float = 30.0,
         timestamp: int | None = None) -> list[Any]:
    """Produce (topic, partition, key, value) records, flush, and require every delivery to succeed."""
    errors: list[KafkaError] = []
    delivered: list[Any] = []

    def cb(err: KafkaError | None, msg: Any) -> None:
        (errors.append(err) if err else delivered.append(msg))

    n = 0
    for topic, partition, key, value in records:
        kw: dict[str, Any] = {"partition": partition, "key": key, "value": value, "on_delivery": cb}
        if timestamp is not None:
            kw["timestamp"] = timestamp
        p.produce(topic, **kw)
        n += 1
    assert p.flush(timeout) == 0, "records not delivered in time"
    assert not errors, f"delivery errors: {errors}"
    assert len(delivered) == n
    return delivered


class Offsets:
    """The LSO / HWM oracle: one consumer per isolation level, queried with cached=False."""

    def __init__(self, bootstrap: str) -> None:
        base = {"bootstrap.servers": bootstrap, "group.id": uniq("probe"), "enable.auto.commit": False, **QUIET}
        self.rc = Consumer({**base, "isolation.level": "read_committed"})
        self.ru = Consumer({**base, "isolation.level": "read_uncommitted"})

    def lso(self, topic: str, partition: int) -> int:
        return int(self.rc.get_watermark_offsets(TopicPartition(topic, partition), timeout=10, cached=False)[1])

    def hwm(self, topic: str, partition: int) -> int:
        return int(self.ru.get_watermark_offsets(TopicPartition(topic, partition), timeout=10, cached=False)[1])

    def close(self) -> None:
        self.rc.close()
        self.ru.close()




def values(records: Iterable[tuple[Any, ...]]) -> list[bytes]:
    return [r[4] for r in records]


# -- tests --------------------------------------------------------------------------------------


def test_multi_topic_transaction_visible_all_at_once(kafka_broker) -> None:
    """One transaction over 2 topics x 5 partitions: read_committed sees no record of it (EOF at
    offset 0, LSO 0 everywhere) while it is open, and every record right after commit; the LSO then
    equals the HWM on every partition."""
    bs = kafka_broker.bootstrap
    ta, tb = uniq("atomic-a"), uniq("atomic-b")
    create_topic(bs, ta, 3)
    create_topic(bs, tb, 2)
    tps = [(ta, p) for p in range(3)] + [(tb, p) for p in range(2)]
    per_partition = 4
    records = [(t, p, f"{t}-{p}".encode(), f"{t}/{p}/{i}".encode()) for t, p in tps for i in range(per_partition)]

    prod = txn_producer(bs, uniq("atomic"))
    off = Offsets(bs)
    try:
        prod.begin_transaction()
        send(prod, records)

        assert read_to_eof(bs, tps, "read_committed") == [], "open transaction visible to read_committed"
        for t, p in tps:
            assert off.lso(t, p) == 0, f"LSO of {t}/{p} moved while the transaction is open"
            assert off.hwm(t, p) == per_partition
        uncommitted = read_to_eof(bs, tps, "read_uncommitted")
        assert sorted(values(uncommitted)) == sorted(r[3] for r in records)

        prod.commit_transaction(30)

        for t, p in tps:
            # per_partition records + one commit marker (Kafka may write the markers after
            # commit_transaction() returns, hence the poll).
            wait_until(lambda t=t, p=p: off.lso(t, p) == off.hwm(t, p), 10, f"LSO == HWM on {t}/{p}")
            assert off.hwm(t, p) == per_partition + 1
        committed = read_to_eof(bs, tps, "read_committed")
        assert sorted(values(committed)) == sorted(r[3] for r in records)
    finally:
        off.close()


def test_aborted_multi_topic_transaction_never_visible(kafka_broker) -> None:
    """An aborted transaction over 2 topics: read_committed never sees any record, read_uncommitted
    sees all of them, and after the abort markers LSO == HWM (records + marker)."""
    bs = kafka_broker.bootstrap
    ta, tb = uniq("abort-a"), uniq("abort-b")
    create_topic(bs, ta, 2)
    create_topic(bs, tb, 2)
    tps = [(ta, 0), (ta, 1), (tb, 0), (tb, 1)]
    records = [(t, p, None, f"{t}/{p}/{i}".encode()) for t, p in tps for i in range(3)]
    prod = txn_producer(bs, uniq("abort"))
    off = Offsets(bs)
    try:
        prod.begin_transaction()
        send(prod, records)
        prod.abort_transaction(30)
        for t, p in tps:
            wait_until(lambda t=t, p=p: off.lso(t, p) == off.hwm(t, p), 10, f"LSO == HWM on {t}/{p}")
            assert off.hwm(t, p) == 4
        assert read_to_eof(bs, tps, "read_committed") == []
        assert sorted(values(read_to_eof(bs, tps, "read_uncommitted"))) == sorted(r[3] for r in records)
    finally:
        off.close()


def test_read_committed_vs_read_uncommitted_contents(kafka_broker) -> None:
    """Interleaved on one partition: plain records, a committed transaction, an aborted one, and a
    second committed one from another producer. read_committed returns exactly the plain and
    committed values, in offset order; read_uncommitted returns every data record; control records
    appear in neither (the offsets skip them)."""
    bs = kafka_broker.bootstrap
    topic = uniq("iso")
    create_topic(bs, topic, 1)
    plain = plain_producer(bs)
    t1 = txn_producer(bs, uniq("iso-t1"))
    t2 = txn_producer(bs, uniq("iso-t2"))

    send(plain, [(topic, 0, None, b"plain-0")])
    t1.begin_transaction()
    send(t1, [(topic, 0, None, b"c1-0"), (topic, 0, None, b"c1-1")])
    t2.begin_transaction()
    send(t2, [(topic, 0, None, b"a2-0")])
    send(t1, [(topic, 0, None, b"c1-2")])
    send(plain, [(topic, 0, None, b"plain-1")])
    t2.abort_transaction(30)
    t1.commit_transaction(30)
    t2.begin_transaction()
    send(t2, [(topic, 0, None, b"c2-0")])
    t2.commit_transaction(30)
    send(plain, [(topic, 0, None, b"plain-2")])

    off = Offsets(bs)
    try:
        # 8 data records + 3 markers.
        wait_until(lambda: off.lso(topic, 0) == off.hwm(topic, 0) == 11, 10, "LSO == HWM == 11")
    finally:
        off.close()
    rc = read_to_eof(bs, [(topic, 0)], "read_committed")
    ru = read_to_eof(bs, [(topic, 0)], "read_uncommitted")
    assert values(rc) == [b"plain-0", b"c1-0", b"c1-1", b"c1-2", b"plain-1", b"c2-0", b"plain-2"]
    assert values(ru) == [b"plain-0", b"c1-0", b"c1-1", b"a2-0", b"c1-2", b"plain-1", b"c2-0", b"plain-2"]
    # Data at 0..5, then the two markers (6, 7); after that the order of c2-0, its marker and
    # plain-2 is broker timing: Kafka answers EndTxn once PREPARE_COMMIT is logged and writes the
    # markers afterwards, so plain-2 may land before t2's commit marker.
    assert [r[2] for r in ru][:6] == [0, 1, 2, 3, 4, 5]
    assert [r[2] for r in ru][6] >= 8
    assert [r[2] for r in rc] == [r[2] for r in ru if r[4] != b"a2-0"], "read_committed offsets are not the same records"


def test_open_transaction_holds_lso_back_for_later_plain_records(kafka_broker) -> None:
    """A transaction's first record at offset 0 holds the LSO at 0 while three non-transactional
    records land at 1..3 after it: read_committed sees none of them (EOF at 0) though they are not
    transactional; after commit all four are visible and LSO == HWM == 5 (4 records + marker)."""
    bs = kafka_broker.bootstrap
    topic = uniq("lso-hold")
    create_topic(bs, topic, 1)
    txn = txn_producer(bs, uniq("lso-hold"))
    plain = plain_producer(bs)
    off = Offsets(bs)
    try:
        txn.begin_transaction()
        send(txn, [(topic, 0, None, b"t0")])
        send(plain, [(topic, 0, None, b"p%d" % i) for i in range(3)])
        assert off.hwm(topic, 0) == 4
        assert off.lso(topic, 0) == 0
        assert read_to_eof(bs, [(topic, 0)], "read_committed") == []
        assert values(read_to_eof(bs, [(topic, 0)], "read_uncommitted")) == [b"t0", b"p0", b"p1", b"p2"]

        txn.commit_transaction(30)
        wait_until(lambda: off.lso(topic, 0) == off.hwm(topic, 0), 10, "LSO == HWM after commit")
        assert off.hwm(topic, 0) == 5
        assert values(read_to_eof(bs, [(topic, 0)], "read_committed")) == [b"t0", b"p0", b"p1", b"p2"]
    finally:
        off.close()


def test_list_offsets_read_committed_returns_lso(kafka_broker) -> None:
    """ListOffsets at isolation read_committed: the latest offset is the LSO (watermarks, and seek to
    end + position), and a timestamp lookup finds nothing at or past the LSO, while read_uncommitted
    answers with the HWM and finds the record."""
    bs = kafka_broker.bootstrap
    topic = uniq("lo-lso")
    create_topic(bs, topic, 1)
    now = int(time.time() * 1000)
    plain = plain_producer(bs)
    txn = txn_producer(bs, uniq("lo-lso"))
    send(plain, [(topic, 0, None, b"stable-0"), (topic, 0, None, b"stable-1")], timestamp=now - 10_000)
    txn.begin_transaction()
    send(txn, [(topic, 0, None, b"open-0"), (topic, 0, None, b"open-1")], timestamp=now)

    base = {"bootstrap.servers": bs, "group.id": uniq("lo"), "enable.auto.commit": False, **QUIET}
    rc = Consumer({**base, "isolation.level": "read_committed"})
    ru = Consumer({**base, "isolation.level": "read_uncommitted"})
    try:
        tp = TopicPartition(topic, 0)
        assert rc.get_watermark_offsets(tp, timeout=10, cached=False) == (0, 2)
        assert ru.get_watermark_offsets(tp, timeout=10, cached=False) == (0, 4)

        [found_ru] = ru.offsets_for_times([TopicPartition(topic, 0, now)], timeout=10)
        assert found_ru.error is None and found_ru.offset == 2
        [found_rc] = rc.offsets_for_times([TopicPartition(topic, 0, now)], timeout=10)
        assert found_rc.error is None and found_rc.offset == -1, found_rc
        [early_rc] = rc.offsets_for_times([TopicPartition(topic, 0, now - 20_000)], timeout=10)
        assert early_rc.offset == 0

        # Seek to end: librdkafka resolves OFFSET_END with ListOffsets(-1) at its isolation level;
        # position() only follows consumed messages, so the resolved end is read from the EOF event.
        for isolation, expected in (("read_committed", 2), ("read_uncommitted", 4)):
            assert end_position(bs, topic, 0, isolation) == expected, isolation

        txn.commit_transaction(30)
        wait_until(lambda: rc.get_watermark_offsets(tp, timeout=10, cached=False)[1] == 5, 10,
                   "read_committed latest offset == 5 after commit")
        [after] = rc.offsets_for_times([TopicPartition(topic, 0, now)], timeout=10)
        assert after.offset == 2
    finally:
        rc.close()
        ru.close()


def test_zombie_producer_fenced(kafka_broker) -> None:
    """Two producers with one transactional.id: the second init_transactions() fences the first and
    aborts its open transaction; the first producer's next transactional call (commit) raises a fatal
    _FENCED error, and so does any later call. Only the second producer's committed record is visible."""
    bs = kafka_broker.bootstrap
    topic = uniq("zombie")
    create_topic(bs, topic, 2)
    tid = uniq("zombie")
    off = Offsets(bs)
    try:
        zombie = txn_producer(bs, tid)
        zombie.begin_transaction()
        send(zombie, [(topic, 0, None, b"zombie-0"), (topic, 1, None, b"zombie-1")])

        successor = txn_producer(bs, tid)  # returns once the zombie's transaction is aborted
        for p in (0, 1):
            wait_until(lambda p=p: off.lso(topic, p) == off.hwm(topic, p) == 2, 10,
                       f"zombie's transaction aborted on partition {p}")

        with pytest.raises(KafkaException) as exc:
            zombie.commit_transaction(30)
        err = exc.value.args[0]
        assert err.code() == KafkaError._FENCED and err.fatal(), err
        with pytest.raises(KafkaException) as again:
            zombie.begin_transaction()
        assert again.value.args[0].fatal()

        successor.begin_transaction()
        send(successor, [(topic, 0, None, b"successor")])
        successor.commit_transaction(30)
        tps = [(topic, 0), (topic, 1)]
        wait_until(lambda: off.lso(topic, 0) == off.hwm(topic, 0) == 4, 10, "successor's commit marker written")
        assert values(read_to_eof(bs, tps, "read_committed")) == [b"successor"]
        assert sorted(values(read_to_eof(bs, tps, "read_uncommitted"))) == [b"successor", b"zombie-0", b"zombie-1"]
    finally:
        off.close()
