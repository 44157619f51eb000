"""The TCP listener: accept connections, sweep idle ones, shut down gracefully."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import structlog

from minikafka.broker.connection import Connection
from minikafka.broker.dispatch import HandlerRegistry

log = structlog.get_logger("minikafka.broker")


class KafkaServer:
    def __init__(self, registry: HandlerRegistry, *, host: str, port: int, max_frame_size: int,
                 idle_ms: int, now_ms: Callable[[], int], monotonic_ms: Callable[[], int]) -> None:
        self.registry = registry
        self.host = host
        self.port = port
        self.max_frame_size = max_frame_size
        self.idle_ms = idle_ms
        self._now_ms = now_ms
        self._monotonic_ms = monotonic_ms
        self.connections: dict[Connection, asyncio.Task[None]] = {}
        self._server: asyncio.base_events.Server | None = None
        self._sweeper: asyncio.Task[None] | None = None

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._accept, self.host, self.port,
                                                  reuse_address=True, backlog=512)
        sock = self._server.sockets[0]
        self.port = sock.getsockname()[1]
        if self.idle_ms >= 0:
            self._sweeper = asyncio.create_task(self._sweep_idle())
        log.info("listening", host=self.host, port=self.port)

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        conn = Connection(reader, writer, self.registry, max_frame_size=self.max_frame_size,
                          now_ms=self._now_ms, monotonic_ms=self._monotonic_ms)
        task = asyncio.current_task()
        assert task is not None
        self.connections[conn] = task
        try:
            await conn.run()
        finally:
            self.connections.pop(conn, None)

    async def _sweep_idle(self) -> None:
        interval = max(0.05, min(self.idle_ms / 4000, 10.0))
        while True:
            await asyncio.sleep(interval)
            now = self._monotonic_ms()
            for conn in list(self.connections):
                if not conn.busy and now - conn.last_active_ms > self.idle_ms:
                    log.info("idle_connection_closed", conn_id=conn.conn_id, peer=conn.peer)
                    conn.close()

    async def stop(self, grace_s: float = 5.0) -> None:
        """Stop accepting, let requests in hand finish, close every connection."""
        if self._sweeper is not None:
            self._sweeper.cancel()
        if self._server is not None:
            self._server.close()
        for conn in list(self.connections):
            conn.stop_reading()
        tasks = list(self.connections.values())
        if tasks:
            done, pending = await asyncio.wait(tasks, timeout=grace_s)
            for t in pending:
                t.cancel()
        if self._server is not None:
            await self._server.wait_closed()
