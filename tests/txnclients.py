"""Transactional-client helpers shared by the T-INT scenario tests (test-plan.md section 3).

confluent-kafka producers with an error_cb log, strict send/flush helpers that surface fatal errors,
the LSO / HWM probes of test-plan.md 0.4 and the "no hanging transaction" wait.
"""

from __future__ import annotations

import warnings

from collections.abc import Iterable
from typing import Any

from clients import create_topic, uniq, wait_until
from confluent_kafka import (
    Consumer,
    KafkaError,
    KafkaException,
    Producer,
    TopicPartition,
)

QUIET = {"log_level": 3}
FENCED_DELIVERY_CODES = {KafkaError._FENCED, KafkaError.INVALID_PRODUCER_EPOCH, KafkaError.PRODUCER_FENCED}


def two_topics(bs: str, partitions: int = 4) -> tuple[str, str]:
    t1, t2 = uniq("topic1"), uniq("topic2")
    create_topic(bs, t1, partitions)
    create_topic(bs, t2, partitions)
    return t1, t2


class ErrorLog(list):
    """error_cb: client-level errors (a fatal fencing error is reported here instead of being raised
    from inside a delivery callback by confluent-kafka)."""

    def __call__(self, err: KafkaError) -> None:
        self.append(err)


class TxnProducer(Producer):
    error_log: ErrorLog


def txn_producer(bs: str, tid: str, init: bool = True, **conf: Any) -> TxnProducer:
    log = ErrorLog()
    p = TxnProducer({"bootstrap.servers": bs, "transactional.id": tid, "linger.ms": 5, "error_cb": log,
                     **QUIET, **conf})
    p.error_log = log
    if init:
        p.init_transactions(30)
    return p


