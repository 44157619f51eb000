"""Run a real Apache Kafka 4.x broker and Kafka's DumpLogSegments from the test suite.

Plain helpers (no pytest fixtures in here); the recipe and the verified versions/output formats are
in ``bench/kafka/README.md``. Jars come from Maven Central through ``bench/kafka/fetch-jars.sh``
into ``${KAFKA_CACHE:-<repo>/.cache/kafka}``; the broker is ``bench/kafka/run-kafka.sh``.

    from tests.kafka_ref import ApacheKafka, ensure_kafka_jars, dump_log_segments

    ensure_kafka_jars()
    kafka = ApacheKafka().start(tmp_path / "kafka", extra_props={"auto.create.topics.enable": "true"})
    try:
        ...  # clients use kafka.bootstrap
    finally:
        kafka.stop()
    out = dump_log_segments([str(seg)], "--deep-iteration").stdout
"""

from __future__ import annotations

import atexit
import contextlib
import filecmp
import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from minikafka.testing import free_port

REPO_ROOT = Path(__file__).resolve().parents[1]
KAFKA_BENCH_DIR = REPO_ROOT / "bench" / "kafka"
RUN_KAFKA = KAFKA_BENCH_DIR / "run-kafka.sh"
FETCH_JARS = KAFKA_BENCH_DIR / "fetch-jars.sh"
DUMP_LOG = KAFKA_BENCH_DIR / "dump-log.sh"
RUN_TOOL = KAFKA_BENCH_DIR / "run-tool.sh"

READY_TIMEOUT_S = 90.0
POLL_INTERVAL_S = 0.1
PORTS_FILE = "kafka-ref-ports.json"


class KafkaRefError(RuntimeError):
    """Apache Kafka (jars, broker or tool) could not be made to work."""


# --------------------------------------------------------------------------------------------------
# jars


def kafka_version() -> str:
    """The Kafka version the scripts use: $KAFKA_VERSION or <kafka.version> of pom-broker.xml."""
    env = os.environ.get("KAFKA_VERSION")
    if env:
        return env
    text = (KAFKA_BENCH_DIR / "pom-broker.xml").read_text(encoding="utf-8")
    start = text.index("<kafka.version>") + len("<kafka.version>")
    return text[start : text.index("</kafka.version>", start)].strip()


def kafka_cache_dir() -> Path:
    return Path(os.environ.get("KAFKA_CACHE") or REPO_ROOT / ".cache" / "kafka")


def _part_complete(part: str) -> bool:
    stamp = kafka_cache_dir() / kafka_version() / part / ".complete"
    pom = KAFKA_BENCH_DIR / f"pom-{part}.xml"
    return stamp.is_file() and filecmp.cmp(stamp, pom, shallow=False)


def kafka_jars_available() -> bool:
    """True when Java is on PATH and the broker and tools jars are complete in the cache."""
    return shutil.which("java") is not None and all(_part_complete(p) for p in ("broker", "tools"))


def ensure_kafka_jars() -> None:
    """Resolve the jars from Maven Central (fast no-op when cached); raise KafkaRefError on failure."""
    if shutil.which("java") is None:
        raise KafkaRefError("Apache Kafka needs Java 17+, but `java` is not on PATH")
    if kafka_jars_available():
        return
    if shutil.which(os.environ.get("MVN", "mvn")) is None:
        raise KafkaRefError("Apache Kafka jars are not cached and Maven (`mvn`) is not on PATH")
    try:
        proc = subprocess.run(
            [str(FETCH_JARS), "all"], capture_output=True, text=True, timeout=900, check=False
        )
    except subprocess.TimeoutExpired as exc:
        raise KafkaRefError(f"{FETCH_JARS} timed out after {exc.timeout} s") from exc
    if proc.returncode != 0 or not kafka_jars_available():
        raise KafkaRefError(
            f"{FETCH_JARS} failed (exit {proc.returncode}) to resolve Apache Kafka "
            f"{kafka_version()} into {kafka_cache_dir()}:\n{proc.stdout}{proc.stderr}"
        )


def jars_or_skip(what: str) -> None:
    """For tests: skip (naming `what`) when Java is missing, or Maven is missing and the jars are
    not cached; otherwise make sure the jars are there. A Maven failure (not its absence) raises, so
    the test fails with Maven's log. The suite's order is random: whichever test runs first fetches."""
    import pytest

    if shutil.which("java") is None:
        pytest.skip(f"{what} needs Java 17+ (`java` not on PATH)")
    if shutil.which(os.environ.get("MVN", "mvn")) is None and not kafka_jars_available():
        pytest.skip(f"{what} needs Maven (`mvn`) to fetch the Kafka jars")
    ensure_kafka_jars()


# --------------------------------------------------------------------------------------------------
# broker


def free_ports(n: int = 2, exclude: set[int] = frozenset()) -> list[int]:
    """``n`` distinct free loopback ports, none in ``exclude``: choose ``port``/``controller_port``
    before ``start()``, e.g. to name them in ``extra_props`` (``advertised.listeners``)."""
    ports: list[int] = []
    while len(ports) < n:
        ports.append(free_port(set(exclude) | set(ports)))
    return ports


