"""DeleteShareGroupOffsets (API 92, KIP-932): an empty share group forgets topics: their
share-partition state is deleted, and a later member starts them over from share.auto.offset.reset
(`kafka-share-groups.sh --delete-offsets`).

Kafka 4.3.1's answers, observed on this machine: a group with members is NON_EMPTY_GROUP "The group
is not empty."; a topic that does not exist is UNKNOWN_TOPIC_OR_PARTITION; a group id nobody uses
is answered without errors.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from minikafka.broker.context import RequestContext
from minikafka.broker.handlers.alter_share_group_offsets import NOT_EMPTY, UNKNOWN
from minikafka.broker.handlers.share_group_heartbeat import share_groups_enabled
from minikafka.broker.services import BrokerServices
from minikafka.coordinator.group.coordinator import GroupCoordinator
from minikafka.protocol import messages
from minikafka.protocol.errors import ErrorCode
from minikafka.protocol.types import ZERO_MS


@dataclass(frozen=True, slots=True)
class DeleteShareGroupOffsetsHandler:
    api_key: ClassVar[int] = 92
    svc: BrokerServices
    groups: GroupCoordinator

    async def __call__(self, ctx: RequestContext, req: Any) -> messages.DeleteShareGroupOffsetsResponse:
        if not share_groups_enabled(self.svc):
            return self.error_response(req, ErrorCode.unsupported_version)
        gid = req.group_id
        if self.groups.group_type(gid) not in (None, "share"):
            return self.error_response(req, ErrorCode.group_id_not_found, f"Group {gid} is not a share group.")
        infos = [(t.topic_name, self.svc.logs.topics.get(t.topic_name)) for t in req.topics]
        known = [info.topic_id for _name, info in infos if info is not None]
        code = await self.groups.share.delete_offsets(gid, known, self.svc.clock.now_ms())
        if code is not ErrorCode.none:
            return self.error_response(req, code, NOT_EMPTY if code is ErrorCode.non_empty_group else None)
        if self.svc.share is not None:
            self.svc.share.forget_topics(gid, known)
        return messages.DeleteShareGroupOffsetsResponse(
            throttle_time=ZERO_MS, error_code=ErrorCode.none, error_message=None, responses=tuple(
                messages.DeleteShareGroupOffsetsTopic(
                    topic_name=name, topic_id=None if info is None else info.topic_id,
                    error_code=ErrorCode.none if info is not None else ErrorCode.unknown_topic_or_partition,
                    error_message=None if info is not None else UNKNOWN) for name, info in infos))

    def error_response(self, req: Any, code: ErrorCode, message: str | None = None
                       ) -> messages.DeleteShareGroupOffsetsResponse:
        return messages.DeleteShareGroupOffsetsResponse(throttle_time=ZERO_MS, error_code=code, error_message=message,
                                                        responses=())
