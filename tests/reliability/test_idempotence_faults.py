"""Idempotent producer under faults (test-plan.md 0.3, C-1, C-7).

- Through the fault proxy (tests/faultproxy.py): confluent-kafka with enable.idempotence while
  Produce responses are dropped and connections cut right after a request reached the broker.
  Every retry must end as a duplicate detection, never as a second copy. The same scenario runs
  against Apache Kafka (started by the test, advertising the proxy) in `make conformance`.
- C-1: an idempotent producer in its own process while the broker is SIGKILLed and restarted five
  times; every acked value is in the log exactly once, in produce order per partition.
- C-7: producer snapshots damaged after a SIGKILL (empty, truncated, corrupted): the broker deletes
  the bad snapshot, rebuilds the state from an older one plus the log, and the same producer
  (raw protocol: same id, epoch, next sequence) continues with no OUT_OF_ORDER while a retry of its
  last batch is still a duplicate. The open-transaction part of C-7 waits for transactions.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from clients import create_topic, producer
from confluent_kafka import Consumer, TopicPartition
from faultproxy import FaultProxy, describe
from kio.schema.init_producer_id.v4.request import InitProducerIdRequest
from rawclient import (
    RawClient,
    api_versions_v3,
    create_topics_v7,
    high_watermark,
    metadata_v12,
    ms,
    produce,
    wait_for_topic,
)

from minikafka.protocol.records import build_batch
from minikafka.storage import files
from minikafka.testing import BrokerProcess, free_port

pytestmark = pytest.mark.reliability

PRODUCE = 0
OUT_OF_ORDER_SEQUENCE_NUMBER = 45


def _seed() -> int:
    seed = int(os.environ.get("MINIKAFKA_TEST_SEED", random.randrange(2**32)))
    print(f"seed={seed}")
    return seed


def drain(bootstrap: str, topic: str, partitions: int, timeout: float = 60.0) -> dict[int, list[bytes]]:
    """Every record of every partition from offset 0 to the high watermark (read_uncommitted)."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "drain", "enable.auto.commit": False,
                  "isolation.level": "read_uncommitted", "enable.partition.eof": False,
                  "fetch.max.bytes": 4 * 1024 * 1024})
    try:
        ends = {p: c.get_watermark_offsets(TopicPartition(topic, p), timeout=10, cached=False)[1]
                for p in range(partitions)}
        out: dict[int, list[bytes]] = {p: [] for p in range(partitions)}
        next_offset = {p: 0 for p in range(partitions)}
        c.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
        deadline = time.monotonic() + timeout
        while any(next_offset[p] < ends[p] for p in range(partitions)):
            if time.monotonic() > deadline:
                raise AssertionError(f"drain incomplete: at {next_offset}, ends {ends}")
            for m in c.consume(1000, timeout=0.5):
                if m.error():
                    raise AssertionError(f"consume error: {m.error()}")
                p = m.partition()
                assert m.offset() == next_offset[p], (p, m.offset(), next_offset[p])  # no holes
                out[p].append(m.value())
                next_offset[p] = m.offset() + 1
        return out
    finally:
        c.close()


def assert_exactly_once_in_order(log: dict[int, list[bytes]], acked: dict[int, list[int]]) -> None:
    """Values are b"<partition>:<n>", n counting per partition in produce order."""
    for p, values in log.items():
        nums = []
        for v in values:
            part, _, n = v.decode().partition(":")
            assert int(part) == p, f"value {v!r} in partition {p}"
            nums.append(int(n))
        dups = len(nums) - len(set(nums))
        assert dups == 0, f"partition {p}: {dups} duplicates"
        assert nums == sorted(nums), f"partition {p}: order broken"
        missing = set(acked.get(p, [])) - set(nums)
        assert not missing, f"partition {p}: {len(missing)} acked values lost, e.g. {sorted(missing)[:10]}"
        assert acked.get(p, []) == sorted(acked.get(p, [])), f"partition {p}: acks out of produce order"


# ------------------------------------------------------------------------------------- fault proxy

API_VERSIONS, METADATA = 18, 3


