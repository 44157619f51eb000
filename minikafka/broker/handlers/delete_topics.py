"""DeleteTopics (API 20): by name (v0-5) or by name or id (v6)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any, ClassVar

from minikafka.broker.context import RequestContext
from minikafka.broker.services import BrokerServices
from minikafka.broker.throttling import THROTTLING_QUOTA_EXCEEDED_MESSAGE, MutationQuota, mutation_quota
from minikafka.protocol import messages
from minikafka.protocol.errors import ErrorCode
from minikafka.storage.log_manager import TopicError

ZERO_UUID = uuid.UUID(int=0)


@dataclass(frozen=True, slots=True)
class DeleteTopicsHandler:
    api_key: ClassVar[int] = 20
    svc: BrokerServices

    async def __call__(self, ctx: RequestContext, req: Any) -> messages.DeleteTopicsResponse:
        # Requests below v6 name topics in topic_names; versions.upgrade moved them to `topics`.
        quota = mutation_quota(self.svc.quotas, self.api_key, ctx.api_version, ctx.client_id, self.svc.clock.now_ms())
        results = [self._delete(entry.name, entry.topic_id, quota) for entry in req.topics]
        return messages.DeleteTopicsResponse(throttle_time=quota.throttle_time(), responses=tuple(results))

    def _delete(self, name: str | None, topic_id: uuid.UUID | None, quota: MutationQuota
                ) -> messages.DeletableTopicResult:
        logs = self.svc.logs
        if name is None and topic_id not in (None, ZERO_UUID):
            info = logs.topic_by_id(topic_id)  # type: ignore[arg-type]
            if info is None:
                return messages.DeletableTopicResult(name=None, topic_id=topic_id, error_code=ErrorCode.unknown_topic_id,
                                            error_message="The topic id does not exist.")
            name = info.name
        assert name is not None
        info = logs.topics.get(name)
        if info is not None and info.internal:
            return messages.DeletableTopicResult(name=name, topic_id=info.topic_id, error_code=ErrorCode.invalid_topic_exception,
                                        error_message=f"Cannot delete internal topic {name}")
        if info is not None and not quota.admit(info.partitions):
            return messages.DeletableTopicResult(name=name, topic_id=info.topic_id,
                                                 error_code=ErrorCode.throttling_quota_exceeded,
                                                 error_message=THROTTLING_QUOTA_EXCEEDED_MESSAGE)
        try:
            deleted = logs.delete_topic(name)
            self.svc.meters.forget_topic(name)
        except TopicError as exc:
            return messages.DeletableTopicResult(name=name, topic_id=ZERO_UUID, error_code=exc.error_code,
                                        error_message=str(exc))
        return messages.DeletableTopicResult(name=name, topic_id=deleted.topic_id, error_code=ErrorCode.none)
