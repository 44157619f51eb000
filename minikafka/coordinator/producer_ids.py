"""Producer id allocation (Kafka's ProducerIdManager).

Ids are handed out from blocks of 1000; a block is recorded durably before its first id is used,
so ids are never reused across restarts (a restart skips the rest of the current block, as
Kafka's brokers do when they ask the controller for a new block).
"""

from __future__ import annotations

from typing import Protocol

BLOCK_SIZE = 1000


class ProducerIdBlockStore(Protocol):
    """Durable record of the next unallocated block start (adapter in broker/app.py)."""

    def load(self) -> int: ...  # 0 when nothing was ever allocated
    def save(self, next_block_start: int) -> None: ...  # durable before it returns


class ProducerIdExhausted(Exception):
    pass


class ProducerIdAllocator:
    def __init__(self, store: ProducerIdBlockStore, block_size: int = BLOCK_SIZE) -> None:
        self._store = store
        self._block_size = block_size
        self._next = 0
        self._block_end = 0  # exclusive

    def generate(self) -> int:
        if self._next >= self._block_end:
            start = self._store.load()
            if start > 2**63 - 1 - self._block_size:
                raise ProducerIdExhausted("no producer ids left")
            self._store.save(start + self._block_size)
            self._next, self._block_end = start, start + self._block_size
        pid = self._next
        self._next += 1
        return pid
