"""Shared by the application programs of the compatibility matrix (streams_eos.py, connect_eos.py,
mm2.py): where Kafka's application jars are, starting and stopping their JVM, a partition's
watermarks, and the one-line verdict of the client programs (clients/common.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from confluent_kafka import Consumer, TopicPartition

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "clients"))
from common import ScenarioFailed, check, verdict  # noqa: E402

__all__ = ["LIBS", "ScenarioFailed", "check", "java", "stop", "verdict", "watermarks"]

REPO = Path(__file__).resolve().parents[3]
LIBS = Path(os.environ.get("KAFKA_CACHE", REPO / ".cache" / "kafka")) / "4.3.1" / "apps"
LOG4J = REPO / "bench" / "kafka" / "tools-log4j2.properties"


def java(*args: str, log: Path | None = None) -> subprocess.Popen:
    """A JVM on the application jars (bench/kafka/fetch-jars.sh apps); its output to `log` or nowhere."""
    check(LIBS.is_dir(), f"Kafka's application jars are missing in {LIBS} (fetch-jars.sh apps)")
    out = open(log, "ab") if log is not None else subprocess.DEVNULL  # noqa: SIM115 - the child's
    return subprocess.Popen(["java", "-Xmx384M", f"-Dlog4j2.configurationFile={LOG4J}", "-cp", str(LIBS / "*"),
                             *args], stdout=out, stderr=subprocess.STDOUT)


def stop(proc: subprocess.Popen) -> None:
    """SIGTERM, then SIGKILL if it has not exited within 30 s."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()


def watermarks(bootstrap: str, topic: str, partition: int) -> tuple[int, int]:
    """(low, high) as the broker has them now; (0, 0) while the topic does not exist."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "compat-watermarks"})
    try:
        return c.get_watermark_offsets(TopicPartition(topic, partition), timeout=10, cached=False)
    except Exception:  # noqa: BLE001 - not created yet
        return 0, 0
    finally:
        c.close()
