"""Application row of the compatibility matrix: a Kafka Connect 4.3.1 distributed worker
(ConnectDistributed, from Maven Central) with exactly-once source support (KIP-618) runs the file
source connector; the worker is killed with -9 while it copies and started again. Holds when a
read_committed reader of the topic sees every line of the file exactly once, in order.

    python connect_eos.py <bootstrap> <prefix>      exits 0, or prints one line and exits 1
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from app_support import LIBS, ScenarioFailed, check, java, stop, verdict, watermarks
from confluent_kafka import Consumer
from confluent_kafka.admin import AdminClient, NewTopic

LINES = 3000


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rest(port: int, method: str, path: str, body: dict | None = None) -> dict:
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", method=method,
                                 data=json.dumps(body).encode() if body is not None else None,
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=10) as resp:
        return json.loads(resp.read() or b"{}")


def worker_properties(work: Path, bootstrap: str, prefix: str, port: int, *extra: str) -> Path:
    """A distributed worker's properties: its config/offsets/status topics named after `prefix`,
    string converters, the REST API on 127.0.0.1:<port>, offsets flushed every 500 ms."""
    props = work / "worker.properties"
    props.write_text("\n".join([
        f"bootstrap.servers={bootstrap}", f"group.id={prefix}-connect",
        f"config.storage.topic={prefix}-configs", f"offset.storage.topic={prefix}-offsets",
        f"status.storage.topic={prefix}-status", "config.storage.replication.factor=1",
        "offset.storage.replication.factor=1", "status.storage.replication.factor=1",
        "key.converter=org.apache.kafka.connect.storage.StringConverter",
        "value.converter=org.apache.kafka.connect.storage.StringConverter",
        f"listeners=http://127.0.0.1:{port}", "offset.flush.interval.ms=500",
        "scheduled.rebalance.max.delay.ms=1000", *extra, ""]))
    return props


def wait_rest(port: int, app: subprocess.Popen, deadline_s: float) -> None:
    end = time.monotonic() + deadline_s
    while True:
        check(app.poll() is None, f"the worker exited ({app.returncode})")
        try:
            rest(port, "GET", "/connectors")
            return
        except OSError:
            check(time.monotonic() < end, "the worker's REST API never came up")
            time.sleep(0.5)


def main(bootstrap: str, prefix: str) -> None:
    check((LIBS / "connect-runtime-4.3.1.jar").exists(), f"Kafka Connect jars missing in {LIBS}")
    topic = f"{prefix}-lines"
    with tempfile.TemporaryDirectory(prefix="connect-") as tmp:
        work = Path(tmp)
        source = work / "input.txt"
        source.write_text("".join(f"line-{i}\n" for i in range(LINES // 2)))
        # The topic exists before the connector starts: Kafka's brokers in this matrix do not
        # auto-create topics (Connect's own topics it creates itself).
        admin = AdminClient({"bootstrap.servers": bootstrap})
        for f in admin.create_topics([NewTopic(topic, 1, 1)]).values():
            f.result(30)
        port = free_port()
        props = worker_properties(work, bootstrap, prefix, port, "exactly.once.source.support=enabled")
        log = work / "worker.log"
        worker = java("org.apache.kafka.connect.cli.ConnectDistributed", str(props), log=log)
        try:
            wait_rest(port, worker, 120)
            rest(port, "PUT", f"/connectors/{prefix}-file/config", {
                "connector.class": "org.apache.kafka.connect.file.FileStreamSourceConnector",
                # (No small batch.size: FileStreamSourceTask keeps lines read past a batch in its
                # buffer until more of the file arrives, so the last ones would wait forever.)
                "tasks.max": "1", "file": str(source), "topic": topic,
                "exactly.once.support": "required", "transaction.boundary": "poll"})
            end = time.monotonic() + 120
            while watermarks(bootstrap, topic, 0)[1] < 200:
                check(time.monotonic() < end and worker.poll() is None, "the connector copied nothing")
                time.sleep(0.2)
            worker.send_signal(signal.SIGKILL)  # in the middle of copying
            worker.wait(30)
            with source.open("a") as f:
                f.write("".join(f"line-{i}\n" for i in range(LINES // 2, LINES)))
            worker = java("org.apache.kafka.connect.cli.ConnectDistributed", str(props), log=log)
            wait_rest(port, worker, 120)
            c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"{prefix}-check",
                          "auto.offset.reset": "earliest", "isolation.level": "read_committed"})
            c.subscribe([topic])
            seen: list[str] = []
            end = time.monotonic() + 150
            try:
                while len(seen) < LINES and time.monotonic() < end:
                    m = c.poll(0.5)
                    if m is not None and not m.error():
                        seen.append(m.value().decode())
                m = c.poll(2.0)  # a line too many would come now
                if m is not None and not m.error():
                    seen.append(m.value().decode())
            finally:
                c.close()
            want = [f"line-{i}" for i in range(LINES)]
            if seen != want:
                dup = len(seen) - len(set(seen))
                missing = [w for w in want if w not in set(seen)]
                raise ScenarioFailed(f"read {len(seen)} lines ({dup} duplicates, {len(missing)} missing from "
                                     f"{missing[:1]}), expected line-0..line-{LINES - 1} once each")
        except ScenarioFailed:
            if os.environ.get("CONNECT_LOG_TO"):  # the worker's log, to see why
                Path(os.environ["CONNECT_LOG_TO"]).write_bytes(log.read_bytes())
            raise
        finally:
            stop(worker)


if __name__ == "__main__":
    verdict(main, *sys.argv[1:3])
