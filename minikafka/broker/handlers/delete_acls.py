"""DeleteAcls (API 31): every ACL each filter matches is removed (and listed in its result); a
filter Kafka refuses is INVALID_REQUEST. SECURITY_DISABLED without an authorizer (see
describe_acls.py). The caller needs ALTER on the cluster (authorization door).
Kafka: AclApis.handleDeleteAcls, AclControlManager.deleteAcls."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import structlog

from minikafka.broker.context import RequestContext
from minikafka.broker.dispatch import CloseConnection
from minikafka.broker.handlers.describe_acls import NO_AUTHORIZER
from minikafka.broker.services import BrokerServices
from minikafka.protocol import messages
from minikafka.protocol.errors import ErrorCode
from minikafka.protocol.types import ZERO_MS
from minikafka.security.acls import AclFilter

log = structlog.get_logger("minikafka.broker")


@dataclass(frozen=True, slots=True)
class DeleteAclsHandler:
    api_key: ClassVar[int] = 31
    svc: BrokerServices

    async def __call__(self, ctx: RequestContext, req: Any) -> messages.DeleteAclsResponse:
        if any(0 in (f.resource_type_filter, f.pattern_type_filter, f.operation, f.permission_type) for f in req.filters):
            # Kafka refuses to parse it (an UNKNOWN code, 0): the connection closes
            raise CloseConnection("DeleteAclsRequest contains UNKNOWN elements")
        acls = self.svc.acls
        if acls is None:
            return messages.DeleteAclsResponse(throttle_time=ZERO_MS, filter_results=tuple(
                messages.DeleteAclsFilterResult(error_code=ErrorCode.security_disabled, error_message=NO_AUTHORIZER,
                                                matching_acls=())
                for _ in req.filters))
        filters = [AclFilter.of(f.resource_type_filter, f.resource_name_filter, f.pattern_type_filter,
                                f.principal_filter, f.host_filter, f.operation, f.permission_type) for f in req.filters]
        try:
            results = acls.delete(filters)
        except OSError as exc:
            log.warning("acls_not_stored", reason=str(exc))
            return messages.DeleteAclsResponse(throttle_time=ZERO_MS, filter_results=tuple(
                messages.DeleteAclsFilterResult(error_code=ErrorCode.unknown_server_error, error_message=str(exc),
                                                matching_acls=())
                for _ in req.filters))
        log.info("acls_deleted", client_id=ctx.client_id, count=sum(len(r) for r in results if isinstance(r, list)))
        out = []
        for r in results:
            if isinstance(r, str):
                out.append(messages.DeleteAclsFilterResult(error_code=ErrorCode.invalid_request, error_message=r,
                                                           matching_acls=()))
                continue
            out.append(messages.DeleteAclsFilterResult(error_code=ErrorCode.none, error_message=None, matching_acls=tuple(
                messages.DeleteAclsMatchingAcl(error_code=ErrorCode.none, error_message=None,
                                               resource_type=b.resource_type, resource_name=b.resource_name,
                                               pattern_type=b.pattern_type, principal=b.principal, host=b.host,
                                               operation=b.operation, permission_type=b.permission)
                for b in r)))
        return messages.DeleteAclsResponse(throttle_time=ZERO_MS, filter_results=tuple(out))
