"""T-INT-* (test-plan.md section 3): the scenarios of Kafka's TransactionsTest, with confluent-kafka.

Single broker (the `kafka_broker` fixture: minikafka, or Apache Kafka in conformance mode), topics
`topic1`/`topic2` with 4 partitions (names made unique per test), transactional producers, and
read_committed / read_uncommitted consumers. Java API names are mapped as the plan says: fencing is
a KafkaException whose error has `code() == KafkaError._FENCED` and `fatal() == True`;
offsetsForTimes -> offsets_for_times; seekToEnd + position -> assign at OFFSET_END and read the
resolved fetch position from librdkafka's partition-EOF event (position() only follows consumed
messages in librdkafka).

T-INT-13..17 need the fault proxy, test hooks or expiration settings: test_txn_fencing_expiry.py.
The helpers shared by both files are in tests/txnclients.py.
"""

from __future__ import annotations

import time

import pytest
from clients import create_topic, end_position, read_to_eof, uniq, wait_until
from confluent_kafka import (
    Consumer,
    KafkaError,
    KafkaException,
    Producer,
    TopicPartition,
)
from txnclients import (
    QUIET,
    all_tps,
    close_quietly,
    assert_fatal_fenced,
    assert_transaction_fenced,
    hwm,
    lso,
    send,
    send_expect_fenced,
    two_topics,
    txn_producer,
    values,
    wait_stable,
)

pytestmark = [pytest.mark.integration, pytest.mark.reliability, pytest.mark.timeout(180)]


# -- T-INT-1 ------------------------------------------------------------------------------------


def test_t_int_1_basic(kafka_broker) -> None:
    """Aborted txn A ("2" -> topic2 p2, "4" -> topic1 p1), committed txn B ("1" -> topic1 p1,
    "3" -> topic2 p2): read_committed gets exactly {1, 3}, read_uncommitted exactly {1, 2, 3, 4}."""
    bs = kafka_broker.bootstrap
    t1, t2 = two_topics(bs)
    p = txn_producer(bs, uniq("t-int-1"))
    p.begin_transaction()
    send(p, [(t2, 2, b"2", b"2"), (t1, 1, b"4", b"4")])
    p.abort_transaction(30)
    p.begin_transaction()
    send(p, [(t1, 1, b"1", b"1"), (t2, 2, b"3", b"3")])
    p.commit_transaction(30)

    tps = all_tps(t1, t2)
    wait_stable(bs, tps)
    assert sorted(values(read_to_eof(bs, tps, "read_committed"))) == [b"1", b"3"]
    assert sorted(values(read_to_eof(bs, tps, "read_uncommitted"))) == [b"1", b"2", b"3", b"4"]


# -- T-INT-2 ------------------------------------------------------------------------------------



def test_t_int_2_undecided_data_invisible(kafka_broker) -> None:
    """p2 writes x/1 at T to topic1 p0 and topic2 p0; p1 writes 2 records to each at T+1 and stays
    open; p2 writes x/2 at T+1 and commits. read_uncommitted reads all 8 and finds T+1 by timestamp;
    read_committed reads exactly the two x/1 records, its end position is 1 on both partitions (the
    LSO), and offsets_for_times(T+1) finds nothing (-1)."""
    bs = kafka_broker.bootstrap
    t1, t2 = two_topics(bs)
    p1 = txn_producer(bs, uniq("t-int-2-p1"))
    p2 = txn_producer(bs, uniq("t-int-2-p2"))
    p1.begin_transaction()
    p2.begin_transaction()
    ts = int(time.time() * 1000)
    send(p2, [(t1, 0, b"x", b"1"), (t2, 0, b"x", b"1")], timestamp=ts)
    send(p1, [(t1, 0, b"a", b"1"), (t1, 0, b"b", b"2"), (t2, 0, b"c", b"3"), (t2, 0, b"d", b"4")],
         timestamp=ts + 1)
    send(p2, [(t1, 0, b"x", b"2"), (t2, 0, b"x", b"2")], timestamp=ts + 1)
    p2.commit_transaction(30)

    tps = [(t1, 0), (t2, 0)]
    for t, p in tps:  # p2's markers written: the LSO is p1's first offset
        wait_until(lambda t=t, p=p: lso(bs, t, p) == 1, 15, f"LSO == 1 on {t}/{p}", interval=0.1)
    ru = read_to_eof(bs, tps, "read_uncommitted")
    assert len(ru) == 8
    base = {"bootstrap.servers": bs, "group.id": uniq("t-int-2"), "enable.auto.commit": False, **QUIET}
    ru_c = Consumer({**base, "isolation.level": "read_uncommitted"})
    rc_c = Consumer({**base, "isolation.level": "read_committed"})
    try:
        found = ru_c.offsets_for_times([TopicPartition(t, p, ts + 1) for t, p in tps], timeout=10)
        assert [(f.error, f.offset) for f in found] == [(None, 1), (None, 1)], found

        rc = read_to_eof(bs, tps, "read_committed")
        assert len(rc) == 2
        assert all(r[3] == b"x" and r[4] == b"1" for r in rc), rc
        for t, p in tps:
            assert end_position(bs, t, p, "read_committed") == 1
        none = rc_c.offsets_for_times([TopicPartition(t, p, ts + 1) for t, p in tps], timeout=10)
        assert [f.offset for f in none] == [-1, -1], none
    finally:
        ru_c.close()
        rc_c.close()
    p1.abort_transaction(30)


