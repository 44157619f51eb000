"""A loopback TCP fault proxy between Kafka clients and the broker (test-plan.md 0.3).

The proxy parses only what it must: the 4-byte size prefix of every frame, and in requests the
start of the header (api_key int16, api_version int16, correlation_id int32). Per connection it
remembers correlation id -> api_key, so a response (whose header is only the correlation id) can
be matched to the request it answers. Everything else is forwarded byte for byte.

Faults are rules, each counting the requests it matches across all connections (so a rule keeps
firing as clients reconnect) and each bounded by `limit`:

    drop_response(api_key, every=n)      the response to every n-th matching request is discarded
    close_after_request(every=n)         the connection is closed right after forwarding the request
    delay_response(api_key, seconds)     responses are held for a while
    stall(api_key) / release()           matching requests are held until release()
    close_connections()                  every proxied connection is closed at once

The broker must advertise the proxy's address (advertised.listeners), otherwise clients follow
Metadata to the broker's own port and bypass the proxy:

    port = free_port()
    broker = broker_factory(overrides={"advertised.listeners": f"PLAINTEXT://127.0.0.1:{port}"})
    with FaultProxy(broker.host, broker.port, listen_port=port) as proxy:
        proxy.drop_response(api_key=0, every=7, limit=20)
        ...

The proxy runs its own asyncio loop in a daemon thread; the test thread only adds rules and reads
counters.
"""

from __future__ import annotations

import asyncio
import collections
import struct
import threading
from dataclasses import dataclass, field
from typing import Any

_SIZE = struct.Struct(">i")
_REQ_HEAD = struct.Struct(">hhi")
_CORR = struct.Struct(">i")
MAX_FRAME = 200 * 1024 * 1024

DROP_RESPONSE = "drop_response"
CLOSE_AFTER_REQUEST = "close_after_request"
DELAY_RESPONSE = "delay_response"
STALL = "stall"


@dataclass
class Rule:
    action: str
    api_key: int | None = None   # None matches every request
    every: int = 1               # fire on every n-th matching request
    limit: int | None = None     # fire at most this many times
    seconds: float = 0.0         # for delay_response
    matched: int = 0
    fired: int = 0

    def hit(self, api_key: int) -> bool:
        """Count a request; True when the rule fires on it."""
        if self.api_key is not None and api_key != self.api_key:
            return False
        self.matched += 1
        if self.limit is not None and self.fired >= self.limit:
            return False
        if self.matched % self.every != 0:
            return False
        self.fired += 1
        return True


@dataclass
class Stats:
    connections: int = 0
    requests: collections.Counter[int] = field(default_factory=collections.Counter)
    responses: collections.Counter[int] = field(default_factory=collections.Counter)
    dropped: collections.Counter[int] = field(default_factory=collections.Counter)
    closed: int = 0


