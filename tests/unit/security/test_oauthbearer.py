"""SASL/OAUTHBEARER with Kafka's unsecured-token validator (security/sasl/oauthbearer.py), pure:
RFC 7628's message, the token checks, the JSON error challenge, and the session bound by the
token's expiry."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from minikafka.protocol.errors import ErrorCode
from minikafka.security.listeners import parse_listeners
from minikafka.security.sasl import SaslFailure
from minikafka.security.sasl.oauthbearer import OAuthBearerServer, UnsecuredValidator
from minikafka.security.session import SaslSettings, Session

pytestmark = pytest.mark.unit

NOW_MS = 1_800_000_000_000


def b64(obj: Any) -> str:
    return base64.urlsafe_b64encode(json.dumps(obj).encode()).decode().rstrip("=")


def token(claims: dict[str, Any], header: dict[str, Any] | None = None, signature: str = "") -> str:
    return f"{b64(header or {'alg': 'none'})}.{b64(claims)}.{signature}"


def message(tok: str, authzid: str = "") -> bytes:
    return f"n,{'a=' + authzid if authzid else ''},\x01auth=Bearer {tok}\x01\x01".encode()


GOOD = {"sub": "alice", "exp": NOW_MS / 1000 + 60, "iat": NOW_MS / 1000 - 1, "scope": "kafka read"}


def server(validator: UnsecuredValidator | None = None) -> OAuthBearerServer:
    return OAuthBearerServer(validator or UnsecuredValidator(), lambda: NOW_MS)


def test_a_valid_unsecured_token_names_its_subject() -> None:
    s = server()
    assert s.evaluate(message(token(GOOD))) == b""
    assert (s.complete, s.authorization_id, s.credential_expires_at_ms) == (True, "alice", NOW_MS + 60_000)


@pytest.mark.parametrize("tok", [
    token({**GOOD, "exp": NOW_MS / 1000 - 1}),  # expired
    token(GOOD, header={"alg": "RS256"}),  # claims a signature algorithm
    token(GOOD, signature="c2lnbmF0dXJl"),  # carries a signature
    token({k: v for k, v in GOOD.items() if k != "sub"}),
    token({k: v for k, v in GOOD.items() if k != "exp"}),
    token({**GOOD, "iat": NOW_MS / 1000 + 600}),  # issued in the future
    "not-a-jwt",
])
def test_a_bad_token_is_answered_with_invalid_token_then_fails(tok: str) -> None:
    s = server()
    assert s.evaluate(message(tok)) == b'{"status":"invalid_token"}' and not s.complete
    with pytest.raises(SaslFailure, match='invalid_token') as info:
        s.evaluate(b"\x01")
    assert info.value.shown


def test_a_missing_scope_is_insufficient_scope_with_the_required_scope() -> None:
    s = server(UnsecuredValidator.from_options({"unsecuredValidatorRequiredScope": "kafka write"}))
    assert s.evaluate(message(token(GOOD))) == b'{"status":"insufficient_scope", "scope":"[kafka, write]"}'


def test_the_clock_skew_and_claim_names_are_options() -> None:
    v = UnsecuredValidator.from_options({"unsecuredValidatorAllowableClockSkewMs": "5000",
                                         "unsecuredValidatorPrincipalClaimName": "client_id"})
    s = server(v)
    assert s.evaluate(message(token({"client_id": "svc", "exp": NOW_MS / 1000 - 2}))) == b""
    assert s.authorization_id == "svc"
    with pytest.raises(ValueError, match="negative"):
        UnsecuredValidator.from_options({"unsecuredValidatorAllowableClockSkewMs": "-1"})


def test_malformed_messages_and_another_authorization_id_fail() -> None:
    with pytest.raises(SaslFailure) as info:
        server().evaluate(b"n,,auth=Bearer x")
    assert not info.value.shown
    with pytest.raises(SaslFailure, match="different from the token's principal name") as info:
        server().evaluate(message(token(GOOD), authzid="mallory"))
    assert info.value.shown


def test_the_session_ends_when_the_token_does() -> None:
    (listener,) = parse_listeners("SASL_PLAINTEXT://127.0.0.1:1")
    settings = SaslSettings(mechanisms=("OAUTHBEARER",), plain_users={}, scram_credential=lambda u, m: None,
                            now_ms=lambda: NOW_MS)
    session = Session(listener, sasl=settings)
    session.handshake("OAUTHBEARER", 1)
    out = session.authenticate(message(token(GOOD)), 2, NOW_MS)
    assert (out.error, out.session_lifetime_ms, str(session.principal)) == (ErrorCode.none, 60_000, "User:alice")
    assert session.admit(0, NOW_MS + 59_999) and not session.admit(0, NOW_MS + 60_000)
