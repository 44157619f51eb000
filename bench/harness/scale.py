"""The `scale` profile (issue 17): how each broker's cost grows with partitions, connections,
record size, transactional ids and consumer groups, minikafka and Apache Kafka side by side in one
run. `python -m bench.harness --profile scale` (or `make bench-scale`); about 30 minutes on 2 cores.

Every curve has at least four points on a log scale. At each point it records the throughput,
the p99 latency, the broker's RSS and its CPU seconds per GB moved (or per operation), and the
report adds the ratio to the curve's first point and the ratio to Kafka. The goal of each curve:
the cost per unit of work at the largest point within 2x of the smallest point, and the ratio to
Kafka at each point at least as good as at the smallest point.

Load comes from confluent-kafka processes (the harness's workloads.py) for produce and consume,
and from raw protocol requests built with minikafka's own codec (tests/rawclient.py) where a
client library would measure itself: Metadata, Produce over many connections, InitProducerId,
OffsetCommit / OffsetFetch.
"""

from __future__ import annotations

import asyncio
import datetime
import itertools
import json
import os
import shutil
import struct
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any, Callable

from . import machine
from .brokers import BROKERS, Broker
from .runner import create_topics, log, run_client, wait_for_partitions

REPO_ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO_ROOT / "tests"))

from kio.schema.init_producer_id.v4.request import InitProducerIdRequest  # noqa: E402
from kio.schema.metadata.v12.request import MetadataRequest  # noqa: E402
from kio.schema.offset_commit.v8.request import (  # noqa: E402
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
)
from kio.schema.offset_fetch.v8.request import (  # noqa: E402
    OffsetFetchRequest,
    OffsetFetchRequestGroup,
    OffsetFetchRequestTopics,
)
from kio.static.primitive import i16, i32, i32Timedelta, i64  # noqa: E402
from rawclient import RawClient, api_versions_v3, produce_v9, valid_batch  # noqa: E402

from minikafka.protocol import codec  # noqa: E402

# Points per curve. Chosen so the whole profile fits in ~30 minutes on the 2-core machine with
# both brokers; the report states these limits.
SCALE = {
    "warmup_records": 500_000,
    "partitions": [1, 10, 100, 1000, 10000],
    "partition_records": 500_000,            # 1 KiB each, spread over every partition
    "connections": [1, 10, 100, 1000],
    "connection_seconds": 5.0,
    "record_sizes": [100, 1024, 102_400, 1_048_576],
    "record_size_bytes": 500_000_000,        # bytes produced at each record size
    "txn_ids": [1, 100, 1000, 10_000],
    "groups": [1, 10, 100, 1000],
}
QUICK = {
    "warmup_records": 20_000,
    "partitions": [1, 10, 100, 1000],
    "partition_records": 20_000,
    "connections": [1, 10, 100, 300],
    "connection_seconds": 2.0,
    "record_sizes": [100, 1024, 102_400, 1_048_576],
    "record_size_bytes": 20_000_000,
    "txn_ids": [1, 10, 100, 1000],
    "groups": [1, 10, 100, 300],
}

# the pytest smoke run (tests/integration/test_bench_smoke.py): seconds, not numbers to quote
SMOKE = {
    "warmup_records": 500,
    "partitions": [1, 10],
    "partition_records": 2000,
    "connections": [1, 5],
    "connection_seconds": 0.3,
    "record_sizes": [100, 1024],
    "record_size_bytes": 200_000,
    "txn_ids": [1, 10],
    "groups": [1, 10],
}
PROFILES = {"scale": SCALE, "scale-quick": QUICK, "scale-smoke": SMOKE}

# Each curve: (what is measured, its unit, True when higher is better) for the headline metric.
CURVES = {
    "partitions_produce": ("produce throughput across all partitions", "MB/s", True),
    "partitions_consume": ("catch-up consume throughput across all partitions", "MB/s", True),
    "partitions_metadata": ("Metadata for all topics, p99", "ms", False),
    "partitions_create": ("CreateTopics with that many partitions", "s", False),
    "partitions_restart": ("restart after kill -9 to the first Metadata answer", "s", False),
    "connections_idle": ("broker RSS per idle connection", "KiB", False),
    "connections_active": ("Produce (acks=1, 1 KiB) over N connections, total", "req/s", True),
    "record_size": ("produce throughput", "MB/s", True),
    "txn_ids": ("InitProducerId p99 with N transactional ids known", "ms", False),
    "groups": ("OffsetCommit + OffsetFetch p99 with N groups", "ms", False),
}


