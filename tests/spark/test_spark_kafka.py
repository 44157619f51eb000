"""Spark's Kafka source and sink (spark-sql-kafka-0-10 4.0.0, kafka-clients 3.9.0) against the broker.

What Spark does (shared/reference protocol.md section 2): the driver lists partitions and offsets
with an Admin client (ListOffsets at the query's isolation level, so `latest` under read_committed
is the LSO); executors read each offset range with an assigned KafkaConsumer; the sink is a default
(idempotent) KafkaProducer. Data is written and read back with confluent-kafka, so Spark is checked
against an independent client. Synchronisation is Spark's own: `processAllAvailable()` on streams,
actions on batch reads; the Kafka waits are bounded polls.

Every name carries a per-test suffix, so the tests also run against one shared Apache Kafka
(KAFKA_BOOTSTRAP); the ones that restart the broker or need broker settings use `broker_factory`
and skip there.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import pytest
from clients import create_topic, produce_all, producer, read_all
from confluent_kafka import Consumer, Producer, TopicPartition

pytestmark = [pytest.mark.spark, pytest.mark.integration, pytest.mark.timeout(300)]

QUIET = {"log_level": 3}
QUERY_TIMEOUT_S = 120


# -- helpers ------------------------------------------------------------------------------------


def uniq(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def wait_until(cond: Callable[[], bool], timeout: float, what: str, interval: float = 0.1) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(interval)


def produce_values(bootstrap: str, topic: str, values: Iterable[tuple[int, str]]) -> None:
    """Plain (idempotent) confluent-kafka produce of (partition, value) with key = value."""
    p = producer(bootstrap, **QUIET)
    produce_all(p, topic, [{"partition": part, "key": v.encode(), "value": v.encode()} for part, v in values])


def source(spark: Any, bootstrap: str, *, stream: bool = False, **options: str) -> Any:
    reader = spark.readStream if stream else spark.read
    reader = reader.format("kafka").option("kafka.bootstrap.servers", bootstrap)
    for k, v in options.items():
        reader = reader.option(k, v)
    return reader.load()


def batch_values(spark: Any, bootstrap: str, **options: str) -> list[tuple[int, int, str]]:
    df = source(spark, bootstrap, **options)
    return sorted((r.partition, r.offset, r.value) for r in df.selectExpr("partition", "offset",
                                                                          "CAST(value AS STRING) AS value").collect())


class MemoryStream:
    """A streaming Kafka read into Spark's memory sink; `values()` is what the query has seen."""

    def __init__(self, spark: Any, bootstrap: str, **options: str) -> None:
        self.spark = spark
        self.name = uniq("mem").replace("-", "_")
        df = source(spark, bootstrap, stream=True, **options)
        self.query = (df.selectExpr("topic", "partition", "offset", "CAST(value AS STRING) AS value")
                      .writeStream.format("memory").queryName(self.name).outputMode("append").start())

    def drain(self) -> None:
        self.query.processAllAvailable()
        if self.query.exception() is not None:
            raise AssertionError(f"query failed: {self.query.exception()}")

    def values(self) -> list[str]:
        return sorted(r.value for r in self.spark.sql(f"SELECT value FROM {self.name}").collect())

    def rows(self) -> list[tuple[str, int, int, str]]:
        return sorted(tuple(r) for r in self.spark.sql(f"SELECT * FROM {self.name}").collect())

    def stop(self) -> None:
        self.query.stop()


def txn_producer(bootstrap: str, txn_id: str) -> Producer:
    p = Producer({"bootstrap.servers": bootstrap, "transactional.id": txn_id, "linger.ms": 5, **QUIET})
    p.init_transactions(30)
    return p


