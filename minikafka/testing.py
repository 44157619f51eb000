"""pytest plugin (entry point `pytest11`): a `kafka_broker` fixture running minikafka.

Installing minikafka gives any test suite a fresh broker per test:

    def test_roundtrip(kafka_broker):
        producer = confluent_kafka.Producer({"bootstrap.servers": kafka_broker.bootstrap})

The broker runs as a subprocess (`python -m minikafka serve`) on a free loopback port with its
data in the test's tmp_path, so tests can also kill -9 it, stop it cleanly, pause it and restart
it on the same data and port. Readiness is a protocol check (an ApiVersions round trip), never a
log line.

Tests that never kill it can have it in-process instead (`minikafka.embedded.EmbeddedBroker`: the
same broker on a background event-loop thread, ready in milliseconds): mark a test
`@pytest.mark.minikafka_in_process`, or run a whole suite so with `pytest --minikafka-in-process`.
An in-process broker stops cleanly and restarts, and skips a test that asks it to kill -9 or pause.
"""

from __future__ import annotations

import http.client
import os
import random
import signal
import socket
import struct
import subprocess
import sys
import time
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from minikafka.control.client import ClockClient, FaultsClient

# Settings that keep tests fast without changing semantics (as Kafka's own integration tests).
TEST_OVERRIDES: dict[str, str] = {
    "group.initial.rebalance.delay.ms": "0",
    "offsets.topic.num.partitions": "1",
    "transaction.state.log.num.partitions": "1",
    "share.coordinator.state.topic.num.partitions": "1",
    "transaction.abort.timed.out.transaction.cleanup.interval.ms": "200",
}


# Ports this process has handed out lately: two calls in a row never give the same one.
_recent_ports: list[int] = []
_port_random = random.Random(os.urandom(16))  # not the global one, which tests seed


def _ephemeral_range() -> tuple[int, int]:
    try:
        low, high = Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()
        return int(low), int(high)
    except (OSError, ValueError):
        return 32768, 60999  # Linux's default


def free_port(exclude: Iterable[int] = ()) -> int:
    """A loopback port that nothing is bound to, none in `exclude`.

    Chosen below the kernel's ephemeral range where there is room: a port from bind(0) lies in that
    range, where any outgoing connection on the machine may take it before the broker binds it (a CI
    run lost a broker's control port so). Outside it, only another explicit bind can."""
    excluded = set(exclude) | set(_recent_ports)
    low, _ = _ephemeral_range()
    tries = (_port_random.randrange(10_000, low) for _ in range(100)) if low > 12_000 else ()
    port = next((p for p in tries if p not in excluded and _bindable(p)), None)
    while port is None or port in excluded:  # no room below the range: bind(0) chooses
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = int(s.getsockname()[1])
    _recent_ports.append(port)
    del _recent_ports[:-64]
    return port


def _bindable(port: int) -> bool:
    # Without SO_REUSEADDR: a port that a closed connection still holds (TIME_WAIT) is skipped too.
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def api_versions_probe(host: str, port: int, timeout: float = 1.0) -> bool:
    """True when the broker answers an ApiVersions v0 request."""
    request = struct.pack(">hhih", 18, 0, 1, 5) + b"probe"
    try:
        with socket.create_connection((host, port), timeout=timeout) as s:
            s.sendall(struct.pack(">i", len(request)) + request)
            head = _recv_exactly(s, 4)
            (size,) = struct.unpack(">i", head)
            body = _recv_exactly(s, size)
            return struct.unpack_from(">i", body, 0)[0] == 1
    except OSError:
        return False


def _answers_http(host: str, port: int) -> bool:
    """True when an HTTP server answers on the port (the control, metrics and console endpoints
    do). A connection alone is not enough: another process may be listening there, the port a
    broker failed to bind (it then exits)."""
    conn = http.client.HTTPConnection(host, port, timeout=0.5)
    try:
        conn.request("GET", "/")
        conn.getresponse().read()
        return True
    except (OSError, http.client.HTTPException):
        return False
    finally:
        conn.close()


def _recv_exactly(s: socket.socket, n: int) -> bytes:
    buf = b""
    while len(buf) < n:
        chunk = s.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("closed")
        buf += chunk
    return buf


class PortInUse(RuntimeError):
    """The broker exited at start because one of its ports was taken."""


