"""Smoke run of the benchmark harness (bench/harness, `make bench`) against minikafka only.

Tiny sizes, a few seconds, no thresholds: it checks that the harness runs every scenario end to end
and writes a report table with the expected rows and positive numbers. Skips without the `bench`
extra (matplotlib for the chart).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

pytest.importorskip("matplotlib", reason="needs the bench extra: pip install -e '.[bench]'")

REPO_ROOT = Path(__file__).resolve().parents[2]


PROFILES = {"smoke": "results", "scale-smoke": "scale"}


@pytest.fixture(scope="module")
def harness_runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, tuple[subprocess.Popen[str], Path]]]:
    """Both smoke runs, started at once: each is mostly waits (broker and JVM start-ups, client
    processes), so side by side they take ~40 s of the suite instead of ~70 s one after the other.
    Each test waits for its own."""
    runs = {}
    for profile, name in PROFILES.items():
        work = tmp_path_factory.mktemp(name)
        with open(work / "harness.log", "w") as log:  # a file, not a pipe nobody reads yet
            proc = subprocess.Popen(
                [sys.executable, "-m", "bench.harness", "--profile", profile, "--brokers", "minikafka",
                 "--out", str(work / name), "--workdir", str(work)],
                cwd=REPO_ROOT, stdout=log, stderr=subprocess.STDOUT)
        runs[profile] = (proc, work / name)
    yield runs
    for proc, _ in runs.values():
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def _harness(runs: dict[str, tuple[subprocess.Popen[str], Path]], profile: str) -> tuple[str, Path]:
    """The run's output and its output directory, once it ended well."""
    proc, out = runs[profile]
    proc.wait(timeout=400)
    output = (out.parent / "harness.log").read_text()
    assert proc.returncode == 0, output[-3000:]
    return output, out


def test_harness_smoke_run_writes_table(harness_runs) -> None:
    output, out = _harness(harness_runs, "smoke")
    report = (out / "report.md").read_text()
    assert (out / "chart.png").stat().st_size > 0
    doc = json.loads((out / "results.json").read_text())
    assert not [s for s in doc["samples"] if "error" in s], output[-3000:]

    rows = {}
    for line in report.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) >= 5 and re.fullmatch(r"[PCEGOTSM]\d", cells[0]):
            rows[cells[1]] = cells[3]  # metric -> minikafka cell
    expected = {
        "P2 produce 1 KiB acks=all, p1: throughput": "msg/s",
        "P3 idempotent, p1: throughput": "msg/s",
        "P4 transactional (commit every 100 rec / 100 ms): transactions": "txn/s",
        "C1 catch-up (P2 p1 data), read_uncommitted": "msg/s",
        "C1 catch-up, read_committed (LSO path)": "msg/s",
        "C2 read_committed, 10 % of transactions aborted": "msg/s",
        **({"P5 Java producer (ProducerPerformance), 1 KiB acks=all, p1: throughput": "msg/s"}
           if shutil.which("java") else {}),
        **({"C3 Java consumer (Kafka's ConsumerPerformance) read_committed over P4 data, fetch-only": "msg/s",
            "C4 Java consumer (ConsumerPerformance) across 10 partitions, fetch-only": "msg/s"}
           if shutil.which("java") else {}),
        "E1 500 msg/s: p99": "ms",
        "S1 produce over SASL_SSL (SCRAM-SHA-512, TLS)": "msg/s",
        "S1 catch-up consume over SASL_SSL": "msg/s",
        "S1 produce: SASL_SSL / PLAINTEXT throughput (the TLS cost)": "x",
        "O1 start-up, empty data dir (spawn -> ApiVersions + CreateTopics OK)": "s",
        "O2 idle RSS (0.5 s after ready)": "MB",
        "O2 peak RSS (VmHWM) over warm-up + P2..E1": "MB",
        "O3 recovery after kill -9, 0.002 GB in the active segment": "s",
        "G1 classic group, 3 members: two joins settle": "s",
        "M1 produce: ON / OFF throughput (the observability cost)": "x",
        "M1 consume: ON / OFF throughput": "x",
        "G1 KIP-848 group, 3 members: two joins settle": "s",
        **({"T2 Java producer, transactions v2 (KIP-890): transactions": "txn/s",
            "T2 Java producer, transactions v1: transactions": "txn/s"} if shutil.which("java") else {}),
    }
    for metric in expected:
        assert metric in rows, f"row {metric!r} missing from the table:\n{report[:4000]}"
        value = float(rows[metric].split()[0].replace(",", ""))
        assert value > 0, f"{metric}: {rows[metric]}"
    assert rows["P3 duplicates (must be 0)"].split()[0] == "0"
    assert rows["M1 scrapes and pages failed (must be 0)"].split()[0] == "0"
    assert rows["O3 acked ⊆ consumed, no duplicates, no gaps (runs passing)"] == "1/1"


