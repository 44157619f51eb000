"""A minikafka broker on a background event-loop thread of the calling process, for tests.

Starting one costs no interpreter start and no imports after the first (the subprocess broker of
`minikafka.testing.BrokerProcess` pays both on every start), so a suite can give each test a fresh
broker. It serves real sockets on a loopback port like any other: clients cannot tell the difference.
What it cannot do is die: kill -9, SIGSTOP and a crash restart need the subprocess broker.

    with EmbeddedBroker(tmp_path / "data").start() as broker:
        Producer({"bootstrap.servers": broker.bootstrap})

The event loop is uvloop's, as in `minikafka serve`; the broker never touches signal handlers here
(they belong to the main thread), it stops when `term()` asks it to.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from minikafka.config import load


class EmbeddedBroker:
    external = False
    in_process = True

    def __init__(self, data_dir: Path, *, port: int = 0, overrides: Mapping[str, str] | None = None,
                 control: bool = False) -> None:
        """control=True: the broker serves its control endpoint too (`faults`)."""
        self.data_dir = Path(data_dir)
        self.control = control
        self.control_port = 0  # a free port at the first start, kept for restarts
        self.host = "127.0.0.1"
        self.port = port  # 0: a free port, kept for restarts once bound
        self.overrides = dict(overrides or {})
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._broker: Any = None
        self._failure: list[BaseException] = []  # what ended the broker's thread, if anything did

    @property
    def bootstrap(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def faults(self) -> Any:
        """The fault rules of the running broker (minikafka/control), through its control endpoint."""
        from minikafka.control.client import FaultsClient

        if not self.control:
            raise RuntimeError("this broker was started without its control endpoint (control=True)")
        return FaultsClient(self.host, self.control_port)

    @property
    def clock(self) -> Any:
        """The running broker's clock (virtual time: pause, advance), through its control endpoint."""
        from minikafka.control.client import ClockClient

        if not self.control:
            raise RuntimeError("this broker was started without its control endpoint (control=True)")
        return ClockClient(self.host, self.control_port)

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def start(self, timeout: float = 30.0) -> EmbeddedBroker:
        if self.running:
            raise RuntimeError("the broker is already running")
        ready = threading.Event()
        self._failure = []
        self._thread = threading.Thread(target=self._serve, args=(ready,), name="minikafka-broker", daemon=True)
        self._thread.start()
        if not ready.wait(timeout):
            raise TimeoutError(f"the embedded broker was not ready within {timeout} s")
        if self._failure:  # it never served: the thread is ending
            self._thread.join(timeout)
            self._thread = None
            raise self._failure[0]
        return self

    def _serve(self, ready: threading.Event) -> None:
        import uvloop

        loop = uvloop.new_event_loop()
        self._loop = loop
        try:
            loop.run_until_complete(self._main(ready))
        except BaseException as exc:  # noqa: BLE001 - start() or term() re-raises it in the owner's thread
            self._failure.append(exc)
        finally:
            ready.set()
            loop.close()
            self._loop = None

    async def _main(self, ready: threading.Event) -> None:
        from minikafka.broker.app import Broker

        config = load(None, [f"{k}={v}" for k, v in self.overrides.items()], host=self.host, port=self.port,
                      data_dir=self.data_dir)
        broker = Broker(config, control=(self.host, self.control_port) if self.control else None)
        try:
            await broker.start()
        except BaseException:
            await _quietly(broker.shutdown())  # a half-started broker: release what it took (the dir lock)
            raise
        self.port = broker.server.port
        if broker.control is not None:
            self.control_port = broker.control.port
        self._broker = broker
        ready.set()
        try:
            await broker.stop_requested()
        finally:
            self._broker = None
            await broker.shutdown()

    def term(self, timeout: float = 30.0) -> int:
        """Stop cleanly, as SIGTERM stops `minikafka serve` (in-flight requests finish, logs flush).
        Returns 0 as the process broker's exit code would be."""
        thread, loop, broker = self._thread, self._loop, self._broker
        if thread is None:
            return 0
        if loop is not None and broker is not None:
            loop.call_soon_threadsafe(broker.request_stop)
        thread.join(timeout)
        if thread.is_alive():
            raise TimeoutError(f"the embedded broker did not stop within {timeout} s")
        self._thread = None
        if self._failure:  # the broker's thread ended in an error (its shutdown failed, say): say so
            raise self._failure[0]
        return 0

    stop = term

    def restart(self, *, hard: bool = False, timeout: float = 30.0) -> EmbeddedBroker:
        if hard:
            raise NotImplementedError("a crash restart needs the subprocess broker (BrokerProcess)")
        self.term(timeout)
        return self.start(timeout)

    def __enter__(self) -> EmbeddedBroker:
        return self

    def __exit__(self, *exc: object) -> None:
        self.term()


async def _quietly(aw: Any) -> None:
    try:
        await aw
    except Exception:  # noqa: BLE001 - a half-started broker: release what can be released
        pass
