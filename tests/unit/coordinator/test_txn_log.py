"""__transaction_state records in Kafka's byte format (TransactionLogKey v0, TransactionLogValue v0/v1)."""

from __future__ import annotations

import dataclasses
import struct

import pytest

from minikafka.coordinator.transaction import txn_log
from minikafka.coordinator.transaction.state import TxnMetadata, TxnState
from minikafka.protocol.records import uvarint
from minikafka.protocol.types import TopicPartition

pytestmark = pytest.mark.unit

S = TxnState
PARTS = frozenset({TopicPartition("orders", 0), TopicPartition("orders", 7), TopicPartition("__consumer_offsets", 13),
                   TopicPartition("ü-topic", 2)})


def meta(state: TxnState, partitions: frozenset[TopicPartition] = frozenset(), *, txn_id: str = "txn-1",
         pid: int = 4242, epoch: int = 3, start: int = 1_700_000_000_000) -> TxnMetadata:
    return TxnMetadata(transactional_id=txn_id, producer_id=pid, producer_epoch=epoch, timeout_ms=60_000, state=state,
                       partitions=partitions, start_ms=start, last_update_ms=1_700_000_000_123)


PERSISTED = [
    meta(S.EMPTY, start=-1),
    meta(S.ONGOING, PARTS),
    meta(S.PREPARE_COMMIT, PARTS),
    meta(S.PREPARE_ABORT, PARTS),
    meta(S.COMPLETE_COMMIT),
    meta(S.COMPLETE_ABORT),
    meta(S.ONGOING, frozenset({TopicPartition("t", 0)}), pid=2**62, epoch=32767),  # extremes of the types
]


@pytest.mark.parametrize("m", PERSISTED, ids=lambda m: f"{m.state.name}-{len(m.partitions)}")
def test_value_round_trip(m: TxnMetadata) -> None:
    value = txn_log.encode_value(m)
    assert value is not None
    assert value[:2] == b"\x00\x00"  # value version 0
    assert txn_log.decode_value(m.transactional_id, value) == m


@pytest.mark.parametrize("m", PERSISTED + [
    dataclasses.replace(meta(S.PREPARE_COMMIT, PARTS, epoch=32767), next_producer_id=9001, client_transaction_version=2),
    dataclasses.replace(meta(S.COMPLETE_ABORT, pid=9001, epoch=0), previous_producer_id=4242, client_transaction_version=2),
], ids=lambda m: f"{m.state.name}-{len(m.partitions)}-tv{m.client_transaction_version}")
def test_value_v1_round_trip(m: TxnMetadata) -> None:
    """TransactionLogValue v1 (written once transaction.version is 1 or more): compact arrays and
    the three tagged fields, each only when it is not its default."""
    value = txn_log.encode_value(m, 1)
    assert value is not None and value[:2] == b"\x00\x01"
    assert txn_log.decode_value(m.transactional_id, value) == m
    tags = value[-1:] == b"\x00"  # no tagged field at all: the section is one zero count
    assert tags == (m.previous_producer_id == -1 and m.next_producer_id == -1 and m.client_transaction_version == 0)


def test_value_v1_tagged_fields_bytes() -> None:
    m = dataclasses.replace(meta(S.COMPLETE_COMMIT, pid=7, epoch=0), previous_producer_id=6, client_transaction_version=2)
    value = txn_log.encode_value(m, 1)
    assert value is not None
    # null partitions are not written for COMPLETE_COMMIT: an empty compact array (length + 1 = 1)
    expected_tail = struct.pack(">qq", m.last_update_ms, m.start_ms) + bytes(
        [2, 0, 8]) + struct.pack(">q", 6) + bytes([2, 2]) + struct.pack(">h", 2)
    assert value.endswith(expected_tail)
    assert value[:2 + 8 + 2 + 4 + 1 + 1] == struct.pack(">hqhib", 1, 7, 0, 60_000, S.COMPLETE_COMMIT.value) + b"\x01"


@pytest.mark.parametrize("txn_id", ["txn-1", "", "ü-ß-🙂 id", "x" * 300])
def test_key_round_trip(txn_id: str) -> None:
    key = txn_log.encode_key(txn_id)
    assert key[:2] == b"\x00\x00"  # key version 0
    assert struct.unpack(">h", key[2:4])[0] == len(txn_id.encode())  # length in UTF-8 bytes
    assert txn_log.decode_key(key) == txn_id


def test_dead_is_a_tombstone() -> None:
    assert txn_log.encode_value(meta(S.DEAD)) is None


def test_empty_writes_null_partitions() -> None:
    value = txn_log.encode_value(meta(S.EMPTY, start=-1))
    assert value is not None
    # version 2 | producer id 8 | epoch 2 | timeout 4 | status 1 -> partitions at offset 17
    assert value[16] == S.EMPTY.value
    assert value[17:21] == b"\xff\xff\xff\xff"
    assert len(value) == 21 + 16


@pytest.mark.parametrize("state", [S.COMPLETE_COMMIT, S.COMPLETE_ABORT])
def test_complete_writes_an_empty_array_not_null(state: TxnState) -> None:
    value = txn_log.encode_value(meta(state))
    assert value is not None
    assert value[16] == state.value
    assert value[17:21] == b"\x00\x00\x00\x00"


def test_key_bytes_v0() -> None:
    assert txn_log.encode_key("txn-1") == bytes.fromhex("0000" "0005") + b"txn-1"