# -- T-INT-3 ------------------------------------------------------------------------------------


def test_t_int_3_delayed_fetch_includes_aborted_transaction(kafka_broker) -> None:
    """topic1 p0: p2 x/1; p1 y/1, y/2; p2 x/2; p1 aborts; p2 commits. A read_committed consumer
    whose fetches are parked (fetch.min.bytes=100000, fetch.wait.max.ms=100) gets exactly x/1 at
    offset 0 and x/2 at offset 3: the parked fetch's response carries the aborted-transaction list."""
    bs = kafka_broker.bootstrap
    t1, _t2 = two_topics(bs)
    p1 = txn_producer(bs, uniq("t-int-3-p1"))
    p2 = txn_producer(bs, uniq("t-int-3-p2"))
    p1.begin_transaction()
    p2.begin_transaction()
    send(p2, [(t1, 0, b"x", b"1")])
    send(p1, [(t1, 0, b"y", b"1"), (t1, 0, b"y", b"2")])
    send(p2, [(t1, 0, b"x", b"2")])
    p1.abort_transaction(30)
    p2.commit_transaction(30)

    wait_stable(bs, [(t1, 0)])
    rc = read_to_eof(bs, [(t1, 0)], "read_committed", **{"fetch.min.bytes": 100_000, "fetch.wait.max.ms": 100})
    assert [(r[2], r[3], r[4]) for r in rc] == [(0, b"x", b"1"), (3, b"x", b"2")]


# -- T-INT-4 ------------------------------------------------------------------------------------


def _committed_or_zero(c: Consumer, parts: list[TopicPartition]) -> list[TopicPartition]:
    got = c.committed(parts, timeout=10)
    return [TopicPartition(tp.topic, tp.partition, max(tp.offset, 0)) for tp in got]


