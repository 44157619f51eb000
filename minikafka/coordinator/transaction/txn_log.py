"""__transaction_state records in Kafka's schemas (TransactionLogKey v0, TransactionLogValue v0).

key:   version int16 (0) | transactional_id string
value: version int16 (0) | producer_id int64 | producer_epoch int16 | timeout_ms int32 |
       status int8 | partitions nullable array of {topic string, partition ids [int32]} |
       last_update_ms int64 | start_ms int64
A null value (tombstone) removes the id (DEAD). Strings are int16-length UTF-8, arrays int32-length.
Kafka writes value v0 while the transaction.version feature is below 1, which is what minikafka
advertises; v1 (flexible, tagged fields) is read too.
"""

from __future__ import annotations

import struct
from collections import defaultdict

from minikafka.coordinator.transaction.state import TxnMetadata, TxnState
from minikafka.protocol.types import TopicPartition

TOPIC = "__transaction_state"


def java_string_hash(s: str) -> int:
    h = 0
    for unit in struct.unpack(f"<{len(s.encode('utf-16-le')) // 2}H", s.encode("utf-16-le")):
        h = (31 * h + unit) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


def partition_for(transactional_id: str, num_partitions: int) -> int:
    """Kafka's TransactionStateManager.partitionFor: Utils.abs(hashCode) % partitions."""
    h = java_string_hash(transactional_id)
    return (0 if h == -(2**31) else abs(h)) % num_partitions


def _string(s: str) -> bytes:
    b = s.encode()
    return struct.pack(">h", len(b)) + b


def encode_key(transactional_id: str) -> bytes:
    return struct.pack(">h", 0) + _string(transactional_id)


def encode_value(meta: TxnMetadata) -> bytes | None:
    if meta.state is TxnState.DEAD:
        return None
    out = bytearray(struct.pack(">hqhib", 0, meta.producer_id, meta.producer_epoch, meta.timeout_ms,
                                meta.state.value))
    if meta.state is TxnState.EMPTY and not meta.partitions:
        out += struct.pack(">i", -1)
    else:
        by_topic: dict[str, list[int]] = defaultdict(list)
        for tp in meta.partitions:
            by_topic[tp.topic].append(tp.partition)
        out += struct.pack(">i", len(by_topic))
        for topic in sorted(by_topic):
            parts = sorted(by_topic[topic])
            out += _string(topic) + struct.pack(f">i{len(parts)}i", len(parts), *parts)
    out += struct.pack(">qq", meta.last_update_ms, meta.start_ms)
    return bytes(out)


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def take(self, fmt: str) -> tuple[int, ...]:
        vals = struct.unpack_from(fmt, self.data, self.pos)
        self.pos += struct.calcsize(fmt)
        return vals

    def uvarint(self) -> int:
        shift = result = 0
        while True:
            b = self.data[self.pos]
            self.pos += 1
            result |= (b & 0x7F) << shift
            if not b & 0x80:
                return result
            shift += 7

    def string(self, compact: bool) -> str:
        n = self.uvarint() - 1 if compact else self.take(">h")[0]
        s = self.data[self.pos : self.pos + n].decode()
        self.pos += n
        return s

    def skip_tags(self) -> None:
        for _ in range(self.uvarint()):
            self.uvarint()
            size = self.uvarint()  # read first: `self.pos += self.uvarint()` loses the varint's own bytes
            self.pos += size


def decode_key(data: bytes) -> str | None:
    """The transactional id, or None for a key version this coordinator does not own."""
    r = _Reader(data)
    (version,) = r.take(">h")
    if version != 0:
        return None
    return r.string(False)


def decode_value(transactional_id: str, data: bytes) -> TxnMetadata:
    r = _Reader(data)
    (version,) = r.take(">h")
    compact = version >= 1
    producer_id, epoch, timeout_ms, status = r.take(">qhib")
    partitions: set[TopicPartition] = set()
    n = r.uvarint() - 1 if compact else r.take(">i")[0]
    for _ in range(max(n, 0)):
        topic = r.string(compact)
        count = r.uvarint() - 1 if compact else r.take(">i")[0]
        for p in r.take(f">{count}i"):
            partitions.add(TopicPartition(topic, p))
        if compact:
            r.skip_tags()
    last_update_ms, start_ms = r.take(">qq")
    return TxnMetadata(transactional_id=transactional_id, producer_id=producer_id, producer_epoch=epoch,
                       timeout_ms=timeout_ms, state=TxnState(status), partitions=frozenset(partitions),
                       start_ms=start_ms, last_update_ms=last_update_ms)
