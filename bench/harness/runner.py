"""Runs the benchmark matrix against each broker and stores every sample in results.json."""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from pathlib import Path
from typing import Any, Callable

from . import machine, procstat
from .brokers import BROKERS, Broker, BrokerError, tansu_unavailable_reason

WORKLOADS = Path(__file__).resolve().parent / "workloads.py"
RUN_TOOL = Path(__file__).resolve().parents[1] / "kafka" / "run-tool.sh"
TXN_BENCH = Path(__file__).resolve().parent / "java" / "TxnBench.java"
CLIENT_CPU = "0"  # with --pin: clients on CPU 0, broker on CPU 1
BROKER_CPU = "1"


def log(msg: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


# --------------------------------------------------------------------------------------------------
# clients


class ClientError(RuntimeError):
    pass


def run_client(role: str, args: dict[str, Any], *, broker: Broker | None = None, timeout: float = 600,
               pin: bool = False, on_line: Callable[[str], None] | None = None,
               stderr_path: Path | None = None) -> dict[str, Any]:
    """One client process; broker CPU seconds are sampled at its MARK start / MARK end lines."""
    cmd = [sys.executable, "-u", str(WORKLOADS), role, json.dumps(args)]
    if pin and shutil.which("taskset"):
        cmd = ["taskset", "-c", CLIENT_CPU, *cmd]
    err = open(stderr_path, "ab") if stderr_path else subprocess.DEVNULL  # noqa: SIM115
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=err, stdin=subprocess.DEVNULL, text=True)
    timer = threading.Timer(timeout, proc.kill)
    timer.start()
    marks: dict[str, float] = {}
    last = ""
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            line = line.strip()
            if line.startswith("MARK ") and broker is not None and broker.running:
                marks[line[5:]] = broker.cpu_seconds()
            elif on_line is not None and line == "READY":
                on_line(line)
            elif line:
                last = line
        rc = proc.wait(30)
    finally:
        timer.cancel()
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
        if stderr_path:
            err.close()  # type: ignore[union-attr]
    if rc != 0 or not last.startswith("{"):
        # the client's own words (a Python traceback, librdkafka's last errors) go into the sample,
        # since the stderr log lives in the run's temporary directory
        tail = stderr_path.read_bytes()[-1500:].decode(errors="replace") if stderr_path else ""
        raise ClientError(f"{role} exited {rc} (timeout {timeout}s?); last line: {last[:300]}; stderr: {tail}")
    res = json.loads(last)
    if "start" in marks and "end" in marks:
        res["broker_cpu_s"] = marks["end"] - marks["start"]
        if res.get("bytes"):
            res["broker_cpu_s_per_gb"] = res["broker_cpu_s"] / (res["bytes"] / 1e9)
        if res.get("seconds"):
            res["broker_cpu_pct"] = 100.0 * res["broker_cpu_s"] / res["seconds"]
    return res


def create_topics(bootstrap: str, topics: dict[str, int], timeout: float = 60,
                  config: dict[str, str] | None = None) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 3})
    futs = admin.create_topics([NewTopic(t, n, 1, config=dict(config or {})) for t, n in topics.items()],
                               operation_timeout=timeout)
    for t, f in futs.items():
        f.result(timeout)
    wait_for_partitions(admin, topics, timeout)


def set_topic_config(bootstrap: str, topic: str, name: str, value: str, timeout: float = 60) -> None:
    """IncrementalAlterConfigs SET of one topic config, as an operator would change it."""
    from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource

    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 3})
    res = ConfigResource(ConfigResource.Type.TOPIC, topic, incremental_configs=[
        ConfigEntry(name, value, incremental_operation=AlterConfigOpType.SET)])
    admin.incremental_alter_configs([res])[res].result(timeout)