@pytest.mark.timeout(60)
def test_fault_proxy_actions(kafka_broker):
    """The proxy itself: responses matched by correlation id, dropped, delayed, stalled; a
    connection cut right after a request."""
    if kafka_broker.external:
        pytest.skip("talks to the broker's own port through a local proxy")
    with FaultProxy(kafka_broker.host, kafka_broker.port) as proxy:
        drop = proxy.drop_response(API_VERSIONS, every=2, limit=1)
        with RawClient.connect(proxy.bootstrap) as c:
            assert c.request(api_versions_v3(), 3).error_code == 0          # 1st: answered
            c.send(api_versions_v3(), 3)                                     # 2nd: dropped
            with pytest.raises(TimeoutError):
                c.recv_frame(timeout=0.5)
            corr = c.send(api_versions_v3(), 3)                              # 3rd: answered, in order
            assert c.receive(API_VERSIONS, 3)[0] == corr
            assert drop.fired == 1 and proxy.stats.dropped[API_VERSIONS] == 1

            proxy.delay_response(API_VERSIONS, 0.3, limit=1)
            t0 = time.monotonic()
            assert c.request(api_versions_v3(), 3).error_code == 0
            assert time.monotonic() - t0 >= 0.3

            proxy.stall(API_VERSIONS)
            corr = c.send(api_versions_v3(), 3)
            with pytest.raises(TimeoutError):
                c.recv_frame(timeout=0.3)
            proxy.release()
            assert c.receive(API_VERSIONS, 3)[0] == corr

            proxy.close_after_request(METADATA, limit=1)
            c.send(metadata_v12(), 12)
            assert c.is_closed(timeout=5)
        assert proxy.stats.closed == 1
        with RawClient.connect(proxy.bootstrap) as c:                       # rules spent: all normal
            assert c.request(metadata_v12(), 12).brokers


def idempotent_producer_through_dropping_and_cutting_proxy(upstream_host: str, upstream_port: int,
                                                           proxy_port: int) -> None:
    """The scenario, for any broker that advertises 127.0.0.1:<proxy_port> for its PLAINTEXT listener
    (so every client connection, bootstrap or not, goes through the proxy to upstream)."""
    topic, partitions, n = "idem-proxy", 3, 5000
    with FaultProxy(upstream_host, upstream_port, listen_port=proxy_port) as proxy:
        create_topic(proxy.bootstrap, topic, partitions)
        drop = proxy.drop_response(PRODUCE, every=7, limit=12)
        cut = proxy.close_after_request(every=11, limit=25)
        p = producer(proxy.bootstrap, **{
            "enable.idempotence": True, "acks": "all", "linger.ms": 5, "batch.num.messages": 40,
            "request.timeout.ms": 2000, "message.timeout.ms": 150_000, "retry.backoff.ms": 20,
            "reconnect.backoff.ms": 20, "reconnect.backoff.max.ms": 200,
        })
        acked: dict[int, list[int]] = {q: [] for q in range(partitions)}
        errors: list[str] = []

        def on_delivery(err, msg):
            if err is not None:
                errors.append(str(err))
            else:
                acked[msg.partition()].append(int(msg.value().split(b":")[1]))

        counters = [0] * partitions
        for i in range(n):
            q = i % partitions
            p.produce(topic, value=f"{q}:{counters[q]}".encode(), partition=q, on_delivery=on_delivery)
            counters[q] += 1
            if i % 100 == 99:
                p.poll(0.01)  # a little pacing so the run spans many Produce requests
        remaining = p.flush(150)
        stats = describe(proxy.stats)
        print(f"proxy: {stats}")
        assert remaining == 0, f"{remaining} not delivered; {stats}"
        assert not errors, errors[:5]
        assert sum(len(v) for v in acked.values()) == n
        # The faults really happened (the test could not pass vacuously).
        assert drop.fired >= 3 and cut.fired >= 3, stats
        proxy.clear_rules()
        log = drain(proxy.bootstrap, topic, partitions)
    assert {q: len(v) for q, v in log.items()} == {q: counters[q] for q in range(partitions)}
    assert_exactly_once_in_order(log, acked)
    for q in range(partitions):
        assert [int(v.split(b":")[1]) for v in log[q]] == list(range(counters[q]))


