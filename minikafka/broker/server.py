"""The listeners: accept connections (over TLS on SSL and SASL_SSL listeners), give each its
security session, sweep idle ones, shut down gracefully."""

from __future__ import annotations

import asyncio
import collections
import functools
import ipaddress
import socket
from collections.abc import Callable, Sequence
from typing import Any

import structlog

from minikafka.broker import send_thread
from minikafka.broker.connection import Connection, ConnectionProtocol
from minikafka.broker.dispatch import HandlerRegistry
from minikafka.broker.fault_door import FaultDoor
from minikafka.broker.request_memory import RequestMemoryPool
from minikafka.broker.throttling import Throttler
from minikafka.broker.usual_produce import UsualProduce
from minikafka.observe.meters import Meters
from minikafka.security.principal import NoMatchingRule
from minikafka.security.settings import ListenerSecurity

log = structlog.get_logger("minikafka.broker")
STREAM_LIMIT = 2 ** 16  # the StreamReader buffer asyncio.start_server gives (asyncio.streams._DEFAULT_LIMIT)


class KafkaServer:
    def __init__(self, registry: HandlerRegistry, *, listeners: Sequence[ListenerSecurity], max_frame_size: int,
                 idle_ms: int, now_ms: Callable[[], int], monotonic_ms: Callable[[], int],
                 memory: RequestMemoryPool | None = None, max_connections: int = 2**31 - 1,
                 max_connections_per_ip: int = 2**31 - 1, throttler: Throttler | None = None,
                 faults: FaultDoor | None = None, meters: Meters | None = None,
                 usual_produce: UsualProduce | None = None) -> None:
        self.registry = registry
        self.usual_produce = usual_produce
        self.meters = meters
        self.faults = faults
        self.throttler = throttler
        self.memory = memory
        self.max_connections = max_connections
        self.max_connections_per_ip = max_connections_per_ip
        self._per_ip: collections.Counter[str] = collections.Counter()
        self.rejected = 0  # connections closed at accept because of a limit, since start
        self._rejecting: str | None = None  # the limit being hit now (one warning per episode)
        self.listeners = tuple(listeners)  # once started: with the ports they were bound to
        self.host = listeners[0].listener.host
        self.port = listeners[0].listener.port
        self.max_frame_size = max_frame_size
        self.idle_ms = idle_ms
        self._now_ms = now_ms
        self._monotonic_ms = monotonic_ms
        self.connections: dict[Connection, asyncio.Task[None]] = {}
        # Told the id of every connection that closed (share sessions end with theirs).
        self.closed_listeners: list[Callable[[int], None]] = []
        self._servers: list[asyncio.base_events.Server] = []
        self._sweeper: asyncio.Task[None] | None = None
        self._sender: send_thread.SendThread | None = None  # answers to plaintext connections

    async def start(self) -> None:
        bound = []
        for index, sec in enumerate(self.listeners):
            lst = sec.listener
            sock = bound_literal_address(lst.host, lst.port)
            where: dict[str, Any] = ({"sock": sock} if sock is not None
                                     else {"host": lst.host, "port": lst.port, "reuse_address": True})
            # A failed TLS handshake (a plaintext client, garbage) closes that socket only;
            # asyncio reports it at debug level.
            # asyncio.start_server's own set-up, with the protocol that gives connections a fast lane.
            server = await asyncio.get_running_loop().create_server(
                functools.partial(self._protocol, index), **where, backlog=512,
                ssl=sec.ssl_context, ssl_handshake_timeout=10.0 if sec.ssl_context else None)
            self._servers.append(server)
            bound.append(sec.bound(server.sockets[0].getsockname()[1]))
            log.info("listening", listener=lst.name, security_protocol=lst.security_protocol, host=lst.host,
                     port=bound[-1].listener.port)
        self.listeners = tuple(bound)
        self.port = bound[0].listener.port
        # Once every listener is bound (a busy port leaves no thread behind). A connection accepted
        # before this line keeps its StreamWriter, which sends the same bytes.
        if send_thread.available():
            self._sender = send_thread.SendThread(asyncio.get_running_loop())
        if self.idle_ms >= 0:
            self._sweeper = asyncio.create_task(self._sweep_idle())

    def _protocol(self, index: int) -> ConnectionProtocol:
        loop = asyncio.get_running_loop()
        return ConnectionProtocol(asyncio.StreamReader(limit=STREAM_LIMIT, loop=loop),
                                  functools.partial(self._accept, index), loop=loop)

    async def _accept(self, index: int, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        sec = self.listeners[index]
        peer = writer.get_extra_info("peername")
        ip = peer[0] if isinstance(peer, tuple) else str(peer)
        limit = self._limit_hit(ip)
        if limit is not None:
            self._reject(ip, limit)
            writer.close()
            return
        if self.throttler is not None:
            wait_ms = self.throttler.quotas.connection_throttle_ms(ip, self._now_ms())
            if wait_ms > 0:
                # connection_creation_rate (KIP-612): Kafka holds the refused connection open for
                # the throttle time and then closes it, so the client backs off.
                self.rejected += 1
                await asyncio.sleep(wait_ms / 1000)
                writer.close()
                return
        if self._rejecting is not None:
            log.info("connections_accepted_again", rejected=self.rejected)
            self._rejecting = None
        certificate = None
        if sec.ssl_context is not None:
            ssl_object = writer.get_extra_info("ssl_object")
            certificate = ssl_object.getpeercert(binary_form=True) if ssl_object is not None else None
        try:
            session = sec.new_session(certificate)
        except NoMatchingRule as exc:  # ssl.principal.mapping.rules name no principal for it
            log.warning("tls_principal_unmapped", listener=sec.listener.name, peer=f"{ip}", reason=str(exc))
            writer.close()
            return
        transport = writer.transport
        protocol = transport.get_protocol()
        if self._sender is not None:
            writer = self._sender.outlet(writer)  # type: ignore[assignment]  # a StreamWriter's stand-in
        conn = Connection(reader, writer, self.registry, max_frame_size=self.max_frame_size,
                          now_ms=self._now_ms, monotonic_ms=self._monotonic_ms, memory=self.memory,
                          throttler=self.throttler, faults=self.faults, session=session, meters=self.meters,
                          usual_produce=self.usual_produce)
        if isinstance(protocol, ConnectionProtocol):
            protocol.connection = conn
            conn.transport = transport
        task = asyncio.current_task()
        assert task is not None
        self.connections[conn] = task
        self._per_ip[ip] += 1
        try:
            await conn.run()
        finally:
            if isinstance(protocol, ConnectionProtocol):
                protocol.connection = None  # a closed connection is offered no more bytes
            self.connections.pop(conn, None)
            for listener in self.closed_listeners:
                listener(conn.conn_id)
            self._per_ip[ip] -= 1
            if self._per_ip[ip] <= 0:
                del self._per_ip[ip]

    def _limit_hit(self, ip: str) -> str | None:
        if len(self.connections) >= self.max_connections:
            return "max.connections"
        if self._per_ip[ip] >= self.max_connections_per_ip:
            return "max.connections.per.ip"
        return None

    def _reject(self, ip: str, limit: str) -> None:
        # As Kafka: a connection over a limit is accepted and closed at once. One warning per
        # episode (until a connection is accepted again), not one per attempt.
        self.rejected += 1
        if self._rejecting != limit:
            log.warning("connection_rejected", peer_ip=ip, limit=limit, connections=len(self.connections),
                        max_connections=self.max_connections, max_connections_per_ip=self.max_connections_per_ip)
            self._rejecting = limit

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
        for server in self._servers:
            server.close()
        for conn in list(self.connections):
            conn.stop_reading()
        tasks = list(self.connections.values())
        if tasks:
            done, pending = await asyncio.wait(tasks, timeout=grace_s)
            for t in pending:
                t.cancel()
        for server in self._servers:
            await server.wait_closed()
        if self._sender is not None:
            await self._sender.close(grace_s)


def bound_literal_address(host: str, port: int) -> socket.socket | None:
    """A socket bound as asyncio's create_server binds one (SO_REUSEADDR; IPV6_V6ONLY for IPv6),
    when `host` is an IP address; None for a name (or a scoped IPv6 address), which create_server
    resolves.

    Why: create_server resolves every host, an address too, with getaddrinfo, which first encodes
    it with the idna codec. Importing that codec (stringprep, unicodedata) was ~3 ms of the
    broker's start, for an address that needs no resolving. A failed bind raises the OSError
    create_server would, with the address in its text."""
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.scope_id:
        return None  # fe80::1%eth0: getaddrinfo gives the scope id a bare bind would lose (EINVAL)
    family, where = ((socket.AF_INET6, (host, port, 0, 0)) if address.version == 6  # as getaddrinfo gives it
                     else (socket.AF_INET, (host, port)))
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if family == socket.AF_INET6:
            sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
        sock.bind(where)
    except OSError as exc:
        sock.close()
        raise OSError(exc.errno, f"error while attempting to bind on address {where!r}: "
                                 f"{(exc.strerror or '').lower()}") from None
    return sock