class BrokerProcess:
    """A minikafka broker in a child process, for tests."""

    external = False

    def __init__(self, data_dir: Path, *, port: int | None = None,
                 overrides: Mapping[str, str] | None = None, env: Mapping[str, str] | None = None,
                 control: bool = False, invariants: bool = False, observe: bool = False,
                 console_actions: bool = False) -> None:
        """control=True: the broker serves its control endpoint too (`faults`, `clock`);
        invariants=True: it runs the invariant monitor (`faults.invariants()`); observe=True: it
        serves /metrics (`metrics_url`) and the web console (`console_url`), with the console's
        actions when console_actions=True."""
        self.invariants = invariants
        self.console_actions = console_actions
        self.data_dir = Path(data_dir)
        self._given_port = port
        self._observe, self._control = observe, control
        self._choose_ports()
        self.host = "127.0.0.1"
        self.overrides = {**TEST_OVERRIDES, **(overrides or {})}
        self.env = dict(env or {})
        self.proc: subprocess.Popen[bytes] | None = None
        self.log_path = self.data_dir.parent / f"{self.data_dir.name}.broker.log"
        self.startup_seconds = 0.0
        self._log_start = 0  # where this start's lines begin in log_path

    @property
    def bootstrap(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def command(self) -> list[str]:
        cmd = [sys.executable, "-m", "minikafka", "serve", "--host", self.host, "--port", str(self.port),
               "--data-dir", str(self.data_dir)]
        for k, v in self.overrides.items():
            cmd += ["--override", f"{k}={v}"]
        if self.control_port is not None:
            cmd += ["--control-port", str(self.control_port)]
        if self.invariants:
            cmd.append("--check-invariants")
        if self.metrics_port is not None:
            cmd += ["--metrics-port", str(self.metrics_port)]
        if self.console_port is not None:
            cmd += ["--console-port", str(self.console_port)]
            if self.console_actions:
                cmd.append("--console-actions")
        return cmd

    @property
    def metrics_url(self) -> str:
        if self.metrics_port is None:
            raise RuntimeError("this broker was started without its metrics endpoint (observe=True)")
        return f"http://{self.host}:{self.metrics_port}/metrics"

    @property
    def console_url(self) -> str:
        if self.console_port is None:
            raise RuntimeError("this broker was started without its console (observe=True)")
        return f"http://{self.host}:{self.console_port}"

    @property
    def faults(self) -> FaultsClient:
        """The fault rules of the running broker (minikafka/control), through its control endpoint."""
        if self.control_port is None:
            raise RuntimeError("this broker was started without its control endpoint (control=True)")
        return FaultsClient(self.host, self.control_port)

    @property
    def clock(self) -> ClockClient:
        """The running broker's clock (virtual time: pause, advance), through its control endpoint."""
        if self.control_port is None:
            raise RuntimeError("this broker was started without its control endpoint (control=True)")
        return ClockClient(self.host, self.control_port)

    def _choose_ports(self) -> None:
        self.port = self._given_port or free_port()
        self.control_port = free_port({self.port}) if self._control else None
        self.metrics_port = free_port({self.port}) if self._observe else None
        self.console_port = free_port({self.port}) if self._observe else None

    def start(self, timeout: float = 30.0) -> BrokerProcess:
        # A port chosen here can still be taken by another process before the broker binds it;
        # the first start then tries fresh ones. A restart keeps its ports: clients know them.
        attempts = 3 if self.proc is None else 1
        for attempt in range(1, attempts + 1):
            try:
                return self._start_once(timeout)
            except PortInUse:
                if attempt == attempts:
                    raise
                self._choose_ports()
        raise AssertionError("unreachable")

    def _start_once(self, timeout: float) -> BrokerProcess:
        env = {**os.environ, **self.env}
        log = open(self.log_path, "ab")  # noqa: SIM115 - owned by the child
        self._log_start = log.tell()
        t0 = time.monotonic()
        self.proc = subprocess.Popen(self.command(), stdout=log, stderr=subprocess.STDOUT, env=env)
        log.close()
        self.wait_ready(timeout)
        self.startup_seconds = time.monotonic() - t0
        return self

    def wait_ready(self, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc is not None and self.proc.poll() is not None:
                failure = PortInUse if self._said_port_in_use() else RuntimeError
                raise failure(f"broker exited with {self.proc.returncode}; log:\n{self.log_tail()}")
            # the control endpoint starts right after the Kafka listener
            if api_versions_probe(self.host, self.port, timeout=0.5) and all(
                    port is None or _answers_http(self.host, port)
                    for port in (self.control_port, self.metrics_port, self.console_port)):
                return
            time.sleep(0.02)
        raise TimeoutError(f"broker not ready after {timeout}s; log:\n{self.log_tail()}")

    def _said_port_in_use(self) -> bool:
        """The broker's one-line error for a busy port (__main__, app), in what this start wrote."""
        try:
            with open(self.log_path, "rb") as f:
                f.seek(self._log_start)
                return b"already in use" in f.read()
        except OSError:
            return False

    def log_tail(self, n: int = 4000) -> str:
        try:
            return self.log_path.read_bytes()[-n:].decode(errors="replace")
        except OSError:
            return ""

    def term(self, timeout: float = 30.0) -> int:
        """SIGTERM (clean shutdown) and wait; returns the exit code."""
        assert self.proc is not None
        self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(timeout)

    def kill9(self) -> None:
        assert self.proc is not None
        self.proc.kill()
        self.proc.wait(10)

    def pause(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGSTOP)

    def resume(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGCONT)

    def restart(self, *, hard: bool = False, timeout: float = 30.0) -> BrokerProcess:
        if self.proc is not None and self.proc.poll() is None:
            if hard:
                self.kill9()
            else:
                self.term()
        return self.start(timeout)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            try:
                self.proc.send_signal(signal.SIGCONT)
                self.term(timeout=15)
            except subprocess.TimeoutExpired:
                self.kill9()

    def rss_kb(self) -> int:
        with open(f"/proc/{self.pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        return 0

    def open_fds(self) -> int:
        """How many file descriptors the broker process holds (sockets, segment files, ...)."""
        return len(os.listdir(f"/proc/{self.pid}/fd"))

    def minor_faults(self) -> int:
        """Page faults the broker process took without a disk read (minflt of /proc/<pid>/stat,
        the 10th field; the fields are counted after the command's closing parenthesis)."""
        with open(f"/proc/{self.pid}/stat") as f:
            return int(f.read().rsplit(")", 1)[1].split()[7])


class ExternalBroker:
    """A broker someone else runs (KAFKA_BOOTSTRAP): the same tests, no restarts or files."""

    external = True

    def __init__(self, bootstrap: str) -> None:
        self.bootstrap = bootstrap
        host, _, port = bootstrap.rpartition(":")
        self.host, self.port = host, int(port)

    def __getattr__(self, name: str) -> Any:
        if name in ("kill9", "term", "restart", "pause", "resume", "data_dir", "pid", "rss_kb", "faults",
                    "clock", "control_port"):
            pytest.skip(f"{name} needs a broker started by the test (KAFKA_BOOTSTRAP is set)")
        raise AttributeError(name)


def assert_exactly_once(bootstrap: str, input_topic: str, output_topic: str, *, key_by: Any = "key") -> Any:
    """Fail the test unless output_topic holds each delivered record of input_topic exactly once,
    nothing aborted is visible to read_committed and per-key order is kept (minikafka.eos_check;
    key_by: "key", "value", "key+value" or a function of the record). Returns the report."""
    from minikafka.eos_check import check_eos

    report = check_eos(bootstrap, input_topic, output_topic, key_by=key_by)
    if not report.ok:
        raise AssertionError(report.text())
    return report


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--minikafka-in-process", action="store_true", default=False,
                     help="kafka_broker runs minikafka on a thread of the test process, not as a subprocess")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "minikafka_in_process: this test's kafka_broker runs in the test process")


class InProcessBroker:
    """The fixture's face of an EmbeddedBroker: what only a process can do skips the test."""

    def __init__(self, data_dir: Path) -> None:
        from minikafka.embedded import EmbeddedBroker

        self._broker = EmbeddedBroker(data_dir, overrides=TEST_OVERRIDES, control=True)

    def __getattr__(self, name: str) -> Any:
        if name in ("kill9", "pause", "resume", "pid", "rss_kb", "log_tail"):
            pytest.skip(f"{name} needs a broker process (this test's broker runs in-process)")
        return getattr(self._broker, name)

    def restart(self, *, hard: bool = False, timeout: float = 30.0) -> Any:
        if hard:
            pytest.skip("a crash restart needs a broker process (this test's broker runs in-process)")
        return self._broker.restart(timeout=timeout)


@pytest.fixture
def kafka_broker(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    """A fresh minikafka broker for the test, or the broker named by KAFKA_BOOTSTRAP."""
    external = os.environ.get("KAFKA_BOOTSTRAP")
    if external:
        yield ExternalBroker(external)
        return
    if request.config.getoption("--minikafka-in-process", default=False) or \
            request.node.get_closest_marker("minikafka_in_process"):
        in_process = InProcessBroker(tmp_path / "kafka-data")
        in_process.start()
        try:
            yield in_process
        finally:
            in_process.term()
        return
    broker = BrokerProcess(tmp_path / "kafka-data", control=True).start()
    try:
        yield broker
    finally:
        broker.stop()


@pytest.fixture
def broker_factory(tmp_path: Path) -> Iterator[Any]:
    """Start brokers with extra settings: broker_factory(overrides={...}, env={...})."""
    started: list[BrokerProcess] = []

    def make(overrides: Mapping[str, str] | None = None, env: Mapping[str, str] | None = None,
             name: str = "kafka-data", control: bool = True, invariants: bool = False,
             observe: bool = False, console_actions: bool = False) -> BrokerProcess:
        if os.environ.get("KAFKA_BOOTSTRAP"):
            pytest.skip("needs a minikafka broker started by the test")
        b = BrokerProcess(tmp_path / f"{name}-{len(started)}", overrides=overrides, env=env,
                          control=control, invariants=invariants, observe=observe,
                          console_actions=console_actions).start()
        started.append(b)
        return b

    yield make
    for b in started:
        b.stop()
