"""DeleteAcls (API 31): SECURITY_DISABLED for every filter, as Kafka without an authorizer answers
(see describe_acls.py). Kafka: AclApis.handleDeleteAcls."""

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
class DeleteAclsHandler:
    api_key: ClassVar[int] = 31
    svc: BrokerServices

    async def __call__(self, ctx: RequestContext, req: Any) -> messages.DeleteAclsResponse:
        return messages.DeleteAclsResponse(throttle_time=ZERO_MS, filter_results=tuple(
            messages.DeleteAclsFilterResult(error_code=ErrorCode.security_disabled, error_message=NO_AUTHORIZER,
                                            matching_acls=())
            for _ in req.filters))
