"""Faults of the machine (issue 14): one broker per data dir, a bad meta.properties.

Each test starts real brokers as child processes on free loopback ports and drives them with
confluent-kafka; what is asserted is behaviour (who serves, what is read back, how a refused start
ends), not log lines.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from minikafka.testing import BrokerProcess

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]


def _produce(bootstrap: str, topic: str, n: int, prefix: str) -> list[int]:
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True})
    offsets: list[int] = []
    for i in range(n):
        p.produce(topic, f"{prefix}-{i}".encode(), partition=0,
                  on_delivery=lambda err, m: offsets.append(m.offset()) if err is None else None)
    assert p.flush(30) == 0
    return offsets


def _read_all(bootstrap: str, topic: str, expect: int) -> list[bytes]:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"g-{uuid.uuid4().hex[:6]}",
                  "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    try:
        c.assign([TopicPartition(topic, 0, 0)])
        out: list[bytes] = []
        deadline = time.monotonic() + 30
        while len(out) < expect and time.monotonic() < deadline:
            for m in c.consume(500, timeout=0.5):
                if m.error() is None:
                    out.append(m.value())
        return out
    finally:
        c.close()


def _serve(data_dir, port: int) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "minikafka", "serve", "--host", "127.0.0.1", "--port", str(port),
                           "--data-dir", str(data_dir)], capture_output=True, text=True, timeout=30)


def test_second_broker_on_the_same_data_dir_is_refused(tmp_path):
    first = BrokerProcess(tmp_path / "data").start()
    try:
        acked = _produce(first.bootstrap, "locked", 100, "first")
        assert acked == list(range(100))
        second_port = BrokerProcess(tmp_path / "unused").port
        refused = _serve(first.data_dir, second_port)  # a broker waiting for the lock would time out
        assert refused.returncode == 1
        lines = refused.stderr.strip().splitlines()
        assert len(lines) == 1, refused.stderr  # one line, no traceback
        assert str(first.data_dir) in lines[0] and f"pid {first.pid}" in lines[0]
        # The refused broker wrote nothing: the first one still owns every offset.
        more = _produce(first.bootstrap, "locked", 100, "again")
        assert more == list(range(100, 200))
        values = _read_all(first.bootstrap, "locked", 200)
        assert values == [f"first-{i}".encode() for i in range(100)] + [f"again-{i}".encode() for i in range(100)]
        # A reader of the directory is not a broker: inspect works beside the live one.
        report = subprocess.run([sys.executable, "-m", "minikafka", "inspect", "--data-dir", str(first.data_dir),
                                 "--json"], capture_output=True, text=True, timeout=60)
        assert report.returncode == 0, report.stderr
        json.loads(report.stdout)
        # kill -9 leaves the .lock file, but not the lock: the next broker starts.
        first.kill9()
        assert (first.data_dir / ".lock").exists()
        first.start()
        assert len(_read_all(first.bootstrap, "locked", 200)) == 200
    finally:
        first.stop()


@pytest.mark.parametrize("content", [b"\xff\xfe\x00garbage\x80\x81", b"just some words\n",
                                     b"version=1\ncluster.id=abc\nnode.id=one\n"])
def test_bad_meta_properties_is_one_line_naming_the_file(tmp_path, content):
    broker = BrokerProcess(tmp_path / "data").start()
    _produce(broker.bootstrap, "meta", 3, "m")
    broker.term()
    meta = broker.data_dir / "meta.properties"
    meta.write_bytes(content)
    refused = _serve(broker.data_dir, broker.port)
    assert refused.returncode == 1
    lines = refused.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in refused.stderr, refused.stderr
    assert str(meta) in lines[0] and "delete it" in lines[0]
    # Doing what the line says works: the broker starts and the data is still there.
    os.unlink(meta)
    broker.start()
    try:
        assert _read_all(broker.bootstrap, "meta", 3) == [b"m-0", b"m-1", b"m-2"]
    finally:
        broker.stop()