@pytest.mark.parametrize("metadata", ["group_id_only", "consumer"])
def test_t_int_4_send_offsets_copy_loop(kafka_broker, metadata: str) -> None:
    """500 numbered seeds copied input -> output with at most 125 messages per transaction, every
    other transaction aborted and the consumer rewound to the group's committed offsets after each
    abort; offsets go in with send_offsets_to_transaction (variant A: group-id-only metadata from an
    assign()-mode consumer; variant B: a subscribed member's metadata). The output holds exactly 500
    values, all unique."""
    bs = kafka_broker.bootstrap
    src, dst = uniq("t-int-4-in"), uniq("t-int-4-out")
    create_topic(bs, src, 2)
    create_topic(bs, dst, 2)
    group = uniq("t-int-4-group")
    n = 500
    seeder = Producer({"bootstrap.servers": bs, "enable.idempotence": True, **QUIET})
    send(seeder, [(src, i % 2, None, b"%d" % i) for i in range(n)])

    c = Consumer({"bootstrap.servers": bs, "group.id": group, "enable.auto.commit": False,
                  "auto.offset.reset": "earliest", "isolation.level": "read_committed", **QUIET})
    parts = [TopicPartition(src, 0), TopicPartition(src, 1)]
    if metadata == "group_id_only":
        c.assign([TopicPartition(src, 0, 0), TopicPartition(src, 1, 0)])
    else:
        c.subscribe([src])  # no committed offsets yet: starts at 0 (auto.offset.reset=earliest)
    p = txn_producer(bs, uniq("t-int-4"))
    committed_values = 0
    txns = aborted = 0
    deadline = time.monotonic() + 120
    try:
        while committed_values < n:
            assert time.monotonic() < deadline, f"copy loop did not finish: {committed_values}/{n} committed"
            batch = [m for m in c.consume(125, timeout=0.5) if m.error() is None]
            if not batch:
                continue
            p.begin_transaction()
            send(p, [(dst, m.partition(), None, m.value()) for m in batch])
            txns += 1
            if txns % 2 == 0:
                p.abort_transaction(30)
                aborted += 1
                for tp in _committed_or_zero(c, parts):
                    c.seek(tp)
                continue
            positions = [tp for tp in c.position(parts) if tp.offset >= 0]
            p.send_offsets_to_transaction(positions, c.consumer_group_metadata(), 30)
            p.commit_transaction(30)
            committed_values += len(batch)
    finally:
        c.close()
    assert aborted >= 3
    wait_stable(bs, [(dst, 0), (dst, 1)])
    out = values(read_to_eof(bs, [(dst, 0), (dst, 1)], "read_committed"))
    assert len(out) == n
    assert sorted(out) == sorted(b"%d" % i for i in range(n))


# -- T-INT-5 .. T-INT-8: fencing ----------------------------------------------------------------


def _fenced_pair(bs: str, t1: str, t2: str) -> tuple[Producer, Producer]:
    """p1 (id X) begins and sends "1" -> topic1, "3" -> topic2; p2 (same id) inits (aborting p1's
    transaction), begins and sends "4" to each topic (acknowledged)."""
    tid = uniq("fence")
    p1 = txn_producer(bs, tid)
    p1.begin_transaction()
    send(p1, [(t1, 0, b"1", b"1"), (t2, 0, b"3", b"3")])
    p2 = txn_producer(bs, tid)
    p2.begin_transaction()
    send(p2, [(t1, 0, b"2", b"4"), (t2, 0, b"2", b"4")])
    return p1, p2


def _only_p2_visible(bs: str, t1: str, t2: str) -> None:
    wait_stable(bs, all_tps(t1, t2))
    rc = read_to_eof(bs, all_tps(t1, t2), "read_committed")
    assert sorted((r[0], r[4]) for r in rc) == sorted([(t1, b"4"), (t2, b"4")])


def test_t_int_5_fencing_on_commit(kafka_broker) -> None:
    """p1's commit_transaction() after p2 (same id) inited raises fatal _FENCED; p2 commits;
    read_committed sees exactly p2's 2 records."""
    bs = kafka_broker.bootstrap
    t1, t2 = two_topics(bs)
    p1, p2 = _fenced_pair(bs, t1, t2)
    with pytest.raises(KafkaException) as exc:
        p1.commit_transaction(30)
    assert_fatal_fenced(exc.value)
    p2.commit_transaction(30)
    _only_p2_visible(bs, t1, t2)


def test_t_int_6_fencing_on_send_offsets(kafka_broker) -> None:
    """p1's send_offsets_to_transaction() for a made-up group after p2 (same id) inited raises fatal
    _FENCED; p2 commits; read_committed sees exactly p2's 2 records."""
    bs = kafka_broker.bootstrap
    t1, t2 = two_topics(bs)
    p1, p2 = _fenced_pair(bs, t1, t2)
    made_up = Consumer({"bootstrap.servers": bs, "group.id": uniq("made-up-group"), **QUIET})
    try:
        with pytest.raises(KafkaException) as exc:
            p1.send_offsets_to_transaction([TopicPartition(t1, 0, 1)], made_up.consumer_group_metadata(), 30)
        assert_fatal_fenced(exc.value)
    finally:
        made_up.close()
    p2.commit_transaction(30)
    _only_p2_visible(bs, t1, t2)