def write_transactions(p: Producer, topic: str, partitions: int, n_txns: int, per_txn: int,
                       aborted: Callable[[int], bool], tag: str) -> tuple[list[str], list[str]]:
    """n_txns transactions of per_txn records spread over the partitions; returns (committed,
    aborted) values. Aborted records are flushed first, so they are in the log before their marker."""
    committed_vals: list[str] = []
    aborted_vals: list[str] = []
    for t in range(n_txns):
        vals = [f"{tag}-t{t}-r{r}" for r in range(per_txn)]
        p.begin_transaction()
        for r, v in enumerate(vals):
            p.produce(topic, key=v.encode(), value=v.encode(), partition=(t + r) % partitions)
        if aborted(t):
            assert p.flush(30) == 0
            p.abort_transaction(30)
            aborted_vals += vals
        else:
            p.commit_transaction(30)
            committed_vals += vals
    return committed_vals, aborted_vals


def high_watermarks(bootstrap: str, topic: str, partitions: int, isolation: str) -> list[int]:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": uniq("wm"), "isolation.level": isolation, **QUIET})
    try:
        return [c.get_watermark_offsets(TopicPartition(topic, p), timeout=10, cached=False)[1]
                for p in range(partitions)]
    finally:
        c.close()


# -- batch reads --------------------------------------------------------------------------------


def test_batch_read_earliest_to_latest_and_json_ranges(spark: Any, kafka_broker: Any) -> None:
    bs = kafka_broker.bootstrap
    topic = uniq("batch")
    create_topic(bs, topic, 3)
    produce_values(bs, topic, [(i % 3, f"v{i:03d}") for i in range(60)])  # 20 per partition

    everything = batch_values(spark, bs, subscribe=topic)  # defaults: earliest .. latest
    assert len(everything) == 60
    assert sorted(v for _, _, v in everything) == [f"v{i:03d}" for i in range(60)]
    for part in range(3):
        assert [o for p, o, _ in everything if p == part] == list(range(20))

    ranged = batch_values(spark, bs, subscribe=topic,
                          startingOffsets=json.dumps({topic: {"0": 5, "1": -2, "2": 19}}),
                          endingOffsets=json.dumps({topic: {"0": 8, "1": 3, "2": -1}}))
    assert [(p, o) for p, o, _ in ranged] == [(0, 5), (0, 6), (0, 7), (1, 0), (1, 1), (1, 2), (2, 19)]
    by_offset = {(p, o): v for p, o, v in everything}
    assert all(by_offset[(p, o)] == v for p, o, v in ranged)


def test_batch_read_with_headers_and_timestamps(spark: Any, kafka_broker: Any) -> None:
    bs = kafka_broker.bootstrap
    topic = uniq("headers")
    create_topic(bs, topic, 1)
    p = producer(bs, **QUIET)
    produce_all(p, topic, [{"key": b"k", "value": f"h{i}".encode(), "headers": [("n", str(i).encode())],
                            "timestamp": 1_700_000_000_000 + i} for i in range(5)])
    rows = (source(spark, bs, subscribe=topic, includeHeaders="true")
            .selectExpr("CAST(value AS STRING) AS v", "headers", "CAST(timestamp AS LONG) AS ts").collect())
    assert sorted(r.v for r in rows) == [f"h{i}" for i in range(5)]
    for r in rows:
        i = int(r.v[1:])
        assert [(h.key, bytes(h.value)) for h in r.headers] == [("n", str(i).encode())]
        assert r.ts == (1_700_000_000_000 + i) // 1000


# -- streaming reads ----------------------------------------------------------------------------


def test_stream_subscribe_earliest(spark: Any, kafka_broker: Any) -> None:
    bs = kafka_broker.bootstrap
    topic = uniq("sub")
    create_topic(bs, topic, 2)
    produce_values(bs, topic, [(i % 2, f"a{i:02d}") for i in range(20)])
    s = MemoryStream(spark, bs, subscribe=topic, startingOffsets="earliest")
    try:
        s.drain()
        assert s.values() == [f"a{i:02d}" for i in range(20)]
        produce_values(bs, topic, [(i % 2, f"b{i:02d}") for i in range(10)])
        s.drain()
        assert s.values() == [f"a{i:02d}" for i in range(20)] + [f"b{i:02d}" for i in range(10)]
    finally:
        s.stop()