class FaultProxy:
    def __init__(self, upstream_host: str, upstream_port: int, *, listen_port: int = 0,
                 listen_host: str = "127.0.0.1") -> None:
        self.upstream = (upstream_host, upstream_port)
        self.listen_host = listen_host
        self.port = listen_port
        self.rules: list[Rule] = []
        self.stats = Stats()
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._server: asyncio.base_events.Server | None = None
        self._stall_released: asyncio.Event | None = None
        self._conns: set[asyncio.Task[None]] = set()
        self._live: set[_Conn] = set()

    @property
    def bootstrap(self) -> str:
        return f"{self.listen_host}:{self.port}"

    # -- rules (called from the test thread) ----------------------------------------------------

    def add_rule(self, rule: Rule) -> Rule:
        with self._lock:
            self.rules.append(rule)
        return rule

    def drop_response(self, api_key: int | None, *, every: int = 1, limit: int | None = None) -> Rule:
        return self.add_rule(Rule(DROP_RESPONSE, api_key, every, limit))

    def close_after_request(self, api_key: int | None = None, *, every: int = 1,
                            limit: int | None = None) -> Rule:
        return self.add_rule(Rule(CLOSE_AFTER_REQUEST, api_key, every, limit))

    def delay_response(self, api_key: int | None, seconds: float, *, every: int = 1,
                       limit: int | None = None) -> Rule:
        return self.add_rule(Rule(DELAY_RESPONSE, api_key, every, limit, seconds=seconds))

    def stall(self, api_key: int | None, *, limit: int | None = None) -> Rule:
        """Hold matching requests (they are not forwarded) until release()."""
        assert self._loop is not None and self._stall_released is not None

        async def arm() -> None:
            self._stall_released.clear()  # type: ignore[union-attr]

        asyncio.run_coroutine_threadsafe(arm(), self._loop).result(5)
        return self.add_rule(Rule(STALL, api_key, 1, limit))

    def release(self) -> None:
        """Let stalled requests through and stop stalling."""
        with self._lock:
            self.rules = [r for r in self.rules if r.action != STALL]
        assert self._loop is not None
        self._loop.call_soon_threadsafe(self._stall_released.set)  # type: ignore[union-attr]

    def close_connections(self) -> int:
        """Close every proxied connection now (requests in flight fail at the client); returns how many."""
        assert self._loop is not None

        async def close_all() -> int:
            live = list(self._live)
            for conn in live:
                conn.closed.set()
            return len(live)

        return asyncio.run_coroutine_threadsafe(close_all(), self._loop).result(5)

    def clear_rules(self) -> None:
        with self._lock:
            self.rules = []

    def _decide(self, api_key: int) -> dict[str, Rule]:
        """The rules that fire on one request, by action."""
        fired: dict[str, Rule] = {}
        with self._lock:
            for r in self.rules:
                if r.hit(api_key):
                    fired.setdefault(r.action, r)
        return fired

    # -- lifecycle ------------------------------------------------------------------------------

    def start(self, timeout: float = 10.0) -> FaultProxy:
        ready = threading.Event()
        error: list[BaseException] = []

        def run() -> None:
            loop = asyncio.new_event_loop()
            self._loop = loop
            try:
                loop.run_until_complete(self._serve_start())
            except BaseException as exc:  # noqa: BLE001 - reported to the test thread
                error.append(exc)
                ready.set()
                return
            ready.set()
            loop.run_forever()
            loop.run_until_complete(self._serve_stop())
            loop.close()

        self._thread = threading.Thread(target=run, name="faultproxy", daemon=True)
        self._thread.start()
        if not ready.wait(timeout):
            raise TimeoutError("fault proxy did not start")
        if error:
            raise error[0]
        return self

    async def _serve_start(self) -> None:
        self._stall_released = asyncio.Event()
        self._stall_released.set()
        self._server = await asyncio.start_server(self._accept, self.listen_host, self.port)
        self.port = self._server.sockets[0].getsockname()[1]

    async def _serve_stop(self) -> None:
        if self._server is not None:
            self._server.close()
        for t in list(self._conns):
            t.cancel()
        if self._conns:
            await asyncio.gather(*self._conns, return_exceptions=True)

    def stop(self, timeout: float = 10.0) -> None:
        if self._loop is not None and self._thread is not None and self._thread.is_alive():
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout)

    def __enter__(self) -> FaultProxy:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- one proxied connection -----------------------------------------------------------------

    async def _accept(self, c_reader: asyncio.StreamReader, c_writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._conns.add(task)
        self.stats.connections += 1
        try:
            try:
                b_reader, b_writer = await asyncio.open_connection(*self.upstream)
            except OSError:
                c_writer.close()
                return
            conn = _Conn(self, c_reader, c_writer, b_reader, b_writer)
            self._live.add(conn)
            try:
                await conn.run()
            finally:
                self._live.discard(conn)
        except asyncio.CancelledError:
            pass
        finally:
            self._conns.discard(task)


async def _read_frame(reader: asyncio.StreamReader) -> bytes | None:
    """One size-prefixed frame (size prefix included), or None at EOF."""
    try:
        head = await reader.readexactly(4)
        (size,) = _SIZE.unpack(head)
        if size < 0 or size > MAX_FRAME:
            return None
        return head + await reader.readexactly(size)
    except (asyncio.IncompleteReadError, ConnectionError):
        return None


class _Conn:
    def __init__(self, proxy: FaultProxy, c_reader: asyncio.StreamReader, c_writer: asyncio.StreamWriter,
                 b_reader: asyncio.StreamReader, b_writer: asyncio.StreamWriter) -> None:
        self.proxy = proxy
        self.c_reader, self.c_writer = c_reader, c_writer
        self.b_reader, self.b_writer = b_reader, b_writer
        self.api_key_of: dict[int, int] = {}   # correlation id -> api key
        self.drop: set[int] = set()            # correlation ids whose response is discarded
        self.delay: dict[int, float] = {}      # correlation id -> seconds to hold its response
        self.closed = asyncio.Event()

    async def run(self) -> None:
        tasks = [asyncio.create_task(self._requests()), asyncio.create_task(self._responses())]
        try:
            await self.closed.wait()
        finally:
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            for w in (self.c_writer, self.b_writer):
                w.close()
            for w in (self.c_writer, self.b_writer):
                try:
                    await w.wait_closed()
                except (ConnectionError, OSError):
                    pass

    async def _requests(self) -> None:
        try:
            while True:
                frame = await _read_frame(self.c_reader)
                if frame is None or len(frame) < 4 + _REQ_HEAD.size:
                    return
                api_key, _api_version, corr = _REQ_HEAD.unpack_from(frame, 4)
                self.proxy.stats.requests[api_key] += 1
                actions = self.proxy._decide(api_key)
                if STALL in actions:
                    assert self.proxy._stall_released is not None
                    await self.proxy._stall_released.wait()
                self.api_key_of[corr] = api_key
                if DROP_RESPONSE in actions:
                    self.drop.add(corr)
                if DELAY_RESPONSE in actions:
                    self.delay[corr] = actions[DELAY_RESPONSE].seconds
                self.b_writer.write(frame)
                await self.b_writer.drain()
                if CLOSE_AFTER_REQUEST in actions:
                    self.proxy.stats.closed += 1
                    return
        except (ConnectionError, OSError):
            return
        finally:
            self.closed.set()

    async def _responses(self) -> None:
        try:
            while True:
                frame = await _read_frame(self.b_reader)
                if frame is None or len(frame) < 8:
                    return
                (corr,) = _CORR.unpack_from(frame, 4)
                api_key = self.api_key_of.pop(corr, -1)
                if corr in self.drop:
                    self.drop.discard(corr)
                    self.proxy.stats.dropped[api_key] += 1
                    continue
                delay = self.delay.pop(corr, 0.0)
                if delay > 0:
                    await asyncio.sleep(delay)
                self.proxy.stats.responses[api_key] += 1
                self.c_writer.write(frame)
                await self.c_writer.drain()
        except (ConnectionError, OSError):
            return
        finally:
            self.closed.set()


def describe(stats: Stats) -> dict[str, Any]:
    """A plain dict of the counters, for assertion messages and reports."""
    return {"connections": stats.connections, "closed": stats.closed,
            "requests": dict(stats.requests), "responses": dict(stats.responses),
            "dropped": dict(stats.dropped)}
