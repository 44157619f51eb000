"""The compatibility scenarios (scenario.py) with aiokafka (pure-Python asyncio client)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, NewPartitions, NewTopic, RecordsToDelete
from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType
from common import ScenarioFailed, check, check_ordered, main


async def _create(bootstrap: str, topic: str, partitions: int, configs: dict[str, str] | None = None) -> None:
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        await admin.create_topics([NewTopic(topic, partitions, 1, topic_configs=configs or {})])
    finally:
        await admin.close()


async def _produce(bootstrap: str, topic: str, start: int, n: int, **conf: object) -> None:
    p = AIOKafkaProducer(bootstrap_servers=bootstrap, linger_ms=5, **conf)
    await p.start()
    try:
        futures = [await p.send(topic, key=f"k{i}".encode(), value=f"v{i}".encode()) for i in range(start, start + n)]
        await asyncio.gather(*futures)
    finally:
        await p.stop()


async def _read(c: AIOKafkaConsumer, want: int, timeout_s: float = 30) -> list[tuple[int, bytes, bytes]]:
    got: list[tuple[int, bytes, bytes]] = []
    end = time.monotonic() + timeout_s
    while len(got) < want:
        check(time.monotonic() < end, f"timed out with {len(got)} of {want} records")
        batches = await c.getmany(timeout_ms=500)
        for records in batches.values():
            got.extend((m.partition, m.key, m.value) for m in records)
    return got


def _consumer(bootstrap: str, group: str, *topics: str, **conf: object) -> AIOKafkaConsumer:
    return AIOKafkaConsumer(*topics, bootstrap_servers=bootstrap, group_id=group, auto_offset_reset="earliest",
                            enable_auto_commit=False, **conf)


async def _until(timeout_s: float, done: Callable[[], bool], step: Callable[[], Awaitable[None]]) -> None:
    end = time.monotonic() + timeout_s
    while not done():
        check(time.monotonic() < end, "timed out")
        await step()


async def _produce_then_read(bootstrap: str, topic: str, partitions: int, n: int, **producer_conf: object) -> None:
    """n keyed records produced to a new topic, then all read back by a new group, in order."""
    await _create(bootstrap, topic, partitions)
    await _produce(bootstrap, topic, 0, n, **producer_conf)
    c = _consumer(bootstrap, f"{topic}-g", topic)
    await c.start()
    try:
        check_ordered(await _read(c, n), n)
    finally:
        await c.stop()


async def produce_consume(bootstrap: str, prefix: str) -> None:
    await _produce_then_read(bootstrap, f"{prefix}-pc", 3, 300)


async def group_resume(bootstrap: str, prefix: str) -> None:
    topic, group = f"{prefix}-gr", f"{prefix}-gr-g"
    await _create(bootstrap, topic, 2)
    a, b = _consumer(bootstrap, group, topic), _consumer(bootstrap, group, topic)
    await a.start()
    await b.start()
    got = {"a": 0, "b": 0}

    async def step() -> None:
        for name, c in (("a", a), ("b", b)):
            batches = await c.getmany(timeout_ms=200)
            got[name] += sum(len(r) for r in batches.values())
    await _until(60, lambda: len(a.assignment()) == 1 and len(b.assignment()) == 1, step)
    await _produce(bootstrap, topic, 0, 100)
    await _until(60, lambda: got["a"] + got["b"] >= 100, step)
    check(got["a"] > 0 and got["b"] > 0 and got["a"] + got["b"] == 100, f"members read {got}")
    for c in (a, b):
        await c.commit()
        await c.stop()
    await _produce(bootstrap, topic, 100, 50)
    c = _consumer(bootstrap, group, topic)
    await c.start()
    try:
        records = await _read(c, 50)
        check(sorted(int(v[1:]) for _p, _k, v in records) == list(range(100, 150)), "did not resume at the commit")
    finally:
        await c.stop()


async def idempotent(bootstrap: str, prefix: str) -> None:
    await _produce_then_read(bootstrap, f"{prefix}-idem", 1, 200, enable_idempotence=True, acks="all")


async def transactional(bootstrap: str, prefix: str) -> None:
    src, dst, group = f"{prefix}-in", f"{prefix}-out", f"{prefix}-eos-g"
    await _create(bootstrap, src, 1)
    await _create(bootstrap, dst, 1)
    await _produce(bootstrap, src, 0, 100)
    tp = TopicPartition(src, 0)
    c = _consumer(bootstrap, group, isolation_level="read_committed")
    c.assign([tp])
    await c.start()
    c.seek(tp, 0)
    p = AIOKafkaProducer(bootstrap_servers=bootstrap, transactional_id=f"{prefix}-txn")
    await p.start()
    copied, batches = 0, 0
    try:
        while copied < 100:
            records = (await c.getmany(tp, timeout_ms=1000, max_records=10)).get(tp, [])
            if not records:
                continue
            await p.begin_transaction()
            for m in records:
                await p.send(dst, key=m.key, value=m.value.upper())
            next_offset = records[-1].offset + 1
            await p.send_offsets_to_transaction({tp: next_offset}, group)
            batches += 1
            if batches == 3:
                await p.abort_transaction()
                c.seek(tp, records[0].offset)
                continue
            await p.commit_transaction()
            copied = next_offset
    finally:
        await p.stop()
        await c.stop()
    out = TopicPartition(dst, 0)
    reader = _consumer(bootstrap, f"{prefix}-eos-r", isolation_level="read_committed")
    reader.assign([out])
    await reader.start()
    reader.seek(out, 0)
    try:
        values = [v for _p, _k, v in await _read(reader, 100)]
        extra = await reader.getmany(timeout_ms=1000)
        values += [m.value for r in extra.values() for m in r]
        check(sorted(values) == sorted(f"V{i}".encode() for i in range(100)), f"read {len(values)} output values")
    finally:
        await reader.stop()
    committed = _consumer(bootstrap, group)
    await committed.start()
    try:
        offset = await committed.committed(tp)
        check(offset == 100, f"committed input offset {offset}")
    finally:
        await committed.stop()


async def admin(bootstrap: str, prefix: str) -> None:
    topic = f"{prefix}-adm"
    a = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await a.start()
    try:
        await a.create_topics([NewTopic(topic, 2, 1, topic_configs={"retention.ms": "100000"})])

        async def retention() -> str:
            responses = await a.describe_configs([ConfigResource(ConfigResourceType.TOPIC, topic)])
            for resp in responses:
                for resource in resp.resources:
                    for entry in resource[4]:
                        if entry[0] == "retention.ms":
                            return entry[1]
            raise ScenarioFailed("retention.ms not described")
        check(await retention() == "100000", "retention.ms not as created")
        await a.alter_configs([ConfigResource(ConfigResourceType.TOPIC, topic, {"retention.ms": "200000"})])
        end = time.monotonic() + 10  # Kafka applies a change asynchronously
        while await retention() != "200000":
            check(time.monotonic() < end, "retention.ms not changed")
            await asyncio.sleep(0.1)
        await a.create_partitions({topic: NewPartitions(total_count=4)})
        p = AIOKafkaProducer(bootstrap_servers=bootstrap)
        await p.start()
        try:
            for i in range(10):
                await p.send_and_wait(topic, value=f"v{i}".encode(), partition=0)
            check(len(await p.partitions_for(topic)) == 4, "partitions not added")
        finally:
            await p.stop()
        low = await a.delete_records({TopicPartition(topic, 0): RecordsToDelete(before_offset=5)})
        check(low[TopicPartition(topic, 0)] == 5, f"delete_records answered {low}")
        check(topic in await a.list_topics(), "topic not listed")
        await a.list_consumer_groups()
        await a.delete_topics([topic])
        end = time.monotonic() + 10  # Kafka forgets a deleted topic asynchronously
        while topic in await a.list_topics():
            check(time.monotonic() < end, "topic still listed")
            await asyncio.sleep(0.1)
    finally:
        await a.close()


def _sync(fn: Callable[[str, str], Awaitable[None]]) -> Callable[[str, str], None]:
    return lambda bootstrap, prefix: asyncio.run(fn(bootstrap, prefix))


if __name__ == "__main__":
    main({name: _sync(fn) for name, fn in (("produce_consume", produce_consume), ("group_resume", group_resume),
                                           ("idempotent", idempotent), ("transactional", transactional),
                                           ("admin", admin))})
