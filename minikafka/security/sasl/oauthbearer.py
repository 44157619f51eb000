"""SASL/OAUTHBEARER (RFC 7628) with Kafka's unsecured-token validator (pure).

The client's one message is `n,[a=authzid],^Aauth=Bearer <token>^A[key=value^A...]^A`. The token
is validated as Kafka's OAuthBearerUnsecuredValidatorCallbackHandler does (for tests and local
use, as in Kafka: no signature is checked): a compact JWS `header.claims.` with alg `none` and no
signature, the principal claim (`sub`, or unsecuredValidatorPrincipalClaimName) a non-empty
string, `exp` present and not past (unsecuredValidatorAllowableClockSkewMs), `iat` if present not
in the future nor after `exp`, and the scope claim holding unsecuredValidatorRequiredScope.

A token that fails is answered, as RFC 7628 and Kafka do, with a JSON error as the server's
challenge (`{"status":"invalid_token"}`, or `insufficient_scope` with the scope); the client
answers ^A and the exchange fails with that JSON as the message. The token's expiry bounds the
session (the broker asks the client to re-authenticate before it).
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import json
import re
from collections.abc import Callable, Mapping
from typing import Any

from minikafka.security.sasl import SaslFailure

MECHANISM = "OAUTHBEARER"
_CONTROL_A = "\x01"
_INITIAL = re.compile(r"n,(?:a=(?P<authzid>[^,]*))?,\x01(?P<kvpairs>(?:[A-Za-z]+=[\x21-\x7E \t\r\n]*\x01)*)\x01")
_BEARER = re.compile(r"[Bb][Ee][Aa][Rr][Ee][Rr] +(?P<token>[A-Za-z0-9\-._~+/]+=*)")


class InvalidToken(Exception):
    def __init__(self, reason: str, scope: str | None = None) -> None:
        super().__init__(reason)
        self.scope = scope


@dataclasses.dataclass(frozen=True)
class ValidToken:
    principal: str
    expires_at_ms: int


@dataclasses.dataclass(frozen=True)
class UnsecuredValidator:
    """Kafka's unsecured validator with its JAAS options (unsecuredValidator*)."""

    principal_claim: str = "sub"
    scope_claim: str = "scope"
    required_scope: tuple[str, ...] = ()
    clock_skew_ms: int = 0

    @classmethod
    def from_options(cls, options: Mapping[str, str]) -> UnsecuredValidator:
        scope = options.get("unsecuredValidatorRequiredScope", "").split()
        try:
            skew = int(options.get("unsecuredValidatorAllowableClockSkewMs", "0") or 0)
        except ValueError:
            raise ValueError("unsecuredValidatorAllowableClockSkewMs must be a number of milliseconds") from None
        if skew < 0:
            raise ValueError(f"Allowable clock skew must not be negative: {skew}")
        return cls(options.get("unsecuredValidatorPrincipalClaimName", "").strip() or "sub",
                   options.get("unsecuredValidatorScopeClaimName", "").strip() or "scope", tuple(scope), skew)

    def validate(self, token: str, now_ms: int) -> ValidToken:
        parts = token.split(".")
        if len(parts) != 3:
            raise InvalidToken("not a compact serialization of three parts")
        header, claims = _json_part(parts[0]), _json_part(parts[1])
        if header.get("alg") != "none":
            raise InvalidToken("Unsecured JWS must have 'none' for an algorithm")
        if parts[2]:
            raise InvalidToken("Unsecured JWS must not contain a digital signature")
        principal = claims.get(self.principal_claim)
        if not isinstance(principal, str) or not principal.strip():
            raise InvalidToken(f"Required claim missing: {self.principal_claim}")
        exp = claims.get("exp")
        if not isinstance(exp, (int, float)) or isinstance(exp, bool):
            raise InvalidToken("No expiration time in JWT")
        exp_ms = int(exp * 1000)
        if now_ms > exp_ms + self.clock_skew_ms:
            raise InvalidToken("The indicated time is outside the allowable clock skew (expired)")
        iat = claims.get("iat")
        if iat is not None:
            if not isinstance(iat, (int, float)) or isinstance(iat, bool):
                raise InvalidToken("The iat claim had the incorrect type")
            if int(iat * 1000) > now_ms + self.clock_skew_ms:
                raise InvalidToken("The Issued At time is in the future")
            if exp_ms <= int(iat * 1000):
                raise InvalidToken("The Expiration Time time was not after the Issued At time")
        scope = claims.get(self.scope_claim)
        granted = set(scope.split() if isinstance(scope, str) else scope if isinstance(scope, list) else [])
        missing = [s for s in self.required_scope if s not in granted]
        if missing:
            # Kafka renders the required scope as a Java list: [kafka, write]
            raise InvalidToken(f"The provided scope lacked a required scope: {missing[0]}",
                               scope="[" + ", ".join(self.required_scope) + "]")
        return ValidToken(principal, exp_ms)


def _json_part(part: str) -> dict[str, Any]:
    try:
        data = base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))
        value = json.loads(data)
    except (binascii.Error, ValueError, UnicodeDecodeError):
        raise InvalidToken("malformed Base64 URL encoded value or JSON") from None
    if not isinstance(value, dict):
        raise InvalidToken("malformed JSON")
    return value


class OAuthBearerServer:
    mechanism = MECHANISM

    def __init__(self, validator: UnsecuredValidator, now_ms: Callable[[], int]) -> None:
        self._validator = validator
        self._now_ms = now_ms
        self.complete = False
        self.authorization_id = ""
        self.credential_expires_at_ms: int | None = None
        self._error: str | None = None

    def evaluate(self, token: bytes) -> bytes:
        if self.complete:
            raise SaslFailure("Unexpected challenge in Sasl server state COMPLETE", shown=True)
        if token == b"\x01" and self._error is not None:
            raise SaslFailure(self._error, shown=True)  # the client's answer to our error challenge
        self._error = None
        text = token.decode("utf-8", errors="replace")
        m = _INITIAL.fullmatch(text)
        if m is None:
            raise SaslFailure("Invalid OAUTHBEARER client first message", shown=False)
        pairs = dict(kv.split("=", 1) for kv in m["kvpairs"].split(_CONTROL_A) if kv)
        bearer = _BEARER.fullmatch(pairs.get("auth", ""))
        if bearer is None:
            raise SaslFailure("Invalid OAUTHBEARER client first message: no auth=Bearer token", shown=False)
        try:
            valid = self._validator.validate(bearer["token"], self._now_ms())
        except InvalidToken as exc:
            # Kafka's OAuthBearerSaslServer.jsonErrorResponse, byte for byte
            if exc.scope is None:
                self._error = '{"status":"invalid_token"}'
            else:
                self._error = '{"status":"insufficient_scope", "scope":"%s"}' % exc.scope
            return self._error.encode()
        authzid = m["authzid"] or ""
        if authzid and authzid != valid.principal:
            raise SaslFailure(f"Authentication failed: Client requested an authorization id ({authzid}) that is "
                              f"different from the token's principal name ({valid.principal})", shown=True)
        self.authorization_id = valid.principal
        self.credential_expires_at_ms = valid.expires_at_ms
        self.complete = True
        return b""
