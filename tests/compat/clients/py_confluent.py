"""The compatibility scenarios (scenario.py) with confluent-kafka (librdkafka)."""

from __future__ import annotations

from common import check, check_ordered, main, until
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewPartitions,
    NewTopic,
    ResourceType,
)

QUIET = {"log_level": 3}


def _create(bootstrap: str, topic: str, partitions: int, configs: dict[str, str] | None = None) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap, **QUIET})
    admin.create_topics([NewTopic(topic, partitions, 1, config=configs or {})])[topic].result(30)


def _produce(bootstrap: str, topic: str, start: int, n: int, **conf: object) -> None:
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, **QUIET, **conf})
    for i in range(start, start + n):
        p.produce(topic, key=f"k{i}".encode(), value=f"v{i}".encode())
    check(p.flush(30) == 0, "records left unsent")


def _consume(consumer: Consumer, want: int, timeout_s: float = 30) -> list[tuple[int, bytes, bytes]]:
    got: list[tuple[int, bytes, bytes]] = []

    def step() -> None:
        for m in consumer.consume(100, timeout=0.5):
            if m.error() is None:
                got.append((m.partition(), m.key(), m.value()))
            elif m.error().code() != KafkaError._PARTITION_EOF:
                raise RuntimeError(m.error())
    until(timeout_s, lambda: len(got) >= want, step)
    return got


def _consumer(bootstrap: str, group: str, **conf: object) -> Consumer:
    return Consumer({"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest",
                     "enable.auto.commit": False, **QUIET, **conf})


def _produce_then_read(bootstrap: str, topic: str, partitions: int, n: int, **producer_conf: object) -> None:
    """n keyed records produced to a new topic, then all read back by a new group, in order."""
    _create(bootstrap, topic, partitions)
    _produce(bootstrap, topic, 0, n, **producer_conf)
    c = _consumer(bootstrap, f"{topic}-g")
    c.subscribe([topic])
    try:
        check_ordered(_consume(c, n), n)
    finally:
        c.close()


def produce_consume(bootstrap: str, prefix: str) -> None:
    _produce_then_read(bootstrap, f"{prefix}-pc", 3, 300)


def group_resume(bootstrap: str, prefix: str) -> None:
    topic, group = f"{prefix}-gr", f"{prefix}-gr-g"
    _create(bootstrap, topic, 2)
    a, b = _consumer(bootstrap, group), _consumer(bootstrap, group)
    a.subscribe([topic])
    b.subscribe([topic])
    got: dict[str, int] = {"a": 0, "b": 0}

    def step() -> None:
        for name, c in (("a", a), ("b", b)):
            got[name] += sum(1 for m in c.consume(100, timeout=0.2) if m.error() is None)
    # The group settles (one partition each) before anything is produced: no record is read twice.
    until(60, lambda: len(a.assignment()) == 1 and len(b.assignment()) == 1, step)
    _produce(bootstrap, topic, 0, 100)
    until(60, lambda: got["a"] + got["b"] >= 100, step)
    check(got["a"] > 0 and got["b"] > 0 and got["a"] + got["b"] == 100, f"members read {got}")
    for c in (a, b):
        c.commit(asynchronous=False)
        c.close()
    _produce(bootstrap, topic, 100, 50)
    c = _consumer(bootstrap, group)
    c.subscribe([topic])
    try:
        records = _consume(c, 50)
        check(sorted(int(v[1:]) for _p, _k, v in records) == list(range(100, 150)), "did not resume at the commit")
    finally:
        c.close()


def idempotent(bootstrap: str, prefix: str) -> None:
    _produce_then_read(bootstrap, f"{prefix}-idem", 1, 200, **{"enable.idempotence": True, "acks": "all"})


def transactional(bootstrap: str, prefix: str) -> None:
    src, dst, group = f"{prefix}-in", f"{prefix}-out", f"{prefix}-eos-g"
    _create(bootstrap, src, 1)
    _create(bootstrap, dst, 1)
    _produce(bootstrap, src, 0, 100)
    c = _consumer(bootstrap, group, **{"isolation.level": "read_committed"})
    c.assign([TopicPartition(src, 0, 0)])
    p = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"{prefix}-txn", **QUIET})
    p.init_transactions(30)
    copied, batches = 0, 0
    try:
        while copied < 100:
            records = [m for m in c.consume(10, timeout=1) if m.error() is None]
            if not records:
                continue
            p.begin_transaction()
            for m in records:
                p.produce(dst, key=m.key(), value=m.value().upper())
            next_offset = records[-1].offset() + 1
            p.send_offsets_to_transaction([TopicPartition(src, 0, next_offset)], c.consumer_group_metadata(), 30)
            batches += 1
            if batches == 3:
                p.abort_transaction(30)
                c.seek(TopicPartition(src, 0, records[0].offset()))  # redo from a concrete offset
                continue
            p.commit_transaction(30)
            copied = next_offset
    finally:
        c.close()
    reader = _consumer(bootstrap, f"{prefix}-eos-r", **{"isolation.level": "read_committed"})
    reader.assign([TopicPartition(dst, 0, 0)])
    try:
        values = [v for _p, _k, v in _consume(reader, 100)]
        values += [m.value() for m in reader.consume(100, timeout=1) if m.error() is None]
        check(sorted(values) == sorted(f"V{i}".encode() for i in range(100)), f"read {len(values)} output values")
    finally:
        reader.close()
    check_committed = _consumer(bootstrap, group)
    try:
        offset = check_committed.committed([TopicPartition(src, 0)], timeout=30)[0].offset
        check(offset == 100, f"committed input offset {offset}")
    finally:
        check_committed.close()


def admin(bootstrap: str, prefix: str) -> None:
    a = AdminClient({"bootstrap.servers": bootstrap, **QUIET})
    topic = f"{prefix}-adm"
    a.create_topics([NewTopic(topic, 2, 1, config={"retention.ms": "100000"})])[topic].result(30)

    def retention() -> str:
        described = a.describe_configs([ConfigResource(ResourceType.TOPIC, topic)])
        return next(iter(described.values())).result(30)["retention.ms"].value
    check(retention() == "100000", "retention.ms not as created")
    a.incremental_alter_configs([ConfigResource(ResourceType.TOPIC, topic, incremental_configs=[
        ConfigEntry("retention.ms", "200000", incremental_operation=AlterConfigOpType.SET)])])
    until(10, lambda: retention() == "200000", lambda: None)
    a.create_partitions([NewPartitions(topic, 4)])[topic].result(30)
    check(len(a.list_topics(topic, timeout=30).topics[topic].partitions) == 4, "partitions not added")
    p = Producer({"bootstrap.servers": bootstrap, **QUIET})
    for i in range(10):
        p.produce(topic, value=f"v{i}".encode(), partition=0)
    check(p.flush(30) == 0, "records left unsent")
    deleted = a.delete_records([TopicPartition(topic, 0, 5)])
    check(next(iter(deleted.values())).result(30).low_watermark == 5, "delete_records did not move the start")
    a.list_consumer_groups().result(30)
    a.delete_topics([topic])[topic].result(30)
    until(10, lambda: topic not in a.list_topics(timeout=30).topics, lambda: None)


if __name__ == "__main__":
    main({"produce_consume": produce_consume, "group_resume": group_resume, "idempotent": idempotent,
          "transactional": transactional, "admin": admin})
