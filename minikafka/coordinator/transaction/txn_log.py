"""__transaction_state records in Kafka's schemas (TransactionLogKey v0, TransactionLogValue v0/v1).

key:   version int16 (0) | transactional_id string
value: version int16 | producer_id int64 | producer_epoch int16 | timeout_ms int32 |
       status int8 | partitions nullable array of {topic string, partition ids [int32]} |
       last_update_ms int64 | start_ms int64
A null value (tombstone) removes the id (DEAD). v0: strings int16-length UTF-8, arrays
int32-length. v1 (flexible): compact strings and arrays (length + 1 as an unsigned varint), a
tagged-field section after each struct, and three tagged fields on the value: 0
PreviousProducerId int64, 1 NextProducerId int64 (default -1), 2 ClientTransactionVersion int16
(default 0), each written only when it differs from its default, as Kafka's generated code does.
Kafka writes v1 once the transaction.version feature is 1 or more (TransactionVersion.
transactionLogValueVersion), v0 below; so does minikafka, and it reads both.
"""

from __future__ import annotations

import functools
import struct
from collections import defaultdict

from minikafka.coordinator.transaction.state import NO_PRODUCER_ID, TxnMetadata, TxnState
from minikafka.protocol.records import uvarint
from minikafka.protocol.types import TopicPartition

TOPIC = "__transaction_state"


def java_string_hash(s: str) -> int:
    h = 0
    for unit in struct.unpack(f"<{len(s.encode('utf-16-le')) // 2}H", s.encode("utf-16-le")):
        h = (31 * h + unit) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


@functools.lru_cache(maxsize=65_536)
def partition_for(transactional_id: str, num_partitions: int) -> int:
    """Kafka's TransactionStateManager.partitionFor: Utils.abs(hashCode) % partitions. Asked two
    to four times per transaction, and Java's string hash walks the id in Python: cached."""
    h = java_string_hash(transactional_id)
    return (0 if h == -(2**31) else abs(h)) % num_partitions


def _string(s: str) -> bytes:
    b = s.encode()
    return struct.pack(">h", len(b)) + b


def encode_key(transactional_id: str) -> bytes:
    return struct.pack(">h", 0) + _string(transactional_id)


def encode_value(meta: TxnMetadata, version: int = 0) -> bytes | None:
    """The record value in TransactionLogValue `version` (1 while the broker's transaction.version
    is 1 or more, 0 below); None (a tombstone) for DEAD."""
    if meta.state is TxnState.DEAD:
        return None
    flexible = version >= 1
    out = bytearray(struct.pack(">hqhib", version, meta.producer_id, meta.producer_epoch, meta.timeout_ms,
                                meta.state.value))
    if meta.state is TxnState.EMPTY and not meta.partitions:
        out += uvarint(0) if flexible else struct.pack(">i", -1)  # a null array
    else:
        by_topic: dict[str, list[int]] = defaultdict(list)
        for tp in meta.partitions:
            by_topic[tp.topic].append(tp.partition)
        out += uvarint(len(by_topic) + 1) if flexible else struct.pack(">i", len(by_topic))
        for topic in sorted(by_topic):
            parts = sorted(by_topic[topic])
            if flexible:
                name = topic.encode()
                out += uvarint(len(name) + 1) + name + uvarint(len(parts) + 1)
                out += struct.pack(f">{len(parts)}i", *parts) + b"\x00"  # no tagged fields
            else:
                out += _string(topic) + struct.pack(f">i{len(parts)}i", len(parts), *parts)
    out += struct.pack(">qq", meta.last_update_ms, meta.start_ms)
    if flexible:
        tags = []
        if meta.previous_producer_id != NO_PRODUCER_ID:
            tags.append((0, struct.pack(">q", meta.previous_producer_id)))
        if meta.next_producer_id != NO_PRODUCER_ID:
            tags.append((1, struct.pack(">q", meta.next_producer_id)))
        if meta.client_transaction_version != 0:
            tags.append((2, struct.pack(">h", meta.client_transaction_version)))
        out += uvarint(len(tags))
        for tag, data in tags:
            out += uvarint(tag) + uvarint(len(data)) + data
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
    tagged = {"previous_producer_id": NO_PRODUCER_ID, "next_producer_id": NO_PRODUCER_ID,
              "client_transaction_version": 0}
    if compact and r.pos < len(data):
        for _ in range(r.uvarint()):
            tag, size = r.uvarint(), r.uvarint()
            end = r.pos + size
            if tag == 0:
                (tagged["previous_producer_id"],) = r.take(">q")
            elif tag == 1:
                (tagged["next_producer_id"],) = r.take(">q")
            elif tag == 2:
                (tagged["client_transaction_version"],) = r.take(">h")
            r.pos = end  # an unknown tag (a later Kafka's) is skipped
    return TxnMetadata(transactional_id=transactional_id, producer_id=producer_id, producer_epoch=epoch,
                       timeout_ms=timeout_ms, state=TxnState(status), partitions=frozenset(partitions),
                       start_ms=start_ms, last_update_ms=last_update_ms, **tagged)