def test_t_int_7_fencing_on_send(kafka_broker) -> None:
    """After p2 (same id) inited and had its sends acknowledged, p1 sends again: the send fails
    (fatal _FENCED or a fencing delivery error) and p1 can no longer commit; p2 commits;
    read_committed sees only p2's 2 records."""
    bs = kafka_broker.bootstrap
    t1, t2 = two_topics(bs)
    p1, p2 = _fenced_pair(bs, t1, t2)
    how = send_expect_fenced(p1, t1, 0, b"5")
    print("p1's late send:", how)
    with pytest.raises(KafkaException) as exc:
        p1.commit_transaction(30)
    assert exc.value.args[0].fatal() or exc.value.args[0].txn_requires_abort(), exc.value
    p2.commit_transaction(30)
    _only_p2_visible(bs, t1, t2)
    close_quietly(p1, p2)


def test_t_int_8_fencing_on_add_partitions(kafka_broker) -> None:
    """p1 sends and aborts; p2 (same id) inits and sends; p1 begins and sends again (so it must add
    the partition to a new transaction with its old epoch): p1 fails with fatal _FENCED; p2 commits;
    only p2's records are visible."""
    bs = kafka_broker.bootstrap
    t1, t2 = two_topics(bs)
    tid = uniq("t-int-8")
    p1 = txn_producer(bs, tid)
    p1.begin_transaction()
    send(p1, [(t1, 0, b"1", b"1"), (t2, 0, b"3", b"3")])
    p1.abort_transaction(30)
    p2 = txn_producer(bs, tid)
    p2.begin_transaction()
    send(p2, [(t1, 0, b"2", b"4"), (t2, 0, b"2", b"4")])

    assert_transaction_fenced(p1, [(t1, 0, b"1", b"5"), (t2, 0, b"3", b"6")])
    p2.commit_transaction(30)
    _only_p2_visible(bs, t1, t2)
    close_quietly(p1, p2)


# -- T-INT-9 ------------------------------------------------------------------------------------


def test_t_int_9_fencing_on_transaction_expiration(kafka_broker) -> None:
    """A producer with a short transaction timeout (librdkafka's minimum, 1000 ms, instead of Kafka's
    100 ms) sends "1" (acknowledged) and idles past the timeout; the broker aborts the transaction
    (observed as LSO == HWM, polled, bounded). The second send fails (fatal _FENCED, or a fencing
    delivery error); read_uncommitted sees exactly "1", read_committed nothing."""
    bs = kafka_broker.bootstrap
    t1, _t2 = two_topics(bs)
    p = txn_producer(bs, uniq("t-int-9"), **{"transaction.timeout.ms": 1000})
    p.begin_transaction()
    t0 = time.monotonic()
    send(p, [(t1, 0, b"1", b"1")])
    seen = lso(bs, t1, 0)
    if time.monotonic() - t0 < 0.9:  # read before the timeout could pass (a busy machine may take longer)
        assert seen == 0, "the transaction was not open after its first send"
    # The scenario itself: wait past the transaction timeout until the broker's abort lands.
    wait_until(lambda: lso(bs, t1, 0) == hwm(bs, t1, 0) == 2, 15, "timed-out transaction aborted by the broker",
               interval=0.2)
    assert time.monotonic() - t0 >= 0.9, "aborted before the transaction timeout"
    how = send_expect_fenced(p, t1, 0, b"2")
    print("late send after expiration:", how)
    assert values(read_to_eof(bs, [(t1, 0)], "read_uncommitted")) == [b"1"]
    assert read_to_eof(bs, [(t1, 0)], "read_committed") == []
    close_quietly(p)


# -- T-INT-10 -----------------------------------------------------------------------------------


