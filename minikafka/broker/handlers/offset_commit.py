"""OffsetCommit (API 8): committed offsets go to `__consumer_offsets` before the reply.

Kafka: KafkaApis.handleOffsetCommitRequest (unknown topics answer UNKNOWN_TOPIC_OR_PARTITION),
OffsetMetadataManager.commitOffset, ClassicGroup.validateOffsetCommit (generation -1 with an empty
member id is a simple/admin commit, allowed only while the group is Empty). v2-4's retention_time
is ignored, as Kafka does since 2.1 for brokers with the default retention.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from minikafka.broker.context import RequestContext
from minikafka.broker.services import BrokerServices
from minikafka.coordinator.group.coordinator import GroupCoordinator, OffsetCommitEntry
from minikafka.protocol import messages
from minikafka.protocol.errors import ErrorCode
from minikafka.protocol.types import ZERO_MS, TopicPartition


@dataclass(frozen=True, slots=True)
class OffsetCommitHandler:
    api_key: ClassVar[int] = 8
    svc: BrokerServices
    groups: GroupCoordinator

    async def __call__(self, ctx: RequestContext, req: Any) -> messages.OffsetCommitResponse:
        codes: dict[TopicPartition, ErrorCode] = {}
        wanted: dict[TopicPartition, OffsetCommitEntry] = {}
        for t in req.topics:
            info = self.svc.logs.topics.get(t.name)
            for p in t.partitions:
                tp = TopicPartition(t.name, p.partition_index)
                if not req.group_id:
                    codes[tp] = ErrorCode.invalid_group_id
                elif info is None or not 0 <= p.partition_index < info.partitions:
                    codes[tp] = ErrorCode.unknown_topic_or_partition
                else:
                    wanted[tp] = OffsetCommitEntry(offset=p.committed_offset, leader_epoch=p.committed_leader_epoch,
                                                   metadata=p.committed_metadata)
        if wanted:
            codes.update(await self.groups.commit_offsets(
                req.group_id, req.member_id, req.group_instance_id, req.generation_id_or_member_epoch,
                wanted, self.svc.clock.now_ms(), api_version=ctx.api_version))
            if self.svc.invariants is not None:
                for tp, entry in wanted.items():
                    if codes.get(tp) is ErrorCode.none:
                        self.svc.invariants.offset_committed(req.group_id, (tp.topic, tp.partition), entry.offset)
        return messages.OffsetCommitResponse(throttle_time=ZERO_MS, topics=tuple(
            messages.OffsetCommitResponseTopic(name=t.name, partitions=tuple(
                messages.OffsetCommitResponsePartition(partition_index=p.partition_index,
                                              error_code=codes[TopicPartition(t.name, p.partition_index)])
                for p in t.partitions))
            for t in req.topics))

    def error_response(self, req: Any, code: ErrorCode) -> messages.OffsetCommitResponse:
        return messages.OffsetCommitResponse(throttle_time=ZERO_MS, topics=tuple(
            messages.OffsetCommitResponseTopic(name=t.name, partitions=tuple(
                messages.OffsetCommitResponsePartition(partition_index=p.partition_index, error_code=code)
                for p in t.partitions)) for t in req.topics))