@pytest.mark.timeout(300)
def test_idempotent_producer_through_dropping_and_cutting_proxy(configured_broker):
    """Against minikafka, and in conformance mode against a dedicated Apache Kafka (issue 4) whose
    PLAINTEXT listener is advertised at the proxy's port, so that every connection after bootstrap
    goes through the proxy too."""
    proxy_port = free_port()
    broker = configured_broker(advertise_port=proxy_port)
    idempotent_producer_through_dropping_and_cutting_proxy(broker.host, broker.port, proxy_port)


# ------------------------------------------------------------------------------------- C-1

PRODUCER_SCRIPT = textwrap.dedent("""
    import json, sys, time
    from confluent_kafka import Producer

    bootstrap, topic, n, partitions, rate = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), \\
        float(sys.argv[5])
    out = sys.stdout

    def emit(obj):
        out.write(json.dumps(obj) + "\\n")
        out.flush()

    p = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "acks": "all",
                  "linger.ms": 5, "message.timeout.ms": 120000, "retry.backoff.ms": 50,
                  "reconnect.backoff.ms": 50, "reconnect.backoff.max.ms": 500})
    errors = 0

    def on_delivery(err, msg):
        global errors
        if err is not None:
            errors += 1
            emit({"error": str(err), "value": msg.value().decode()})
        else:
            emit({"acked": msg.value().decode(), "partition": msg.partition(), "offset": msg.offset()})

    counters = [0] * partitions
    start = time.monotonic()
    for i in range(n):
        q = i % partitions
        while True:
            try:
                p.produce(topic, value=f"{q}:{counters[q]}".encode(), partition=q, on_delivery=on_delivery)
                break
            except BufferError:
                p.poll(0.05)
        counters[q] += 1
        ahead = (i + 1) / rate - (time.monotonic() - start)  # the workload's pace, not a wait
        p.poll(ahead if ahead > 0 else 0)
    remaining = p.flush(150)
    emit({"stage": "ShutdownComplete", "remaining": remaining, "errors": errors})
""")


@pytest.mark.timeout(240)
def test_c1_idempotent_produce_under_kill9(kafka_broker, tmp_path):
    if kafka_broker.external:
        pytest.skip("kills the broker")
    rng = random.Random(_seed())
    topic, partitions, n = "c1-idem", 4, 10_000
    create_topic(kafka_broker.bootstrap, topic, partitions)
    script = tmp_path / "idem_producer.py"
    script.write_text(PRODUCER_SCRIPT)
    out_path = tmp_path / "producer.jsonl"
    with open(out_path, "wb") as out:
        proc = subprocess.Popen([sys.executable, str(script), kafka_broker.bootstrap, topic, str(n),
                                 str(partitions), "1000"], stdout=out, stderr=subprocess.STDOUT)
    try:
        kills = 0
        for _ in range(5):
            time.sleep(rng.uniform(0.5, 2.0))  # a random moment of the workload, not a synchronisation
            kafka_broker.kill9()
            kills += 1
            kafka_broker.start()
        proc.wait(timeout=180)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    lines = [json.loads(line) for line in out_path.read_text().splitlines() if line.startswith("{")]
    acked: dict[int, list[int]] = {q: [] for q in range(partitions)}
    for rec in lines:
        if "acked" in rec:
            q, _, num = rec["acked"].partition(":")
            acked[int(q)].append(int(num))
    errors = [r for r in lines if "error" in r]
    summary = [r for r in lines if r.get("stage") == "ShutdownComplete"]
    print(f"kills={kills} acked={sum(map(len, acked.values()))} errors={len(errors)}")
    assert proc.returncode == 0, out_path.read_text()[-2000:]
    assert summary and summary[0]["remaining"] == 0, summary
    assert not errors, errors[:5]
    assert sum(map(len, acked.values())) == n
    log = drain(kafka_broker.bootstrap, topic, partitions)
    assert_exactly_once_in_order(log, acked)
    assert sum(map(len, log.values())) == n


