"""AddPartitionsToTxn (API 24, v0-3): add partitions to the producer's open transaction.

Kafka: KafkaApis.handleAddPartitionsToTxnRequest -> TransactionCoordinator.handleAddPartitionsToTransaction.
Unknown partitions fail alone (UNKNOWN_TOPIC_OR_PARTITION) and the others are not attempted
(OPERATION_NOT_ATTEMPTED); otherwise every partition gets the coordinator's one answer. Clients
below v2 do not know PRODUCER_FENCED and get INVALID_PRODUCER_EPOCH (protocol.md P-13).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from minikafka.broker.context import RequestContext
from minikafka.broker.services import BrokerServices
from minikafka.protocol import messages
from minikafka.protocol.errors import ErrorCode
from minikafka.protocol.types import ZERO_MS, TopicPartition


def fenced_for_old_clients(error: ErrorCode, api_version: int, first_version_knowing_fenced: int = 2) -> ErrorCode:
    if error is ErrorCode.producer_fenced and api_version < first_version_knowing_fenced:
        return ErrorCode.invalid_producer_epoch
    return error


@dataclass(frozen=True, slots=True)
class AddPartitionsToTxnHandler:
    api_key: ClassVar[int] = 24
    svc: BrokerServices

    async def __call__(self, ctx: RequestContext, req: Any) -> messages.AddPartitionsToTxnResponse:
        wanted = [TopicPartition(t.name, p) for t in req.v3_and_below_topics for p in t.partitions]
        unknown = {tp for tp in wanted if self.svc.logs.get(tp) is None}
        if unknown:
            errors = {tp: ErrorCode.unknown_topic_or_partition if tp in unknown else ErrorCode.operation_not_attempted
                      for tp in wanted}
        else:
            assert self.svc.txn is not None
            error = await self.svc.txn.add_partitions(
                req.v3_and_below_transactional_id, producer_id=req.v3_and_below_producer_id,
                producer_epoch=req.v3_and_below_producer_epoch, partitions=frozenset(wanted),
                now_ms=self.svc.clock.now_ms)
            error = fenced_for_old_clients(error, ctx.api_version)
            errors = {tp: error for tp in wanted}
        return _answer(wanted, errors)

    def error_response(self, req: Any, code: ErrorCode) -> messages.AddPartitionsToTxnResponse:
        """Every partition asked for answered `code` (a fault rule's error, or a failed handler):
        versions up to 3, which this broker serves, carry errors per partition only."""
        wanted = [TopicPartition(t.name, p) for t in req.v3_and_below_topics for p in t.partitions]
        return _answer(wanted, dict.fromkeys(wanted, code))


def _answer(wanted: list[TopicPartition], errors: dict[TopicPartition, ErrorCode]) -> messages.AddPartitionsToTxnResponse:
    by_topic: dict[str, list[messages.AddPartitionsToTxnPartitionResult]] = {}
    for tp in wanted:
        by_topic.setdefault(tp.topic, []).append(
            messages.AddPartitionsToTxnPartitionResult(partition_index=tp.partition, partition_error_code=errors[tp]))
    return messages.AddPartitionsToTxnResponse(
        throttle_time=ZERO_MS,
        results_by_topic_v3_and_below=tuple(
            messages.AddPartitionsToTxnTopicResult(name=name, results_by_partition=tuple(parts))
            for name, parts in by_topic.items()),
    )
