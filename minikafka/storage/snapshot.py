"""Producer state snapshots in Kafka's `.snapshot` format (ProducerStateManager / ProducerSnapshot.json).

    version int16 (1) | crc uint32 (CRC-32C of everything after it) | count int32 | entries
    entry (46 bytes): producerId int64, epoch int16, lastSequence int32, lastOffset int64,
                      offsetDelta int32, timestamp int64, coordinatorEpoch int32,
                      currentTxnFirstOffset int64

The file is named by the offset it covers: the state of every batch below that offset.
"""

from __future__ import annotations

import struct
from typing import NamedTuple

from minikafka.protocol.crc import crc32c

VERSION = 1
_HEAD = struct.Struct(">hI")
_COUNT = struct.Struct(">i")
_ENTRY = struct.Struct(">qhiqiqiq")
ENTRY_SIZE = _ENTRY.size  # 46


class SnapshotEntry(NamedTuple):
    producer_id: int
    producer_epoch: int
    last_sequence: int
    last_offset: int
    offset_delta: int
    timestamp: int
    coordinator_epoch: int
    current_txn_first_offset: int


class CorruptSnapshot(Exception):
    pass


def encode(entries: list[SnapshotEntry]) -> bytes:
    body = _COUNT.pack(len(entries)) + b"".join(_ENTRY.pack(*e) for e in entries)
    return _HEAD.pack(VERSION, crc32c(body)) + body


def decode(data: bytes) -> list[SnapshotEntry]:
    """Raises CorruptSnapshot for a wrong version, size or CRC."""
    if len(data) < _HEAD.size + _COUNT.size:
        raise CorruptSnapshot(f"snapshot of {len(data)} bytes is too short")
    version, crc = _HEAD.unpack_from(data, 0)
    if version != VERSION:
        raise CorruptSnapshot(f"snapshot version {version} is not {VERSION}")
    body = data[_HEAD.size :]
    if crc32c(body) != crc:
        raise CorruptSnapshot("snapshot CRC mismatch")
    (count,) = _COUNT.unpack_from(body, 0)
    if count < 0 or len(body) != _COUNT.size + count * ENTRY_SIZE:
        raise CorruptSnapshot(f"snapshot holds {len(body)} bytes for {count} entries")
    return [SnapshotEntry._make(e) for e in _ENTRY.iter_unpack(body[_COUNT.size :])]