# ------------------------------------------------------------------------------------- C-7


def _init_pid(c: RawClient) -> tuple[int, int]:
    resp = c.request(InitProducerIdRequest(transactional_id=None, transaction_timeout=ms(60_000)), 4)
    assert resp.error_code == 0
    return int(resp.producer_id), int(resp.producer_epoch)


def _batch(pid: int, epoch: int, seq: int, n: int = 4) -> bytes:
    return bytes(build_batch([(b"k", f"c7-{seq + i}".encode() + b"x" * 100) for i in range(n)],
                             timestamp_ms=int(time.time() * 1000), producer_id=pid, producer_epoch=epoch,
                             base_sequence=seq))


def _snapshots(d: Path) -> list[int]:
    return sorted(files.offset_from_name(f) for f in os.listdir(d) if f.endswith(files.SNAPSHOT_SUFFIX))


def _damage(path: Path, how: str) -> None:
    data = path.read_bytes()
    match how:
        case "empty":
            path.write_bytes(b"")
        case "truncate":
            path.write_bytes(data[: len(data) // 2])
        case "corrupt":
            b = bytearray(data)
            b[len(b) - 10] ^= 0xFF  # inside the last entry: only the CRC can tell
            path.write_bytes(bytes(b))
        case "intact":
            pass


@pytest.mark.timeout(120)
def test_c7_damaged_producer_snapshot(broker_factory, tmp_path):
    topic, per_batch = "c7", 4
    broker = broker_factory()
    with RawClient.connect(broker.bootstrap) as c:
        resp = c.request(create_topics_v7(topic, 1, {"internal.segment.bytes": "2048"}), 7)
        assert resp.topics[0].error_code == 0
        wait_for_topic(c, topic)
        pid, epoch = _init_pid(c)
        seq = 0
        for i in range(30):  # ~570 bytes per batch: a roll every 3 batches
            r = produce(c, topic, 0, _batch(pid, epoch, seq, per_batch))
            assert (r.error_code, r.base_offset) == (0, i * per_batch)
            seq += per_batch
        hw = high_watermark(c, topic)
    part_dir = broker.data_dir / f"{topic}-0"
    snaps = _snapshots(part_dir)
    assert len(snaps) >= 3, snaps
    broker.kill9()  # no snapshot at shutdown: the newest one is from the last roll

    for how in ("intact", "empty", "truncate", "corrupt"):
        data_dir = tmp_path / f"c7-{how}"
        shutil.copytree(broker.data_dir, data_dir)
        newest = data_dir / f"{topic}-0" / files.segment_name(snaps[-1], files.SNAPSHOT_SUFFIX)
        _damage(newest, how)
        copy = BrokerProcess(data_dir).start()
        try:
            remaining = _snapshots(data_dir / f"{topic}-0")
            if how == "intact":
                assert remaining == snaps
            else:
                assert remaining == snaps[:-1], f"{how}: bad snapshot not deleted ({remaining})"
            with RawClient.connect(copy.bootstrap) as c:
                wait_for_topic(c, topic)
                assert high_watermark(c, topic) == hw
                # The producer's last batch, retried: a duplicate with its original offsets.
                r = produce(c, topic, 0, _batch(pid, epoch, seq - per_batch, per_batch))
                assert (r.error_code, r.base_offset) == (0, hw - per_batch), (how, r)
                assert high_watermark(c, topic) == hw
                # A gap is still refused: the state knows the last sequence ...
                r = produce(c, topic, 0, _batch(pid, epoch, seq + 1, 1))
                assert r.error_code == OUT_OF_ORDER_SEQUENCE_NUMBER, (how, r)
                # ... and the producer continues with its next sequence, no OUT_OF_ORDER.
                for k in range(3):
                    r = produce(c, topic, 0, _batch(pid, epoch, seq + k * per_batch, per_batch))
                    assert (r.error_code, r.base_offset) == (0, hw + k * per_batch), (how, r)
                assert high_watermark(c, topic) == hw + 3 * per_batch
        finally:
            copy.stop()
