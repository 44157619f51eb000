"""Parked Fetch requests, woken when data is appended (Kafka's delayed-fetch purgatory)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from minikafka.protocol.types import TopicPartition


class FetchPurgatory:
    def __init__(self) -> None:
        self._waiters: dict[TopicPartition, set[asyncio.Future[None]]] = {}
        self._closed = False  # the broker is stopping: nothing parks any more

    async def wait(self, partitions: Sequence[TopicPartition], timeout: float) -> bool:
        """Park until the next append to any of the partitions: True. False when `timeout`
        seconds pass first, or the broker is stopping: the Fetch answers what it has. (Woken by
        an append, a Fetch still short of fetch.min.bytes parks again; at a stop it must not, or
        a consumer's fetch.wait.max.ms held the stop for its whole grace period and then lost its
        answer to a closed connection.)"""
        if self._closed:
            return False
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        for tp in partitions:
            self._waiters.setdefault(tp, set()).add(fut)
        try:
            await asyncio.wait_for(fut, timeout)
        except TimeoutError:
            return False
        finally:
            for tp in partitions:
                waiters = self._waiters.get(tp)
                if waiters is not None:
                    waiters.discard(fut)
                    if not waiters:
                        del self._waiters[tp]
        return not self._closed

    @property
    def parked(self) -> int:
        """How many Fetch requests are waiting for an append."""
        return len(set().union(*self._waiters.values()))

    def notify(self, tp: TopicPartition) -> None:
        waiters = self._waiters.pop(tp, None)
        if waiters:
            for fut in waiters:
                if not fut.done():
                    fut.set_result(None)

    def close(self) -> None:
        """The broker is stopping: every parked Fetch answers now with what it has."""
        self._closed = True
        for tp in list(self._waiters):
            self.notify(tp)
