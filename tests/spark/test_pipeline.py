"""The order pipeline end to end: `python -m minikafka.pipeline run` against the test's broker.

A transactional producer writes 2,000 order events (every 5th transaction aborted), the streaming
job reads them read_committed in two runs on one checkpoint (stopped and resumed in between),
writes per-customer totals to a topic and to Parquet, and the verifier checks both against the
totals of the committed events. The command runs in its own process, as a user would run it.
"""

from __future__ import annotations

import json
import os
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
