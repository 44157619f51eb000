"""TxnOffsetCommit (API 28): a consumer group's offsets as part of the producer's transaction.

Kafka: KafkaApis.handleTxnOffsetCommitRequest -> GroupCoordinator.handleTxnCommitOffsets. The
producer must have the group's __consumer_offsets partition in its ongoing transaction
(AddOffsetsToTxn, or from v5 the commit adds it itself: transactions v2); its id and epoch are checked there, and the group's generation and member id
when the client sends them (KIP-447), so a zombie of an old generation cannot commit. The offsets
stay pending until the transaction's marker reaches the offsets partition.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

from minikafka import faults
from minikafka.broker import txn_enrollment
from minikafka.broker.context import RequestContext
from minikafka.broker.services import BrokerServices
from minikafka.coordinator.group.coordinator import OffsetCommitEntry
from minikafka.coordinator.group.offsets_log import TOPIC as OFFSETS_TOPIC
from minikafka.protocol import messages
from minikafka.protocol.errors import ErrorCode
from minikafka.protocol.types import ZERO_MS, TopicPartition


@dataclass(frozen=True, slots=True)
class TxnOffsetCommitHandler:
    api_key: ClassVar[int] = 28
    svc: BrokerServices

    async def __call__(self, ctx: RequestContext, req: Any) -> messages.TxnOffsetCommitResponse:
        groups, txn = self.svc.groups, self.svc.txn
        assert groups is not None and txn is not None
        codes: dict[TopicPartition, ErrorCode] = {}
        wanted: dict[TopicPartition, OffsetCommitEntry] = {}
        offsets_tp = TopicPartition(OFFSETS_TOPIC, groups.partition_for(req.group_id))
        verified = ErrorCode.none
        if ctx.api_version >= txn_enrollment.TXN_OFFSET_COMMIT_SINCE:
            # Transactions v2: no AddOffsetsToTxn came first; the commit adds the offsets partition.
            groups.ensure_offsets_topic(self.svc.clock.now_ms())
            verified = await txn_enrollment.enroll_offsets(self.svc, req.transactional_id, req.producer_id,
                                                           req.producer_epoch, offsets_tp)
        if verified is ErrorCode.none:
            verified = txn.verify_partition(req.transactional_id, req.producer_id, req.producer_epoch, offsets_tp)
        for t in req.topics:
            info = self.svc.logs.topics.get(t.name)
            for p in t.partitions:
                tp = TopicPartition(t.name, p.partition_index)
                if verified is not ErrorCode.none:
                    codes[tp] = verified
                elif info is None or not 0 <= p.partition_index < info.partitions:
                    codes[tp] = ErrorCode.unknown_topic_or_partition
                else:
                    wanted[tp] = OffsetCommitEntry(offset=p.committed_offset, leader_epoch=p.committed_leader_epoch,
                                                   metadata=p.committed_metadata)
        if wanted:
            codes.update(await groups.commit_transactional_offsets(
                req.group_id, producer_id=req.producer_id, producer_epoch=req.producer_epoch,
                member_id=req.member_id, group_instance_id=req.group_instance_id, generation_id=req.generation_id,
                offsets=wanted, now_ms=self.svc.clock.now_ms(), api_version=ctx.api_version))
            self.svc.faults.reach(faults.AFTER_TXN_OFFSET_COMMIT)
            if self.svc.invariants is not None:
                for tp, entry in wanted.items():
                    if codes.get(tp) is ErrorCode.none:
                        self.svc.invariants.txn_offset_written(req.group_id, req.producer_id,
                                                               (tp.topic, tp.partition), entry.offset)
        return _answer(req, lambda tp: codes[tp])

    def error_response(self, req: Any, code: ErrorCode) -> messages.TxnOffsetCommitResponse:
        """Every partition asked for answered `code` (a fault rule's error, or a failed handler):
        TxnOffsetCommit has no error code but the partitions'."""
        return _answer(req, lambda _tp: code)


def _answer(req: Any, code_of: Callable[[TopicPartition], ErrorCode]) -> messages.TxnOffsetCommitResponse:
    return messages.TxnOffsetCommitResponse(throttle_time=ZERO_MS, topics=tuple(
        messages.TxnOffsetCommitResponseTopic(name=t.name, partitions=tuple(
            messages.TxnOffsetCommitResponsePartition(partition_index=p.partition_index,
                                                      error_code=code_of(TopicPartition(t.name, p.partition_index)))
            for p in t.partitions))
        for t in req.topics))