def test_stream_subscribe_pattern_latest(spark: Any, kafka_broker: Any) -> None:
    bs = kafka_broker.bootstrap
    prefix = uniq("pat").replace("-", "_")
    a, b, other = f"{prefix}-a", f"{prefix}-b", uniq("nomatch")
    for t in (a, b, other):
        create_topic(bs, t, 1)
    produce_values(bs, a, [(0, "old-a")])
    produce_values(bs, b, [(0, "old-b")])
    s = MemoryStream(spark, bs, subscribePattern=f"{prefix}-.*", startingOffsets="latest")
    try:
        s.drain()  # fixes the starting offsets at the current ends
        assert s.values() == []
        produce_values(bs, a, [(0, "new-a1"), (0, "new-a2")])
        produce_values(bs, b, [(0, "new-b1")])
        produce_values(bs, other, [(0, "not-matched")])
        s.drain()
        assert s.values() == ["new-a1", "new-a2", "new-b1"]
        assert {t for t, _, _, _ in s.rows()} == {a, b}
    finally:
        s.stop()


def test_stream_assign_json_offsets(spark: Any, kafka_broker: Any) -> None:
    bs = kafka_broker.bootstrap
    topic = uniq("assign")
    create_topic(bs, topic, 3)
    produce_values(bs, topic, [(i % 3, f"x{i:02d}") for i in range(30)])  # 10 per partition
    s = MemoryStream(spark, bs, assign=json.dumps({topic: [0, 1]}),
                     startingOffsets=json.dumps({topic: {"0": 7, "1": -2}}))
    try:
        s.drain()
        seen = [(p, o) for _, p, o, _ in s.rows()]
        assert seen == [(0, 7), (0, 8), (0, 9)] + [(1, o) for o in range(10)]
        produce_values(bs, topic, [(2, "p2-new"), (0, "p0-new")])
        s.drain()
        assert "p0-new" in s.values() and "p2-new" not in s.values()
        assert len(s.values()) == 14
    finally:
        s.stop()


# -- transactions: read_committed, markers, LSO -------------------------------------------------


def test_read_committed_sees_exactly_the_committed_records(spark: Any, kafka_broker: Any) -> None:
    bs = kafka_broker.bootstrap
    topic = uniq("txn")
    create_topic(bs, topic, 2)
    p = txn_producer(bs, uniq("spark-txn"))
    committed, aborted = write_transactions(p, topic, 2, n_txns=9, per_txn=6, aborted=lambda t: t % 3 == 1, tag="one")
    produce_values(bs, topic, [(0, "plain-0"), (1, "plain-1")])  # non-transactional records in between
    committed += ["plain-0", "plain-1"]
    # leave a transaction open at the end: read_committed must stop at its first offset (the LSO)
    open_p = txn_producer(bs, uniq("spark-open"))
    open_p.begin_transaction()
    for r in range(4):
        open_p.produce(topic, value=f"open-r{r}".encode(), partition=r % 2)
    assert open_p.flush(30) == 0
    wait_until(lambda: high_watermarks(bs, topic, 2, "read_uncommitted")
               != high_watermarks(bs, topic, 2, "read_committed"), 30, "the open transaction to hold the LSO")

    rc = {"kafka.isolation.level": "read_committed", "failOnDataLoss": "true"}
    batch = batch_values(spark, bs, subscribe=topic, **rc)
    assert sorted(v for _, _, v in batch) == sorted(committed)
    uncommitted = batch_values(spark, bs, subscribe=topic)  # read_uncommitted (Spark's default)
    assert sorted(v for _, _, v in uncommitted) == sorted(committed + aborted + [f"open-r{r}" for r in range(4)])

    s = MemoryStream(spark, bs, subscribe=topic, startingOffsets="earliest", **rc)
    try:
        s.drain()
        assert s.values() == sorted(committed)  # markers and aborted offsets are gaps, not data loss
        open_p.commit_transaction(30)
        more_committed, more_aborted = write_transactions(p, topic, 2, n_txns=4, per_txn=5,
                                                          aborted=lambda t: t % 2 == 0, tag="two")
        committed += [f"open-r{r}" for r in range(4)] + more_committed
        s.drain()
        assert s.values() == sorted(committed)
        assert not set(s.values()) & set(aborted + more_aborted)
    finally:
        s.stop()
    assert sorted(v for _, _, v in batch_values(spark, bs, subscribe=topic, **rc)) == sorted(committed)


