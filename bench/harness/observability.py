"""M1: the cost of the observability endpoints (issue 22, "Benchmark"): minikafka against itself.

Each repetition starts minikafka twice on a fresh data dir, first with the endpoints OFF (no
`--metrics-port`, no `--console-port`: the default), then ON (`--metrics-port P --console-port Q`,
and a scraper thread in the harness fetching http://127.0.0.1:P/metrics once a second, as
Prometheus would, and the console's page "/" every 2 seconds, as an open console refreshes; the
browser asks for `/?fragment=1`, the live part of the page, so the whole page is the heavier
choice). Per start: topics, an untimed warm-up (a quarter of `m1_records` produced and read back
on another topic: connections, page cache, the first scrapes' lazy imports), then P2's producer
(1 KiB records, acks=all, P2's librdkafka settings) writes `m1_records` to a topic of one
partition and C1's catch-up consumer (read_uncommitted) reads them back. The scraper runs from
before the warm-up to after the read. Reported per workload: records/s off and on, and the ratio
on/off of the same repetition (the cost; the goal is >= 0.95), with the ratio of the broker's CPU-s
per GB (on 2 cores the Python clients are often the limit, and then the broker's extra work shows in
its CPU, not in the throughput); P2's ack latency p99 off and on; the scrapes made during each
window, their answer times and failures (must be 0). Each window also records the CPU other
processes used meanwhile (`other_cpu_pct`); the `*_cost_quiet` points repeat the ratio of the
repetitions whose two windows were quiet (under QUIET_OTHER_CPU_PCT), as a 2-core machine shared
with a test run moves both modes by 20-40 %.

Modes alternate off, on, off, on... so a drift of the machine does not favour one mode. Apache
Kafka and Tansu are not involved: the scenario runs for the minikafka broker only.
"""

from __future__ import annotations

import http.client
import os
import shutil
import statistics
import threading
import time
from typing import Any

from .brokers import MiniKafka, free_port
from .procstat import CLK_TCK
from .runner import ClientError, create_topics, log

METRICS_EVERY_S = 1.0
CONSOLE_EVERY_S = 2.0
MODES = ("off", "on")
# a pair of windows counts as quiet when other processes (a test run beside the benchmark) used less
# than this much of a core during each; the client's own start-up and the scraper are in it, a few %
QUIET_OTHER_CPU_PCT = 25.0


