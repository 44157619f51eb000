"""OAUTHBEARER tokens signed by an identity provider, checked against its JSON Web Key Set, as
Kafka's OAuthBearerValidatorCallbackHandler does (`sasl.oauthbearer.jwks.endpoint.url`).

The key set is read from the endpoint (https://, http:// or file://) when the broker starts and
again every `sasl.oauthbearer.jwks.endpoint.refresh.ms`, by a background task off the event loop
(`JwksSource.refresh`); validation itself is pure and reads the keys in hand. A token must be a
JWS signed with one of them (alg `none` is refused), carry `exp` and `iat` (within
`sasl.oauthbearer.clock.skew.seconds`, on the broker's clock), the subject claim
(`sasl.oauthbearer.sub.claim.name`), and the expected audience and issuer when those are set.
PyJWT (with cryptography) checks the signatures.
"""

from __future__ import annotations

import dataclasses
import json
import threading
import urllib.parse
import urllib.request
from collections.abc import Mapping
from typing import Any

from minikafka.security.sasl.oauthbearer import InvalidToken, ValidToken

ASYMMETRIC = ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA")
VALIDATOR_CLASSES = ("org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler",
                     "org.apache.kafka.common.security.oauthbearer.secured.OAuthBearerValidatorCallbackHandler")


class JwksSource:
    """The key set of one endpoint; `keys` is replaced whole by each successful refresh."""

    def __init__(self, url: str, timeout_s: float = 10.0) -> None:
        self.url = url
        self.timeout_s = timeout_s
        self.keys: dict[str | None, Any] = {}  # kid -> PyJWK
        self.last_error: str | None = None
        self._lock = threading.Lock()

    def fetch(self) -> dict[str, Any]:
        parsed = urllib.parse.urlparse(self.url)
        if parsed.scheme == "file":
            with open(urllib.parse.unquote(parsed.path), "rb") as f:
                return json.loads(f.read())
        if parsed.scheme not in ("http", "https"):
            raise ValueError(f"sasl.oauthbearer.jwks.endpoint.url {self.url}: expected https://, http:// or file://")
        with urllib.request.urlopen(self.url, timeout=self.timeout_s) as resp:  # noqa: S310 - scheme checked
            return json.loads(resp.read())

    def refresh(self) -> bool:
        """Read the key set again (blocking: run it on a thread). False, with last_error, when it failed."""
        import jwt

        try:
            keys = {k.key_id: k for k in jwt.PyJWKSet.from_dict(self.fetch()).keys}
        except Exception as exc:  # noqa: BLE001 - an endpoint down or a bad document: keep the old keys
            self.last_error = f"{type(exc).__name__}: {exc}"
            return False
        with self._lock:
            self.keys = keys
        self.last_error = None
        return True

    def key_for(self, kid: str | None) -> Any | None:
        keys = self.keys
        if kid in keys:
            return keys[kid]
        if kid is None and len(keys) == 1:
            return next(iter(keys.values()))
        return None


@dataclasses.dataclass(frozen=True)
class JwksValidator:
    source: JwksSource
    sub_claim: str = "sub"
    scope_claim: str = "scope"
    audience: tuple[str, ...] = ()
    issuer: str | None = None
    clock_skew_s: int = 30
    refresh_ms: int = 3_600_000

    @classmethod
    def from_configs(cls, get: Mapping[str, str | None] | Any) -> JwksValidator:
        def value(name: str, default: str | None = None) -> str | None:
            v = get(name)
            return default if v in (None, "") else v

        url = value("sasl.oauthbearer.jwks.endpoint.url")
        if not url:
            raise ValueError("OAuthBearerValidatorCallbackHandler needs sasl.oauthbearer.jwks.endpoint.url")
        audience = tuple(a.strip() for a in (value("sasl.oauthbearer.expected.audience") or "").split(",") if a.strip())
        try:
            skew = int(value("sasl.oauthbearer.clock.skew.seconds", "30"))  # type: ignore[arg-type]
            refresh = int(value("sasl.oauthbearer.jwks.endpoint.refresh.ms", "3600000"))  # type: ignore[arg-type]
        except ValueError:
            raise ValueError("sasl.oauthbearer.clock.skew.seconds and .jwks.endpoint.refresh.ms are numbers") from None
        return cls(JwksSource(url), value("sasl.oauthbearer.sub.claim.name", "sub") or "sub",
                   value("sasl.oauthbearer.scope.claim.name", "scope") or "scope", audience,
                   value("sasl.oauthbearer.expected.issuer"), skew, refresh)

    def validate(self, token: str, now_ms: int) -> ValidToken:
        import jwt

        try:
            header = jwt.get_unverified_header(token)
        except jwt.PyJWTError as exc:
            raise InvalidToken(f"malformed token: {exc}") from None
        alg = header.get("alg")
        if alg not in ASYMMETRIC:
            raise InvalidToken(f"the algorithm {alg!r} is not allowed")
        key = self.source.key_for(header.get("kid"))
        if key is None:
            raise InvalidToken(f"no key {header.get('kid')!r} in the JWKS of {self.source.url}")
        try:
            # Times are checked below on the broker's clock (virtual in tests), not PyJWT's.
            claims = jwt.decode(token, key.key, algorithms=[alg], audience=list(self.audience) or None,
                                issuer=self.issuer, options={"verify_exp": False, "verify_iat": False,
                                                             "verify_nbf": False, "verify_aud": bool(self.audience),
                                                             "verify_iss": self.issuer is not None})
        except jwt.PyJWTError as exc:
            raise InvalidToken(f"Could not validate the access token: {exc}") from None
        exp, iat = claims.get("exp"), claims.get("iat")
        if not isinstance(exp, (int, float)) or isinstance(exp, bool):
            raise InvalidToken("the token has no expiration time (exp)")
        if not isinstance(iat, (int, float)) or isinstance(iat, bool):
            raise InvalidToken("the token has no issued-at time (iat)")
        skew_ms = self.clock_skew_s * 1000
        if now_ms > int(exp * 1000) + skew_ms:
            raise InvalidToken("the token has expired")
        if int(iat * 1000) > now_ms + skew_ms:
            raise InvalidToken("the token was issued in the future")
        subject = claims.get(self.sub_claim)
        if not isinstance(subject, str) or not subject.strip():
            raise InvalidToken(f"the token has no '{self.sub_claim}' claim")
        return ValidToken(subject, int(exp * 1000))
