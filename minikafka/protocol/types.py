"""Small value types shared by every layer."""

from __future__ import annotations

import base64
import datetime
import enum
import uuid
from typing import NamedTuple


class TopicPartition(NamedTuple):
    topic: str
    partition: int

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}"


class IsolationLevel(enum.IntEnum):
    READ_UNCOMMITTED = 0
    READ_COMMITTED = 1


# ListOffsets special timestamps (ListOffsetsRequest.java).
LATEST_TIMESTAMP = -1
EARLIEST_TIMESTAMP = -2
MAX_TIMESTAMP = -3
EARLIEST_LOCAL_TIMESTAMP = -4  # ListOffsets v8+ (KIP-1005): the first offset on local disk
LATEST_TIERED_TIMESTAMP = -5  # v9+: the last offset in tiered storage
EARLIEST_PENDING_UPLOAD_TIMESTAMP = -6  # v11+: the first offset not yet uploaded to tiered storage

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
NO_SEQUENCE = -1

ZERO_MS = datetime.timedelta(0)


def ms(td: datetime.timedelta) -> int:
    """kio carries durations as timedelta; the broker works in whole milliseconds."""
    return int(td.total_seconds() * 1000)


def kafka_uuid_str(u: uuid.UUID) -> str:
    """Kafka's Uuid.toString: URL-safe base64 of the 16 bytes, without padding."""
    return base64.urlsafe_b64encode(u.bytes).decode().rstrip("=")


def parse_kafka_uuid(s: str) -> uuid.UUID:
    return uuid.UUID(bytes=base64.urlsafe_b64decode(s + "=" * (-len(s) % 4)))