class _Poller:
    """GET `path` on 127.0.0.1:`port` every `every` seconds (fixed rate: a slow answer does not push
    the next one later, a missed tick is skipped), on its own thread and keep-alive connection, as
    a Prometheus scrape loop or a browser tab would. Counts answers, failures, bytes and times."""

    def __init__(self, port: int, path: str, every: float) -> None:
        self.port, self.path, self.every = port, path, every
        self.ok = 0
        self.failed = 0
        self.first_error: str | None = None
        self.bytes = 0
        self.times_s: list[float] = []
        self._stop = threading.Event()
        self._conn: http.client.HTTPConnection | None = None
        self._thread = threading.Thread(target=self._loop, name=f"m1-scrape{path}", daemon=True)

    def get(self) -> None:
        t0 = time.perf_counter()
        try:
            if self._conn is None:
                self._conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
            self._conn.request("GET", self.path)
            r = self._conn.getresponse()
            body = r.read()
            if r.status != 200 or not body:
                raise ClientError(f"GET {self.path}: HTTP {r.status}, {len(body)} bytes")
        except Exception as exc:  # noqa: BLE001 - counted; the next tick reconnects
            self.failed += 1
            if self.first_error is None:
                self.first_error = f"{type(exc).__name__}: {exc}"
            if self._conn is not None:
                self._conn.close()
                self._conn = None
            return
        self.times_s.append(time.perf_counter() - t0)
        self.bytes += len(body)
        self.ok += 1

    def wait_ready(self, timeout: float = 30) -> None:
        """One good answer before anything is timed (the endpoint may come up after the listener)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            before = self.ok
            self.get()
            if self.ok > before:
                return
            time.sleep(0.1)
        raise ClientError(f"GET http://127.0.0.1:{self.port}{self.path} never answered 200: {self.first_error}")

    def _loop(self) -> None:
        t0 = time.monotonic()
        k = 1
        while not self._stop.wait(max(0.0, t0 + k * self.every - time.monotonic())):
            self.get()
            k = max(k + 1, int((time.monotonic() - t0) / self.every) + 1)

    def start(self) -> None:
        self.ok = self.failed = self.bytes = 0
        self.times_s.clear()
        self.first_error = None
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(15)
        if self._conn is not None:
            self._conn.close()

    def snapshot(self) -> tuple[int, int, int]:
        return self.ok, self.failed, len(self.times_s)


class Scraper:
    """Prometheus on /metrics every second and an open console on "/" every 2 seconds."""

    def __init__(self, metrics_port: int, console_port: int) -> None:
        self.metrics = _Poller(metrics_port, "/metrics", METRICS_EVERY_S)
        self.console = _Poller(console_port, "/", CONSOLE_EVERY_S)

    def __enter__(self) -> Scraper:
        self.metrics.wait_ready()
        self.console.wait_ready()
        self.metrics.start()
        self.console.start()
        return self

    def __exit__(self, *_exc: Any) -> None:
        self.metrics.stop()
        self.console.stop()

    def window(self, fn: Any) -> dict[str, Any]:
        """Run fn(); add what the scraper did while it ran."""
        m0, c0 = self.metrics.snapshot(), self.console.snapshot()
        r = fn()
        m1, c1 = self.metrics.snapshot(), self.console.snapshot()
        ms = self.metrics.times_s[m0[2]:m1[2]]
        cs = self.console.times_s[c0[2]:c1[2]]
        r.update({"metrics_scrapes": m1[0] - m0[0], "metrics_scrape_failures": m1[1] - m0[1],
                  "console_fetches": c1[0] - c0[0], "console_fetch_failures": c1[1] - c0[1],
                  "metrics_scrape_max_ms": max(ms) * 1e3 if ms else None,
                  "console_fetch_max_ms": max(cs) * 1e3 if cs else None})
        return r

    def summary(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for name, p in (("metrics", self.metrics), ("console", self.console)):
            t = sorted(p.times_s)
            out.update({f"{name}_ok": p.ok, f"{name}_failed": p.failed, f"{name}_first_error": p.first_error,
                        f"{name}_bytes_avg": p.bytes / p.ok if p.ok else None,
                        f"{name}_p50_ms": statistics.median(t) * 1e3 if t else None,
                        f"{name}_max_ms": t[-1] * 1e3 if t else None})
        out["failed"] = self.metrics.failed + self.console.failed
        return out


class _NoScraper:
    def __enter__(self) -> _NoScraper:
        return self

    def __exit__(self, *_exc: Any) -> None:
        pass

    @staticmethod
    def window(fn: Any) -> dict[str, Any]:
        return fn()


def _machine_busy_s() -> float:
    """CPU-seconds the whole machine has been busy (all cores; /proc/stat, Linux)."""
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:]]
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
    return (sum(fields[:8]) - idle) / CLK_TCK


def _timed(fn: Any) -> dict[str, Any]:
    """fn()'s result plus what else used the machine meanwhile: `other_cpu_pct` is the machine's busy
    CPU over the client's run minus the broker's and the client's own (it includes the client
    process's start-up and the scraper), so a test run or a build beside the benchmark shows."""
    t0, busy0 = time.monotonic(), _machine_busy_s()
    r = fn()
    dt, busy = time.monotonic() - t0, _machine_busy_s() - busy0
    r["machine_cpu_pct"] = 100.0 * busy / dt
    if "broker_cpu_s" in r and "client_cpu_s" in r:
        r["other_cpu_pct"] = 100.0 * (busy - r["broker_cpu_s"] - r["client_cpu_s"]) / dt
    return r