class BackgroundClient:
    """A client role running on a thread while the runner does something else; started() returns
    once it printed READY (or failed), result() joins it."""

    def __init__(self, run: Run, role: str, args: dict[str, Any], timeout: float) -> None:
        self._ready = threading.Event()
        self._out: dict[str, Any] = {}

        def body() -> None:
            try:
                self._out["r"] = run.client(role, args, timeout=timeout, on_line=lambda _l: self._ready.set())
            except Exception as exc:  # noqa: BLE001 - handed to the caller in started()/result()
                self._out["err"] = exc
                self._ready.set()

        self._thread = threading.Thread(target=body, daemon=True)
        self._thread.start()
        self._timeout = timeout

    def started(self, what: str, wait: float = 120) -> None:
        if not self._ready.wait(wait):
            raise ClientError(f"{what} never became ready")
        if "err" in self._out:
            raise self._out["err"]

    def result(self, what: str) -> dict[str, Any]:
        self._thread.join(self._timeout + 30)
        if "err" in self._out:
            raise self._out["err"]
        if "r" not in self._out:
            raise ClientError(f"{what} did not finish")
        return self._out["r"]


def wait_for_partitions(admin: Any, topics: dict[str, int], timeout: float) -> None:
    """Until metadata shows every topic with that many partitions, each with a leader."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        md = admin.list_topics(timeout=10)
        if all(t in md.topics and len(md.topics[t].partitions) == n
               and all(p.leader >= 0 for p in md.topics[t].partitions.values()) for t, n in topics.items()):
            return
        time.sleep(0.1)
    raise BrokerError(f"topics {sorted(topics)} not ready")


def parse_consumer_performance(stdout: str) -> dict[str, Any] | None:
    """The data line of Kafka's ConsumerPerformance: start.time, end.time, data.consumed.in.MB,
    MB.sec, data.consumed.in.nMsg, nMsg.sec, rebalance.time.ms, fetch.time.ms, fetch.MB.sec,
    fetch.nMsg.sec (4.3.1). None when there is no such line."""
    for line in reversed(stdout.strip().splitlines()):
        f = [x.strip() for x in line.split(",")]
        if len(f) == 10:
            try:
                mb, n, rps_all, rebalance_ms, fetch_ms, fetch_mbps, fetch_rps = (
                    float(f[2]), int(f[4]), float(f[5]), float(f[6]), float(f[7]), float(f[8]), float(f[9]))
            except ValueError:
                continue
            return {"consumed": n, "bytes": int(mb * 1024 * 1024), "records_per_s": fetch_rps,
                    "mb_per_s": fetch_mbps * 1.048576, "records_per_s_incl_rebalance": rps_all,
                    "rebalance_ms": rebalance_ms, "seconds": fetch_ms / 1000}
    return None


def parse_producer_performance(stdout: str) -> dict[str, Any] | None:
    """The summary line of Kafka's ProducerPerformance (4.3.1): "N records sent, R records/sec
    (M MB/sec), A ms avg latency, X ms max latency, p50 ms 50th, p95 ms 95th, p99 ms 99th, p999 ms
    99.9th." None when there is no such line."""
    import re

    pattern = re.compile(r"(\d+) records sent, ([\d.]+) records/sec \(([\d.]+) MB/sec\), ([\d.]+) ms avg latency, "
                         r"([\d.]+) ms max latency, (\d+) ms 50th, (\d+) ms 95th, (\d+) ms 99th")
    for line in reversed(stdout.strip().splitlines()):
        m = pattern.search(line)
        if m:
            return {"records": int(m[1]), "records_per_s": float(m[2]), "mb_per_s": float(m[3]) * 1.048576,
                    "avg_ms": float(m[4]), "max_ms": float(m[5]), "p50_ms": float(m[6]), "p95_ms": float(m[7]),
                    "p99_ms": float(m[8])}
    return None


# --------------------------------------------------------------------------------------------------
# the run


