"""ShareAcknowledge (API 79, KIP-932): acknowledge records a share member holds without fetching
more (a commit of acknowledgements, or the last one as the member closes: epoch -1, which then
ends its share session and releases whatever it still holds).

Kafka: KafkaApis.handleShareAcknowledgeRequest. Epoch 0 is INVALID_SHARE_SESSION_EPOCH (there is
nothing to acknowledge before a session), an unknown session SHARE_SESSION_NOT_FOUND; each
partition's outcome is its ErrorCode (INVALID_RECORD_STATE for a record the member does not hold,
INVALID_REQUEST for a malformed batch list). v2 answers the acquisition lock duration, which a
RENEW acknowledgement (type 4) restarted.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any, ClassVar

from minikafka.broker.context import RequestContext
from minikafka.broker.handlers.share_fetch import acknowledge_all
from minikafka.broker.handlers.share_group_heartbeat import share_groups_enabled
from minikafka.broker.services import BrokerServices
from minikafka.protocol import messages
from minikafka.protocol.errors import ErrorCode
from minikafka.protocol.types import ZERO_MS


@dataclass(frozen=True, slots=True)
class ShareAcknowledgeHandler:
    api_key: ClassVar[int] = 79
    svc: BrokerServices

    async def __call__(self, ctx: RequestContext, req: Any) -> messages.ShareAcknowledgeResponse:
        share = self.svc.share
        if not share_groups_enabled(self.svc) or share is None:
            return self.error_response(req, ErrorCode.unsupported_version)
        gid, mid = req.group_id or "", req.member_id or ""
        if not gid or not mid:
            return self.error_response(req, ErrorCode.invalid_request)
        verdict = share.sessions.share_acknowledge(gid, mid, req.share_session_epoch)
        if verdict.error is not ErrorCode.none:
            return self.error_response(req, verdict.error)
        acks = await acknowledge_all(share, self.svc, gid, mid, req.topics, ctx.api_version)
        if verdict.closes:
            await share.close_session(gid, mid)
        by_topic: dict[uuid.UUID, list[Any]] = {}
        for (tid, p), code in sorted(acks.items()):
            by_topic.setdefault(tid, []).append(messages.ShareAcknowledgePartitionData(
                partition_index=p, error_code=code, error_message=None,
                current_leader=messages.ShareAcknowledgeLeaderIdAndEpoch(leader_id=self.svc.node_id, leader_epoch=0)))
        return messages.ShareAcknowledgeResponse(
            throttle_time=ZERO_MS, error_code=ErrorCode.none, error_message=None,
            acquisition_lock_timeout=share.lock_duration(gid),
            responses=tuple(messages.ShareAcknowledgeTopicResponse(topic_id=tid, partitions=tuple(parts))
                            for tid, parts in by_topic.items()), node_endpoints=())

    def error_response(self, req: Any, code: ErrorCode) -> messages.ShareAcknowledgeResponse:
        return messages.ShareAcknowledgeResponse(throttle_time=ZERO_MS, error_code=code, error_message=None,
                                                 acquisition_lock_timeout=ZERO_MS, responses=(), node_endpoints=())
