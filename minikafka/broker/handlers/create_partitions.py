"""CreatePartitions (API 37): grow a topic's partition count."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from minikafka.broker.context import RequestContext
from minikafka.broker.services import BrokerServices
from minikafka.protocol import messages
from minikafka.protocol.errors import ErrorCode
from minikafka.protocol.types import ZERO_MS
from minikafka.storage.log_manager import TopicError


@dataclass(frozen=True, slots=True)
class CreatePartitionsHandler:
    api_key: ClassVar[int] = 37
    svc: BrokerServices

    async def __call__(self, ctx: RequestContext, req: Any) -> messages.CreatePartitionsResponse:
        results = []
        for t in req.topics:
            try:
                self.svc.logs.create_partitions(t.name, t.count, now_ms=self.svc.clock.now_ms(),
                                                validate_only=req.validate_only)
            except TopicError as exc:
                results.append(messages.CreatePartitionsTopicResult(name=t.name, error_code=exc.error_code,
                                                           error_message=str(exc)))
                continue
            if not req.validate_only:
                self.svc.watch_new_partitions(t.name)
            results.append(messages.CreatePartitionsTopicResult(name=t.name, error_code=ErrorCode.none))
        return messages.CreatePartitionsResponse(throttle_time=ZERO_MS, results=tuple(results))
