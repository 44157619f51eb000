"""Small helpers over confluent-kafka for the test suite (real clients, bounded waits)."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterable
from typing import Any

from confluent_kafka import OFFSET_END, Consumer, KafkaError, KafkaException, Message, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic


def admin(bootstrap: str) -> AdminClient:
    return AdminClient({"bootstrap.servers": bootstrap})


def create_topic(bootstrap: str, name: str, partitions: int = 1, config: dict[str, str] | None = None,
                 timeout: float = 30.0) -> None:
    a = admin(bootstrap)  # keep the client alive until the future resolves
    futures = a.create_topics([NewTopic(name, partitions, 1, config=config or {})], operation_timeout=timeout)
    futures[name].result(timeout)
    wait_for_topic(bootstrap, name, partitions, timeout)


def wait_for_topic(bootstrap: str, name: str, partitions: int, timeout: float = 30.0) -> None:
    a = admin(bootstrap)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        md = a.list_topics(name, timeout=5)
        t = md.topics.get(name)
        if t is not None and t.error is None and len(t.partitions) == partitions:
            return
        time.sleep(0.05)
    raise TimeoutError(f"topic {name} not visible with {partitions} partitions")


def producer(bootstrap: str, **conf: Any) -> Producer:
    return Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, **conf})


def produce_all(p: Producer, topic: str, records: Iterable[dict[str, Any]], timeout: float = 30.0) -> list[Message]:
    """Produce and flush; return the delivered messages (raises on any delivery error)."""
    delivered: list[Message] = []
    errors: list[KafkaError] = []

    def cb(err: KafkaError | None, msg: Message) -> None:
        (errors.append(err) if err else delivered.append(msg))

    for r in records:
        p.produce(topic, on_delivery=cb, **r)
        p.poll(0)
    remaining = p.flush(timeout)
    if errors:
        raise AssertionError(f"delivery errors: {errors[:5]}")
    if remaining:
        raise AssertionError(f"{remaining} messages not delivered within {timeout}s")
    return delivered


def consumer(bootstrap: str, **conf: Any) -> Consumer:
    base = {"bootstrap.servers": bootstrap, "group.id": "tests", "enable.auto.commit": False,
            "auto.offset.reset": "earliest", "enable.partition.eof": False}
    base.update(conf)
    return Consumer(base)


def consume_n(c: Consumer, n: int, timeout: float = 30.0) -> list[Message]:
    out: list[Message] = []
    deadline = time.monotonic() + timeout
    while len(out) < n and time.monotonic() < deadline:
        for m in c.consume(min(500, n - len(out)), timeout=0.5):
            if m.error():
                raise AssertionError(f"consume error: {m.error()}")
            out.append(m)
    return out


def read_all(bootstrap: str, topic: str, partitions: int, expected: int, timeout: float = 30.0,
             **conf: Any) -> list[Message]:
    """Assign every partition from offset 0 and read exactly `expected` messages, then make sure
    nothing more arrives within a short grace period."""
    c = consumer(bootstrap, **conf)
    try:
        c.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
        msgs = consume_n(c, expected, timeout)
        extra = c.consume(100, timeout=0.5)
        return msgs + [m for m in extra if not m.error()]
    finally:
        c.close()


def wait_until(cond: Callable[[], bool], timeout: float, what: str, interval: float = 0.05) -> None:
    """Poll a condition with a deadline (never a fixed sleep standing in for synchronisation)."""
    deadline = time.monotonic() + timeout
    while True:
        if cond():
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for: {what}")
        time.sleep(interval)


def future_errors(futures: dict[Any, Any], timeout: float = 60.0) -> dict[Any, KafkaError | None]:
    """An AdminClient call's futures by key -> None for each that succeeded, else the KafkaError it
    failed with."""
    out: dict[Any, KafkaError | None] = {}
    for key, fut in futures.items():
        try:
            fut.result(timeout)
            out[key] = None
        except KafkaException as exc:
            out[key] = exc.args[0]
    return out


def uniq(prefix: str) -> str:
    """A topic, group or transactional id no other test uses (one Kafka serves a whole conformance run)."""
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def read_to_eof(bootstrap: str, tps: list[tuple[str, int]], isolation: str, timeout: float = 60.0,
                **conf: Any) -> list[tuple[str, int, int, bytes | None, bytes | None]]:
    """Every record from offset 0 until partition EOF on every partition (EOF is at the LSO for
    read_committed, at the HWM for read_uncommitted): (topic, partition, offset, key, value)."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": uniq("reader"), "enable.auto.commit": False,
                  "isolation.level": isolation, "enable.partition.eof": True, "log_level": 3, **conf})
    out: list[tuple[str, int, int, bytes | None, bytes | None]] = []
    try:
        c.assign([TopicPartition(t, p, 0) for t, p in tps])
        pending = set(tps)
        deadline = time.monotonic() + timeout
        while pending:
            if time.monotonic() > deadline:
                raise AssertionError(f"no EOF within {timeout}s on {sorted(pending)} ({len(out)} records read)")
            for m in c.consume(1000, timeout=0.2):
                err = m.error()
                if err is not None:
                    if err.code() == KafkaError._PARTITION_EOF:
                        pending.discard((m.topic(), m.partition()))
                        continue
                    raise AssertionError(f"consume error: {err}")
                pending.add((m.topic(), m.partition()))  # data after an EOF: not at the end yet
                out.append((m.topic(), m.partition(), m.offset(), m.key(), m.value()))
        return out
    finally:
        c.close()


def watermarks(bootstrap: str, tp: TopicPartition) -> tuple[int, int]:
    """(LSO, HWM): the high mark seen by a read_committed and by a read_uncommitted consumer."""
    out = []
    for iso in ("read_committed", "read_uncommitted"):
        c = Consumer({"bootstrap.servers": bootstrap, "group.id": "probe", "isolation.level": iso})
        try:
            out.append(c.get_watermark_offsets(tp, timeout=10, cached=False)[1])
        finally:
            c.close()
    return out[0], out[1]


def end_position(bootstrap: str, topic: str, partition: int, isolation: str, timeout: float = 15.0) -> int:
    """seekToEnd + position: where a consumer assigned at OFFSET_END starts fetching (librdkafka's
    position() stays unknown until a message is consumed, so it is read from the partition-EOF event)."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": uniq("end"), "enable.auto.commit": False,
                  "isolation.level": isolation, "enable.partition.eof": True, "log_level": 3})
    try:
        c.assign([TopicPartition(topic, partition, OFFSET_END)])
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for m in c.consume(10, timeout=0.2):
                err = m.error()
                if err is not None and err.code() == KafkaError._PARTITION_EOF:
                    return int(m.offset())
                raise AssertionError(f"unexpected message or error at the end: {err or m.offset()}")
        raise AssertionError(f"no EOF within {timeout}s")
    finally:
        c.close()
