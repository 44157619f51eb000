"""AlterShareGroupOffsets (API 91, KIP-932): set where an empty share group starts reading each
partition (`kafka-share-groups.sh --reset-offsets`).

Kafka 4.3.1's answers, observed on this machine: a group with members is NON_EMPTY_GROUP "The group
is not empty." for the whole request; a topic or partition that does not exist is
UNKNOWN_TOPIC_OR_PARTITION for that partition, the others are set; a group id nobody used becomes
an empty share group with those offsets.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any, ClassVar

from minikafka.broker.context import RequestContext
from minikafka.broker.handlers.share_group_heartbeat import share_groups_enabled
from minikafka.broker.services import BrokerServices
from minikafka.coordinator.group.coordinator import GroupCoordinator
from minikafka.protocol import messages
from minikafka.protocol.errors import ErrorCode
from minikafka.protocol.types import ZERO_MS

UNKNOWN = "This server does not host this topic-partition."
NOT_EMPTY = "The group is not empty."


@dataclass(frozen=True, slots=True)
class AlterShareGroupOffsetsHandler:
    api_key: ClassVar[int] = 91
    svc: BrokerServices
    groups: GroupCoordinator

    async def __call__(self, ctx: RequestContext, req: Any) -> messages.AlterShareGroupOffsetsResponse:
        if not share_groups_enabled(self.svc):
            return self.error_response(req, ErrorCode.unsupported_version)
        gid = req.group_id
        if self.groups.group_type(gid) not in (None, "share"):
            return self.error_response(req, ErrorCode.group_id_not_found, f"Group {gid} is not a share group.")
        offsets: dict[tuple[uuid.UUID, int], int] = {}
        names: dict[uuid.UUID, str] = {}
        results: list[tuple[str, uuid.UUID | None, list[tuple[int, ErrorCode]]]] = []
        for t in req.topics:
            info = self.svc.logs.topics.get(t.topic_name)
            parts = []
            for p in t.partitions:
                if info is None or not 0 <= p.partition_index < info.partitions:
                    parts.append((p.partition_index, ErrorCode.unknown_topic_or_partition))
                    continue
                offsets[(info.topic_id, p.partition_index)] = p.start_offset
                names[info.topic_id] = info.name
                parts.append((p.partition_index, ErrorCode.none))
            results.append((t.topic_name, None if info is None else info.topic_id, parts))
        code = await self.groups.share.alter_offsets(gid, offsets, names, self.svc.clock.now_ms())
        if code is not ErrorCode.none:
            return self.error_response(req, code, NOT_EMPTY if code is ErrorCode.non_empty_group else None)
        if self.svc.share is not None:
            self.svc.share.forget_partitions(gid, offsets)   # the next fetch starts from the new offsets
        results.sort(key=lambda r: r[1] is not None)   # Kafka answers the unknown topics first
        return messages.AlterShareGroupOffsetsResponse(
            throttle_time=ZERO_MS, error_code=ErrorCode.none, error_message=None, responses=tuple(
                messages.AlterShareGroupOffsetsTopic(topic_name=name, topic_id=tid, partitions=tuple(
                    messages.AlterShareGroupOffsetsPartition(partition_index=p, error_code=c,
                                                             error_message=UNKNOWN if c is not ErrorCode.none else None)
                    for p, c in parts)) for name, tid, parts in results))

    def error_response(self, req: Any, code: ErrorCode, message: str | None = None
                       ) -> messages.AlterShareGroupOffsetsResponse:
        return messages.AlterShareGroupOffsetsResponse(throttle_time=ZERO_MS, error_code=code, error_message=message,
                                                       responses=())
