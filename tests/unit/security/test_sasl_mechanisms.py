"""SASL/PLAIN and SCRAM-SHA-256/512 as pure state machines (security/sasl), with RFC 7677's
exchange as the test vector and Kafka's failure messages."""

from __future__ import annotations

import base64
import hashlib
import hmac

import pytest

from minikafka.scram.credentials import credential_from_salted_password, salted_password
from minikafka.security.sasl import SaslFailure
from minikafka.security.jaas import parse_jaas_options
from minikafka.security.sasl.plain import PlainServer, users_of
from minikafka.security.sasl.scram import ScramServer

pytestmark = pytest.mark.unit

JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" '
        'password="admin-secret" user_admin="admin-secret" user_alice="al\\"ice";')


def test_plain_users_come_from_the_jaas_user_options() -> None:
    assert users_of(parse_jaas_options(JAAS)) == {"admin": "admin-secret", "alice": 'al"ice'}
    assert parse_jaas_options(JAAS)["username"] == "admin"
    with pytest.raises(ValueError, match="control flag"):
        parse_jaas_options('PlainLoginModule user_a="b";')
    with pytest.raises(ValueError, match="';'"):
        parse_jaas_options('PlainLoginModule required user_a="b"')


def test_plain_accepts_the_right_password_once() -> None:
    server = PlainServer({"alice": "secret"})
    assert server.evaluate(b"\0alice\0secret") == b""
    assert (server.complete, server.authorization_id) == (True, "alice")


@pytest.mark.parametrize("token, message", [
    (b"\0alice\0wrong", "Authentication failed: Invalid username or password"),
    (b"\0mallory\0secret", "Authentication failed: Invalid username or password"),
    (b"\0\0secret", "Authentication failed: username not specified"),
    (b"\0alice\0", "Authentication failed: password not specified"),
    (b"alice\0secret", "Invalid SASL/PLAIN response: expected 3 tokens, got 2"),
    (b"bob\0alice\0secret", "Client requested an authorization id that is different from username"),
])
def test_plain_failures_say_what_kafka_says(token: bytes, message: str) -> None:
    server = PlainServer({"alice": "secret"})
    with pytest.raises(SaslFailure, match=message) as info:
        server.evaluate(token)
    assert info.value.shown and not server.complete


# RFC 7677, section 3: user "user", password "pencil".
SALT = base64.b64decode("W22ZaJ0SNY7soEsUEjb6gQ==")
CLIENT_NONCE, SERVER_NONCE = "rOprNGfwEbeRWgbNEkqO", "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0"
NONCE = CLIENT_NONCE + SERVER_NONCE


def _sha256_credentials(user: str, mechanism: int):  # type: ignore[no-untyped-def]
    if (user, mechanism) != ("user", 1):
        return None
    return credential_from_salted_password(1, SALT, salted_password(1, b"pencil", SALT, 4096), 4096)


def _rfc_server() -> ScramServer:
    return ScramServer("SCRAM-SHA-256", _sha256_credentials, nonce=lambda: SERVER_NONCE)


def test_scram_sha_256_answers_rfc_7677s_exchange() -> None:
    server = _rfc_server()
    first = server.evaluate(f"n,,n=user,r={CLIENT_NONCE}".encode())
    assert first == f"r={NONCE},s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096".encode()
    final = server.evaluate(f"c=biws,r={NONCE},p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=".encode())
    assert final == b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="
    assert (server.complete, server.authorization_id) == (True, "user")


def _client_final(mech: str, h: str, user: str, password: bytes, salt: bytes, iterations: int,
                  server_first: str, client_first_bare: str) -> str:
    """The client's side of RFC 5802, for SHA-512 where the RFC has no vector."""
    salted = hashlib.pbkdf2_hmac(h, password, salt, iterations)
    client_key = hmac.new(salted, b"Client Key", h).digest()
    stored = hashlib.new(h, client_key).digest()
    nonce = server_first.split(",")[0][2:]
    without_proof = f"c=biws,r={nonce}"
    auth = f"{client_first_bare},{server_first},{without_proof}".encode()
    signature = hmac.new(stored, auth, h).digest()
    proof = bytes(a ^ b for a, b in zip(client_key, signature, strict=True))
    return f"{without_proof},p={base64.b64encode(proof).decode()}"


def test_scram_sha_512_with_a_user_name_holding_a_comma() -> None:
    salt = b"0123456789abcdef"
    creds = {("a,b=c", 2): credential_from_salted_password(2, salt, salted_password(2, b"pw", salt, 4096), 4096)}
    server = ScramServer("SCRAM-SHA-512", lambda u, m: creds.get((u, m)))
    bare = "n=a=2Cb=3Dc,r=abc"
    first = server.evaluate(f"n,,{bare}".encode()).decode()
    assert first.startswith("r=abc")
    final = server.evaluate(_client_final("SCRAM-SHA-512", "sha512", "a,b=c", b"pw", salt, 4096, first, bare).encode())
    assert final.startswith(b"v=") and server.authorization_id == "a,b=c"


@pytest.mark.parametrize("client_final", [
    f"c=biws,r={NONCE},p=AAAAZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=",  # wrong proof
    f"c=biws,r={CLIENT_NONCE}other,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=",  # not the server's nonce
    "garbage",
])
def test_a_wrong_final_message_fails_without_saying_why(client_final: str) -> None:
    server = _rfc_server()
    server.evaluate(f"n,,n=user,r={CLIENT_NONCE}".encode())
    with pytest.raises(SaslFailure) as info:
        server.evaluate(client_final.encode())
    assert not info.value.shown and not server.complete
    with pytest.raises(SaslFailure):  # the exchange is over
        server.evaluate(client_final.encode())


@pytest.mark.parametrize("client_first, shown", [
    (f"n,,n=nobody,r={CLIENT_NONCE}", False),  # unknown user: not told
    (f"y,,n=user,r={CLIENT_NONCE}", False),  # channel binding is not offered
    (f"n,,n=us=er,r={CLIENT_NONCE}", False),  # a bare '=' in the name
    (f"n,a=admin,n=user,r={CLIENT_NONCE}", True),  # another authorization id: told
    (f"n,,n=user,r={CLIENT_NONCE},tokenauth=true", False),  # delegation tokens are not served
])
def test_a_wrong_first_message_fails(client_first: str, shown: bool) -> None:
    with pytest.raises(SaslFailure) as info:
        _rfc_server().evaluate(client_first.encode())
    assert info.value.shown is shown
