"""OffsetFetch (API 9): committed offsets of a group (-1 where there is none).

Kafka: KafkaApis.handleOffsetFetchRequest, OffsetMetadataManager.fetchOffsets / fetchAllOffsets.
A null topic list (v2+) means every partition with an offset. With require_stable (v7, KIP-447)
partitions with pending transactional offsets answer UNSTABLE_OFFSET_COMMIT. v8+ (KIP-709) ask for
several groups at once; older versions are one group (protocol/versions.py converts both ways).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from minikafka.broker.context import RequestContext
from minikafka.broker.services import BrokerServices
from minikafka.coordinator.group.coordinator import GroupCoordinator
from minikafka.protocol import messages
from minikafka.protocol.errors import ErrorCode
from minikafka.protocol.types import ZERO_MS, TopicPartition


MEMBER_SINCE = 9  # OffsetFetch v9 (KIP-848) names the member asking


@dataclass(frozen=True, slots=True)
class OffsetFetchHandler:
    api_key: ClassVar[int] = 9
    svc: BrokerServices
    groups: GroupCoordinator

    async def __call__(self, ctx: RequestContext, req: Any) -> messages.OffsetFetchResponse:
        return messages.OffsetFetchResponse(throttle_time=ZERO_MS, groups=tuple(
            self._group(g, bool(req.require_stable), ctx.api_version) for g in req.groups))

    def _group(self, g: Any, require_stable: bool, version: int) -> messages.OffsetFetchResponseGroup:
        if not g.group_id:
            return messages.OffsetFetchResponseGroup(group_id=g.group_id, topics=(), error_code=ErrorCode.invalid_group_id)
        # member_id / member_epoch (v9, KIP-848) are checked only for consumer-protocol groups;
        # a classic group ignores them, as Kafka's ClassicGroup.validateOffsetFetch does.
        if version >= MEMBER_SINCE:
            code = self.groups.validate_offset_fetch(g.group_id, getattr(g, "member_id", None),
                                                     getattr(g, "member_epoch", -1))
            if code is not ErrorCode.none:
                return messages.OffsetFetchResponseGroup(group_id=g.group_id, topics=(), error_code=code)
        wanted = None if g.topics is None else [
            TopicPartition(t.name, p) for t in g.topics for p in t.partition_indexes]
        fetched = self.groups.fetch_offsets(g.group_id, wanted, require_stable)
        if self.svc.invariants is not None:
            for f in fetched:
                if f.error is ErrorCode.none:
                    self.svc.invariants.offset_served(g.group_id, (f.tp.topic, f.tp.partition), f.offset)
        by_topic: dict[str, list[messages.OffsetFetchResponsePartition]] = {}
        for f in fetched:
            by_topic.setdefault(f.tp.topic, []).append(messages.OffsetFetchResponsePartition(
                partition_index=f.tp.partition, committed_offset=f.offset, committed_leader_epoch=f.leader_epoch,
                metadata=f.metadata, error_code=f.error))
        return messages.OffsetFetchResponseGroup(group_id=g.group_id, error_code=ErrorCode.none, topics=tuple(
            messages.OffsetFetchResponseTopic(name=name, partitions=tuple(parts)) for name, parts in by_topic.items()))
