"""An embedded broker for `minikafka pipeline run` when no broker is running: minikafka itself, in
a child process on a free loopback port with its data in a temporary directory, stopped (SIGTERM)
and removed when the pipeline ends. The pipeline then needs nothing but `pip install '.[spark]'`."""

from __future__ import annotations

import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import TracebackType

from minikafka.healthcheck import check


class EmbeddedBroker:
    def __init__(self, start_timeout_s: float = 30.0) -> None:
        self.start_timeout_s = start_timeout_s
        self.dir: Path | None = None
        self.proc: subprocess.Popen[bytes] | None = None
        self.address = ""

    def __enter__(self) -> EmbeddedBroker:
        self.dir = Path(tempfile.mkdtemp(prefix="minikafka-pipeline-"))
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        self.address = f"127.0.0.1:{port}"
        log = open(self.dir / "broker.log", "wb")  # noqa: SIM115 - owned by the child
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "minikafka", "serve", "--host", "127.0.0.1", "--port", str(port),
             "--data-dir", str(self.dir / "data"), "--override", "group.initial.rebalance.delay.ms=0"],
            stdout=log, stderr=subprocess.STDOUT)
        log.close()
        deadline = time.monotonic() + self.start_timeout_s
        while not check("127.0.0.1", port, timeout=0.5)[0]:
            if self.proc.poll() is not None or time.monotonic() > deadline:
                tail = (self.dir / "broker.log").read_text(errors="replace")[-2000:]
                self.__exit__(None, None, None)
                raise RuntimeError(f"the embedded broker did not start:\n{tail}")
            time.sleep(0.05)
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        if self.dir is not None:
            shutil.rmtree(self.dir, ignore_errors=True)
