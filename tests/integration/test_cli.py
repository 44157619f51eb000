"""The command line as a new user meets it (issue 15, item 4): help, version, one-line start-up
errors, `inspect` that hides internal topics and survives a closed pipe."""

from __future__ import annotations

import json
import socket
import subprocess
import sys

import pytest
from confluent_kafka import Producer

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]


def _minikafka(*args: str, **kw) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "minikafka", *args], capture_output=True, text=True,
                          timeout=60, **kw)


def test_no_arguments_print_help_and_version_works():
    alone = _minikafka()
    assert alone.returncode == 0 and "usage: minikafka" in alone.stdout and "serve" in alone.stdout
    version = _minikafka("--version")
    assert version.returncode == 0 and version.stdout.startswith("minikafka ")
    helped = _minikafka("inspect", "--help")
    text = " ".join(helped.stdout.split())
    assert helped.returncode == 0 and "last stable offset" in text and "issue" not in text


def test_a_busy_port_is_one_line(tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        r = _minikafka("serve", "--port", str(port), "--data-dir", str(tmp_path / "data"))
    assert r.returncode == 1
    errors = [line for line in r.stderr.splitlines() if line.startswith("minikafka:")]
    assert errors == [f"minikafka: cannot start: 127.0.0.1:{port} is already in use "
                      "(another broker? choose another --port)"]
    assert "Traceback" not in r.stderr


def test_inspect_hides_internal_topics_and_survives_a_closed_pipe(broker_factory):
    broker = broker_factory()
    p = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": "cli"})
    p.init_transactions(30)
    p.begin_transaction()
    p.produce("user-topic", b"x", partition=0)
    p.commit_transaction(30)
    p.close()
    shown = json.loads(_minikafka("inspect", "--data-dir", str(broker.data_dir), "--json").stdout)
    assert {q["topic"] for q in shown["partitions"]} == {"user-topic"}
    everything = json.loads(_minikafka("inspect", "--data-dir", str(broker.data_dir), "--json", "--internal").stdout)
    assert {"user-topic", "__transaction_state"} <= {q["topic"] for q in everything["partitions"]}
    # `minikafka inspect ... | head -1`: the reader goes away after one line.
    proc = subprocess.Popen([sys.executable, "-m", "minikafka", "inspect", "--data-dir", str(broker.data_dir),
                             "--internal"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None
    proc.stdout.readline()
    proc.stdout.close()
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0 and b"Traceback" not in err and b"BrokenPipe" not in err
