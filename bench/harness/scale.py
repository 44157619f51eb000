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
import statistics
import struct
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any, Callable

from . import machine
from .brokers import BROKERS, Broker
from .runner import create_topics, log, run_client, set_topic_config, wait_for_partitions

REPO_ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO_ROOT / "tests"))

from kio.schema.add_partitions_to_txn.v3.request import (  # noqa: E402
    AddPartitionsToTxnRequest,
    AddPartitionsToTxnTopic,
)
from kio.schema.end_txn.v3.request import EndTxnRequest  # noqa: E402
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

from minikafka.protocol import codec, records  # noqa: E402

# Points per curve. Chosen so the whole profile fits in ~30 minutes on the 2-core machine with
# both brokers; the report states these limits.
SCALE = {
    "warmup_records": 500_000,
    "partitions": [1, 10, 100, 1000, 10000],
    "partition_records": 500_000,            # 1 KiB each, spread over every partition
    "connections": [1, 10, 100, 1000],
    "connection_seconds": 5.0,
    "record_sizes": [100, 1024, 102_400, 1_048_576],
    "record_size_bytes": 500_000_000,        # bytes produced at 100 B records (~9 s)...
    # ... and at 1 KiB and above: 500 MB was one second of produce there, and single runs of the
    # 100 KiB and 1 MiB points moved between 0.67x and 1.0x of Kafka from run to run
    "record_size_large_bytes": 2_000_000_000,
    "txn_ids": [1, 100, 1000, 10_000, 100_000],
    "groups": [1, 10, 100, 1000],
    "txn_producers": [1, 10, 100, 1000],
    "txn_producer_seconds": 5.0,
    "group_members": [1, 10, 50, 200],
    # Kafka settles a new group of 10 or 50 in ~0.12 s or in ~2 s, run by run (whether the late
    # joiners make the first generation); one run per point made the ratio a coin toss
    "group_member_runs": 3,
    "topics_spread": 100,                    # the partitions curve again, over this many topics
    "topics_partitions": [100, 300, 1000, 3000, 10000],  # at least 4 points (issue 17); the fewest is one a topic
    "topics_records": 200_000,               # 1 KiB each, round robin over the topics (Kafka: ~2 MB/s at 10,000)
    # one partition grown to each size in turn (MB), then the same over `data_spread` partitions;
    # one broker's data at a time (deleted before the next), so 20 GB needs ~21 GB free
    "data_mb": [1000, 2000, 5000, 20000],
    "data_record_size": 16384,
    "data_read_mb": 200,                     # read from the head and from the tail at each size
    "data_segment_bytes": 1_073_741_824,     # Kafka's default segment size
    "data_spread": 100,
    "data_spread_segment_bytes": 52_428_800,  # 200 MB per partition at 20 GB: four closed segments each
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
    "txn_producers": [1, 10, 100],
    "txn_producer_seconds": 2.0,
    "group_members": [1, 5, 20],
    "group_member_runs": 3,
    "topics_spread": 10,
    "topics_partitions": [10, 100, 1000],
    "topics_records": 20_000,
    "data_mb": [50, 100, 200, 500],
    "data_record_size": 16384,
    "data_read_mb": 20,
    "data_segment_bytes": 50_000_000,
    "data_spread": 10,
    "data_spread_segment_bytes": 10_000_000,
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
    "txn_producers": [1, 3],
    "txn_producer_seconds": 0.5,
    "group_members": [1, 2],
    "group_member_runs": 1,
    "topics_spread": 2,
    "topics_partitions": [2, 4],
    "topics_records": 2000,
    "data_mb": [2, 4],
    "data_record_size": 16384,
    "data_read_mb": 1,
    "data_segment_bytes": 1_048_576,         # Kafka's smallest
    "data_spread": 2,                        # 2 MB each at 4 MB: a closed segment to delete
    "data_spread_segment_bytes": 1_048_576,
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
    "txn_recovery": ("restart after kill -9 with N transactional ids, to the first InitProducerId answered", "s",
                     False),
    "txn_producers": ("N concurrent transactional producers, commits/s in total", "txn/s", True),
    "groups": ("OffsetCommit + OffsetFetch p99 with N groups", "ms", False),
    "group_members": ("one group of N members: subscribe -> every partition assigned once", "s", False),
    "data_produce": ("one partition grown to N MB: produce throughput of each step", "MB/s", True),
    "data_head": ("one partition of N MB: catch-up read from the head", "MB/s", True),
    "data_tail": ("one partition of N MB: catch-up read of the newest records", "MB/s", True),
    "data_restart": ("one partition of N MB: restart after kill -9 to the readiness probe", "s", False),
    "data_retention": ("one partition of N MB: retention.bytes lowered -> old segments deleted", "s", False),
    "data_spread_produce": ("N MB over the spread's partitions: produce throughput of each step", "MB/s", True),
    "data_spread_head": ("N MB over the spread's partitions: catch-up read from the head", "MB/s", True),
    "data_spread_tail": ("N MB over the spread's partitions: catch-up read of the newest records", "MB/s", True),
    "data_spread_restart": ("N MB over the spread's partitions: restart after kill -9 to the readiness probe",
                            "s", False),
    "data_spread_retention": ("N MB over the spread's partitions: retention.bytes lowered -> old segments "
                              "deleted", "s", False),
    "topics_create": ("CreateTopics: N partitions over the spread's topics", "s", False),
    "topics_metadata": ("Metadata for all topics, p99, N partitions over the spread's topics", "ms", False),
    "topics_produce": ("produce throughput across all partitions of the spread's topics", "MB/s", True),
    "topics_consume": ("catch-up consume throughput across all partitions of the spread's topics", "MB/s",
                       True),
    "topics_restart": ("restart after kill -9, N partitions over the spread's topics", "s", False),
}
# Each curve's points: the profile key listing them (data_retention: the largest only).
CURVE_POINTS = {"partitions_produce": "partitions", "partitions_consume": "partitions",
                "partitions_metadata": "partitions", "partitions_create": "partitions",
                "partitions_restart": "partitions", "connections_idle": "connections",
                "connections_active": "connections", "record_size": "record_sizes", "txn_ids": "txn_ids",
                "txn_recovery": "txn_ids", "txn_producers": "txn_producers", "groups": "groups",
                "group_members": "group_members", "data_produce": "data_mb", "data_head": "data_mb",
                "data_tail": "data_mb", "data_restart": "data_mb", "data_retention": "data_mb",
                **{f"data_spread_{m}": "data_mb" for m in ("produce", "head", "tail", "restart", "retention")},
                "topics_create": "topics_partitions", "topics_metadata": "topics_partitions",
                "topics_produce": "topics_partitions", "topics_consume": "topics_partitions",
                "topics_restart": "topics_partitions"}