def test_value_bytes_v0() -> None:
    m = TxnMetadata(transactional_id="txn-1", producer_id=4242, producer_epoch=3, timeout_ms=60_000,
                    state=S.ONGOING,
                    partitions=frozenset({TopicPartition("b", 1), TopicPartition("a", 2), TopicPartition("a", 0)}),
                    start_ms=1_700_000_000_000, last_update_ms=1_700_000_000_123)
    expected = bytes.fromhex(
        "0000"                  # version 0
        "0000000000001092"      # ProducerId 4242
        "0003"                  # ProducerEpoch 3
        "0000ea60"              # TransactionTimeoutMs 60000
        "01"                    # TransactionStatus Ongoing
        "00000002"              # TransactionPartitions: 2 topics
        "0001" "61"             #   Topic "a"
        "00000002" "00000000" "00000002"  # PartitionIds [0, 2]
        "0001" "62"             #   Topic "b"
        "00000001" "00000001"   #   PartitionIds [1]
        "0000018bcfe5687b"      # TransactionLastUpdateTimestampMs 1700000000123
        "0000018bcfe56800"      # TransactionStartTimestampMs 1700000000000
    )
    assert txn_log.encode_value(m) == expected
    assert txn_log.decode_value("txn-1", expected) == m


def test_partitions_are_written_in_a_deterministic_order() -> None:
    ids = (9, 3, 7, 1, 5, 0, 8, 2)
    parts = [TopicPartition("z", p) for p in ids] + [TopicPartition("a", p) for p in ids]
    forward = txn_log.encode_value(meta(S.ONGOING, frozenset(parts)))
    backward = txn_log.encode_value(meta(S.ONGOING, frozenset(reversed(parts))))
    assert forward == backward
    assert forward is not None
    sorted_ids = struct.pack(">i8i", 8, *sorted(ids))
    assert forward[17:].startswith(struct.pack(">i", 2) + b"\x00\x01a" + sorted_ids + b"\x00\x01z" + sorted_ids)


# ---------------------------------------------------------------------------------- v1 (flexible)


def compact_string(s: str) -> bytes:
    b = s.encode()
    return uvarint(len(b) + 1) + b


def test_decode_flexible_v1_value() -> None:
    # Built by hand from TransactionLogValue.json, version 1: compact arrays/strings, tagged fields.
    long_topic = "t" * 200  # a length that needs two varint bytes
    value = (
        struct.pack(">h", 1)
        + struct.pack(">qhib", 9001, 7, 30_000, S.PREPARE_COMMIT.value)
        + uvarint(2 + 1)                                       # 2 topics
        + compact_string("orders") + uvarint(2 + 1) + struct.pack(">ii", 3, 1)
        + uvarint(1) + uvarint(9) + uvarint(3) + b"xyz"        # one unknown tagged field in the entry
        + compact_string(long_topic) + uvarint(1 + 1) + struct.pack(">i", 0)
        + uvarint(0)                                           # no tagged fields
        + struct.pack(">qq", 5_000, 4_000)                     # last update, start
        + uvarint(2)                                           # top-level tagged fields:
        + uvarint(0) + uvarint(8) + struct.pack(">q", 8999)    #   PreviousProducerId
        + uvarint(2) + uvarint(2) + struct.pack(">h", 1)       #   ClientTransactionVersion
    )
    assert txn_log.decode_value("tx", value) == TxnMetadata(
        transactional_id="tx", producer_id=9001, producer_epoch=7, timeout_ms=30_000, state=S.PREPARE_COMMIT,
        partitions=frozenset({TopicPartition("orders", 3), TopicPartition("orders", 1),
                              TopicPartition(long_topic, 0)}),
        start_ms=4_000, last_update_ms=5_000, previous_producer_id=8999, client_transaction_version=1)


def test_decode_flexible_v1_value_with_null_partitions() -> None:
    value = (struct.pack(">h", 1) + struct.pack(">qhib", 5, 0, 60_000, S.EMPTY.value)
             + uvarint(0)                                   # null compact array
             + struct.pack(">qq", 123, -1) + uvarint(0))
    decoded = txn_log.decode_value("tx", value)
    assert (decoded.state, decoded.partitions, decoded.producer_id, decoded.start_ms, decoded.last_update_ms) \
        == (S.EMPTY, frozenset(), 5, -1, 123)


def test_key_of_another_version_is_not_ours() -> None:
    assert txn_log.decode_key(struct.pack(">h", 1) + struct.pack(">h", 2) + b"tx") is None


# ---------------------------------------------------------------------------------- partitioning
@pytest.mark.parametrize(("s", "java_hash"), [
    ("hello", 99162322),
    ("", 0),
    ("polygenelubricants", -2147483648),
    ("Hello World", -862545276),
    ("Aa", 2112),
    ("BB", 2112),
    ("\U0001F600", 1772899),  # a surrogate pair: Java hashes UTF-16 code units
])
def test_java_string_hash(s: str, java_hash: int) -> None:
    assert txn_log.java_string_hash(s) == java_hash


@pytest.mark.parametrize(("s", "partitions", "expected"), [
    ("polygenelubricants", 50, 0),   # Utils.abs(Integer.MIN_VALUE) == 0
    ("polygenelubricants", 7, 0),    # (abs(MIN_VALUE) would be 2**31, and 2**31 % 7 == 2)
    ("hello", 50, 99162322 % 50),
    ("Hello World", 50, 862545276 % 50),  # abs first: Python's -862545276 % 50 would be 24
    ("", 50, 0),
])
def test_partition_for(s: str, partitions: int, expected: int) -> None:
    assert txn_log.partition_for(s, partitions) == expected