@pytest.mark.timeout(240)
def test_t_int_10_many_markers(kafka_broker) -> None:
    """Two 10-partition topics; one transaction writes 5,000 records to each and aborts; the next
    writes 1,000 to the first and commits: read_committed gets exactly the 1,000 committed,
    read_uncommitted exactly 11,000."""
    bs = kafka_broker.bootstrap
    t1, t2 = uniq("t-int-10-a"), uniq("t-int-10-b")
    create_topic(bs, t1, 10)
    create_topic(bs, t2, 10)
    p = txn_producer(bs, uniq("t-int-10"))
    p.begin_transaction()
    send(p, [(t, i % 10, None, b"aborted-%d" % i) for t in (t1, t2) for i in range(5000)], timeout=60)
    p.abort_transaction(60)
    p.begin_transaction()
    send(p, [(t1, i % 10, None, b"committed-%d" % i) for i in range(1000)], timeout=60)
    p.commit_transaction(60)

    tps = all_tps(t1, t2, partitions=10)
    wait_stable(bs, tps)
    rc = values(read_to_eof(bs, tps, "read_committed"))
    assert len(rc) == 1000 and sorted(rc) == sorted(b"committed-%d" % i for i in range(1000))
    ru = read_to_eof(bs, tps, "read_uncommitted")
    assert len(ru) == 11_000


# -- T-INT-11 -----------------------------------------------------------------------------------


def test_t_int_11_offset_metadata_in_transaction(kafka_broker) -> None:
    """send_offsets_to_transaction({topic1 p0: offset 110, leader epoch 15, "some metadata"}) and
    commit; a second producer with the same transactional id inits (waits for the transaction to
    complete); the group's committed() returns offset 110, leader epoch 15, "some metadata" within
    10 s."""
    bs = kafka_broker.bootstrap
    t1, _t2 = two_topics(bs)
    group = uniq("t-int-11-group")
    tid = uniq("t-int-11")
    p = txn_producer(bs, tid)
    meta_consumer = Consumer({"bootstrap.servers": bs, "group.id": group, "enable.auto.commit": False, **QUIET})
    try:
        p.begin_transaction()
        send(p, [(t1, 1, None, b"payload")])
        tp = TopicPartition(t1, 0, 110, "some metadata", 15)
        p.send_offsets_to_transaction([tp], meta_consumer.consumer_group_metadata(), 30)
        p.commit_transaction(30)
        txn_producer(bs, tid)  # init_transactions(): completes only after the first txn is complete

        got: list[TopicPartition] = []

        def committed() -> bool:
            got[:] = meta_consumer.committed([TopicPartition(t1, 0)], timeout=5)
            return got[0].offset == 110

        wait_until(committed, 10, "committed offset 110", interval=0.2)
        assert got[0].leader_epoch == 15, got[0]
        assert got[0].metadata == "some metadata", got[0]
    finally:
        meta_consumer.close()


# -- T-INT-12 -----------------------------------------------------------------------------------


def test_t_int_12_commit_timeout_while_broker_stopped(kafka_broker) -> None:
    """The broker is SIGSTOPped during an open transaction: commit_transaction(3.0) returns a
    retriable or timeout error (within 10 s: it does not wait for the broker); after SIGCONT a
    retried commit succeeds and the record is visible to read_committed."""
    if getattr(kafka_broker, "external", False):
        pytest.skip("needs a broker process started by the test (SIGSTOP/SIGCONT)")
    bs = kafka_broker.bootstrap
    t1, _t2 = two_topics(bs)
    p = txn_producer(bs, uniq("t-int-12"))
    p.begin_transaction()
    send(p, [(t1, 0, None, b"1")])
    kafka_broker.pause()
    try:
        t0 = time.monotonic()
        with pytest.raises(KafkaException) as exc:
            p.commit_transaction(3.0)
        elapsed = time.monotonic() - t0
    finally:
        kafka_broker.resume()
    err = exc.value.args[0]
    assert elapsed < 10.0, f"commit_transaction(3.0) took {elapsed:.2f}s"
    assert err.retriable() or err.code() == KafkaError._TIMED_OUT, err
    assert not err.fatal() and not err.txn_requires_abort(), err
    p.commit_transaction(30)
    wait_until(lambda: lso(bs, t1, 0) == hwm(bs, t1, 0) == 2, 10, "LSO == HWM after the commit")
    assert values(read_to_eof(bs, [(t1, 0)], "read_committed")) == [b"1"]