def test_fail_on_data_loss_after_retention(spark: Any, broker_factory: Any, tmp_path: Path) -> None:
    """Offsets that retention deleted under a checkpointed query are data loss, as with Kafka:
    failOnDataLoss=true fails the query, false resumes at the new log start offset."""
    broker = broker_factory(overrides={"log.retention.check.interval.ms": "100"})
    bs = broker.bootstrap
    topic = uniq("loss")
    create_topic(bs, topic, 1, config={"internal.segment.bytes": "1024", "retention.bytes": "2048"})
    produce_values(bs, topic, [(0, f"first-{i:03d}") for i in range(5)])
    checkpoints = {flag: tmp_path / f"ckpt-{flag}" for flag in ("true", "false")}
    out = {flag: tmp_path / f"out-{flag}" for flag in ("true", "false")}

    def start(flag: str) -> Any:
        df = source(spark, bs, stream=True, subscribe=topic, startingOffsets="earliest", failOnDataLoss=flag)
        return (df.selectExpr("offset", "CAST(value AS STRING) AS value").writeStream.format("parquet")
                .option("path", str(out[flag])).option("checkpointLocation", str(checkpoints[flag])).start())

    for flag in ("true", "false"):
        q = start(flag)
        q.processAllAvailable()
        q.stop()
    one_per_batch = producer(bs, **QUIET, **{"linger.ms": 0, "batch.size": 1})  # many small segments
    produce_all(one_per_batch, topic, [{"partition": 0, "value": f"second-{i:03d}-".encode() + b"x" * 100}
                                       for i in range(100)])
    consumer = Consumer({"bootstrap.servers": bs, "group.id": uniq("lso"), **QUIET})
    try:
        wait_until(lambda: consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=5, cached=False)[0] > 5,
                   60, "retention to delete the first segments")
        log_start = consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=5, cached=False)[0]
    finally:
        consumer.close()

    q = start("true")
    with pytest.raises(Exception, match="Some data may have been lost"):
        q.awaitTermination(QUERY_TIMEOUT_S)
        q.processAllAvailable()
    q.stop()

    q = start("false")
    try:
        q.processAllAvailable()
        assert q.exception() is None
    finally:
        q.stop()
    offsets = sorted(r.offset for r in spark.read.parquet(str(out["false"])).collect())
    assert offsets[:5] == list(range(5))  # read before the loss
    resumed = offsets[5:]
    assert resumed and resumed[0] >= log_start and resumed == list(range(resumed[0], 105))


# -- the sink -----------------------------------------------------------------------------------


def test_batch_write_read_back_by_confluent_kafka(spark: Any, kafka_broker: Any) -> None:
    bs = kafka_broker.bootstrap
    topic = uniq("sink")
    create_topic(bs, topic, 2)
    rows = [(f"k{i}", f"value-{i}", i % 2, [("h", f"{i}".encode())]) for i in range(50)]
    df = spark.createDataFrame(rows, "key STRING, value STRING, partition INT, headers ARRAY<STRUCT<key: STRING, value: BINARY>>")
    df.write.format("kafka").option("kafka.bootstrap.servers", bs).option("topic", topic).save()
    msgs = read_all(bs, topic, 2, expected=50, **QUIET)
    got = sorted((m.key().decode(), m.value().decode(), m.partition(), m.headers()) for m in msgs)
    assert got == sorted((k, v, p, [(hk, hv)]) for k, v, p, [(hk, hv)] in rows)
    for part in range(2):
        assert sorted(m.offset() for m in msgs if m.partition() == part) == list(range(25))
    if not getattr(kafka_broker, "external", False):
        # Spark's sink is a default Java producer, so idempotent: every batch it wrote carries the
        # producer id from InitProducerId and sequences that continue batch after batch
        from minikafka.protocol.records import split_batches

        for part in range(2):
            headers = [h for seg in sorted((kafka_broker.data_dir / f"{topic}-{part}").glob("*.log"))
                       for _, h in split_batches(seg.read_bytes())]
            assert headers and all(h.producer_id >= 0 and not h.is_transactional for h in headers)
            by_producer: dict[int, list[Any]] = {}
            for h in headers:
                by_producer.setdefault(h.producer_id, []).append(h)
            for hs in by_producer.values():
                assert hs[0].base_sequence == 0
                assert all(b.base_sequence == a.base_sequence + a.records_count for a, b in zip(hs, hs[1:]))


