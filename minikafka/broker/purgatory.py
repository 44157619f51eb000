"""Parked Fetch requests, woken when data is appended (Kafka's delayed-fetch purgatory)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable

from minikafka.protocol.types import TopicPartition


class FetchPurgatory:
    def __init__(self) -> None:
        self._waiters: dict[TopicPartition, set[asyncio.Future[None]]] = {}

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

    def notify(self, tp: TopicPartition) -> None:
        waiters = self._waiters.pop(tp, None)
        if waiters:
            for fut in waiters:
                if not fut.done():
                    fut.set_result(None)

    def notify_all(self) -> None:
        for tp in list(self._waiters):
            self.notify(tp)