def _pct(values: list[float], q: float) -> float | None:
    if not values:
        return None
    s = sorted(values)
    return s[min(len(s) - 1, int(round(q / 100.0 * (len(s) - 1))))]


class Scale:
    def __init__(self, brokers: list[str], out_dir: Path, points: dict[str, Any], only: set[str] | None = None,
                 workdir: Path | None = None) -> None:
        self.brokers = brokers
        self.out_dir = out_dir
        self.p = points
        self.only = only
        self.samples: list[dict[str, Any]] = []
        self.started = time.time()
        self._tmp = Path(tempfile.mkdtemp(prefix="minikafka-scale-", dir=workdir))
        self.meta: dict[str, Any] = {"machine": machine.describe(), "points": points}

    # -- plumbing ------------------------------------------------------------------------------
    def broker(self, name: str, tag: str) -> Broker:
        wd = self._tmp / f"{name}-{tag}"
        shutil.rmtree(wd, ignore_errors=True)
        b = BROKERS[name](wd)
        b.start()
        # Warmed up before any point is measured, as the matrix does: the JVM's JIT compiles
        # Kafka's hot paths, both brokers create their internal topics.
        create_topics(b.bootstrap, {"warm": 1})
        run_client("warmup", {"bootstrap": b.bootstrap, "topic": "warm", "records": self.p["warmup_records"]},
                   timeout=600)
        return b

    def finish(self, b: Broker) -> None:
        """Stop the broker and delete its data, then flush the page cache's dirty pages: the next
        point must not pay for writing back this one's gigabytes (which showed as minikafka's
        record-size points at 0.34-0.75x of Kafka after the partitions curve, 1.5-2x alone)."""
        b.stop()
        shutil.rmtree(b.workdir, ignore_errors=True)
        os.sync()

    def add(self, curve: str, broker: str, point: int, metrics: dict[str, Any]) -> None:
        self.samples.append({"curve": curve, "broker": broker, "point": point, **metrics})
        shown = {k: (round(v, 3) if isinstance(v, float) else v) for k, v in metrics.items() if k != "trace"}
        log(f"{curve} {broker} @{point}: {shown}")
        self.save()

    def guarded(self, curve: str, broker: str, point: int, fn: Callable[[], dict[str, Any]]) -> None:
        try:
            self.add(curve, broker, point, fn())
        except Exception as exc:  # noqa: BLE001 - record it and go on with the next point
            self.add(curve, broker, point, {"error": f"{type(exc).__name__}: {exc}"[:500],
                                            "trace": traceback.format_exc()[-1500:]})

    def save(self) -> None:
        self.out_dir.mkdir(parents=True, exist_ok=True)
        doc = {"meta": {**self.meta, "brokers": self.brokers, "elapsed_s": time.time() - self.started},
               "samples": self.samples}
        (self.out_dir / "scale.json").write_text(json.dumps(doc, indent=1, sort_keys=True))

    def wanted(self, curve: str) -> bool:
        return self.only is None or curve in self.only

    def run(self) -> dict[str, Any]:
        try:
            for name in self.brokers:
                if self.wanted("partitions"):
                    self.curve_partitions(name)
                if self.wanted("connections"):
                    self.curve_connections(name)
                if self.wanted("record_size"):
                    self.curve_record_size(name)
                if self.wanted("txn_ids"):
                    self.curve_txn_ids(name)
                if self.wanted("groups"):
                    self.curve_groups(name)
        finally:
            self.save()
            shutil.rmtree(self._tmp, ignore_errors=True)
        return json.loads((self.out_dir / "scale.json").read_text())

    # -- partitions ----------------------------------------------------------------------------
    def curve_partitions(self, name: str) -> None:
        for n in self.p["partitions"]:
            b = self.broker(name, f"parts{n}")
            try:
                topic = f"scale-{n}"

                def create() -> dict[str, Any]:
                    t0 = time.monotonic()
                    create_partitions_in_steps(b.bootstrap, topic, n)
                    return {"value": time.monotonic() - t0, "rss_mb": b.memory().get("vmrss_mb")}

                self.guarded("partitions_create", name, n, create)
                self.guarded("partitions_metadata", name, n, lambda: metadata_latency(b))
                records = int(self.p["partition_records"])

                def produce() -> dict[str, Any]:
                    r = run_client("produce", {"bootstrap": b.bootstrap, "topic": topic, "mode": "plain",
                                               "records": records, "size": 1024, "timeout_s": 600,
                                               "conf": {"sticky.partitioning.linger.ms": 0}},
                                   broker=b, timeout=900)
                    return {"value": r["mb_per_s"], "p99_ms": r.get("ack_p99_ms"), "rss_mb": b.memory().get("vmrss_mb"),
                            "cpu_s_per_gb": r.get("broker_cpu_s_per_gb"), "acked": r["acked"],
                            "client_cpu_pct": r.get("client_cpu_pct")}

                def consume() -> dict[str, Any]:
                    r = run_client("consume", {"bootstrap": b.bootstrap, "topic": topic, "expected": records,
                                               "timeout_s": 600}, broker=b, timeout=900)
                    return {"value": r["mb_per_s"], "complete": r["complete"], "rss_mb": b.memory().get("vmrss_mb"),
                            "cpu_s_per_gb": r.get("broker_cpu_s_per_gb"), "client_cpu_pct": r.get("client_cpu_pct")}

                self.guarded("partitions_produce", name, n, produce)
                self.guarded("partitions_consume", name, n, consume)

                def restart() -> dict[str, Any]:
                    b.kill9()
                    t0 = time.monotonic()
                    info = b.start(timeout=600)
                    return {"value": time.monotonic() - t0, "spawn_to_api_s": info.get("spawn_to_api_s"),
                            "rss_mb": b.memory().get("vmrss_mb")}

                self.guarded("partitions_restart", name, n, restart)
            finally:
                self.finish(b)

    # -- connections ---------------------------------------------------------------------------
    def curve_connections(self, name: str) -> None:
        b = self.broker(name, "conns")
        try:
            create_topics(b.bootstrap, {"conns": 1})
            for n in self.p["connections"]:
                self.guarded("connections_idle", name, n, lambda n=n: idle_connections(b, n))
                self.guarded("connections_active", name, n,
                             lambda n=n: asyncio.run(active_connections(b, n, float(self.p["connection_seconds"]))))
        finally:
            self.finish(b)

    # -- record size ---------------------------------------------------------------------------
    def curve_record_size(self, name: str) -> None:
        b = self.broker(name, "sizes")
        try:
            for size in self.p["record_sizes"]:
                topic = f"size-{size}"
                create_topics(b.bootstrap, {topic: 1}, config={"max.message.bytes": "4000000"})
                records = max(20, int(self.p["record_size_bytes"]) // size)
                big = {"message.max.bytes": 4_000_000, "batch.size": 4_000_000} if size > 500_000 else {}
                os.sync()  # the previous size's 500 MB written back before this one is timed

                def produce(topic: str = topic, records: int = records, size: int = size,
                            big: dict[str, int] = big) -> dict[str, Any]:
                    r = run_client("produce", {"bootstrap": b.bootstrap, "topic": topic, "mode": "plain",
                                               "records": records, "size": size, "timeout_s": 600, "conf": big},
                                   broker=b, timeout=900)
                    if r["acked"] != records:
                        raise RuntimeError(f"{r['acked']} of {records} acked: {r.get('first_error')}")
                    return {"value": r["mb_per_s"], "records_per_s": r["records_per_s"], "p99_ms": r.get("ack_p99_ms"),
                            "rss_mb": b.memory().get("vmrss_mb"), "cpu_s_per_gb": r.get("broker_cpu_s_per_gb"),
                            "client_cpu_pct": r.get("client_cpu_pct")}

                self.guarded("record_size", name, size, produce)
        finally:
            self.finish(b)

    # -- transactional ids and groups ----------------------------------------------------------
    def curve_txn_ids(self, name: str) -> None:
        """InitProducerId for new ids up to N, then 200 epoch bumps of ids already known."""
        self.curve_state(name, "txn_ids", setup=lambda b: None,
                         add=lambda c, k: init_producer_id(c, f"scale-txn-{k}"),
                         probe=lambda c, k, i: init_producer_id(c, f"scale-txn-{k}"))

    def curve_groups(self, name: str) -> None:
        """OffsetCommit for new groups up to N, then 200 commit + fetch pairs on known groups."""
        def commit_and_fetch(c: RawClient, k: int, i: int) -> float:
            t0 = time.perf_counter()
            offset_commit(c, f"scale-group-{k}", i)
            offset_fetch(c, f"scale-group-{k}")
            return (time.perf_counter() - t0) * 1000

        self.curve_state(name, "groups", setup=lambda b: create_topics(b.bootstrap, {"grouped": 1}),
                         add=lambda c, k: offset_commit(c, f"scale-group-{k}", k), probe=commit_and_fetch)

    def curve_state(self, name: str, curve: str, setup: Callable[[Broker], None],
                    add: Callable[[RawClient, int], object], probe: Callable[[RawClient, int, int], float],
                    probes: int = 200) -> None:
        """A curve over how much state the broker holds: at each point, `add` the k-th item until
        there are N, then time `probes` calls of `probe` (milliseconds) on items already there."""
        b = self.broker(name, curve)
        try:
            setup(b)
            known = 0
            with RawClient("127.0.0.1", b.port, timeout=60) as c:
                for n in self.p[curve]:
                    def measure(n: int = n) -> dict[str, Any]:
                        nonlocal known
                        while known < n:
                            add(c, known)
                            known += 1
                        cpu0 = b.cpu_seconds()
                        lat = [probe(c, i % n, i) for i in range(probes)]
                        return {"value": _pct(lat, 99), "p50_ms": _pct(lat, 50), "rss_mb": b.memory().get("vmrss_mb"),
                                "cpu_ms_per_op": 1000 * (b.cpu_seconds() - cpu0) / probes}

                    self.guarded(curve, name, n, measure)
        finally:
            self.finish(b)


# Kafka's controller refuses a single operation of more than 10,000 metadata records ("Unable to
# perform excessively large batch operation", POLICY_VIOLATION): a topic of 10,000 partitions is
# created with 5,000 and grown by CreatePartitions, on both brokers alike.
PARTITIONS_PER_STEP = 5000


def create_partitions_in_steps(bootstrap: str, topic: str, n: int) -> None:
    from confluent_kafka.admin import AdminClient, NewPartitions

    create_topics(bootstrap, {topic: min(n, PARTITIONS_PER_STEP)}, timeout=600)
    have = min(n, PARTITIONS_PER_STEP)
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 3})
    while have < n:
        have = min(n, have + PARTITIONS_PER_STEP)
        admin.create_partitions([NewPartitions(topic, have)], operation_timeout=600)[topic].result(600)
    wait_for_partitions(admin, {topic: n}, 600)