# --curves names -> the curves above each one measures
CURVE_GROUPS = {
    "partitions": ("partitions_produce", "partitions_consume", "partitions_metadata", "partitions_create",
                   "partitions_restart"),
    "topics": ("topics_create", "topics_metadata", "topics_produce", "topics_consume", "topics_restart"),
    "connections": ("connections_idle", "connections_active"),
    "record_size": ("record_size",),
    "txn_ids": ("txn_ids", "txn_recovery"),
    "txn_producers": ("txn_producers",),
    "data": ("data_produce", "data_head", "data_tail", "data_restart", "data_retention"),
    "data_spread": ("data_spread_produce", "data_spread_head", "data_spread_tail", "data_spread_restart",
                    "data_spread_retention"),
    "groups": ("groups",),
    "group_members": ("group_members",),
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
    def broker(self, name: str, tag: str, config: dict[str, str] | None = None) -> Broker:
        wd = self._tmp / f"{name}-{tag}"
        shutil.rmtree(wd, ignore_errors=True)
        cls = BROKERS[name]
        if not config:
            b = cls(wd)
        elif name == "kafka":
            b = cls(wd, extra_props=config)  # type: ignore[call-arg]
        else:
            b = cls(wd, overrides=config)  # type: ignore[call-arg]
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
        # Curve by curve, each broker's run right after the other's: this VM's speed drifts by
        # 20-50 % over minutes, and broker by broker (every curve of one, then every curve of the
        # other, 12 and 20 minutes) let one slow spell weigh on one broker's whole column.
        plan: list[tuple[str, Callable[[str], None]]] = [
            ("partitions", self.curve_partitions), ("connections", self.curve_connections),
            ("record_size", self.curve_record_size), ("topics", self.curve_topics),
            ("txn_ids", self.curve_txn_ids), ("txn_producers", self.curve_txn_producers),
            ("groups", self.curve_groups), ("data", self.curve_data),
            ("data_spread", lambda name: self.curve_data(name, spread=True)),
            ("group_members", self.curve_group_members)]
        try:
            for curve, measure in plan:
                if self.wanted(curve):
                    for name in self.brokers:
                        measure(name)
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
                self.guarded("partitions_produce", name, n, lambda: produce_across(b, [topic], records))
                self.guarded("partitions_consume", name, n, lambda: consume_across(b, [topic], records))

                self.guarded("partitions_restart", name, n, lambda: restart_after_kill9(b))
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
                total = self.p["record_size_bytes"] if size < 1024 else \
                    self.p.get("record_size_large_bytes", self.p["record_size_bytes"])
                records = max(20, int(total) // size)
                big = {"message.max.bytes": 4_000_000, "batch.size": 4_000_000} if size > 500_000 else {}
                os.sync()  # the previous size's data written back before this one is timed

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
        """InitProducerId for new ids up to N (20 connections at a time), then 200 epoch bumps of
        ids already known; then kill -9 and the time from the restart's spawn until a known id's
        InitProducerId is answered (the coordinator has replayed __transaction_state)."""
        b = self.broker(name, "txn_ids")
        try:
            known = 0
            for n in self.p["txn_ids"]:
                def measure(n: int = n) -> dict[str, Any]:
                    nonlocal known
                    asyncio.run(add_txn_ids(b.port, known, n))
                    known = n
                    cpu0 = b.cpu_seconds()
                    with RawClient("127.0.0.1", b.port, timeout=60) as c:
                        lat = [init_producer_id(c, f"scale-txn-{i % n}") for i in range(200)]
                    return {"value": _pct(lat, 99), "p50_ms": _pct(lat, 50), "rss_mb": b.memory().get("vmrss_mb"),
                            "cpu_ms_per_op": 1000 * (b.cpu_seconds() - cpu0) / 200}

                def recovery(n: int = n) -> dict[str, Any]:
                    b.kill9()
                    t0 = time.monotonic()
                    info = b.start(timeout=600)
                    with RawClient("127.0.0.1", b.port, timeout=60) as c:
                        init_producer_id(c, f"scale-txn-{n - 1}", retry_s=600)
                    return {"value": time.monotonic() - t0, "spawn_to_ready_s": info.get("spawn_to_ready_s"),
                            "rss_mb": b.memory().get("vmrss_mb")}

                self.guarded("txn_ids", name, n, measure)
                self.guarded("txn_recovery", name, n, recovery)
        finally:
            self.finish(b)

    def curve_txn_producers(self, name: str) -> None:
        """N transactional producers at once, each on its own connection committing one small
        transaction after another (AddPartitionsToTxn, a Produce of 10 x 100 B, EndTxn)."""
        b = self.broker(name, "txn_producers")
        try:
            create_topics(b.bootstrap, {"txn-producers": 10})
            for n in self.p["txn_producers"]:
                self.guarded("txn_producers", name, n, lambda n=n: asyncio.run(
                    concurrent_transactions(b, n, float(self.p["txn_producer_seconds"]))))
        finally:
            self.finish(b)

    def curve_group_members(self, name: str) -> None:
        """One classic group of N confluent-kafka consumers subscribing to a topic of N partitions:
        the time from the first subscribe until each member holds exactly one partition; the median
        of `group_member_runs` new groups (each run's time is kept)."""
        b = self.broker(name, "group_members")
        runs = int(self.p["group_member_runs"])  # every profile names it
        try:
            for n in self.p["group_members"]:
                topic = f"members-{n}"
                create_topics(b.bootstrap, {topic: n})

                def measure(n: int = n, topic: str = topic) -> dict[str, Any]:
                    cpu0 = b.cpu_seconds()
                    seconds = [group_settle_time(b.bootstrap, topic, n) for _ in range(runs)]
                    return {"value": statistics.median(seconds), "runs_s": seconds,
                            "rss_mb": b.memory().get("vmrss_mb"), "broker_cpu_s": b.cpu_seconds() - cpu0}

                self.guarded("group_members", name, n, measure)
        finally:
            self.finish(b)

    # -- data ----------------------------------------------------------------------------------
    def curve_data(self, name: str, spread: bool = False) -> None:
        """One partition grown to each size in turn (16 KiB records, acks=all): the produce rate of
        each step, a read of `data_read_mb` from the head and from the tail, a restart after
        kill -9; at the largest size, the time retention takes to delete every closed segment
        once retention.bytes is lowered (both brokers check retention every second here).
        spread=True: the same over `data_spread` partitions, each record to a partition at
        random (librdkafka's sticky partitioner, off here, can leave a partition empty at small
        sizes), and the tail read takes its share from each partition's end."""
        curve = "data_spread" if spread else "data"
        partitions = int(self.p["data_spread"]) if spread else 1
        b = self.broker(name, curve, config={"log.retention.check.interval.ms": "1000"})
        size = int(self.p["data_record_size"])
        read = max(partitions, int(self.p["data_read_mb"]) * 1_000_000 // size // partitions * partitions)
        try:
            segment = int(self.p["data_spread_segment_bytes" if spread else "data_segment_bytes"])
            create_topics(b.bootstrap, {"data": partitions}, config={"segment.bytes": str(segment)})
            have = 0
            for mb in self.p["data_mb"]:
                step = max(1, mb * 1_000_000 // size - have)

                def produce(step: int = step) -> dict[str, Any]:
                    r = run_client("produce", {"bootstrap": b.bootstrap, "topic": "data", "mode": "plain",
                                               "records": step, "size": size, "timeout_s": 1800,
                                               "conf": {"sticky.partitioning.linger.ms": 0} if spread else {}},
                                   broker=b, timeout=2000)
                    if r["acked"] != step:
                        raise RuntimeError(f"{r['acked']} of {step} acked: {r.get('first_error')}")
                    return {"value": r["mb_per_s"], "p99_ms": r.get("ack_p99_ms"), "rss_mb": b.memory().get("vmrss_mb"),
                            "cpu_s_per_gb": r.get("broker_cpu_s_per_gb"), "client_cpu_pct": r.get("client_cpu_pct")}

                def consume(tail: int) -> dict[str, Any]:
                    r = run_client("consume", {"bootstrap": b.bootstrap, "topic": "data", "expected": read,
                                               "tail": tail, "timeout_s": 600}, broker=b, timeout=900)
                    if not r["complete"]:
                        raise RuntimeError(f"read {r['consumed']} of {read}")
                    return {"value": r["mb_per_s"], "rss_mb": b.memory().get("vmrss_mb"),
                            "cpu_s_per_gb": r.get("broker_cpu_s_per_gb"), "client_cpu_pct": r.get("client_cpu_pct")}

                self.guarded(f"{curve}_produce", name, mb, produce)
                have += step
                os.sync()  # each read and the restart start with the data written back
                self.guarded(f"{curve}_head", name, mb, lambda: consume(0))
                self.guarded(f"{curve}_tail", name, mb, lambda: consume(read // partitions))
                self.guarded(f"{curve}_restart", name, mb, lambda: restart_after_kill9(b))
            self.guarded(f"{curve}_retention", name, self.p["data_mb"][-1],
                         lambda: retention_deletes(b, "data", size, segment, partitions))
        finally:
            self.finish(b)

    # -- partitions over many topics -----------------------------------------------------------
    def curve_topics(self, name: str) -> None:
        """The partitions curve's points with the partitions spread over `topics_spread` topics
        (per-topic costs: directories, metadata entries, configs; a produce and a read across
        every topic)."""
        spread = int(self.p["topics_spread"])
        for n in self.p["topics_partitions"]:
            b = self.broker(name, f"topics{n}")
            try:
                per_topic = max(1, n // spread)
                topics = {f"spread-{n}-{i}": per_topic for i in range(spread)}

                def create(topics: dict[str, int] = topics) -> dict[str, Any]:
                    t0 = time.monotonic()
                    # requests of at most PARTITIONS_PER_STEP partitions: Kafka refuses one of more
                    # than 10,000 metadata records (see create_partitions_in_steps)
                    names = list(topics)
                    step = max(1, PARTITIONS_PER_STEP // max(topics.values()))
                    for i in range(0, len(names), step):
                        create_topics(b.bootstrap, {t: topics[t] for t in names[i:i + step]}, timeout=600)
                    return {"value": time.monotonic() - t0, "rss_mb": b.memory().get("vmrss_mb")}

                self.guarded("topics_create", name, n, create)
                if "error" in self.samples[-1]:
                    continue  # nothing to measure without the topics
                self.guarded("topics_metadata", name, n, lambda: metadata_latency(b))
                records = int(self.p["topics_records"])
                self.guarded("topics_produce", name, n, lambda: produce_across(b, list(topics), records))
                self.guarded("topics_consume", name, n, lambda: consume_across(b, list(topics), records))
                self.guarded("topics_restart", name, n, lambda: restart_after_kill9(b))
            finally:
                self.finish(b)

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


def retention_deletes(b: Broker, topic: str, record_size: int, segment_bytes: int, partitions: int = 1,
                      timeout: float = 600.0) -> dict[str, Any]:
    """Lower the topic's retention.bytes to 1 and time until every partition's log start offset
    has moved to its active segment (every closed segment deleted). Partitions holding less than
    a segment have nothing to delete and are not waited for."""
    from confluent_kafka import Consumer, TopicPartition
    cpu0 = b.cpu_seconds()
    c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": "retention-probe", "log_level": 3})
    try:
        tps = [TopicPartition(topic, p) for p in range(partitions)]
        first = {tp.partition: c.get_watermark_offsets(tp, timeout=30) for tp in tps}
        waiting = {tp.partition for tp in tps
                   if (first[tp.partition][1] - first[tp.partition][0]) * record_size > segment_bytes}
        if not waiting:
            raise RuntimeError("no partition holds a closed segment: nothing for retention to delete")
        t0 = time.monotonic()
        set_topic_config(b.bootstrap, topic, "retention.bytes", "1")
        while waiting:
            for p in sorted(waiting):
                low, high = c.get_watermark_offsets(TopicPartition(topic, p), timeout=30, cached=False)
                # every closed segment gone: at most one segment of data is left
                if low > first[p][0] and (high - low) * record_size <= segment_bytes:
                    waiting.discard(p)
            if time.monotonic() - t0 > timeout:
                raise RuntimeError(f"{len(waiting)} partitions still hold closed segments after {timeout:.0f} s")
            if waiting:
                time.sleep(0.05)
        return {"value": time.monotonic() - t0, "partitions": partitions,
                "broker_cpu_s": b.cpu_seconds() - cpu0, "rss_mb": b.memory().get("vmrss_mb")}
    finally:
        c.close()


def restart_after_kill9(b: Broker) -> dict[str, Any]:
    """kill -9, then the time from the restart's spawn to the broker's readiness probe."""
    b.kill9()
    t0 = time.monotonic()
    info = b.start(timeout=600)
    return {"value": time.monotonic() - t0, "spawn_to_api_s": info.get("spawn_to_api_s"),
            "rss_mb": b.memory().get("vmrss_mb")}


# -- raw-protocol probes ---------------------------------------------------------------------------

def produce_across(b: Broker, topics: list[str], records: int) -> dict[str, Any]:
    """`records` x 1 KiB, round robin over the topics, each to a random partition (acks=all)."""
    r = run_client("produce", {"bootstrap": b.bootstrap, "topics": topics, "mode": "plain", "records": records,
                               "size": 1024, "timeout_s": 600, "conf": {"sticky.partitioning.linger.ms": 0}},
                   broker=b, timeout=900)
    return {"value": r["mb_per_s"], "p99_ms": r.get("ack_p99_ms"), "rss_mb": b.memory().get("vmrss_mb"),
            "cpu_s_per_gb": r.get("broker_cpu_s_per_gb"), "acked": r["acked"], "client_cpu_pct": r.get("client_cpu_pct")}


def consume_across(b: Broker, topics: list[str], records: int) -> dict[str, Any]:
    """A catch-up read of every partition of the topics from the start, `records` in all."""
    r = run_client("consume", {"bootstrap": b.bootstrap, "topics": topics, "expected": records, "timeout_s": 600},
                   broker=b, timeout=900)
    return {"value": r["mb_per_s"], "complete": r["complete"], "rss_mb": b.memory().get("vmrss_mb"),
            "cpu_s_per_gb": r.get("broker_cpu_s_per_gb"), "client_cpu_pct": r.get("client_cpu_pct")}


def metadata_latency(b: Broker, reps: int = 30) -> dict[str, Any]:
    """Metadata v12 for all topics, timed on one connection from the request's send to the last
    byte of the answer. The answers are not decoded inside the timing: decoding 10,000 partition
    entries with kio costs the client ~4 ms and a garbage collection every few answers (~30 ms),
    which had shown as the brokers' p99. The first answer is decoded to check it."""
    lat = []
    with RawClient("127.0.0.1", b.port, timeout=60) as c:
        req = MetadataRequest(topics=None, allow_auto_topic_creation=False, include_topic_authorized_operations=False)
        first = c.request(req, api_version=12)  # warm, and checked
        if first.brokers == () or any(t.error_code != 0 for t in first.topics):
            raise RuntimeError(f"Metadata answered {first!r}"[:300])
        for _ in range(reps):
            _, data = c.encode(req, 12)
            t0 = time.perf_counter()
            c.send_bytes(data)
            c.recv_frame()
            lat.append((time.perf_counter() - t0) * 1000)
    return {"value": _pct(lat, 99), "p50_ms": _pct(lat, 50), "rss_mb": b.memory().get("vmrss_mb"),
            "topics": len(first.topics), "partitions": sum(len(t.partitions) for t in first.topics)}


# Answers a transactional client retries after a short backoff: the coordinator is loading, or the
# previous transaction's markers are still being written (CONCURRENT_TRANSACTIONS).
_RETRY_TXN = {14, 15, 16, 51}


def init_producer_id(c: RawClient, txn_id: str, retry_s: float = 10.0) -> float:
    """InitProducerId round trips (ms) until answered without a retriable error."""
    req = InitProducerIdRequest(transactional_id=txn_id, transaction_timeout=i32Timedelta.parse(
        datetime.timedelta(seconds=60)), producer_id=i64(-1), producer_epoch=i16(-1))
    t0 = time.perf_counter()
    deadline = time.monotonic() + retry_s
    while True:
        resp = c.request(req, api_version=4)
        # Retriable, as clients retry them: Kafka answers COORDINATOR_LOAD_IN_PROGRESS (14) while
        # it fetches a new block of 1,000 producer ids from its controller, or while it replays
        # __transaction_state after a restart.
        if resp.error_code not in _RETRY_TXN or time.monotonic() > deadline:
            break
        time.sleep(0.01)
    ms = (time.perf_counter() - t0) * 1000
    if resp.error_code != 0:
        raise RuntimeError(f"InitProducerId {txn_id}: {resp.error_code}")
    return ms


class AsyncRaw:
    """One asyncio connection, one request in flight: the load generator of the curves that need
    many concurrent clients in one process (a librdkafka producer each would be ~5 threads)."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.corr = 0

    async def __aenter__(self) -> AsyncRaw:
        self.reader, self.writer = await asyncio.open_connection("127.0.0.1", self.port)
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.writer.close()

    async def request(self, body: Any, api_version: int) -> Any:
        self.corr += 1
        self.writer.write(codec.encode_request(api_version, self.corr, "scale", body))
        size = _SIZE.unpack(await self.reader.readexactly(4))[0]
        corr, resp = codec.decode_response(type(body).__api_key__, api_version, await self.reader.readexactly(size))
        if corr != self.corr:
            raise RuntimeError(f"correlation id {corr}, {self.corr} expected")
        return resp


async def _init_producer_id(c: AsyncRaw, txn_id: str, deadline: float) -> tuple[int, int]:
    req = InitProducerIdRequest(transactional_id=txn_id, transaction_timeout=i32Timedelta.parse(
        datetime.timedelta(seconds=60)), producer_id=i64(-1), producer_epoch=i16(-1))
    while True:
        resp = await c.request(req, 4)
        if resp.error_code == 0:
            return int(resp.producer_id), int(resp.producer_epoch)
        if resp.error_code not in _RETRY_TXN or time.monotonic() > deadline:
            raise RuntimeError(f"InitProducerId {txn_id}: {resp.error_code}")
        await asyncio.sleep(0.01)


async def add_txn_ids(port: int, start: int, end: int, connections: int = 20) -> None:
    """InitProducerId for scale-txn-<start>..<end - 1>, on `connections` connections at once."""
    todo = iter(range(start, end))
    deadline = time.monotonic() + 1800

    async def worker() -> None:
        async with AsyncRaw(port) as c:
            for k in todo:
                await _init_producer_id(c, f"scale-txn-{k}", deadline)

    await asyncio.gather(*(worker() for _ in range(min(connections, max(1, end - start)))))


async def concurrent_transactions(b: Broker, n: int, seconds: float, topic: str = "txn-producers",
                                  partitions: int = 10) -> dict[str, Any]:
    """n transactional producers in closed loops for `seconds`: commits/s in total and the p99 of
    one transaction (AddPartitionsToTxn -> Produce acks=all -> EndTxn answered)."""
    lat: list[float] = []
    retries = 0
    value = b"v" * 100
    ready = asyncio.Event()
    waiting = n

    async def one(k: int) -> None:
        nonlocal retries, waiting
        txn_id, part = f"scale-ctx-{n}-{k}", k % partitions
        async with AsyncRaw(b.port) as c:
            pid, epoch = await _init_producer_id(c, txn_id, time.monotonic() + 600)
            waiting -= 1
            if waiting == 0:
                ready.set()
            await ready.wait()
            add = AddPartitionsToTxnRequest(
                v3_and_below_transactional_id=txn_id, v3_and_below_producer_id=i64(pid),
                v3_and_below_producer_epoch=i16(epoch),
                v3_and_below_topics=(AddPartitionsToTxnTopic(name=topic, partitions=(i32(part),)),))
            end = EndTxnRequest(transactional_id=txn_id, producer_id=i64(pid), producer_epoch=i16(epoch),
                                committed=True)
            seq = 0
            while time.perf_counter() < stop_at[0]:
                t0 = time.perf_counter()
                while True:
                    code = (await c.request(add, 3)).results_by_topic_v3_and_below[0].results_by_partition[0]
                    if code.partition_error_code == 0:
                        break
                    if code.partition_error_code not in _RETRY_TXN:
                        raise RuntimeError(f"AddPartitionsToTxn {txn_id}: {code.partition_error_code}")
                    retries += 1
                    await asyncio.sleep(0.005)
                batch = records.build_batch([(None, value)] * 10, timestamp_ms=int(time.time() * 1000),
                                            producer_id=pid, producer_epoch=epoch, base_sequence=seq,
                                            transactional=True)
                produce = produce_v9(topic, part, bytes(batch), acks=-1, transactional_id=txn_id)
                while True:
                    perr = (await c.request(produce, 9)).responses[0].partition_responses[0].error_code
                    if perr == 0:
                        break
                    # Kafka answers NOT_LEADER_OR_FOLLOWER for a moment after a topic is created;
                    # a client refreshes its metadata and sends the same batch again.
                    if perr != 6:
                        raise RuntimeError(f"Produce {txn_id}: {perr}")
                    retries += 1
                    await asyncio.sleep(0.01)
                seq += 10
                while True:
                    ecode = (await c.request(end, 3)).error_code
                    if ecode == 0:
                        break
                    if ecode not in _RETRY_TXN:
                        raise RuntimeError(f"EndTxn {txn_id}: {ecode}")
                    retries += 1
                    await asyncio.sleep(0.005)
                lat.append((time.perf_counter() - t0) * 1000)

    stop_at = [float("inf")]
    tasks = [asyncio.ensure_future(one(k)) for k in range(n)]
    waiter = asyncio.ensure_future(ready.wait())
    await asyncio.wait([waiter, *tasks], return_when=asyncio.FIRST_COMPLETED)
    for t in tasks:  # a producer that failed before the window: raise its error
        if t.done() and t.exception() is not None:
            waiter.cancel()
            raise t.exception()  # type: ignore[misc]
    cpu0 = b.cpu_seconds()
    t0 = time.perf_counter()
    stop_at[0] = t0 + seconds
    await asyncio.gather(*tasks)
    elapsed = time.perf_counter() - t0
    return {"value": len(lat) / elapsed, "p99_ms": _pct(lat, 99), "p50_ms": _pct(lat, 50),
            "retries": retries, "rss_mb": b.memory().get("vmrss_mb"),
            "cpu_ms_per_txn": 1000 * (b.cpu_seconds() - cpu0) / max(1, len(lat))}


def group_settle_time(bootstrap: str, topic: str, members: int, timeout: float = 300.0) -> float:
    """Seconds from the first subscribe until `members` confluent-kafka consumers of one group each
    hold exactly one of the topic's `members` partitions."""
    import threading
    import uuid

    from confluent_kafka import Consumer

    group = f"members-{uuid.uuid4().hex[:8]}"
    assigned: dict[int, set[int]] = {}
    lock = threading.Lock()

    def on_assign(i: int) -> Callable[[Any, Any], None]:
        def cb(_consumer: Any, partitions: Any) -> None:
            with lock:
                assigned[i] = {p.partition for p in partitions}
        return cb

    def on_revoke(i: int) -> Callable[[Any, Any], None]:
        def cb(_consumer: Any, _partitions: Any) -> None:
            with lock:
                assigned.pop(i, None)
        return cb

    def settled() -> bool:
        with lock:
            return (len(assigned) == members and all(len(v) == 1 for v in assigned.values())
                    and set().union(*assigned.values()) == set(range(members)))

    consumers = []
    t0 = time.perf_counter()
    try:
        for i in range(members):
            c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "session.timeout.ms": 45000,
                          "heartbeat.interval.ms": 500, "partition.assignment.strategy": "range",
                          "log_level": 3})
            c.subscribe([topic], on_assign=on_assign(i), on_revoke=on_revoke(i))
            consumers.append(c)
        deadline = t0 + timeout
        while not settled():
            if time.perf_counter() > deadline:
                raise RuntimeError(f"{members} members did not settle within {timeout:.0f} s")
            for c in consumers:
                c.poll(0)
            time.sleep(0.005)
        return time.perf_counter() - t0
    finally:
        for c in consumers:
            c.close()


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

    cpu0, client0 = b.cpu_seconds(), time.process_time()
    stop_at = time.perf_counter() + seconds
    await asyncio.gather(*(one(stop_at) for _ in range(n)))
    cpu, client = b.cpu_seconds() - cpu0, time.process_time() - client0
    count = len(lat)
    # Both processes' CPU: on a small machine the two together can use every core, and then the
    # point measures CPU per request (broker + client), not what more cores would give.
    return {"value": count / seconds, "p99_ms": _pct(lat, 99), "p50_ms": _pct(lat, 50),
            "rss_mb": b.memory().get("vmrss_mb"), "cpu_s_per_gb": cpu / max(1e-9, count * 1024 / 1e9),
            "broker_cpu_pct": 100.0 * cpu / seconds, "client_cpu_pct": 100.0 * client / seconds,
            "broker_cpu_us_per_request": 1e6 * cpu / max(1, count)}


def main(brokers: list[str], out: Path, profile: str, only: set[str] | None, workdir: Path | None) -> dict[str, Any]:
    for name in brokers:
        if name == "kafka":
            BROKERS["kafka"].ensure_jars()  # type: ignore[attr-defined]
    return Scale(brokers, out, dict(PROFILES[profile]), only, workdir).run()


