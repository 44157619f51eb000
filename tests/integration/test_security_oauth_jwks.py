"""OAUTHBEARER with tokens an identity provider signs, checked against its JWKS (issue 21), driven
by confluent-kafka: the broker reads the key set from an HTTP endpoint (a stand-in IdP served by the
test on loopback), librdkafka hands over tokens through oauth_cb. A signed token gets in; an
unsigned one, one signed by another key, one for another audience, and an expired one are refused
with invalid_token and append nothing."""

from __future__ import annotations

import http.server
import json
import threading
import time
from collections.abc import Iterator
from typing import Any

import jwt
import pytest
from clients import create_topic, uniq, watermarks
from conftest import start_secured
from confluent_kafka import Producer, TopicPartition
from cryptography.hazmat.primitives.asymmetric import rsa
from txnclients import QUIET

from minikafka.testing import free_port

pytestmark = pytest.mark.integration


def _keypair(kid: str) -> tuple[Any, dict[str, Any]]:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    return key, {**json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(key.public_key())), "kid": kid, "alg": "RS256"}


KEY, JWK = _keypair("idp-1")
STRANGER, _ = _keypair("idp-1")  # same kid, another key: a forged signature


@pytest.fixture(scope="module")
def idp() -> Iterator[str]:
    """The JWKS endpoint of a stand-in identity provider, on loopback, for this module only."""
    body = json.dumps({"keys": [JWK]}).encode()

    class Jwks(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Jwks)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/.well-known/jwks.json"
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="module")
def oauth_broker(tmp_path_factory: pytest.TempPathFactory, idp: str) -> Iterator[Any]:
    port = free_port()
    prefix = "listener.name.sasl_plaintext.oauthbearer."
    # Kafka 4.x reads a JWKS only from URLs its JVM was told to allow
    broker = start_secured(tmp_path_factory.mktemp("jwks") / "data", env={
        "KAFKA_OPTS": f"-Dorg.apache.kafka.sasl.oauthbearer.allowed.urls={idp}"}, overrides={
        "listeners": f"PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:{port}",
        "sasl.enabled.mechanisms": "OAUTHBEARER",
        # unsecuredLoginStringClaim_sub: the broker's own token, which Kafka logs in with at start-up
        prefix + "sasl.jaas.config": "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required "
                                     'unsecuredLoginStringClaim_sub="broker";',
        prefix + "sasl.server.callback.handler.class":
            "org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler",
        "sasl.oauthbearer.jwks.endpoint.url": idp,
        "sasl.oauthbearer.expected.audience": "kafka",
    })
    yield broker, port
    broker.stop()


def _token(key: Any = KEY, alg: str = "RS256", **claims: Any) -> str:
    now = int(time.time())
    body = {"sub": "svc-orders", "aud": "kafka", "iat": now, "exp": now + 600, **claims}
    return jwt.encode(body, key if alg != "none" else None, algorithm=alg, headers={"kid": "idp-1"})


def _producer(port: int, token: str, errors: list[str]) -> Producer:
    return Producer({"bootstrap.servers": f"127.0.0.1:{port}", "security.protocol": "SASL_PLAINTEXT",
                     "sasl.mechanism": "OAUTHBEARER", "oauth_cb": lambda _c: (token, time.time() + 600, "svc-orders"),
                     "error_cb": lambda e: errors.append(str(e)), **QUIET})


def test_a_token_signed_by_the_identity_provider_gets_in(oauth_broker: Any) -> None:
    broker, port = oauth_broker
    topic = uniq("jwks")
    create_topic(broker.bootstrap, topic)
    errors: list[str] = []
    acked: list[Any] = []
    p = _producer(port, _token(), errors)
    p.produce(topic, value=b"x", on_delivery=lambda err, msg: acked.append(err))
    p.flush(30)
    assert (acked, errors) == ([None], [])


@pytest.mark.parametrize("make", [
    lambda: _token(alg="none"),  # unsigned
    lambda: _token(key=STRANGER),  # signed by another key under the provider's kid
    lambda: _token(aud="another-service"),
    lambda: _token(exp=int(time.time()) - 3600, iat=int(time.time()) - 7200),  # expired
], ids=["unsigned", "forged", "audience", "expired"])
def test_tokens_the_provider_did_not_sign_for_us_are_refused(oauth_broker: Any, make: Any) -> None:
    token = make()  # made when the test runs, not at collection
    broker, port = oauth_broker
    topic = uniq("jwks-denied")
    create_topic(broker.bootstrap, topic)
    errors: list[str] = []
    p = _producer(port, token, errors)
    p.produce(topic, value=b"x")
    deadline = time.monotonic() + 15
    while not errors and time.monotonic() < deadline:
        p.poll(0.1)
    p.purge()
    p.flush(1)
    assert any('{"status":"invalid_token"}' in e for e in errors), errors
    assert watermarks(broker.bootstrap, TopicPartition(topic, 0)) == (0, 0)
