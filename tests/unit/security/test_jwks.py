"""OAUTHBEARER tokens checked against an identity provider's JWKS (security/jwks.py): signatures,
the alg `none` refusal, times on the broker's clock, audience, issuer, subject; the key set read
from a file:// endpoint and refreshed whole."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa

from minikafka.security.jwks import JwksSource, JwksValidator
from minikafka.security.sasl.oauthbearer import InvalidToken

pytestmark = pytest.mark.unit

NOW = 1_800_000_000


def keypair(kid: str) -> tuple[Any, dict[str, Any]]:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    jwk = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(key.public_key()))
    return key, {**jwk, "kid": kid, "use": "sig", "alg": "RS256"}


KEY, JWK = keypair("k1")
OTHER, OTHER_JWK = keypair("k2")


def sign(claims: dict[str, Any], key: Any = KEY, kid: str = "k1", alg: str = "RS256") -> str:
    return jwt.encode(claims, key, algorithm=alg, headers={"kid": kid})


def validator(tmp_path: Path, *jwks: dict[str, Any], **kw: Any) -> JwksValidator:
    path = tmp_path / "jwks.json"
    path.write_text(json.dumps({"keys": list(jwks or [JWK])}))
    source = JwksSource(path.as_uri())
    assert source.refresh(), source.last_error
    return JwksValidator(source, **kw)


CLAIMS = {"sub": "svc-orders", "iat": NOW - 10, "exp": NOW + 300, "aud": "kafka", "iss": "https://idp.example"}


def test_a_token_signed_by_a_key_of_the_set_names_its_subject(tmp_path: Path) -> None:
    v = validator(tmp_path, audience=("kafka",), issuer="https://idp.example")
    ok = v.validate(sign(CLAIMS), NOW * 1000)
    assert (ok.principal, ok.expires_at_ms) == ("svc-orders", (NOW + 300) * 1000)


@pytest.mark.parametrize("make, why", [
    (lambda: sign(CLAIMS, key=OTHER), "signed by a key the set does not hold under its kid"),
    (lambda: sign(CLAIMS, key=OTHER, kid="k9"), "unknown kid"),
    (lambda: jwt.encode(CLAIMS, key=None, algorithm="none"), "unsigned"),
    (lambda: jwt.encode(CLAIMS, "a-shared-secret-of-thirty-two-bytes!", algorithm="HS256", headers={"kid": "k1"}),
     "symmetric alg"),
    (lambda: sign({**CLAIMS, "exp": NOW - 31}), "expired beyond the 30 s skew"),
    (lambda: sign({**CLAIMS, "iat": NOW + 60}), "issued in the future"),
    (lambda: sign({k: v for k, v in CLAIMS.items() if k != "iat"}), "no iat"),
    (lambda: sign({k: v for k, v in CLAIMS.items() if k != "sub"}), "no subject"),
    (lambda: sign({**CLAIMS, "aud": "other"}), "another audience"),
    (lambda: sign({**CLAIMS, "iss": "https://evil.example"}), "another issuer"),
    (lambda: "garbage", "not a JWS"),
])
def test_bad_tokens_are_invalid(tmp_path: Path, make: Any, why: str) -> None:
    v = validator(tmp_path, audience=("kafka",), issuer="https://idp.example")
    with pytest.raises(InvalidToken):
        v.validate(make(), NOW * 1000)


def test_a_refresh_replaces_the_key_set_and_a_failed_one_keeps_it(tmp_path: Path) -> None:
    v = validator(tmp_path)
    token = sign(CLAIMS, key=OTHER, kid="k2")
    with pytest.raises(InvalidToken):
        v.validate(token, NOW * 1000)
    (tmp_path / "jwks.json").write_text(json.dumps({"keys": [JWK, OTHER_JWK]}))
    assert v.source.refresh()
    assert v.validate(token, NOW * 1000).principal == "svc-orders"
    (tmp_path / "jwks.json").write_text("{not json")
    assert not v.source.refresh() and v.source.last_error
    assert v.validate(token, NOW * 1000).principal == "svc-orders"


def test_the_configs_are_kafkas(tmp_path: Path) -> None:
    configs = {"sasl.oauthbearer.jwks.endpoint.url": "file:///x", "sasl.oauthbearer.expected.audience": "a,b",
               "sasl.oauthbearer.clock.skew.seconds": "5", "sasl.oauthbearer.sub.claim.name": "client_id"}
    v = JwksValidator.from_configs(configs.get)
    assert (v.audience, v.clock_skew_s, v.sub_claim, v.refresh_ms) == (("a", "b"), 5, "client_id", 3_600_000)
    with pytest.raises(ValueError, match="jwks.endpoint.url"):
        JwksValidator.from_configs({}.get)