# -- raw-protocol probes ---------------------------------------------------------------------------

def metadata_latency(b: Broker, reps: int = 30) -> dict[str, Any]:
    """Metadata v12 for all topics, timed on one connection (the client's own cost excluded)."""
    lat = []
    with RawClient("127.0.0.1", b.port, timeout=60) as c:
        req = MetadataRequest(topics=None, allow_auto_topic_creation=False, include_topic_authorized_operations=False)
        c.request(req, api_version=12)  # warm
        for _ in range(reps):
            t0 = time.perf_counter()
            c.request(req, api_version=12)
            lat.append((time.perf_counter() - t0) * 1000)
    return {"value": _pct(lat, 99), "p50_ms": _pct(lat, 50), "rss_mb": b.memory().get("vmrss_mb")}


def init_producer_id(c: RawClient, txn_id: str) -> float:
    req = InitProducerIdRequest(transactional_id=txn_id, transaction_timeout=i32Timedelta.parse(
        datetime.timedelta(seconds=60)), producer_id=i64(-1), producer_epoch=i16(-1))
    t0 = time.perf_counter()
    for _ in range(200):
        resp = c.request(req, api_version=4)
        # Retriable, as clients retry them: Kafka answers COORDINATOR_LOAD_IN_PROGRESS (14) while
        # it fetches a new block of 1,000 producer ids from its controller.
        if resp.error_code not in (14, 51):
            break
        time.sleep(0.01)
    ms = (time.perf_counter() - t0) * 1000
    if resp.error_code != 0:
        raise RuntimeError(f"InitProducerId {txn_id}: {resp.error_code}")
    return ms