def _one_mode(runner: Any, rep: int, mode: str) -> None:
    p = runner.p
    name = "minikafka"
    n = int(p["m1_records"])
    b = runner.new_broker(name, f"m1-{rep}-{mode}")
    assert isinstance(b, MiniKafka)
    ports: tuple[int, int] | None = None
    if mode == "on":
        mport = free_port({b.port})
        cport = free_port({b.port, mport})
        ports = (mport, cport)
        b.extra_args = ["--metrics-port", str(mport), "--console-port", str(cport)]
    log(f"M1 rep {rep}: minikafka, endpoints {mode}")
    try:
        b.start()
    except Exception as exc:  # noqa: BLE001 - recorded, the run goes on
        log(f"M1 {mode} start failed: {exc}")
        runner.add(name, rep, "M1", f"start_{mode}", {"error": f"{type(exc).__name__}: {exc}"[:2000]})
        b.kill9()
        shutil.rmtree(b.workdir, ignore_errors=True)
        return
    runner.meta.setdefault("m1", {"metrics_every_s": METRICS_EVERY_S, "console_every_s": CONSOLE_EVERY_S,
                                  "console_path": "/", "commands": {}})["commands"][mode] = " ".join(b.command())
    base = {"bootstrap": b.bootstrap, "size": p["record_size"], "seed": runner.seed, "warm_topic": "m1-warm"}
    scraper: Scraper | _NoScraper = _NoScraper()
    try:
        create_topics(b.bootstrap, {"m1": 1, "m1-warm": 1})
        if ports is not None:
            scraper = Scraper(*ports)
        with scraper:
            # untimed: connections, page cache, the endpoints' first renders (lazy imports, templates)
            warm = max(1, n // 4)
            runner.client("produce", {**base, "topic": "m1-warm", "records": warm, "mode": "plain"}, b)
            runner.client("consume", {"bootstrap": b.bootstrap, "topic": "m1-warm", "expected": "hwm"}, b)
            acked: dict[str, int] = {}

            def produce() -> dict[str, Any]:
                r = scraper.window(lambda: _timed(lambda: runner.client(
                    "produce", {**base, "topic": "m1", "records": n, "mode": "plain"}, b)))
                acked["m1"] = r["acked"]
                log(f"  M1 {mode} produce (P2): {r['records_per_s']:.0f} rec/s, ack p99 {r['ack_p99_ms']:.1f} ms, "
                    f"broker {r.get('broker_cpu_pct', 0):.0f}% cpu, client {r['client_cpu_pct']:.0f}%, "
                    f"others {r.get('other_cpu_pct', 0):.0f}%"
                    + (f", {r['metrics_scrapes']} scrapes + {r['console_fetches']} console pages" if ports else ""))
                if r["errors"] or r["undelivered"]:
                    raise ClientError(f"produce: {r['errors']} delivery errors, {r['undelivered']} undelivered")
                return r

            def consume() -> dict[str, Any]:
                r = scraper.window(lambda: _timed(lambda: runner.client(
                    "consume", {"bootstrap": b.bootstrap, "topic": "m1", "expected": acked["m1"],
                                "isolation": "read_uncommitted"}, b)))
                log(f"  M1 {mode} consume (C1): {r['records_per_s']:.0f} rec/s ({r['consumed']}/{r['expected']}), "
                    f"others {r.get('other_cpu_pct', 0):.0f}%"
                    + (f", {r['metrics_scrapes']} scrapes + {r['console_fetches']} console pages" if ports else ""))
                if not r["complete"]:
                    raise ClientError(f"consume read {r['consumed']} of {r['expected']} records")
                return r

            runner.guarded(name, rep, "M1", f"produce_{mode}", produce)
            if "m1" in acked:
                runner.guarded(name, rep, "M1", f"consume_{mode}", consume)
        if isinstance(scraper, Scraper):
            s = scraper.summary()
            log(f"  M1 scrapes: /metrics {s['metrics_ok']} ok ({s['metrics_bytes_avg'] or 0:.0f} B, p50 "
                f"{s['metrics_p50_ms'] or 0:.1f} ms, max {s['metrics_max_ms'] or 0:.1f} ms), console / {s['console_ok']} "
                f"ok (p50 {s['console_p50_ms'] or 0:.1f} ms), {s['failed']} failed")
            runner.add(name, rep, "M1", "scrapes", s)
    except Exception as exc:  # noqa: BLE001 - recorded, the run goes on
        log(f"M1 {mode} rep {rep} FAILED: {exc}")
        runner.add(name, rep, "M1", f"setup_{mode}", {"error": f"{type(exc).__name__}: {exc}"[:2000]})
    finally:
        b.stop()
        shutil.rmtree(b.workdir, ignore_errors=True)
        os.sync()  # the next start begins with nothing of this one's left to write back


def _ratios(runner: Any, rep: int) -> None:
    def get(point: str, key: str) -> float | None:
        s = next((s for s in reversed(runner.samples) if s["broker"] == "minikafka" and s["rep"] == rep
                  and s["scenario"] == "M1" and s["point"] == point and "error" not in s), None)
        return s.get(key) if s else None

    for kind in ("produce", "consume"):
        off, on = get(f"{kind}_off", "records_per_s"), get(f"{kind}_on", "records_per_s")
        if off and on:
            extra: dict[str, Any] = {}
            cpu_off, cpu_on = get(f"{kind}_off", "broker_cpu_s_per_gb"), get(f"{kind}_on", "broker_cpu_s_per_gb")
            if cpu_off and cpu_on:
                extra["broker_cpu_per_gb_ratio"] = cpu_on / cpu_off
            if kind == "produce":
                p_off, p_on = get("produce_off", "ack_p99_ms"), get("produce_on", "ack_p99_ms")
                if p_off and p_on:
                    extra["ack_p99_ratio"] = p_on / p_off
            runner.add("minikafka", rep, "M1", f"{kind}_cost", {"ratio": on / off, **extra})
            others = [get(f"{kind}_{m}", "other_cpu_pct") for m in MODES]
            if all(o is not None and o < QUIET_OTHER_CPU_PCT for o in others):
                runner.add("minikafka", rep, "M1", f"{kind}_cost_quiet", {"ratio": on / off, **extra})


def measure(runner: Any) -> None:
    reps = int(runner.p.get("m1_reps", runner.p["reps"]))
    for rep in range(reps):
        for mode in MODES:
            _one_mode(runner, rep, mode)
            runner.save()
        _ratios(runner, rep)
        runner.save()
