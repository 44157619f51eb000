"""CreateAcls (API 30): SECURITY_DISABLED for every creation, as Kafka without an authorizer answers
(see describe_acls.py). Kafka: AclApis.handleCreateAcls."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from minikafka.broker.context import RequestContext
from minikafka.broker.handlers.describe_acls import NO_AUTHORIZER
from minikafka.broker.services import BrokerServices
from minikafka.protocol import messages
from minikafka.protocol.errors import ErrorCode
from minikafka.protocol.types import ZERO_MS


@dataclass(frozen=True, slots=True)
class CreateAclsHandler:
    api_key: ClassVar[int] = 30
    svc: BrokerServices

    async def __call__(self, ctx: RequestContext, req: Any) -> messages.CreateAclsResponse:
        return messages.CreateAclsResponse(throttle_time=ZERO_MS, results=tuple(
            messages.AclCreationResult(error_code=ErrorCode.security_disabled, error_message=NO_AUTHORIZER)
            for _ in req.creations))
