"""Offset index (Kafka's OffsetIndex): 8-byte entries of (offset - base) int32, position int32.

Entries are kept in memory for lookup and appended to the file as they are added. The file is not
preallocated (Kafka preallocates and trims on roll; a trimmed file is what both leave behind).
A rebuild (a segment's recovery) keeps its entries in memory and writes the file once at its end,
and only when the file does not hold them already.
"""

from __future__ import annotations

import bisect
import errno
import os
import struct
from array import array
from pathlib import Path

from minikafka.storage.open_files import SHARED, OpenFiles

ENTRY = struct.Struct(">ii")
APPEND_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_APPEND


class OffsetIndex:
    __slots__ = ("path", "base_offset", "relative_offsets", "positions", "max_entries", "_files", "_key",
                 "_unsynced", "_rebuilding")

    def __init__(self, path: Path, base_offset: int, max_index_size: int, open_files: OpenFiles = SHARED) -> None:
        self.path = path
        self.base_offset = base_offset
        self.relative_offsets: array[int] = array("i")
        self.positions: array[int] = array("i")
        self.max_entries = max(1, max_index_size // ENTRY.size)
        self._files = open_files
        self._key = str(path)
        self._unsynced = False
        self._rebuilding = False

    # -- loading ---------------------------------------------------------------------------------
    def load(self) -> bool:
        """Read the file; False if it is missing or fails Kafka's sanity check (then rebuild)."""
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            return False
        if len(data) % ENTRY.size:
            return False
        rel = array("i")
        pos = array("i")
        for r, p in ENTRY.iter_unpack(data):
            if (rel and r <= rel[-1]) or (pos and p < pos[-1]) or r < 0 or p < 0:
                return False
            rel.append(r)
            pos.append(p)
        self.relative_offsets, self.positions = rel, pos
        return True

    def reset(self) -> None:
        """Empty the index (an empty segment's): a rebuild with no entries."""
        self.begin_rebuild()
        self.end_rebuild()

    def begin_rebuild(self) -> None:
        """Empty the index in memory for a rebuild (recovery); the entries added until
        end_rebuild() are kept in memory only."""
        self.close()
        self.relative_offsets = array("i")
        self.positions = array("i")
        self._rebuilding = True

    def end_rebuild(self) -> None:
        """Write the rebuilt entries, unless the file holds exactly them already (as after a
        kill -9 of a broker that had written them): truncating a file costs ext4 ~90 us against
        ~11 us to read it, twice per partition when thousands are recovered at start-up."""
        self._rebuilding = False
        written = rewrite_index_file(self.path, b"".join(map(ENTRY.pack, self.relative_offsets, self.positions)))
        # To fsync at the next flush, as when the entries were appended one by one (the killed
        # broker may have left them unsynced); an empty index that was empty already is not.
        self._unsynced = self._unsynced or written or bool(self.positions)

    def _open(self) -> int:
        self._unsynced = True  # about to write
        return self._files.fd(self._key, APPEND_FLAGS)

    # -- writing ---------------------------------------------------------------------------------
    @property
    def is_full(self) -> bool:
        return len(self.relative_offsets) >= self.max_entries

    def append(self, offset: int, position: int) -> None:
        rel = offset - self.base_offset
        if self.relative_offsets and rel <= self.relative_offsets[-1]:
            return
        if not self._rebuilding:
            write_entry(self._open(), ENTRY.pack(rel, position), len(self.positions) * ENTRY.size)
        self.relative_offsets.append(rel)
        self.positions.append(position)

    def truncate_to_position(self, position: int) -> None:
        """Drop entries pointing at or past `position` (log truncation)."""
        keep = bisect.bisect_left(self.positions, position)
        if keep == len(self.positions):
            return
        del self.relative_offsets[keep:]
        del self.positions[keep:]
        self.close()
        os.truncate(self.path, keep * ENTRY.size)

    # -- reading ---------------------------------------------------------------------------------
    def lookup(self, offset: int) -> tuple[int, int]:
        """(offset, position) of the largest entry with offset <= target, else (base, 0)."""
        i = bisect.bisect_right(self.relative_offsets, offset - self.base_offset) - 1
        if i < 0:
            return self.base_offset, 0
        return self.base_offset + self.relative_offsets[i], self.positions[i]

    def last_position(self) -> int:
        return self.positions[-1] if self.positions else 0

    def flush(self) -> None:
        if self._unsynced:
            os.fsync(self._files.fd(self._key, APPEND_FLAGS))
            self._unsynced = False

    def close(self) -> None:
        self._files.close(self._key)


def rewrite_index_file(path: Path, data: bytes) -> bool:
    """Make the file hold exactly `data`; left untouched (False) when it does already."""
    try:
        if path.read_bytes() == data:
            return False
    except FileNotFoundError:
        pass
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        n = os.write(fd, data) if data else 0
        if n != len(data):
            os.ftruncate(fd, 0)
            raise OSError(errno.ENOSPC, f"short write to an index file ({n} of {len(data)} bytes)")
    finally:
        os.close(fd)
    return True


def write_entry(fd: int, entry: bytes, size_before: int) -> None:
    """Append one entry to an index file, file first (the in-memory entries follow only what was
    written); a short write on a full disk is cut back and raised."""
    n = os.write(fd, entry)
    if n != len(entry):
        os.ftruncate(fd, size_before)
        raise OSError(errno.ENOSPC, f"short write to an index file ({n} of {len(entry)} bytes)")
