"""The send thread: answers to plaintext connections leave the broker from a thread of their own.

Why: the event loop is one Python thread, and with many connections each sending small requests it
spent ~29 % of its time in the socket send (on loopback the sender's system call runs the
receiver's TCP path and wakes the client). Kafka's network threads send beside its request
handlers; `_send.SendThread` (C, outside the GIL) does the same here. The loop hands each answer
over (one copy, or none for a large part that cannot change, bytes or a view of bytes, which the
queue holds until it is sent; one lock) and goes on with the next request.

The door into the broker is `Outlet`, which stands in for a connection's asyncio StreamWriter
(write, drain, close, is_closing, get_extra_info): the connection does not know which of the two
sends its answers. A connection whose transport has no plain socket (TLS) keeps its StreamWriter;
so does every connection when the compiled module is missing, or `MINIKAFKA_SEND_THREAD=0`
(the loop's own transport is the reference; both give the same bytes in the same order).

Guarantees, per connection: answers are sent in the order written, completely, unless the socket
fails (then the rest is dropped, as a transport drops its buffer); `drain()` waits while more than
`HIGH_WATER` bytes are queued; `close()` stops reading, sends what was written, then closes (a
bounded wait).
"""

from __future__ import annotations

import asyncio
import os
from typing import Any

import structlog

try:
    from minikafka.broker._send import SendThread as _CSendThread
except ImportError:  # no compiler at install time: the loop's transport sends
    _CSendThread = None

log = structlog.get_logger("minikafka.broker")

HIGH_WATER = 256 * 1024  # bytes queued for one connection before drain() waits (asyncio's is 64 KiB)
CLOSE_FLUSH_S = 5.0  # how long a closing connection's last answers may take to leave


def available() -> bool:
    return _CSendThread is not None and os.environ.get("MINIKAFKA_SEND_THREAD", "1") != "0"


class SendThread:
    """The loop's side of the compiled send thread: hands out outlets, wakes drain() waiters."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        assert _CSendThread is not None
        self._loop = loop
        self._c = _CSendThread()
        self._waiters: dict[int, list[asyncio.Future[None]]] = {}
        self._closers: set[asyncio.Task[None]] = set()  # closing connections still sending
        self._closed = False
        loop.add_reader(self._c.wakeup_fd, self._on_drained)

    def outlet(self, writer: asyncio.StreamWriter) -> Outlet | asyncio.StreamWriter:
        """An Outlet for a plain TCP connection; the writer itself for anything else (TLS)."""
        if self._closed or writer.get_extra_info("sslcontext") is not None:
            return writer
        sock = writer.get_extra_info("socket")
        if sock is None:
            return writer
        try:
            key = self._c.attach(sock.fileno())
        except OSError as exc:  # no descriptor left for the duplicate: the transport sends
            log.warning("send_thread_refused_connection", reason=str(exc))
            return writer
        return Outlet(self, writer, key)

    def stats(self) -> dict[str, int]:
        return self._c.stats()

    async def wait_drained(self, key: int) -> None:
        if self._c.watch(key):
            return
        fut = self._loop.create_future()
        self._waiters.setdefault(key, []).append(fut)
        try:
            await fut
        finally:
            waiters = self._waiters.get(key)
            if waiters is not None and fut in waiters:
                waiters.remove(fut)
                if not waiters:
                    del self._waiters[key]

    def _on_drained(self) -> None:
        for key in self._c.drained():
            self._wake(key)

    def _wake(self, key: int) -> None:
        for fut in self._waiters.pop(key, ()):
            if not fut.done():
                fut.set_result(None)

    def _forget(self, key: int) -> int:
        self._wake(key)
        return self._c.detach(key)

    def closing(self, outlet: Outlet) -> None:
        """A closed connection with answers still queued: they leave before its socket closes."""
        task = self._loop.create_task(outlet._flush_then_close())
        self._closers.add(task)
        task.add_done_callback(self._closers.discard)

    async def close(self, grace_s: float = CLOSE_FLUSH_S) -> None:
        """After every connection closed: let the last answers leave (for up to grace_s), stop the
        thread. What a reader did not take by then is dropped, as a closed transport drops it."""
        if self._closed:
            return
        if self._closers:
            await asyncio.wait(set(self._closers), timeout=grace_s)
        self._closed = True
        # Stopped, the thread refuses new answers (send() returns -EPIPE, watch() True), so an
        # outlet still open cannot queue or wait for ever.
        self._c.close()
        self._loop.remove_reader(self._c.wakeup_fd)
        for key in list(self._waiters):  # nobody waits for a thread that stopped
            self._wake(key)
        for task in list(self._closers):  # woken above, or about to find the thread stopped
            task.cancel()
        if self._closers:
            await asyncio.wait(set(self._closers), timeout=grace_s)


class Outlet:
    """A connection's answers, through the send thread (stands in for its StreamWriter)."""

    def __init__(self, sender: SendThread, writer: asyncio.StreamWriter, key: int) -> None:
        self._sender = sender
        self._send = sender._c.send
        self._writer = writer
        self.key = key
        self._queued = 0  # bytes pending after the last write; negative: -errno, the socket failed
        self._closed = False

    def write(self, data: bytes | bytearray | memoryview) -> None:
        if self._closed or self._queued < 0:
            return  # as a closed transport: the bytes go nowhere
        self._queued = self._send(self.key, data)

    def write_parts(self, parts: list[bytes | memoryview]) -> None:
        """One frame given as its parts, queued in order (a large Fetch answer, not joined first)."""
        send, key = self._send, self.key
        for part in parts:
            if self._closed or self._queued < 0:
                return
            self._queued = send(key, part)

    def needs_drain(self) -> bool:
        return self._queued > HIGH_WATER or self._queued < 0

    async def drain(self) -> None:
        if self._queued > HIGH_WATER:
            await self._sender.wait_drained(self.key)
            self._queued = self._sender._c.pending(self.key) if not self._closed else 0
        if self._queued < 0:
            raise ConnectionResetError(-self._queued, os.strerror(-self._queued))

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return self._writer.get_extra_info(name, default)

    def is_closing(self) -> bool:
        # Only this outlet's own close counts: a transport the loop closed on a reset must still
        # reach close(), which releases the send thread's duplicate of the socket.
        return self._closed

    def close(self) -> None:
        """Send what was written (for up to CLOSE_FLUSH_S), then close the socket. Reading stops
        at once, as a StreamWriter's close stops it: no request is handled after its connection
        was closed (its answer could not be sent)."""
        if self._closed:
            return
        self._closed = True
        try:
            self._writer.transport.pause_reading()
        except (AttributeError, RuntimeError):  # closing already
            pass
        if not self._sender._closed and self._sender._c.pending(self.key) > 0:
            self._sender.closing(self)
        else:
            self._finish()

    async def _flush_then_close(self) -> None:
        # Bounded, where a StreamWriter would wait for ever: a reader that takes nothing for
        # CLOSE_FLUSH_S loses the rest (possibly mid-answer) and sees the end of the stream.
        try:
            await asyncio.wait_for(self._sender.wait_drained(self.key), CLOSE_FLUSH_S)
        except asyncio.TimeoutError:
            pass
        finally:
            self._finish()

    def _finish(self) -> None:
        if self.key >= 0:
            dropped = self._sender._forget(self.key)
            if dropped:
                log.debug("answers_dropped_at_close", bytes=dropped)
            self.key = -1
        if not self._writer.is_closing():
            self._writer.close()
