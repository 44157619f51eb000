"""Parked Fetch requests, woken when data is appended (Kafka's delayed-fetch purgatory)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable

from minikafka.protocol.types import TopicPartition


class FetchPurgatory:
    def __init__(self) -> None:
        self._waiters: dict[TopicPartition, set[asyncio.Future[None]]] = {}
        self.closed = False  # the broker is stopping: a parked Fetch answers what it has at once

    def watch(self, partitions: Iterable[TopicPartition]) -> asyncio.Future[None]:
        """A future resolved at the next append to any of the partitions."""
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        for tp in partitions:
            self._waiters.setdefault(tp, set()).add(fut)
        return fut

    def unwatch(self, partitions: Iterable[TopicPartition], fut: asyncio.Future[None]) -> None:
        for tp in partitions:
            waiters = self._waiters.get(tp)
            if waiters is not None:
                waiters.discard(fut)
                if not waiters:
                    del self._waiters[tp]

    @property
    def parked(self) -> int:
        """How many Fetch requests are waiting for an append."""
        return len({id(f) for waiters in self._waiters.values() for f in waiters})

    def notify(self, tp: TopicPartition) -> None:
        waiters = self._waiters.pop(tp, None)
        if waiters:
            for fut in waiters:
                if not fut.done():
                    fut.set_result(None)

    def notify_all(self) -> None:
        for tp in list(self._waiters):
            self.notify(tp)

    def close(self) -> None:
        """The broker is stopping: every parked Fetch answers now with what it has, and none parks
        again. Woken by an append, a Fetch that still lacks fetch.min.bytes parks anew, so a
        consumer's fetch.wait.max.ms (30 s, say) had held the stop for its whole grace period
        and then lost its answer to a closed connection."""
        self.closed = True
        self.notify_all()