class Run:
    def __init__(self, profile_name: str, profile: dict[str, Any], brokers: list[str], scenarios: list[str],
                 out_dir: Path, pin: bool = False, seed: int = 42, workdir: Path | None = None) -> None:
        self.profile_name, self.p = profile_name, profile
        self.scenarios = set(scenarios)
        self.out_dir = out_dir
        self.pin = pin
        self.seed = seed
        self.samples: list[dict[str, Any]] = []
        self.skipped: dict[str, str] = {}
        self.broker_info: dict[str, Any] = {}
        self.brokers = []
        for b in brokers:
            if b == "tansu":
                why = tansu_unavailable_reason()
                if why:
                    self.skipped["tansu"] = why
                    log(f"tansu skipped: {why}")
                    continue
            if b == "kafka":
                try:
                    BROKERS["kafka"].ensure_jars()  # type: ignore[attr-defined]
                except Exception as exc:  # noqa: BLE001
                    self.skipped["kafka"] = str(exc)
                    log(f"kafka skipped: {exc}")
                    continue
            self.brokers.append(b)
        for java_scenario in ("C3", "C4"):
            if java_scenario in self.scenarios and shutil.which("java") is None:
                self.skipped[java_scenario] = f"no java on PATH ({java_scenario} runs Kafka's ConsumerPerformance)"
                self.scenarios.discard(java_scenario)
        for java_scenario in ("T2", "P5"):
            if java_scenario in self.scenarios and shutil.which("java") is None:
                self.skipped[java_scenario] = f"no java on PATH ({java_scenario} runs Kafka's Java producer)"
                self.scenarios.discard(java_scenario)
        if "M1" in self.scenarios and "minikafka" not in self.brokers:
            self.skipped["M1"] = "minikafka is not among --brokers (M1 compares minikafka with itself)"
            self.scenarios.discard("M1")
        self._tmp = Path(tempfile.mkdtemp(prefix="minikafka-bench-", dir=workdir))
        self.started = time.time()
        self.meta: dict[str, Any] = {}

    # -- helpers -------------------------------------------------------------------------------
    def new_broker(self, name: str, tag: str) -> Broker:
        wd = self._tmp / f"{name}-{tag}"
        if wd.exists():
            shutil.rmtree(wd)
        cls = BROKERS[name]
        heartbeat = self.p.get("g1_heartbeat_ms")
        if heartbeat and name in ("minikafka", "kafka"):
            props = {"group.consumer.heartbeat.interval.ms": str(heartbeat),
                     "group.consumer.min.heartbeat.interval.ms": str(heartbeat)}
            kw = {"overrides": props} if name == "minikafka" else {"extra_props": props}
            return cls(wd, pin=BROKER_CPU if self.pin else None, **kw)  # type: ignore[call-arg]
        return cls(wd, pin=BROKER_CPU if self.pin else None)

    def order(self, rep: int) -> list[str]:
        k = rep % max(1, len(self.brokers))
        return self.brokers[k:] + self.brokers[:k]

    def add(self, broker: str, rep: int, scenario: str, point: str, metrics: dict[str, Any]) -> None:
        self.samples.append({"broker": broker, "rep": rep, "scenario": scenario, "point": point, **metrics})

    def client(self, role: str, args: dict[str, Any], broker: Broker | None = None, timeout: float = 600,
               **kw: Any) -> dict[str, Any]:
        return run_client(role, args, broker=broker, timeout=timeout, pin=self.pin,
                          stderr_path=self._tmp / "clients.stderr.log", **kw)

    def save(self) -> None:
        self.out_dir.mkdir(parents=True, exist_ok=True)
        doc = {"meta": {**self.meta, "profile": self.profile_name, "params": self.p, "pinned": self.pin,
                        "brokers": self.brokers, "skipped": self.skipped, "broker_config": self.broker_info,
                        "scenarios": sorted(self.scenarios), "started": self.started,
                        "elapsed_s": time.time() - self.started, "seed": self.seed},
               "samples": self.samples}
        tmp = self.out_dir / "results.json.tmp"
        tmp.write_text(json.dumps(doc, indent=1, sort_keys=True))
        os.replace(tmp, self.out_dir / "results.json")

    def guarded(self, broker: str, rep: int, scenario: str, point: str, fn: Callable[[], dict[str, Any]]) -> None:
        try:
            self.add(broker, rep, scenario, point, fn())
        except Exception as exc:  # noqa: BLE001 - record and go on with the next point
            log(f"{broker} {scenario}/{point} rep {rep} FAILED: {exc}")
            self.add(broker, rep, scenario, point, {"error": f"{type(exc).__name__}: {exc}",
                                                    "trace": traceback.format_exc()[-2000:]})

    # -- phases --------------------------------------------------------------------------------
    def run(self) -> dict[str, Any]:
        self.meta["machine"] = machine.describe()
        self.save()
        try:
            if self.scenarios & {"O1", "O2"}:
                self.phase_startup()
            if self.scenarios & {"P2", "P3", "P4", "P5", "C1", "C2", "C3", "C4", "E1", "G1", "T2", "L1", "O2"}:
                for rep in range(self.p["reps"]):
                    for name in self.order(rep):
                        self.phase_load(name, rep)
                        self.save()
            if "S1" in self.scenarios:
                self.phase_security()
            if "M1" in self.scenarios:
                self.phase_observability()
            if "O3" in self.scenarios:
                self.phase_recovery()
        finally:
            self.save()
            shutil.rmtree(self._tmp, ignore_errors=True)
        return json.loads((self.out_dir / "results.json").read_text())

    def phase_startup(self) -> None:
        """O1: spawn -> ready on an empty data dir (Kafka formatted beforehand, timed apart);
        O2 idle: RSS `idle_s` after ready, on the last min(reps, startup_reps) starts."""
        n = self.p["startup_reps"]
        idle_from = n - min(n, self.p["reps"])
        for rep in range(n):
            running: list[tuple[str, Broker, float]] = []
            try:
                for name in self.order(rep):
                    b = self.new_broker(name, f"start{rep}")
                    try:
                        info = b.start()
                    except Exception as exc:  # noqa: BLE001
                        log(f"{name} start failed: {exc}")
                        self.add(name, rep, "O1", "empty", {"error": str(exc)[:2000]})
                        b.kill9()
                        continue
                    ready_at = time.monotonic()
                    log(f"O1 {name} rep {rep}: ready in {info['spawn_to_ready_s']:.2f}s")
                    self.add(name, rep, "O1", "empty", info)
                    if name not in self.broker_info:
                        self.broker_info[name] = b.describe()
                    running.append((name, b, ready_at))
                    if rep < idle_from or "O2" not in self.scenarios:
                        b.stop()
                if rep >= idle_from and "O2" in self.scenarios:
                    for name, b, ready_at in sorted(running, key=lambda x: x[2]):
                        wait = ready_at + self.p["idle_s"] - time.monotonic()
                        if wait > 0:
                            time.sleep(wait)
                        self.add(name, rep - idle_from, "O2", "idle", {**b.memory(), "idle_s": self.p["idle_s"]})
                        log(f"O2 {name}: idle RSS {b.memory().get('vmrss_mb', 0):.0f} MB")
            finally:
                for _, b, _ in running:
                    b.stop()
            self.save()

    def phase_security(self) -> None:
        """S1: produce and consume over PLAINTEXT and SASL_SSL on one broker start (security.py)."""
        from . import security

        for rep in range(self.p["reps"]):
            for name in self.order(rep):
                if name == "tansu":
                    continue  # no TLS or SASL to compare
                log(f"security phase: {name} rep {rep}")
                try:
                    security.measure(self, name, rep)
                except Exception as exc:  # noqa: BLE001 - recorded, the run goes on
                    log(f"{name} S1 rep {rep} FAILED: {exc}")
                    self.add(name, rep, "S1", "start", {"error": f"{type(exc).__name__}: {exc}"})
                self.save()

    def phase_observability(self) -> None:
        """M1: minikafka with its metrics and console endpoints off, then on and scraped, alternating
        per repetition (observability.py); no other broker takes part."""
        from . import observability

        log("observability phase (M1): minikafka, endpoints off / on")
        observability.measure(self)

    def phase_load(self, name: str, rep: int) -> None:
        p, size = self.p, self.p["record_size"]
        b = self.new_broker(name, f"load{rep}")
        log(f"load phase: {name} rep {rep}")
        try:
            b.start()
        except Exception as exc:  # noqa: BLE001
            log(f"{name} start failed: {exc}")
            self.add(name, rep, "load", "start", {"error": str(exc)[:2000]})
            b.kill9()
            return
        if name not in self.broker_info:
            self.broker_info[name] = b.describe()
        bs = b.bootstrap
        try:
            topics = {"warm": 1, "p3": 1, "p4": 1, "c2": 1, "g1": 6, "t2": 1, "c4": p["c4_partitions"],
                      **{f"p2-{t}": int(t[1:]) for t in p["p2_topics"]},
                      **{f"p5-{t}{suffix}": int(t[1:]) for t in p["p2_topics"] for suffix in ("", "-warm")},
                      **{f"e1-{r}": 1 for r in p["e1_rates"]}}
            create_topics(bs, topics)
            with procstat.RssSampler(b.pid) as sampler:
                w = self.client("warmup", {"bootstrap": bs, "topic": "warm", "records": p["warmup_records"]}, b)
                log(f"  warm-up {w['seconds']:.1f}s ({w['plain_records_per_s']:.0f} rec/s), ok={w['ok']}, steps "
                    + ", ".join(f"{k} {w[k]:.1f}" for k in ("plain_s", "idem_s", "txn_s", "consume_s", "group_s")))
                self.add(name, rep, "warmup", "-", w)
                self._load_points(name, rep, b, size)
            mem = b.memory()
            self.add(name, rep, "O2", "loaded", {**mem, "sampled_peak_rss_mb": sampler.peak_mb})
        finally:
            b.stop()
            # ~3 GB per broker and repetition in the full profile: kept until the run's end, the
            # data of 3 repetitions x 2 brokers filled the VM's disk (17 GB) during O3
            shutil.rmtree(b.workdir, ignore_errors=True)

    def _load_points(self, name: str, rep: int, b: Broker, size: int) -> None:
        p, bs, sc = self.p, b.bootstrap, self.scenarios
        base = {"bootstrap": bs, "size": size, "seed": self.seed, "warm_topic": "warm"}
        acked: dict[str, int] = {}

        def produce(topic: str, records: int, mode: str, **extra: Any) -> dict[str, Any]:
            r = self.client("produce", {**base, "topic": topic, "records": records, "mode": mode, **extra}, b)
            acked[topic] = r["acked"]
            log(f"  {name} produce {topic} {mode}: {r['records_per_s']:.0f} rec/s "
                f"(delivery errors {r['errors']}{' incl. aborted' if extra.get('abort_every') else ''}, broker {r.get('broker_cpu_pct', 0):.0f}% cpu, client {r['client_cpu_pct']:.0f}%)")
            return r

        def consume(topic: str, expected: Any, iso: str, **extra: Any) -> dict[str, Any]:
            r = self.client("consume", {"bootstrap": bs, "topic": topic, "expected": expected, "isolation": iso,
                                        **extra}, b)
            log(f"  {name} consume {topic} {iso}: {r['records_per_s']:.0f} rec/s ({r['consumed']}/{r['expected']})")
            return r

        need_p2 = sc & {"P2", "C1"}
        for t in p["p2_topics"]:
            if need_p2 and (t == "p1" or "P2" in sc):
                self.guarded(name, rep, "P2", t, lambda t=t: produce(f"p2-{t}", p["p2_records"], "plain"))
        if "P3" in sc:
            self.guarded(name, rep, "P3", "p1", lambda: produce("p3", p["p3_records"], "idem"))
            self.guarded(name, rep, "P3", "dupcheck", lambda: consume(
                "p3", acked.get("p3", p["p3_records"]), "read_uncommitted", check_seq=True,
                seq_space=p["p3_records"], linger_s=0.5))
        if sc & {"P4", "C2", "C3"}:
            self.guarded(name, rep, "P4", "p1", lambda: produce(
                "p4", p["p4_records"], "txn", txn_id=f"p4-{rep}", txn_records=100, txn_ms=100))
        if "C1" in sc and "p2-p1" in acked:
            self.guarded(name, rep, "C1", "read_uncommitted", lambda: consume("p2-p1", acked["p2-p1"],
                                                                            "read_uncommitted"))
            self.guarded(name, rep, "C1", "read_committed", lambda: consume("p2-p1", acked["p2-p1"],
                                                                          "read_committed"))
        p4 = next((s for s in reversed(self.samples) if s["broker"] == name and s["rep"] == rep
                   and s["scenario"] == "P4" and "committed_records" in s), None)
        if "C4" in sc:
            # The Java consumer across many partitions: with fetch sessions (KIP-227) each poll lists
            # and answers only the partitions that changed, not all of them.
            self.guarded(name, rep, "C4", "prefill", lambda: produce("c4", p["c4_records"], "plain"))
            if "c4" in acked:
                self.guarded(name, rep, "C4", "java_partitions", lambda: self._java_consume(
                    b, "c4", acked["c4"], "read_uncommitted", f"c4-{rep}"))
        if "C3" in sc and p4 is not None:
            self.guarded(name, rep, "C3", "java_read_committed", lambda: self._java_consume(
                b, "p4", p4["committed_records"], "read_committed", f"c3-{rep}"))
        if "C2" in sc:
            if p4 is not None:
                self.guarded(name, rep, "C2", "aborted0", lambda: consume(
                    "p4", p4["committed_records"], "read_committed", linger_s=0.5))
            fill: dict[str, Any] = {}

            def prefill() -> dict[str, Any]:
                fill.update(produce("c2", p["c2_records"], "txn", txn_id=f"c2-{rep}", txn_records=100,
                                    txn_ms=100, abort_every=10))
                return fill
            self.guarded(name, rep, "C2", "prefill10", prefill)
            if fill:
                self.guarded(name, rep, "C2", "aborted10", lambda: consume(
                    "c2", fill["committed_records"], "read_committed", linger_s=0.5))
        if "P5" in sc:
            for t in p["p2_topics"]:
                self.guarded(name, rep, "P5", t, lambda t=t: self._java_produce(b, t))
        if "T2" in sc:
            for tv in (2, 1):
                self.guarded(name, rep, "T2", f"tv{tv}", lambda tv=tv: self._java_transactions(b, tv, rep))
            self._transaction_version(b, 2)
        if "G1" in sc:
            for protocol in ("classic", "consumer"):
                self.guarded(name, rep, "G1", protocol, lambda protocol=protocol: self._rebalance(b, protocol, rep))
        if "L1" in sc:
            from . import cleaning

            self.guarded(name, rep, "L1", "clean", lambda: cleaning.measure(self, b, rep))
        if "E1" in sc:
            for rate in p["e1_rates"]:
                self.guarded(name, rep, "E1", str(rate), lambda rate=rate: self._e2e(b, f"e1-{rate}", rate))

    def _transaction_version(self, b: Broker, level: int) -> None:
        """kafka-features.sh upgrade/downgrade of transaction.version, on either broker."""
        verb = "upgrade" if level == 2 else "downgrade"
        r = subprocess.run([str(RUN_TOOL), "org.apache.kafka.tools.FeatureCommand", "--bootstrap-server", b.bootstrap,
                            verb, "--feature", f"transaction.version={level}"],
                           capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
        if r.returncode != 0 and "can be" not in r.stdout:
            raise ClientError(f"transaction.version={level}: {(r.stdout + r.stderr)[-500:]}")

    def _java_produce(self, b: Broker, t: str) -> dict[str, Any]:
        """P5: P2 with Kafka's own Java producer (ProducerPerformance 4.3.1, P2's settings: 1 KiB,
        acks=all, linger 5 ms, 1 MB batches, no idempotence). The confluent-kafka producer is P2's
        limit on 2 cores whichever broker answers; the Java producer shows more of the brokers'
        own difference. `p5_warmup` records go to another topic first, untimed (JIT, connections)."""
        p = self.p

        def perf(topic: str, records: int) -> str:
            cmd = [str(RUN_TOOL), "org.apache.kafka.tools.ProducerPerformance", "--topic", topic,
                   "--num-records", str(records), "--record-size", str(p["record_size"]), "--throughput", "-1",
                   "--producer-props", f"bootstrap.servers={b.bootstrap}", "acks=all", "linger.ms=5",
                   "batch.size=1000000", "enable.idempotence=false"]
            if self.pin and shutil.which("taskset"):
                cmd = ["taskset", "-c", CLIENT_CPU, *cmd]
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=900, stdin=subprocess.DEVNULL)
            if r.returncode != 0:
                raise ClientError(f"ProducerPerformance exited {r.returncode}: {(r.stdout + r.stderr)[-500:]}")
            return r.stdout

        perf(f"p5-{t}-warm", p["p5_warmup"])
        cpu0 = b.cpu_seconds()
        res = parse_producer_performance(perf(f"p5-{t}", p["p5_records"]))
        cpu = b.cpu_seconds() - cpu0
        if res is None or res["records"] != p["p5_records"]:
            raise ClientError(f"ProducerPerformance: no summary line for {p['p5_records']} records: {res}")
        res["broker_cpu_s_per_gb"] = cpu / max(1e-9, res["records"] * p["record_size"] / 1e9)
        log(f"  {b.name} P5 java producer {t}: {res['records_per_s']:.0f} rec/s, p99 {res['p99_ms']:.0f} ms")
        return res

    def _java_transactions(self, b: Broker, tv: int, rep: int) -> dict[str, Any]:
        """T2: Kafka's Java producer 4.3.1 runs transactions back to back (1 KiB records), under
        transactions v2 (transaction.version 2) and v1 (1): transactions/s and commit latency."""
        self._transaction_version(b, tv)
        p = self.p
        from tests.kafka_ref import kafka_cache_dir, kafka_version

        tools = kafka_cache_dir() / kafka_version() / "tools"  # fetched by the FeatureCommand run above
        cmd = ["java", "-cp", str(tools / "*"), str(TXN_BENCH), b.bootstrap, "t2",
               f"t2-{tv}-{rep}-{os.getpid()}", str(p["t2_warmup"]), str(p["t2_transactions"]), str(p["t2_records"])]
        if self.pin and shutil.which("taskset"):
            cmd = ["taskset", "-c", CLIENT_CPU, *cmd]
        cpu0 = b.cpu_seconds()
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=900, stdin=subprocess.DEVNULL)
        cpu1 = b.cpu_seconds()
        line = next((x for x in reversed(r.stdout.splitlines()) if x.startswith("{")), None)
        if r.returncode != 0 or line is None:
            raise ClientError(f"TxnBench exited {r.returncode}: {(r.stdout + r.stderr)[-500:]}")
        res = json.loads(line)
        res.update(transaction_version=tv, broker_cpu_s_incl_jvm_start=cpu1 - cpu0)
        log(f"  {b.name} T2 java tv{tv}: {res['txn_per_s']:.0f} txn/s, commit p50 {res['commit_p50_ms']:.1f} ms "
            f"p99 {res['commit_p99_ms']:.1f} ms")
        return res

    def _rebalance(self, b: Broker, protocol: str, rep: int) -> dict[str, Any]:
        """G1: how long a 3-member group takes to settle after two joins and after a leave, with each
        broker's default group settings (classic: the members' 3 s heartbeats; KIP-848: the
        coordinator's 5 s heartbeat interval)."""
        r = self.client("rebalance", {"bootstrap": b.bootstrap, "topic": "g1", "partitions": 6,
                                      "group": f"g1-{protocol}-{rep}", "protocol": protocol,
                                      "heartbeat_ms": self.p.get("g1_heartbeat_ms")}, b)
        log(f"  {b.name} G1 {protocol}: 2 joins settle in {r['join_s']:.2f}s, a leave in {r['leave_s']:.2f}s")
        return r

    def _java_consume(self, b: Broker, topic: str, expected: int, iso: str, group: str) -> dict[str, Any]:
        """C3, C4: Kafka's own ConsumerPerformance (the Java consumer, subscribed in a group) reads the
        topic; its fetch-only rate (after the group's rebalance) is the throughput."""
        cmd = [str(RUN_TOOL), "org.apache.kafka.tools.ConsumerPerformance", "--bootstrap-server", b.bootstrap,
               "--topic", topic, "--num-records", str(expected), "--group", group, "--timeout", "30000",
               "--command-property", f"isolation.level={iso}"]
        if self.pin and shutil.which("taskset"):
            cmd = ["taskset", "-c", CLIENT_CPU, *cmd]
        cpu0 = b.cpu_seconds()
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL)
        cpu1 = b.cpu_seconds()
        res = parse_consumer_performance(r.stdout)
        if r.returncode != 0 or res is None:
            raise ClientError(f"ConsumerPerformance exited {r.returncode}: {(r.stdout + r.stderr)[-500:]}")
        if res["consumed"] != expected:
            raise ClientError(f"ConsumerPerformance read {res['consumed']} records, expected {expected}")
        res.update(expected=expected, complete=True, broker_cpu_s_incl_jvm_start=cpu1 - cpu0)
        log(f"  {b.name} java consumer {topic} {iso}: {res['records_per_s']:.0f} rec/s fetch-only "
            f"({res['records_per_s_incl_rebalance']:.0f} incl. rebalance)")
        return res

    def _e2e(self, b: Broker, topic: str, rate: int) -> dict[str, Any]:
        p = self.p
        total = int(rate * (p["e1_seconds"] + p["e1_warmup_s"]))
        drop = int(rate * p["e1_warmup_s"])
        consumer = BackgroundClient(self, "e2e-consume", {"bootstrap": b.bootstrap, "topic": topic, "expected": total,
                                                          "drop": drop, "timeout_s": total / rate + 60},
                                    timeout=total / rate + 120)
        consumer.started("e2e consumer")
        cpu0 = b.cpu_seconds()
        prod = self.client("e2e-produce", {"bootstrap": b.bootstrap, "topic": topic, "rate": rate, "records": total,
                                           "seed": self.seed, "size": p["record_size"]}, timeout=total / rate + 120)
        c = consumer.result("e2e consumer")
        cpu1 = b.cpu_seconds()
        log(f"  {b.name} E1 {rate}/s: p50 {c['e2e_p50_ms']} ms p99 {c['e2e_p99_ms']} ms lost {c['lost']}")
        return {**c, "rate": rate, "producer": prod, "broker_cpu_pct": 100 * (cpu1 - cpu0) / max(prod["seconds"], 1e-9)}

    def phase_recovery(self) -> None:
        """O3: ~recovery_bytes of 1 KiB idempotent records (sequence numbers in the payload) in one
        partition's active segment, all acked; kill -9; time spawn -> ready; then verify."""
        p = self.p
        records = int(math.ceil(p["recovery_bytes"] / p["record_size"]))
        for rep in range(p["recovery_reps"]):
            for name in self.order(rep):
                if not BROKERS[name].has_disk:
                    continue
                b = self.new_broker(name, f"rec{rep}")
                acked_file = self._tmp / f"acked-{name}-{rep}.bin"

                def one() -> dict[str, Any]:
                    b.start()
                    create_topics(b.bootstrap, {"rec": 1, "warm": 1})
                    fill = self.client("fill", {"bootstrap": b.bootstrap, "topic": "rec", "records": records,
                                                "warm_topic": "warm",
                                                "size": p["record_size"], "seed": self.seed,
                                                "acked_file": str(acked_file), "timeout_s": 1800}, b, timeout=2000)
                    log(f"  {name} O3 filled {fill['bytes'] / 1e6:.0f} MB at {fill['mb_per_s']:.1f} MB/s")
                    b.kill9()
                    info = b.start(timeout=600)
                    log(f"  {name} O3 recovery: ready in {info['spawn_to_ready_s']:.2f}s")
                    v = self.client("consume", {"bootstrap": b.bootstrap, "topic": "rec", "expected": "hwm",
                                                "isolation": "read_uncommitted", "check_seq": True,
                                                "seq_space": records, "acked_file": str(acked_file),
                                                "timeout_s": 1200}, b, timeout=1300)
                    ok = (v["acked_missing"] == 0 and v["duplicates"] == 0 and v["gaps"] == 0 and v["complete"])
                    return {**info, "filled_mb": fill["bytes"] / 1e6, "fill_mb_per_s": fill["mb_per_s"],
                            "acked": v["acked"], "consumed": v["consumed"], "acked_missing": v["acked_missing"],
                            "duplicates": v["duplicates"], "gaps": v["gaps"], "verified": ok,
                            "verify_records_per_s": v["records_per_s"]}

                try:
                    self.guarded(name, rep, "O3", "kill9", one)
                finally:
                    b.stop()
                    acked_file.unlink(missing_ok=True)
                    shutil.rmtree(b.workdir, ignore_errors=True)
                self.save()
