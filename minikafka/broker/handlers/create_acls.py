"""CreateAcls (API 30): each binding is checked (Kafka's INVALID_REQUEST messages), stored in the
data dir, then in force; one already there is not added twice. SECURITY_DISABLED without an
authorizer (see describe_acls.py). The caller needs ALTER on the cluster (authorization door).
Kafka: AclApis.handleCreateAcls, AclControlManager.validateNewAcl."""

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
from minikafka.security.acls import AclBinding

log = structlog.get_logger("minikafka.broker")


@dataclass(frozen=True, slots=True)
class CreateAclsHandler:
    api_key: ClassVar[int] = 30
    svc: BrokerServices

    async def __call__(self, ctx: RequestContext, req: Any) -> messages.CreateAclsResponse:
        if any(0 in (c.resource_type, c.resource_pattern_type, c.operation, c.permission_type) for c in req.creations):
            # Kafka refuses to parse it (an UNKNOWN code, 0): the connection closes
            raise CloseConnection("CreatableAcls contain unknown elements")
        acls = self.svc.acls
        if acls is None:
            return messages.CreateAclsResponse(throttle_time=ZERO_MS, results=tuple(
                messages.AclCreationResult(error_code=ErrorCode.security_disabled, error_message=NO_AUTHORIZER)
                for _ in req.creations))
        if any(1 in (c.resource_type, c.operation, c.permission_type) or c.resource_pattern_type in (1, 2)
               for c in req.creations):
            # ANY or MATCH belong to filters: Kafka cannot even build the bindings of such a request
            # (AclBinding refuses them) and fails all of it with UNKNOWN_SERVER_ERROR, no message.
            return messages.CreateAclsResponse(throttle_time=ZERO_MS, results=tuple(
                messages.AclCreationResult(error_code=ErrorCode.unknown_server_error, error_message=None)
                for _ in req.creations))
        bindings = [AclBinding.of(c.resource_type, c.resource_name, c.resource_pattern_type, c.principal, c.host,
                                  c.operation, c.permission_type) for c in req.creations]
        try:
            outcomes = acls.create(bindings)
        except OSError as exc:  # not stored: nothing changed
            log.warning("acls_not_stored", reason=str(exc))
            return messages.CreateAclsResponse(throttle_time=ZERO_MS, results=tuple(
                messages.AclCreationResult(error_code=ErrorCode.unknown_server_error, error_message=str(exc))
                for _ in req.creations))
        log.info("acls_created", client_id=ctx.client_id, count=sum(o is None for o in outcomes))
        return messages.CreateAclsResponse(throttle_time=ZERO_MS, results=tuple(
            messages.AclCreationResult(error_code=ErrorCode.none if o is None else ErrorCode.invalid_request,
                                       error_message="" if o is None else o)  # Kafka answers "" on success
            for o in outcomes))