def _port_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def _tail(path: Path, lines: int = 40) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(missing)"


_running: set[ApacheKafka] = set()  # started and not yet reaped


@atexit.register
def _stop_leftovers() -> None:  # a broker must never outlive the test process
    for kafka in list(_running):
        try:
            kafka.stop(timeout=15)
        except Exception:  # noqa: BLE001 - best effort at interpreter exit
            pass


class ApacheKafka:
    """One Apache Kafka broker process (KRaft, broker+controller) on 127.0.0.1.

    ``start()`` runs ``bench/kafka/run-kafka.sh`` (whose pid becomes the JVM's) and returns when a
    protocol probe answers. Restarting the same data dir (after ``stop()`` or ``kill9()``) reuses
    the same ports, saved in ``<data_dir>/kafka-ref-ports.json``: a KRaft data dir formatted with
    ``--standalone`` stores its controller endpoint, so the controller port must not change.
    """

    def __init__(self, heap_opts: str | None = None, env: dict[str, str] | None = None):
        self.heap_opts = heap_opts  # None: $KAFKA_HEAP_OPTS or the script's default (-Xms1G -Xmx1G)
        self.env = dict(env or {})
        self.proc: subprocess.Popen[bytes] | None = None
        self.data_dir: Path | None = None
        self.port: int | None = None
        self.controller_port: int | None = None
        self.start_seconds: float | None = None  # start() call to a passing readiness probe
        self._out = None
        self._err = None

    # -- properties --------------------------------------------------------------------------------
    @property
    def bootstrap(self) -> str:
        if self.port is None:
            raise KafkaRefError("ApacheKafka was never started")
        return f"127.0.0.1:{self.port}"

    @property
    def pid(self) -> int:
        if self.proc is None:
            raise KafkaRefError("ApacheKafka was never started")
        return self.proc.pid

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    @property
    def log_dir(self) -> Path:
        """Kafka's ``log.dirs`` (partition directories, .kafka_cleanshutdown, meta.properties)."""
        assert self.data_dir is not None
        return self.data_dir / "kafka-logs"

    @property
    def server_log(self) -> Path:
        assert self.data_dir is not None
        return self.data_dir / "logs" / "server.log"

    # -- lifecycle ---------------------------------------------------------------------------------
    def start(
        self,
        data_dir: str | os.PathLike[str],
        port: int | None = None,
        extra_props: dict | None = None,
        *,
        controller_port: int | None = None,
        timeout: float = READY_TIMEOUT_S,
    ) -> ApacheKafka:
        if self.running:
            raise KafkaRefError(f"already running (pid {self.pid})")
        ensure_kafka_jars()
        data = Path(data_dir).resolve()
        data.mkdir(parents=True, exist_ok=True)
        self._pick_ports(data, port, controller_port)
        self.data_dir = data

        env = os.environ.copy()
        env.update(self.env)
        if self.heap_opts is not None:
            env["KAFKA_HEAP_OPTS"] = self.heap_opts
        if extra_props:
            # newline-separated: run-kafka.sh then keeps values with spaces intact
            env["KAFKA_EXTRA_PROPS"] = "".join(
                f"{k}={str(v).lower() if isinstance(v, bool) else v}\n" for k, v in extra_props.items()
            )
        else:
            env.pop("KAFKA_EXTRA_PROPS", None)

        self._out = open(data / "kafka.stdout.log", "ab")  # noqa: SIM115 - closed in _reap()
        self._err = open(data / "kafka.stderr.log", "ab")  # noqa: SIM115
        t0 = time.monotonic()
        self.proc = subprocess.Popen(
            [str(RUN_KAFKA), str(data), str(self.port), str(self.controller_port)],
            stdin=subprocess.DEVNULL,
            stdout=self._out,
            stderr=self._err,
            env=env,
        )
        _running.add(self)
        try:
            self._wait_ready(t0 + timeout)
        except BaseException:
            self.stop(timeout=10)
            raise
        self.start_seconds = time.monotonic() - t0
        return self

    def _pick_ports(self, data: Path, port: int | None, controller_port: int | None) -> None:
        saved: dict[str, int] = {}
        ports_file = data / PORTS_FILE
        if ports_file.is_file():
            saved = json.loads(ports_file.read_text())
        if controller_port is None:
            controller_port = saved.get("controller_port")
        if port is None:
            port = saved.get("port")
            if port is not None and (port == controller_port or not _port_free(port)):
                port = None
        if controller_port is None:
            controller_port = free_port({port} if port else set())
        elif saved.get("controller_port") == controller_port and not _port_free(controller_port):
            raise KafkaRefError(
                f"controller port {controller_port} of {data} is in use; "
                "a formatted KRaft data dir must be restarted on the same controller port"
            )
        if port is None:
            port = free_port({controller_port})
        self.port, self.controller_port = port, controller_port
        ports_file.write_text(json.dumps({"port": port, "controller_port": controller_port}))

    def _wait_ready(self, deadline: float) -> None:
        from confluent_kafka.admin import AdminClient  # imported lazily: only the broker needs it

        last_error = "no answer"
        while True:
            if self.proc is not None and self.proc.poll() is not None:
                raise KafkaRefError(self._failure(f"run-kafka.sh exited with {self.proc.returncode}"))
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise KafkaRefError(self._failure(f"not ready within the deadline ({last_error})"))
            try:
                # cheap TCP check first, so librdkafka does not log a stream of refused connects
                socket.create_connection(("127.0.0.1", self.port), timeout=min(0.5, remaining)).close()
                admin = AdminClient({"bootstrap.servers": self.bootstrap, "log_level": 3})
                md = admin.list_topics(timeout=max(0.1, min(2.0, deadline - time.monotonic())))
                if len(md.brokers) == 1:
                    return
                last_error = f"metadata lists {len(md.brokers)} brokers"
            except Exception as exc:  # noqa: BLE001 - not up yet
                last_error = f"{type(exc).__name__}: {exc}"
            time.sleep(POLL_INTERVAL_S)

    def _failure(self, what: str) -> str:
        assert self.data_dir is not None
        return (
            f"Apache Kafka at {self.data_dir} (port {self.port}, controller port "
            f"{self.controller_port}): {what}\n"
            f"--- stderr (tail) ---\n{_tail(self.data_dir / 'kafka.stderr.log')}\n"
            f"--- logs/server.log (tail) ---\n{_tail(self.server_log, 20)}"
        )

    def stop(self, timeout: float = 60.0) -> int | None:
        """Controlled shutdown: SIGTERM, wait up to ``timeout`` s, then SIGKILL. Returns the exit
        status (Kafka exits with 143 after SIGTERM); None if it was not running."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=30)
        return self._reap()

    def kill9(self) -> int | None:
        """Crash the broker (SIGKILL, no shutdown hooks); the next start() runs log recovery."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=30)
        return self._reap()

    def _reap(self) -> int | None:
        rc = self.proc.returncode if self.proc is not None else None
        for f in (self._out, self._err):
            if f is not None:
                f.close()
        self._out = self._err = None
        _running.discard(self)
        return rc

    def __enter__(self) -> ApacheKafka:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def __repr__(self) -> str:
        state = f"pid {self.proc.pid}" if self.running else "stopped"
        return f"<ApacheKafka {self.port and self.bootstrap} {state} data_dir={self.data_dir}>"