def offset_commit(c: RawClient, group: str, offset: int) -> None:
    req = OffsetCommitRequest(group_id=group, generation_id_or_member_epoch=i32(-1), member_id="",
                              group_instance_id=None, topics=(OffsetCommitRequestTopic(name="grouped", partitions=(
                                  OffsetCommitRequestPartition(partition_index=i32(0), committed_offset=i64(offset),
                                                               committed_leader_epoch=i32(-1),
                                                               committed_metadata=None),)),))
    resp = c.request(req, api_version=8)
    code = resp.topics[0].partitions[0].error_code
    if code != 0:
        raise RuntimeError(f"OffsetCommit {group}: {code}")


def offset_fetch(c: RawClient, group: str) -> None:
    req = OffsetFetchRequest(groups=(OffsetFetchRequestGroup(group_id=group, topics=(
        OffsetFetchRequestTopics(name="grouped", partition_indexes=(i32(0),)),)),), require_stable=False)
    resp = c.request(req, api_version=8)
    if resp.groups[0].error_code != 0:
        raise RuntimeError(f"OffsetFetch {group}: {resp.groups[0].error_code}")


def idle_connections(b: Broker, n: int) -> dict[str, Any]:
    """RSS growth for n connections that each did one ApiVersions round trip and then idle (the
    answer means the broker holds the connection's state)."""
    before = b.memory().get("vmrss_mb", 0.0)
    clients = []
    try:
        for _ in range(n):
            c = RawClient("127.0.0.1", b.port, timeout=60)
            c.request(api_versions_v3(), api_version=3)
            clients.append(c)
        after = b.memory().get("vmrss_mb", 0.0)
    finally:
        for c in clients:
            c.close()
    return {"value": max(0.0, (after - before) * 1024 / n), "rss_mb": after, "rss_before_mb": before}


