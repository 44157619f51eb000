"""Implicit enrollment in a transaction (transactions v2, KIP-890 part 2).

A TV2 producer sends no AddPartitionsToTxn or AddOffsetsToTxn: a transactional Produce v12+ or
TxnOffsetCommit v5+ adds its partitions to the producer's transaction itself, through the
transaction coordinator, before anything is appended (Kafka's AddPartitionsToTxnManager with the
`addPartition` operation). On one node the coordinator is local: enrollment is one
`add_partitions` call per request, recorded as client transaction.version 2.

The coordinator's refusals become the errors Kafka answers on the Produce path
(ReplicaManager.appendRecordsWithTransactionVerification): the retriable ones
(CONCURRENT_TRANSACTIONS while the previous transaction's markers are written, a coordinator not
ready) become NOT_ENOUGH_REPLICAS, which every client retries without a metadata refresh, and
PRODUCER_FENCED becomes INVALID_PRODUCER_EPOCH. TxnOffsetCommit answers the retriable ones
COORDINATOR_NOT_AVAILABLE, as Kafka's group coordinator normalises NOT_ENOUGH_REPLICAS.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from minikafka.coordinator.transaction.state import TV_2
from minikafka.protocol.errors import ErrorCode
from minikafka.protocol.records import HEADER_SIZE, read_header
from minikafka.protocol.types import TopicPartition

PRODUCE_SINCE = 12           # Produce v12+: the partitions of a transactional request are added
TXN_OFFSET_COMMIT_SINCE = 5  # TxnOffsetCommit v5+: the group's offsets partition is added

_RETRIABLE = frozenset({ErrorCode.concurrent_transactions, ErrorCode.coordinator_load_in_progress,
                        ErrorCode.coordinator_not_available, ErrorCode.not_coordinator})


def produce_error(code: ErrorCode) -> ErrorCode:
    """A verification or enrollment refusal as a Produce answers it."""
    return _answered(code, ErrorCode.not_enough_replicas)


def offset_commit_error(code: ErrorCode) -> ErrorCode:
    """An enrollment refusal as a TxnOffsetCommit answers it."""
    return _answered(code, ErrorCode.coordinator_not_available)


def _answered(code: ErrorCode, retriable_as: ErrorCode) -> ErrorCode:
    if code in _RETRIABLE:
        return retriable_as
    return ErrorCode.invalid_producer_epoch if code is ErrorCode.producer_fenced else code


async def enroll_produce(svc: Any, transactional_id: str, topic_data: Iterable[Any]) -> dict[TopicPartition, ErrorCode]:
    """Add every partition a transactional Produce v12+ writes to to the producer's transaction;
    the partitions that cannot be appended, with the error each answers (empty: go on)."""
    partitions: set[TopicPartition] = set()
    producer: tuple[int, int] | None = None
    for t in topic_data:
        for p in t.partition_data:
            records = p.records
            if not records or len(records) < HEADER_SIZE:
                continue  # the append answers a missing or malformed batch
            h = read_header(records)
            if not h.is_transactional or h.is_control or h.producer_id < 0:
                continue
            tp = TopicPartition(t.name, p.index)
            if svc.logs.get(tp) is None:
                continue  # the append answers UNKNOWN_TOPIC_OR_PARTITION
            partitions.add(tp)
            producer = producer or (h.producer_id, h.producer_epoch)
    if producer is None or svc.txn is None:
        return {}
    error = await svc.txn.add_partitions(transactional_id, producer_id=producer[0], producer_epoch=producer[1],
                                         partitions=frozenset(partitions), now_ms=svc.clock.now_ms, client_tv=TV_2)
    if error is ErrorCode.none:
        return {}
    return dict.fromkeys(partitions, produce_error(error))


async def enroll_offsets(svc: Any, transactional_id: str, producer_id: int, producer_epoch: int,
                         offsets_tp: TopicPartition) -> ErrorCode:
    """Add the group's __consumer_offsets partition to the producer's transaction (TxnOffsetCommit v5+)."""
    error = await svc.txn.add_partitions(transactional_id, producer_id=producer_id, producer_epoch=producer_epoch,
                                         partitions=frozenset({offsets_tp}), now_ms=svc.clock.now_ms, client_tv=TV_2)
    return offset_commit_error(error)
