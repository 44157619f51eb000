"""The command line as a new user meets it (issue 15, item 4): help, version, one-line start-up
errors, `inspect` that hides internal topics and survives a closed pipe."""

from __future__ import annotations

import json
import socket
import subprocess
import sys

import pytest
from confluent_kafka import Producer

from minikafka.testing import BrokerProcess, free_port

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


def _serve_beside_a_busy_port(tmp_path, *args: str) -> tuple[int, list[str]]:
    """`minikafka serve` with a port that another socket listens on: `args` name it as "{busy}".
    Returns that port and the one error line, after checking the start failed without a traceback."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        busy = s.getsockname()[1]
        r = _minikafka("serve", *(a.format(busy=busy) for a in args), "--data-dir", str(tmp_path / "data"))
    assert r.returncode == 1 and "Traceback" not in r.stderr
    return busy, [line for line in r.stderr.splitlines() if line.startswith("minikafka:")]


def test_a_busy_port_is_one_line(tmp_path):
    port, errors = _serve_beside_a_busy_port(tmp_path, "--port", "{busy}")
    assert errors == [f"minikafka: cannot start: 127.0.0.1:{port} is already in use "
                      "(another broker? choose another --port)"]


@pytest.mark.parametrize("args, names", [
    (("--control-port", "{busy}"), "the control endpoint (--control-port)"),
    (("--override", "listeners=PLAINTEXT://127.0.0.1:{port},OTHER://127.0.0.1:{busy}",
      "--override", "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,OTHER:PLAINTEXT"), "a listener of `listeners`"),
], ids=["control-port", "second-listener"])
def test_a_busy_port_of_another_endpoint_is_named_with_its_address(tmp_path, args, names):
    port = free_port()
    busy, errors = _serve_beside_a_busy_port(tmp_path, "--port", str(port),
                                             *(a.replace("{port}", str(port)) for a in args))
    assert len(errors) == 1 and errors[0].startswith(f"minikafka: cannot start {names}: ")
    assert f"{busy}" in errors[0] and "already in use" in errors[0]


def test_the_test_broker_moves_off_ports_taken_before_it_binds(tmp_path):
    """What failed a CI run: a port the fixture chose was taken (by anyone) before the broker bound
    it. Its first start tries fresh ports; the ports it ends on are the ones it serves."""
    broker = BrokerProcess(tmp_path / "data", control=True)
    chosen = broker.control_port
    assert chosen is not None
    with socket.socket() as s:
        s.bind(("127.0.0.1", chosen))
        s.listen()
        broker.start()
        try:
            assert broker.control_port != chosen
            assert broker.faults.list() == []  # its control endpoint answers where it says it is
            broker.restart()
            assert broker.control_port != chosen
        finally:
            broker.stop()


def test_free_ports_are_outside_the_ephemeral_range_and_distinct():
    low, _ = (int(v) for v in open("/proc/sys/net/ipv4/ip_local_port_range").read().split())
    ports = [free_port() for _ in range(20)]
    assert len(set(ports)) == 20
    if low > 12_000:
        assert all(10_000 <= p < low for p in ports)
    # With that room all excluded, bind(0) chooses (in the ephemeral range), still honouring both.
    fallback = free_port(exclude=range(10_000, low))
    assert fallback >= low and fallback not in ports


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
