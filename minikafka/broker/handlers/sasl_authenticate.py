"""SaslAuthenticate (API 36, KIP-152): one token of the SASL exchange the handshake chose.

The session (security/session.py) runs the mechanism: its answer token, and once the exchange is
complete the session's lifetime when connections.max.reauth.ms asks clients to re-authenticate
(KIP-368, v1+). A failure answers SASL_AUTHENTICATION_FAILED with Kafka's message; the
connection sends it after connection.failed.authentication.delay.ms and closes.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from typing import Any, ClassVar

from minikafka.broker.context import RequestContext
from minikafka.broker.services import BrokerServices
from minikafka.protocol import messages
from minikafka.protocol.errors import ErrorCode
from minikafka.security.session import AuthOutcome


@dataclass(frozen=True, slots=True)
class SaslAuthenticateHandler:
    api_key: ClassVar[int] = 36
    svc: BrokerServices

    async def __call__(self, ctx: RequestContext, req: Any) -> messages.SaslAuthenticateResponse:
        if ctx.session is None:
            outcome = AuthOutcome(ErrorCode.illegal_sasl_state,
                                  "SaslAuthenticate request received after successful authentication")
        else:
            outcome = ctx.session.authenticate(bytes(req.auth_bytes), ctx.api_version, ctx.received_at_ms)
        return messages.SaslAuthenticateResponse(
            error_code=outcome.error, error_message=outcome.message, auth_bytes=outcome.auth_bytes,
            session_lifetime=datetime.timedelta(milliseconds=outcome.session_lifetime_ms))
