"""DescribeAcls (API 29): the ACLs a filter matches, grouped by resource pattern.

Without an authorizer (no `authorizer.class.name`) Kafka answers every ACL request with
SECURITY_DISABLED (54); clients such as MirrorMaker 2 read that as "no ACLs here" and stop asking.
With one (security/acl_manager.py), the caller needs DESCRIBE on the cluster (checked by the
authorization door, broker/authorization.py).

Kafka: AclApis (the messages below are Kafka 4.3.1's, checked by
tests/integration/test_admin_apis.py in conformance mode).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from minikafka.broker.context import RequestContext
from minikafka.broker.dispatch import CloseConnection
from minikafka.broker.services import BrokerServices
from minikafka.protocol import messages
from minikafka.protocol.errors import ErrorCode
from minikafka.protocol.types import ZERO_MS
from minikafka.security.acls import AclFilter, InvalidAcl

NO_AUTHORIZER = "No Authorizer is configured."  # CreateAcls and DeleteAcls
NO_AUTHORIZER_ON_BROKER = "No Authorizer is configured on the broker"  # DescribeAcls


@dataclass(frozen=True, slots=True)
class DescribeAclsHandler:
    api_key: ClassVar[int] = 29
    svc: BrokerServices

    async def __call__(self, ctx: RequestContext, req: Any) -> messages.DescribeAclsResponse:
        if 0 in (req.resource_type_filter, req.pattern_type_filter, req.operation, req.permission_type):
            # Kafka refuses to parse it (an UNKNOWN code, 0): the connection closes
            raise CloseConnection("DescribeAclsRequest contains UNKNOWN elements")
        acls = self.svc.acls
        if acls is None:
            return messages.DescribeAclsResponse(throttle_time=ZERO_MS, error_code=ErrorCode.security_disabled,
                                                 error_message=NO_AUTHORIZER_ON_BROKER, resources=())
        f = AclFilter.of(req.resource_type_filter, req.resource_name_filter, req.pattern_type_filter,
                         req.principal_filter, req.host_filter, req.operation, req.permission_type)
        try:
            found = acls.describe(f)
        except InvalidAcl as exc:
            return messages.DescribeAclsResponse(throttle_time=ZERO_MS, error_code=ErrorCode.invalid_request,
                                                 error_message=str(exc), resources=())
        grouped: dict[tuple[int, str, int], list[Any]] = {}
        for b in found:
            grouped.setdefault((b.resource_type, b.resource_name, b.pattern_type), []).append(
                messages.AclDescription(principal=b.principal, host=b.host, operation=b.operation,
                                        permission_type=b.permission))
        return messages.DescribeAclsResponse(
            throttle_time=ZERO_MS, error_code=ErrorCode.none, error_message=None,
            resources=tuple(messages.DescribeAclsResource(resource_type=rt, resource_name=name, pattern_type=pt,
                                                          acls=tuple(entries))
                            for (rt, name, pt), entries in grouped.items()))