_SIZE = struct.Struct(">i")


async def active_connections(b: Broker, n: int, seconds: float) -> dict[str, Any]:
    """n connections, each in a closed loop of Produce requests (acks=1, one 1 KiB record):
    total requests/s and the p99 round trip."""
    batch = bytes(valid_batch(1, prefix=b"x" * 1024))
    lat: list[float] = []

    # One frame encoded once; each request patches its correlation id in (size 4, key 2, version 2).
    frame = bytearray(codec.encode_request(9, 0, "scale", produce_v9("conns", 0, batch, acks=1)))

    async def one(stop_at: float) -> None:
        reader, writer = await asyncio.open_connection("127.0.0.1", b.port)
        req = bytearray(frame)
        try:
            for corr in itertools.count(1):
                struct.pack_into(">i", req, 8, corr)
                t0 = time.perf_counter()
                writer.write(bytes(req))
                size = _SIZE.unpack(await reader.readexactly(4))[0]
                await reader.readexactly(size)
                lat.append((time.perf_counter() - t0) * 1000)
                if time.perf_counter() >= stop_at:
                    return
        finally:
            writer.close()

    cpu0 = b.cpu_seconds()
    stop_at = time.perf_counter() + seconds
    await asyncio.gather(*(one(stop_at) for _ in range(n)))
    cpu = b.cpu_seconds() - cpu0
    count = len(lat)
    return {"value": count / seconds, "p99_ms": _pct(lat, 99), "p50_ms": _pct(lat, 50),
            "rss_mb": b.memory().get("vmrss_mb"), "cpu_s_per_gb": cpu / max(1e-9, count * 1024 / 1e9)}


def main(brokers: list[str], out: Path, profile: str, only: set[str] | None, workdir: Path | None) -> dict[str, Any]:
    for name in brokers:
        if name == "kafka":
            BROKERS["kafka"].ensure_jars()  # type: ignore[attr-defined]
    return Scale(brokers, out, dict(PROFILES[profile]), only, workdir).run()