# --------------------------------------------------------------------------------------------------
# tools


def dump_log_segments(
    files: list[str], *flags: str, timeout: float = 300.0
) -> subprocess.CompletedProcess[str]:
    """Run Kafka's DumpLogSegments (``bench/kafka/dump-log.sh --files a,b <flags>``).

    Returns the CompletedProcess (text stdout/stderr) without checking the exit status: the tool
    reports most problems as text (see bench/kafka/README.md for what to look for).
    """
    if not files:
        raise ValueError("dump_log_segments needs at least one file")
    ensure_kafka_jars()
    return subprocess.run(
        [str(DUMP_LOG), "--files", ",".join(str(f) for f in files), *flags],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def kafka_tool(main_class: str, *args: str, timeout: float = 300.0) -> subprocess.CompletedProcess[str]:
    """Run any class of the kafka-tools classpath, e.g.
    ``kafka_tool("org.apache.kafka.tools.TransactionsCommand", "--bootstrap-server", b, "list")``."""
    ensure_kafka_jars()
    return subprocess.run(
        [str(RUN_TOOL), main_class, *args], capture_output=True, text=True, timeout=timeout, check=False
    )


def kafka_configs(bootstrap: str, *args: str) -> subprocess.CompletedProcess[str]:
    """Kafka's kafka-configs.sh (kafka.admin.ConfigCommand, in the broker jars) against `bootstrap`;
    skips the test when Java (or Maven for a first fetch) is missing."""
    jars_or_skip("kafka-configs")
    classpath = str(kafka_cache_dir() / kafka_version() / "broker" / "*")
    return subprocess.run(["java", "-Xmx256M", "-cp", classpath, "kafka.admin.ConfigCommand",
                           "--bootstrap-server", bootstrap, *args],
                          capture_output=True, text=True, timeout=120, check=False)


@contextlib.contextmanager
def scratch_broker(kafka: bool) -> Iterator[Any]:
    """A throw-away broker in a temporary dir, Apache Kafka or minikafka (for the bench/kafka
    recorders)."""
    data = Path(tempfile.mkdtemp())
    if kafka:
        broker = ApacheKafka().start(data)
        try:
            yield broker
        finally:
            broker.stop()
        return
    from minikafka.testing import BrokerProcess
    mk = BrokerProcess(data).start()
    try:
        yield mk
    finally:
        mk.term()