def close_quietly(*producers: Producer) -> None:
    """Close producers a test fenced or failed on purpose: close() tries to abort their transaction
    and warns that it cannot (expected). Closed before the test's broker stops, they do not linger
    reconnecting to it."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for p in producers:
            p.close()


class Sent:
    """Delivery reports of one producer."""

    def __init__(self) -> None:
        self.ok: list[Any] = []
        self.errors: list[KafkaError] = []

    def __call__(self, err: KafkaError | None, msg: Any) -> None:
        (self.errors.append(err) if err else self.ok.append(msg))


def send(p: Producer, records: Iterable[tuple[str, int | None, bytes | None, bytes]], timeout: float = 30.0,
         timestamp: int | None = None) -> list[Any]:
    """Produce (topic, partition, key, value), flush, and require every delivery to succeed."""
    sent = Sent()
    n = 0
    for topic, partition, key, value in records:
        kw: dict[str, Any] = {"key": key, "value": value, "on_delivery": sent}
        if partition is not None:
            kw["partition"] = partition
        if timestamp is not None:
            kw["timestamp"] = timestamp
        p.produce(topic, **kw)
        n += 1
        if n % 1000 == 0:
            p.poll(0)
    assert p.flush(timeout) == 0, "records not delivered in time"
    assert not sent.errors, f"delivery errors: {sent.errors[:5]}"
    assert len(sent.ok) == n
    return sent.ok


def flush_raising(p: Producer, timeout: float = 30.0) -> None:
    """flush(); a fatal error raised by confluent-kafka while it serves the delivery callbacks comes
    out as SystemError chained to the KafkaException: re-raise the KafkaException."""
    try:
        p.flush(timeout)
    except SystemError as exc:
        if isinstance(exc.__cause__, KafkaException):
            raise exc.__cause__ from None
        # Sometimes the SystemError carries no cause ("returned NULL without setting an exception");
        # the fatal error itself was then reported to error_cb.
        fatal = [e for e in getattr(p, "error_log", []) if e.fatal()]
        if fatal:
            raise KafkaException(fatal[0]) from None
        raise


def assert_fatal_fenced(exc: KafkaException) -> None:
    err = exc.args[0]
    assert err.code() == KafkaError._FENCED, err
    assert err.fatal(), err


def lso(bs: str, topic: str, partition: int) -> int:
    return _watermark(bs, topic, partition, "read_committed")


def hwm(bs: str, topic: str, partition: int) -> int:
    return _watermark(bs, topic, partition, "read_uncommitted")


def _watermark(bs: str, topic: str, partition: int, isolation: str) -> int:
    c = Consumer({"bootstrap.servers": bs, "group.id": uniq("probe"), "isolation.level": isolation, **QUIET})
    try:
        return int(c.get_watermark_offsets(TopicPartition(topic, partition), timeout=10, cached=False)[1])
    finally:
        c.close()


def wait_stable(bs: str, tps: list[tuple[str, int]], timeout: float = 15.0) -> None:
    """Poll until LSO == HWM on every partition (the oracle "no hanging transaction"). Kafka answers
    EndTxn before it writes the markers, so a read_committed read right after commit_transaction()
    could stop at an LSO that is about to move: settle first."""
    base = {"bootstrap.servers": bs, "group.id": uniq("probe"), **QUIET}
    rc = Consumer({**base, "isolation.level": "read_committed"})
    ru = Consumer({**base, "isolation.level": "read_uncommitted"})
    try:
        for t, p in tps:
            tp = TopicPartition(t, p)
            wait_until(lambda tp=tp: (rc.get_watermark_offsets(tp, timeout=10, cached=False)[1]
                                      == ru.get_watermark_offsets(tp, timeout=10, cached=False)[1]),
                       timeout, f"LSO == HWM on {t}/{p}")
    finally:
        rc.close()
        ru.close()



def all_tps(*topics: str, partitions: int = 4) -> list[tuple[str, int]]:
    return [(t, p) for t in topics for p in range(partitions)]


def values(records: Iterable[tuple[Any, ...]]) -> list[bytes]:
    return [r[4] for r in records]


def send_expect_fenced(p: TxnProducer, topic: str, partition: int, value: bytes) -> str:
    """Send one record from a fenced producer: the send must fail, either at produce() with a fatal
    _FENCED, or with a delivery report carrying a fencing error. Returns what happened."""
    sent = Sent()
    try:
        p.produce(topic, partition=partition, value=value, on_delivery=sent)
    except KafkaException as exc:
        assert_fatal_fenced(exc)
        return "produce() raised fatal _FENCED"
    try:
        flush_raising(p)
    except KafkaException as exc:
        assert_fatal_fenced(exc)
        assert not sent.ok, "a fenced producer's record was acknowledged"
        return "flush() raised fatal _FENCED"
    assert not sent.ok, "a fenced producer's record was acknowledged"
    assert len(sent.errors) == 1, "no delivery report for the fenced producer's record"
    fatal = [e for e in p.error_log if e.fatal()]
    if sent.errors[0].code() not in FENCED_DELIVERY_CODES:
        # librdkafka may fail the queued record with the fatal error's own code path; then the
        # fatal error itself must be the fencing one.
        assert fatal and fatal[0].code() == KafkaError._FENCED, (sent.errors, list(p.error_log))
    return f"delivery report {sent.errors[0].name()}; fatal errors {[e.name() for e in fatal]}"


def commit_transaction(p: Producer, records: Iterable[tuple[str, int | None, bytes | None, bytes]]) -> list[Any]:
    """One whole transaction: begin, send (every delivery must succeed), commit."""
    p.begin_transaction()
    delivered = send(p, records)
    p.commit_transaction(30)
    return delivered


def assert_transaction_fenced(p: Producer, records: Iterable[tuple[str, int | None, bytes | None, bytes]]) -> None:
    """A fenced producer tries a whole transaction (begin is local state only; the first produce
    makes librdkafka add the partition with the old epoch): it must fail with a fatal _FENCED
    before anything is acknowledged or committed."""
    p.begin_transaction()
    sent = Sent()
    fenced: KafkaException | None = None
    try:
        for topic, partition, key, value in records:
            p.produce(topic, partition=partition, key=key, value=value, on_delivery=sent)
        flush_raising(p)
        p.commit_transaction(30)
    except KafkaException as exc:
        fenced = exc
    assert fenced is not None, "the fenced producer committed"
    assert_fatal_fenced(fenced)
    assert not sent.ok, "a fenced producer's record was acknowledged"
