"""SaslHandshake (API 17): the client names its SASL mechanism; the answer lists the enabled ones.

The connection's session (security/session.py) decides: NONE and the next step is
SaslAuthenticate (v1) or bare tokens (v0); UNSUPPORTED_SASL_MECHANISM fails the authentication
(the connection closes after the delay); on a listener without SASL, or after authentication
when the client cannot re-authenticate, ILLEGAL_SASL_STATE, as Kafka's KafkaApis answers.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from minikafka.broker.context import RequestContext
from minikafka.broker.services import BrokerServices
from minikafka.protocol import messages
from minikafka.protocol.errors import ErrorCode


@dataclass(frozen=True, slots=True)
class SaslHandshakeHandler:
    api_key: ClassVar[int] = 17
    svc: BrokerServices

    async def __call__(self, ctx: RequestContext, req: Any) -> messages.SaslHandshakeResponse:
        if ctx.session is None:
            return messages.SaslHandshakeResponse(error_code=ErrorCode.illegal_sasl_state, mechanisms=())
        error, mechanisms = ctx.session.handshake(req.mechanism, ctx.api_version)
        return messages.SaslHandshakeResponse(error_code=error, mechanisms=mechanisms)
