"""Transaction index (Kafka's TransactionIndex / AbortedTxn): one 34-byte entry per aborted
transaction, in the segment that holds its ABORT marker.

    version int16 (0) | producerId int64 | firstOffset int64 | lastOffset int64 | lastStableOffset int64

lastOffset is the marker's offset; lastStableOffset the LSO right after the abort completed.
The file exists only once an entry is written (Kafka does not preallocate it).
"""

from __future__ import annotations

import os
import struct
from pathlib import Path
from typing import NamedTuple

from minikafka.storage import files
from minikafka.storage.offset_index import APPEND_FLAGS, write_entry
from minikafka.storage.open_files import SHARED, OpenFiles

ENTRY = struct.Struct(">hqqqq")


class AbortedTxn(NamedTuple):
    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int


class TransactionIndex:
    __slots__ = ("path", "entries", "dirty", "_files", "_key", "_unsynced")

    def __init__(self, path: Path, open_files: OpenFiles = SHARED) -> None:
        self.path = path
        self.entries: list[AbortedTxn] = []
        self.dirty = False  # the file lacks entries that are in memory (a write failed)
        self._files = open_files
        self._key = str(path)
        self._unsynced = False

    def load(self) -> bool:
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            self.entries = []
            return True
        if len(data) % ENTRY.size:
            return False
        entries = []
        for version, pid, first, last, lso in ENTRY.iter_unpack(data):
            if version != 0 or first > last:
                return False
            entries.append(AbortedTxn(pid, first, last, lso))
        self.entries = entries
        return True

    def reset(self) -> None:
        self.close()
        self.entries = []
        self.path.unlink(missing_ok=True)

    def append(self, txn: AbortedTxn) -> None:
        if self.entries and txn.last_offset <= self.entries[-1].last_offset:
            return  # replayed twice (recovery): keep the file free of duplicates
        # Memory first: the ABORT marker this entry describes is already in the log, and reads
        # must hide the aborted records whatever the disk does. A failed file write leaves the
        # index dirty; flush() writes it whole again (and raises while the disk still refuses).
        self.entries.append(txn)
        try:
            if self.dirty:
                self._rewrite()
                return
            self._unsynced = True
            write_entry(self._files.fd(self._key, APPEND_FLAGS), ENTRY.pack(0, *txn),
                        (len(self.entries) - 1) * ENTRY.size)
        except OSError:
            self.dirty = True

    def _rewrite(self) -> None:
        self.close()
        files.atomic_write(self.path, b"".join(ENTRY.pack(0, *e) for e in self.entries))
        self.dirty = False

    def collect(self, fetch_offset: int, upper_bound: int) -> tuple[list[AbortedTxn], bool]:
        """Entries overlapping [fetch_offset, upper_bound); True when no later segment can add any
        (an entry's LSO already reaches the upper bound: Kafka's collectAbortedTxns)."""
        out = []
        for e in self.entries:
            if e.last_offset >= fetch_offset and e.first_offset < upper_bound:
                out.append(e)
            if e.last_stable_offset >= upper_bound:
                return out, True
        return out, False

    def truncate_to(self, offset: int) -> None:
        keep = [e for e in self.entries if e.last_offset < offset]
        if len(keep) == len(self.entries):
            return
        self.close()
        self.entries = keep
        if keep:
            with open(self.path, "wb") as f:
                f.write(b"".join(ENTRY.pack(0, *e) for e in keep))
        else:
            self.path.unlink(missing_ok=True)

    def flush(self) -> None:
        if self.dirty:
            self._rewrite()
        if self._unsynced:
            os.fsync(self._files.fd(self._key, APPEND_FLAGS))
            self._unsynced = False

    def close(self) -> None:
        self._files.close(self._key)