def test_scale_smoke_run_writes_every_curve(harness_runs) -> None:
    """The scale profile (issue 17) at toy sizes: every curve measured at each point, a table row and
    a chart per curve."""
    _, out = _harness(harness_runs, "scale-smoke")
    doc = json.loads((out / "scale.json").read_text())
    assert not [s for s in doc["samples"] if "error" in s], [s for s in doc["samples"] if "error" in s][:3]
    from bench.harness.scale import CURVE_POINTS, CURVES, SMOKE

    report = (out / "scale.md").read_text()
    assert set(CURVE_POINTS) == set(CURVES)
    for curve in CURVES:
        points = sorted(s["point"] for s in doc["samples"] if s["curve"] == curve)
        want = sorted(SMOKE[CURVE_POINTS[curve]])
        assert points == (want[-1:] if curve.endswith("_retention") else want), (curve, points)
        assert all(s["value"] is not None and s["value"] >= 0 for s in doc["samples"] if s["curve"] == curve)
        assert f"## {curve}:" in report
        assert (out / f"{curve}.png").stat().st_size > 0


def test_floor_server_answers_the_connections_client(tmp_path: Path) -> None:
    """bench/harness/floor.py: the canned server answers the curve's own client, and the run
    reports both processes' CPU (the floor under any Python request path)."""
    from bench.harness.floor import measure

    (row,) = measure("floor", [2], 0.3, tmp_path)
    assert row["value"] > 0 and row["p99_ms"] > 0
    # CPU comes from /proc in clock ticks (10 ms): a short run on a busy machine may show none.
    assert {"broker_cpu_us_per_request", "broker_cpu_pct", "client_cpu_pct"} <= row.keys()


def test_floor_server_answers_each_request_with_its_correlation_id() -> None:
    """Pipelined requests, each answered in order under its own correlation id, in one frame:
    the curve's client does not look at the ids, so this checks the canned answers themselves."""
    import socket
    import struct

    from bench.harness.floor import _Floor
    from minikafka.protocol import codec

    from rawclient import produce_v9, valid_batch

    floor = _Floor()
    try:
        with socket.create_connection(("127.0.0.1", floor.port), timeout=10) as s:
            body = produce_v9("t", 0, bytes(valid_batch(1)), acks=1)
            s.sendall(b"".join(bytes(codec.encode_request(9, cid, "floor", body))
                               for cid in (7, 8, 9)))
            got = []
            with s.makefile("rb") as f:
                for _ in range(3):
                    (size,) = struct.unpack(">i", f.read(4))
                    got.append(struct.unpack_from(">i", f.read(size))[0])
        assert got == [7, 8, 9]
    finally:
        floor.stop()


def test_start_floor_server_takes_the_o1_client_through_create_topics(tmp_path: Path) -> None:
    """bench/harness/start_floor.py: the floor under a start-up answers the O1 launcher's own
    probes (an ApiVersions v0, then the admin client's ApiVersions, Metadata and a CreateTopics
    that must succeed), and minikafka is timed beside it. No thresholds: a benchmark, not a test
    of speed."""
    from bench.harness.start_floor import measure

    out = measure(1, 1, tmp_path)
    for kind in ("floor", "minikafka"):
        (api,), (ready,) = out[kind]["api"], out[kind]["ready"]
        assert 0 < api <= ready, out
