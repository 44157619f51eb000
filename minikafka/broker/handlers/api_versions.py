"""ApiVersions (API 18): the APIs and version ranges the handler registry serves."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from minikafka.broker.context import RequestContext
from minikafka.broker.services import BrokerServices
from minikafka.protocol import messages
from minikafka.protocol.errors import ErrorCode
from minikafka.protocol.types import ZERO_MS


@dataclass(frozen=True, slots=True)
class ApiVersionsHandler:
    api_key: ClassVar[int] = 18
    svc: BrokerServices

    async def __call__(self, ctx: RequestContext, req: Any) -> messages.ApiVersionsResponse:
        keys = tuple(
            messages.ApiVersion(api_key=k, min_version=r.min, max_version=r.max)
            for k, r in sorted(self.svc.served.items())
        )
        # No finalized features: transaction.version stays unadvertised (protocol.md P-8).
        return messages.ApiVersionsResponse(error_code=ErrorCode.none, api_keys=keys, throttle_time=ZERO_MS)
