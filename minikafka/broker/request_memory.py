"""The request memory pool: Kafka's `queued.max.request.bytes` (SocketServer's MemoryPool).

A connection that has read the size of a request it has not received whole reserves that many
bytes before it reads on; while the pool cannot grant them it stops reading that socket, so the
client's bytes wait in the kernel (TCP back-pressure) instead of in the broker's memory. The
reservation is returned once the request has been handled, or when the connection closes. Grants
are first come, first served, so a large request is not starved by a stream of small ones.
"""

from __future__ import annotations

import asyncio
from collections import deque


class RequestMemoryPool:
    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.available = capacity
        self._waiters: deque[tuple[int, asyncio.Future[None]]] = deque()

    @property
    def in_use(self) -> int:
        return self.capacity - self.available

    def try_reserve(self, n: int) -> int:
        """Grant n bytes now if the pool can (nobody waits before them): what to release, else 0."""
        n = min(n, self.capacity)
        if not self._waiters and self.available >= n:
            self.available -= n
            return n
        return 0

    async def reserve(self, n: int) -> int:
        """Wait until n bytes are granted; returns what to release later (n, at most the capacity:
        the config keeps socket.request.max.bytes within it)."""
        granted = self.try_reserve(n)
        if granted:
            return granted
        n = min(n, self.capacity)
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        entry = (n, fut)
        self._waiters.append(entry)
        try:
            await fut
        except asyncio.CancelledError:
            if fut.done() and not fut.cancelled():
                self.release(n)  # granted just as the waiter went away
            else:
                self._waiters.remove(entry)
                self._grant()  # the head may have been this one
            raise
        return n

    def release(self, n: int) -> None:
        self.available = min(self.capacity, self.available + n)
        self._grant()

    def _grant(self) -> None:
        while self._waiters and self._waiters[0][0] <= self.available:
            n, fut = self._waiters.popleft()
            if fut.done():
                continue
            self.available -= n
            fut.set_result(None)
