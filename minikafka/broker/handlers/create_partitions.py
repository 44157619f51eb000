"""CreatePartitions (API 37): grow a topic's partition count."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from minikafka.broker.context import RequestContext
from minikafka.broker.services import BrokerServices
from minikafka.broker.throttling import THROTTLING_QUOTA_EXCEEDED_MESSAGE, mutation_quota
from minikafka.protocol import messages
from minikafka.protocol.errors import ErrorCode
from minikafka.storage.log_manager import TopicError


@dataclass(frozen=True, slots=True)
class CreatePartitionsHandler:
    api_key: ClassVar[int] = 37
    svc: BrokerServices

    async def __call__(self, ctx: RequestContext, req: Any) -> messages.CreatePartitionsResponse:
        results = []
        quota = mutation_quota(self.svc.quotas, self.api_key, ctx.api_version, ctx.client_id, self.svc.clock.now_ms())
        for t in req.topics:
            try:
                if quota.applies:
                    self.svc.logs.create_partitions(t.name, t.count, now_ms=self.svc.clock.now_ms(), validate_only=True)
                    added = t.count - self.svc.logs.topics[t.name].partitions
                    if not quota.admit(added):
                        results.append(messages.CreatePartitionsTopicResult(
                            name=t.name, error_code=ErrorCode.throttling_quota_exceeded,
                            error_message=THROTTLING_QUOTA_EXCEEDED_MESSAGE))
                        continue
                self.svc.logs.create_partitions(t.name, t.count, now_ms=self.svc.clock.now_ms(),
                                                validate_only=req.validate_only)
            except TopicError as exc:
                results.append(messages.CreatePartitionsTopicResult(name=t.name, error_code=exc.error_code,
                                                           error_message=str(exc)))
                continue
            results.append(messages.CreatePartitionsTopicResult(name=t.name, error_code=ErrorCode.none))
        return messages.CreatePartitionsResponse(throttle_time=quota.throttle_time(), results=tuple(results))