def test_stream_write_read_back_by_confluent_kafka(spark: Any, kafka_broker: Any, tmp_path: Path) -> None:
    bs = kafka_broker.bootstrap
    src, dst = uniq("src"), uniq("dst")
    create_topic(bs, src, 2)
    create_topic(bs, dst, 2)
    produce_values(bs, src, [(i % 2, f"m{i:03d}") for i in range(40)])
    query = (source(spark, bs, stream=True, subscribe=src, startingOffsets="earliest")
             .selectExpr("key", "upper(CAST(value AS STRING)) AS value", "partition")
             .writeStream.format("kafka").option("kafka.bootstrap.servers", bs).option("topic", dst)
             .option("checkpointLocation", str(tmp_path / "ckpt")).start())
    try:
        query.processAllAvailable()
        produce_values(bs, src, [(i % 2, f"n{i:03d}") for i in range(10)])
        query.processAllAvailable()
    finally:
        query.stop()
    msgs = read_all(bs, dst, 2, expected=50, **QUIET)
    expected = sorted([(f"m{i:03d}", f"M{i:03d}", i % 2) for i in range(40)] +
                      [(f"n{i:03d}", f"N{i:03d}", i % 2) for i in range(10)])
    assert sorted((m.key().decode(), m.value().decode(), m.partition()) for m in msgs) == expected


# -- checkpoint restart across a broker restart -------------------------------------------------


@pytest.mark.parametrize("hard", [False, True], ids=["clean-restart", "kill9-restart"])
def test_stream_restarts_from_checkpoint_across_broker_restart(spark: Any, broker_factory: Any,
                                                               tmp_path: Path, hard: bool) -> None:
    broker = broker_factory()
    bs = broker.bootstrap
    topic = uniq("restart")
    create_topic(bs, topic, 2)
    p = txn_producer(bs, uniq("restart-txn"))
    committed, _ = write_transactions(p, topic, 2, n_txns=6, per_txn=10, aborted=lambda t: t == 2, tag="before")
    out, ckpt = tmp_path / "out", tmp_path / "ckpt"

    def start() -> Any:
        df = source(spark, broker.bootstrap, stream=True, subscribe=topic, startingOffsets="earliest",
                    **{"kafka.isolation.level": "read_committed", "failOnDataLoss": "true"})
        return (df.selectExpr("partition", "offset", "CAST(value AS STRING) AS value")
                .writeStream.format("parquet").option("path", str(out))
                .option("checkpointLocation", str(ckpt)).start())

    q = start()
    q.processAllAvailable()
    q.stop()
    broker.restart(hard=hard)
    p2 = txn_producer(bs, uniq("restart-txn2"))  # the first producer's connections died with the broker
    more, _ = write_transactions(p2, topic, 2, n_txns=5, per_txn=10, aborted=lambda t: t == 1, tag="after")
    committed += more
    q = start()
    try:
        q.processAllAvailable()
        assert q.exception() is None
    finally:
        q.stop()
    rows = spark.read.parquet(str(out)).collect()
    values = [r.value for r in rows]
    assert sorted(values) == sorted(committed)  # nothing lost, nothing twice, nothing aborted
    assert len({(r.partition, r.offset) for r in rows}) == len(rows)
