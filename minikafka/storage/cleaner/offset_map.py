"""OffsetMap: the latest offset of each key in the dirty section of a log (Kafka's OffsetMap).

Kafka keeps 16-byte MD5 hashes in a fixed buffer (`log.cleaner.dedupe.buffer.size`, 24 bytes an
entry, filled to `log.cleaner.io.buffer.load.factor`); a hash collision would drop a live record.
This map keeps the keys themselves, so it cannot collide, and takes its capacity from the same two
configs, so a pass maps as many keys as Kafka's would and stops at the same segment boundary.
"""

from __future__ import annotations

ENTRY_BYTES = 24  # Kafka's SkimpyOffsetMap: a 16-byte hash and an 8-byte offset


def capacity(dedupe_buffer_bytes: int, load_factor: float, threads: int = 1) -> int:
    """Entries one cleaner thread may map (Kafka divides the buffer between its threads)."""
    return max(1, int(dedupe_buffer_bytes // max(threads, 1) // ENTRY_BYTES * load_factor))


class OffsetMap:
    __slots__ = ("capacity", "latest_offset", "_offsets")

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.latest_offset = -1  # the last offset the map covers (mapped records and skipped batches)
        self._offsets: dict[bytes, int] = {}

    def __len__(self) -> int:
        return len(self._offsets)

    @property
    def full(self) -> bool:
        return len(self._offsets) >= self.capacity

    def put(self, key: bytes, offset: int) -> None:
        self._offsets[key] = offset
        if offset > self.latest_offset:
            self.latest_offset = offset

    def get(self, key: bytes) -> int:
        """The key's latest offset, or -1 when the dirty section does not hold it."""
        return self._offsets.get(key, -1)

    def update_latest_offset(self, offset: int) -> None:
        if offset > self.latest_offset:
            self.latest_offset = offset
