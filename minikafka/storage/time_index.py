"""Time index (Kafka's TimeIndex): 12-byte entries of timestamp int64, (offset - base) int32.

An entry is added only when the timestamp grows, so timestamps in the file never go backwards.
"""

from __future__ import annotations

import bisect
import os
import struct
from array import array
from pathlib import Path

from minikafka.storage.offset_index import APPEND_FLAGS, rewrite_index_file, write_entry
from minikafka.storage.open_files import SHARED, OpenFiles

ENTRY = struct.Struct(">qi")


class TimeIndex:
    __slots__ = ("path", "base_offset", "timestamps", "relative_offsets", "max_entries", "_files", "_key",
                 "_unsynced", "_rebuilding")

    def __init__(self, path: Path, base_offset: int, max_index_size: int, open_files: OpenFiles = SHARED) -> None:
        self.path = path
        self.base_offset = base_offset
        self.timestamps: array[int] = array("q")
        self.relative_offsets: array[int] = array("i")
        self.max_entries = max(1, max_index_size // ENTRY.size)
        self._files = open_files
        self._key = str(path)
        self._unsynced = False
        self._rebuilding = False

    def load(self) -> bool:
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            return False
        if len(data) % ENTRY.size:
            return False
        ts = array("q")
        rel = array("i")
        for t, r in ENTRY.iter_unpack(data):
            if (ts and t < ts[-1]) or (rel and r < rel[-1]) or r < 0:
                return False
            ts.append(t)
            rel.append(r)
        self.timestamps, self.relative_offsets = ts, rel
        return True

    def reset(self) -> None:
        """Empty the index (an empty segment's): a rebuild with no entries."""
        self.begin_rebuild()
        self.end_rebuild()

    def begin_rebuild(self) -> None:
        """As OffsetIndex.begin_rebuild: entries in memory only until end_rebuild()."""
        self.close()
        self.timestamps = array("q")
        self.relative_offsets = array("i")
        self._rebuilding = True

    def end_rebuild(self) -> None:
        """As OffsetIndex.end_rebuild: the file is written only when it differs."""
        self._rebuilding = False
        written = rewrite_index_file(self.path, b"".join(map(ENTRY.pack, self.timestamps, self.relative_offsets)))
        self._unsynced = self._unsynced or written or bool(self.timestamps)

    @property
    def is_full(self) -> bool:
        return len(self.timestamps) >= self.max_entries

    @property
    def last_entry(self) -> tuple[int, int]:
        """(timestamp, offset) of the last entry, or (-1, base) when empty."""
        if not self.timestamps:
            return -1, self.base_offset
        return self.timestamps[-1], self.base_offset + self.relative_offsets[-1]

    def maybe_append(self, timestamp: int, offset: int) -> None:
        if timestamp < 0:
            return
        if self.timestamps and timestamp <= self.timestamps[-1]:
            return
        rel = offset - self.base_offset
        if self.relative_offsets and rel < self.relative_offsets[-1]:
            return
        if not self._rebuilding:
            self._unsynced = True
            write_entry(self._files.fd(self._key, APPEND_FLAGS), ENTRY.pack(timestamp, rel),
                        len(self.timestamps) * ENTRY.size)
        self.timestamps.append(timestamp)
        self.relative_offsets.append(rel)

    def lookup(self, timestamp: int) -> int:
        """Offset of the last entry with timestamp <= target, else the segment's base offset."""
        i = bisect.bisect_right(self.timestamps, timestamp) - 1
        if i < 0:
            return self.base_offset
        return self.base_offset + self.relative_offsets[i]

    def truncate_to_offset(self, offset: int) -> None:
        """Drop entries for offsets >= offset."""
        keep = bisect.bisect_left(self.relative_offsets, offset - self.base_offset)
        if keep == len(self.relative_offsets):
            return
        del self.timestamps[keep:]
        del self.relative_offsets[keep:]
        self.close()
        os.truncate(self.path, keep * ENTRY.size)

    def flush(self) -> None:
        if self._unsynced:
            os.fsync(self._files.fd(self._key, APPEND_FLAGS))
            self._unsynced = False

    def close(self) -> None:
        self._files.close(self._key)
