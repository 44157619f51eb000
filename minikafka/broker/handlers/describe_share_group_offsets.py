"""DescribeShareGroupOffsets (API 90, KIP-932; v1 adds the lag, KIP-1226): each share-partition's
start offset and lag, what `kafka-share-groups.sh --describe` prints.

Kafka 4.3.1's answers, observed on this machine: without topics, every partition the group has
share state for; a partition whose state was never fetched (or a topic that does not exist, topic
id null) has start offset -1 and lag -1; a group id nobody uses is answered without an error and
without topics. The lag is the records between the start offset and the high watermark not yet
delivered for good: high watermark - start offset - delivery-complete count. One difference: Kafka
reports the start offset its share coordinator last wrote, which its writes carry from before the
acknowledgements they persist; minikafka's writes carry the start offset after them (the lag is
the same).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from minikafka.broker.context import RequestContext
from minikafka.broker.handlers.share_group_heartbeat import share_groups_enabled
from minikafka.broker.services import BrokerServices
from minikafka.coordinator.group.coordinator import GroupCoordinator
from minikafka.protocol import messages
from minikafka.protocol.errors import ErrorCode
from minikafka.protocol.types import ZERO_MS, TopicPartition


@dataclass(frozen=True, slots=True)
class DescribeShareGroupOffsetsHandler:
    api_key: ClassVar[int] = 90
    svc: BrokerServices
    groups: GroupCoordinator

    async def __call__(self, ctx: RequestContext, req: Any) -> messages.DescribeShareGroupOffsetsResponse:
        if not share_groups_enabled(self.svc):
            return self.error_response(req, ErrorCode.unsupported_version)
        return messages.DescribeShareGroupOffsetsResponse(throttle_time=ZERO_MS, groups=tuple(
            self._group(g.group_id, g.topics) for g in req.groups))

    def _group(self, group_id: str, topics: Any) -> Any:
        group = self.groups.share.describe(group_id)
        if group is None:
            return messages.DescribeShareGroupOffsetsGroup(group_id=group_id, topics=(), error_code=ErrorCode.none,
                                                           error_message=None)
        wanted: list[tuple[str, tuple[int, ...]]]
        if topics is None:
            wanted = [(t.name, tuple(sorted(t.partitions))) for _tid, t in sorted(group.initialized.items(),
                                                                                  key=lambda e: e[1].name)]
        else:
            wanted = [(t.topic_name, tuple(t.partitions)) for t in topics]
        return messages.DescribeShareGroupOffsetsGroup(
            group_id=group_id, error_code=ErrorCode.none, error_message=None,
            topics=tuple(self._topic(group_id, name, parts) for name, parts in wanted))

    def _topic(self, group_id: str, name: str, partitions: tuple[int, ...]) -> Any:
        info = self.svc.logs.topics.get(name)
        out = []
        for p in partitions:
            start, lag = -1, -1
            state = None if info is None else self.groups.share.share_state.read((group_id, info.topic_id, p))
            plog = self.svc.logs.get(TopicPartition(name, p))
            if state is not None and state.start_offset >= 0 and plog is not None:
                start = state.start_offset
                lag = max(plog.high_watermark - start - max(state.delivery_complete_count, 0), 0)
            out.append(messages.DescribeShareGroupOffsetsPartition(
                partition_index=p, start_offset=start, leader_epoch=0, lag=lag, error_code=ErrorCode.none,
                error_message=None))
        return messages.DescribeShareGroupOffsetsTopic(topic_name=name, topic_id=None if info is None else info.topic_id,
                                                       partitions=tuple(out))

    def error_response(self, req: Any, code: ErrorCode) -> messages.DescribeShareGroupOffsetsResponse:
        return messages.DescribeShareGroupOffsetsResponse(throttle_time=ZERO_MS, groups=tuple(
            messages.DescribeShareGroupOffsetsGroup(group_id=g.group_id, topics=(), error_code=code,
                                                    error_message=None) for g in req.groups))
