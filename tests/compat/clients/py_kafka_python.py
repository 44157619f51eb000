"""The compatibility scenarios (scenario.py) with kafka-python (pure-Python client)."""

from __future__ import annotations

import time

from common import check, check_ordered, main, until
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import ConfigResource, ConfigResourceType, NewPartitions, NewTopic
from kafka.structs import OffsetAndMetadata


def _create(bootstrap: str, topic: str, partitions: int, configs: dict[str, str] | None = None) -> None:
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        admin.create_topics([NewTopic(topic, partitions, 1, topic_configs=configs or {})])
    finally:
        admin.close()


def _produce(bootstrap: str, topic: str, start: int, n: int, **conf: object) -> None:
    p = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=5, **conf)
    try:
        futures = [p.send(topic, key=f"k{i}".encode(), value=f"v{i}".encode()) for i in range(start, start + n)]
        p.flush(30)
        for f in futures:
            f.get(timeout=30)
    finally:
        p.close()


def _consumer(bootstrap: str, group: str, *topics: str, **conf: object) -> KafkaConsumer:
    return KafkaConsumer(*topics, bootstrap_servers=bootstrap, group_id=group, auto_offset_reset="earliest",
                         enable_auto_commit=False, **conf)


def _read(c: KafkaConsumer, want: int, timeout_s: float = 30) -> list[tuple[int, bytes, bytes]]:
    got: list[tuple[int, bytes, bytes]] = []

    def step() -> None:
        for records in c.poll(timeout_ms=500).values():
            got.extend((m.partition, m.key, m.value) for m in records)
    until(timeout_s, lambda: len(got) >= want, step)
    return got


def _produce_then_read(bootstrap: str, topic: str, partitions: int, n: int, **producer_conf: object) -> None:
    """n keyed records produced to a new topic, then all read back by a new group, in order."""
    _create(bootstrap, topic, partitions)
    _produce(bootstrap, topic, 0, n, **producer_conf)
    c = _consumer(bootstrap, f"{topic}-g", topic)
    try:
        check_ordered(_read(c, n), n)
    finally:
        c.close()


def produce_consume(bootstrap: str, prefix: str) -> None:
    _produce_then_read(bootstrap, f"{prefix}-pc", 3, 300)


def group_resume(bootstrap: str, prefix: str) -> None:
    topic, group = f"{prefix}-gr", f"{prefix}-gr-g"
    _create(bootstrap, topic, 2)
    a, b = _consumer(bootstrap, group, topic), _consumer(bootstrap, group, topic)
    got = {"a": 0, "b": 0}

    def step() -> None:
        for name, c in (("a", a), ("b", b)):
            got[name] += sum(len(r) for r in c.poll(timeout_ms=200).values())
    until(60, lambda: len(a.assignment()) == 1 and len(b.assignment()) == 1, step)
    _produce(bootstrap, topic, 0, 100)
    until(60, lambda: got["a"] + got["b"] >= 100, step)
    check(got["a"] > 0 and got["b"] > 0 and got["a"] + got["b"] == 100, f"members read {got}")
    for c in (a, b):
        c.commit()
        c.close()
    _produce(bootstrap, topic, 100, 50)
    c = _consumer(bootstrap, group, topic)
    try:
        records = _read(c, 50)
        check(sorted(int(v[1:]) for _p, _k, v in records) == list(range(100, 150)), "did not resume at the commit")
    finally:
        c.close()


def idempotent(bootstrap: str, prefix: str) -> None:
    _produce_then_read(bootstrap, f"{prefix}-idem", 1, 200, enable_idempotence=True, acks="all")


def transactional(bootstrap: str, prefix: str) -> None:
    src, dst, group = f"{prefix}-in", f"{prefix}-out", f"{prefix}-eos-g"
    _create(bootstrap, src, 1)
    _create(bootstrap, dst, 1)
    _produce(bootstrap, src, 0, 100)
    tp = TopicPartition(src, 0)
    c = _consumer(bootstrap, group, isolation_level="read_committed")
    c.assign([tp])
    c.seek(tp, 0)
    p = KafkaProducer(bootstrap_servers=bootstrap, transactional_id=f"{prefix}-txn")
    p.init_transactions()
    copied, batches = 0, 0
    try:
        while copied < 100:
            records = c.poll(timeout_ms=1000, max_records=10).get(tp, [])
            if not records:
                continue
            p.begin_transaction()
            for m in records:
                p.send(dst, key=m.key, value=m.value.upper())
            next_offset = records[-1].offset + 1
            p.send_offsets_to_transaction({tp: OffsetAndMetadata(next_offset, "", -1)}, c.group_metadata())
            batches += 1
            if batches == 3:
                p.abort_transaction()
                c.seek(tp, records[0].offset)
                continue
            p.commit_transaction()
            copied = next_offset
    finally:
        p.close()
        c.close()
    out = TopicPartition(dst, 0)
    reader = _consumer(bootstrap, f"{prefix}-eos-r", isolation_level="read_committed")
    reader.assign([out])
    reader.seek(out, 0)
    try:
        values = [v for _p, _k, v in _read(reader, 100)]
        values += [m.value for r in reader.poll(timeout_ms=1000).values() for m in r]
        check(sorted(values) == sorted(f"V{i}".encode() for i in range(100)), f"read {len(values)} output values")
    finally:
        reader.close()
    committed = _consumer(bootstrap, group)
    try:
        offset = committed.committed(tp)
        check(offset == 100, f"committed input offset {offset}")
    finally:
        committed.close()


def admin(bootstrap: str, prefix: str) -> None:
    topic = f"{prefix}-adm"
    a = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        a.create_topics([NewTopic(topic, 2, 1, topic_configs={"retention.ms": "100000"})])

        def retention() -> str:
            described = a.describe_configs([ConfigResource(ConfigResourceType.TOPIC, topic)], config_filter="all")
            return str(_find(described, "retention.ms"))
        check(retention() == "100000", f"retention.ms not as created: {retention()}")
        a.alter_configs([ConfigResource(ConfigResourceType.TOPIC, topic, {"retention.ms": "200000"})])
        until(10, lambda: retention() == "200000", lambda: time.sleep(0.1))  # Kafka applies it asynchronously
        a.create_partitions({topic: NewPartitions(4)})
        p = KafkaProducer(bootstrap_servers=bootstrap)
        try:
            for i in range(10):
                p.send(topic, value=f"v{i}".encode(), partition=0).get(timeout=30)
            until(10, lambda: len(p.partitions_for(topic) or ()) == 4, lambda: None)
        finally:
            p.close()
        a.delete_records({TopicPartition(topic, 0): 5})
        check(topic in a.list_topics(), "topic not listed")
        a.list_groups()
        a.delete_topics([topic])
        until(10, lambda: topic not in a.list_topics(), lambda: None)
    finally:
        a.close()


def _find(tree: object, key: str) -> object:
    """The value of `key` somewhere in describe_configs' nested answer."""
    if isinstance(tree, dict):
        if key in tree:
            v = tree[key]
            return v.get("value", v) if isinstance(v, dict) else v
        for v in tree.values():
            found = _find(v, key)
            if found is not None:
                return found
    elif isinstance(tree, (list, tuple)):
        for v in tree:
            found = _find(v, key)
            if found is not None:
                return found
    return None


if __name__ == "__main__":
    main({"produce_consume": produce_consume, "group_resume": group_resume, "idempotent": idempotent,
          "transactional": transactional, "admin": admin})
