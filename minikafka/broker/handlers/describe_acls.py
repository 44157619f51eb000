"""DescribeAcls (API 29): minikafka has no authorizer, and Kafka without one (no
`authorizer.class.name`) answers every ACL request with SECURITY_DISABLED (54). Clients such as
MirrorMaker 2 read that answer as "no ACLs here" and stop asking; an unsupported API instead
makes them log an error on every sync.

Kafka: AclApis (no authorizer -> SECURITY_DISABLED; the messages below are Kafka 4.3.1's, checked
by tests/integration/test_admin_apis.py in conformance mode).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from minikafka.broker.context import RequestContext
from minikafka.broker.services import BrokerServices
from minikafka.protocol import messages
from minikafka.protocol.errors import ErrorCode
from minikafka.protocol.types import ZERO_MS

NO_AUTHORIZER = "No Authorizer is configured."  # CreateAcls and DeleteAcls
NO_AUTHORIZER_ON_BROKER = "No Authorizer is configured on the broker"  # DescribeAcls


@dataclass(frozen=True, slots=True)
class DescribeAclsHandler:
    api_key: ClassVar[int] = 29
    svc: BrokerServices

    async def __call__(self, ctx: RequestContext, req: Any) -> messages.DescribeAclsResponse:
        return messages.DescribeAclsResponse(throttle_time=ZERO_MS, error_code=ErrorCode.security_disabled,
                                             error_message=NO_AUTHORIZER_ON_BROKER, resources=())
