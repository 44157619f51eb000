"""The order pipeline end to end: `python -m minikafka.pipeline run` against the test's broker.

A transactional producer writes 2,000 order events (every 5th transaction aborted), the streaming
job reads them read_committed in two runs on one checkpoint (stopped and resumed in between),
writes per-customer totals to a topic and to Parquet, and the verifier checks both against the
totals of the committed events. The command runs in its own process, as a user would run it.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytestmark = [pytest.mark.spark, pytest.mark.integration, pytest.mark.timeout(600)]


def test_pipeline_end_to_end(kafka_broker: Any, spark_jars: list[Path], tmp_path: Path) -> None:
    env = {**os.environ, "SPARK_JARS_DIR": str(spark_jars[0].parent)}
    cmd = [sys.executable, "-m", "minikafka.pipeline", "run", "--bootstrap-servers", kafka_broker.bootstrap,
           "--master", "local[2]", "--events", "2000", "--txn-size", "20", "--abort-every", "5",
           "--work-dir", str(tmp_path / "pipeline"), "--json"]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=540)
    report = "\n".join(line for line in proc.stdout.splitlines() if line.startswith(("pipeline:", "verify:", " ")))
    assert proc.returncode == 0, f"pipeline failed ({proc.returncode}):\n{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}"
    numbers = json.loads(proc.stdout.strip().splitlines()[-1])
    print(report)
    assert numbers["ok"] is True
    assert numbers["events"] == 2000
    assert numbers["aborted_transactions"] == 20 and numbers["aborted_events"] == 400
    assert numbers["committed_events"] == 1600
    assert numbers["customers"] == 50
    assert numbers["results_parquet_rows"] >= numbers["customers"]
    assert numbers["results_topic_records"] >= numbers["customers"]
    assert numbers["phases"] == 2  # the job was stopped and resumed from its checkpoint


@pytest.mark.soak  # three more pipeline runs: `make soak`
@pytest.mark.parametrize("scenario, params", [
    ("coordinator_loading", {"count": 3}),
    ("not_coordinator", {"count": 3}),
    ("slow_list_offsets", {"delay_ms": 1500, "count": 6}),
], ids=["coordinator_loading", "not_coordinator", "slow_list_offsets"])
def test_pipeline_under_a_fault_scenario(kafka_broker: Any, spark_jars: list[Path], tmp_path: Path,
                                         scenario: str, params: dict[str, Any]) -> None:
    """Issue 20, item 4: the same run with one of minikafka's fault scenarios striking the order
    producer (the transaction coordinator's errors) or the streaming job's offset queries (late
    ListOffsets answers); the verifier must still count every committed event once and no
    aborted one, and the scenario must have struck."""
    rules = kafka_broker.faults.scenario(scenario, **params)
    env = {**os.environ, "SPARK_JARS_DIR": str(spark_jars[0].parent)}
    cmd = [sys.executable, "-m", "minikafka.pipeline", "run", "--bootstrap-servers", kafka_broker.bootstrap,
           "--master", "local[2]", "--events", "1000", "--txn-size", "20", "--abort-every", "5",
           "--topic", "orders-faults", "--work-dir", str(tmp_path / "pipeline"), "--json"]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=540)
    assert proc.returncode == 0, f"pipeline failed ({proc.returncode}):\n{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}"
    numbers = json.loads(proc.stdout.strip().splitlines()[-1])
    assert numbers["ok"] is True and numbers["committed_events"] == 800
    fired = {r["id"]: r["fired"] for r in kafka_broker.faults.list()}
    assert sum(fired[r["id"]] for r in rules) >= 1, f"{scenario} never struck"


def test_pipeline_with_a_dead_address_is_one_line_quickly(tmp_path: Path) -> None:
    import time

    from minikafka.testing import free_port

    port = free_port()  # nothing listens there
    t0 = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "minikafka", "pipeline", "run", "--bootstrap-servers",
                           f"127.0.0.1:{port}", "--work-dir", str(tmp_path / "p")],
                          capture_output=True, text=True, timeout=60)
    assert time.monotonic() - t0 < 30  # its 10 s wait for a broker and a start, not the 60 s timeout
    assert proc.returncode == 1
    assert proc.stderr.splitlines()[0].startswith(f"minikafka pipeline: no Kafka broker at 127.0.0.1:{port}")
    assert len(proc.stderr.splitlines()) == 1 and proc.stdout == ""  # no traceback, no client log flood


def test_pipeline_by_itself_starts_an_embedded_broker(spark_jars: list[Path], tmp_path: Path) -> None:
    from minikafka.healthcheck import check

    if check("127.0.0.1", 9092, timeout=1.0)[0]:
        pytest.skip("a broker answers at 127.0.0.1:9092: `run` would use it instead of an embedded one")
    env = {**os.environ, "SPARK_JARS_DIR": str(spark_jars[0].parent)}
    env.pop("KAFKA_BOOTSTRAP", None)
    proc = subprocess.run([sys.executable, "-m", "minikafka", "pipeline", "run", "--master", "local[2]",
                           "--events", "200", "--work-dir", str(tmp_path / "p"), "--json"],
                          capture_output=True, text=True, env=env, timeout=540)
    assert proc.returncode == 0, f"{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("pipeline: nothing answers at 127.0.0.1:9092: started an embedded minikafka at")
    assert any(line.startswith("job: micro-batch") for line in lines)  # progress of the long steps
    numbers = json.loads(lines[-1])
    assert numbers["ok"] is True and numbers["committed_events"] == 160
    # The embedded broker is gone and so are its temporary files.
    port = int(re.search(r"embedded minikafka at 127\.0\.0\.1:(\d+)", lines[0]).group(1))
    assert not check("127.0.0.1", port, timeout=1.0)[0]
