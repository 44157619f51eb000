"""SCRAM credentials, pure: the keys kept (checked against RFC 7677's SCRAM-SHA-256 exchange) and
Kafka's AlterUserScramCredentials / DescribeUserScramCredentials rules, codes and messages
(ScramControlManager, ScramImage)."""

from __future__ import annotations

import base64
import hashlib
import hmac

import pytest

from minikafka.protocol.errors import ErrorCode
from minikafka.scram.credentials import (
    Deletion,
    Outcome,
    Upsertion,
    alter,
    credential_from_salted_password,
    describe,
    salted_password,
)

pytestmark = pytest.mark.unit

SHA256, SHA512 = 1, 2


def up(name: str, mechanism: int = SHA256, iterations: int = 4096, password: bytes = b"pw") -> Upsertion:
    salt = b"salt-" + name.encode()
    hashed_as = mechanism if mechanism in (SHA256, SHA512) else SHA256  # an unknown one is refused unread
    return Upsertion(name, mechanism, iterations, salt, salted_password(hashed_as, password, salt, iterations))


def test_stored_and_server_keys_verify_rfc7677_exchange() -> None:
    """RFC 7677 section 3: user "user", password "pencil"; the keys kept must verify the client's
    proof and produce the server signature the RFC prints."""
    salt = base64.b64decode("W22ZaJ0SNY7soEsUEjb6gQ==")
    cred = credential_from_salted_password(SHA256, salt, salted_password(SHA256, b"pencil", salt, 4096), 4096)
    nonce = "rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0"
    auth_message = (f"n=user,r=rOprNGfwEbeRWgbNEkqO,r={nonce},s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096,"
                    f"c=biws,r={nonce}").encode()
    server_signature = hmac.new(cred.server_key, auth_message, "sha256").digest()
    assert base64.b64encode(server_signature).decode() == "6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="
    proof = base64.b64decode("dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=")
    client_signature = hmac.new(cred.stored_key, auth_message, "sha256").digest()
    client_key = bytes(a ^ b for a, b in zip(proof, client_signature, strict=True))
    assert hashlib.sha256(client_key).digest() == cred.stored_key
    assert cred.salt == salt and cred.iterations == 4096


def test_sha512_keys_are_sha512_sized() -> None:
    cred = credential_from_salted_password(SHA512, b"s", salted_password(SHA512, b"pw", b"s", 4096), 4096)
    assert len(cred.stored_key) == len(cred.server_key) == 64


def test_upsert_then_describe_lists_mechanisms_and_iterations_only() -> None:
    after, outcomes = alter({}, [], [up("alice", SHA256, 8192), up("bob", SHA512, 4096)])
    assert sorted(outcomes) == [Outcome("alice", ErrorCode.none, None), Outcome("bob", ErrorCode.none, None)]
    assert set(after) == {("alice", SHA256), ("bob", SHA512)}
    after, _ = alter(after, [], [up("alice", SHA512, 16384)])
    described = {d.user: d for d in describe(after, None)}
    assert described["alice"].credentials == ((SHA256, 8192), (SHA512, 16384))
    assert described["bob"].credentials == ((SHA512, 4096),)
    assert all(d.error == ErrorCode.none and d.message is None for d in described.values())


def test_upsert_replaces_the_credential() -> None:
    after, _ = alter({}, [], [up("alice", password=b"one")])
    first = after[("alice", SHA256)]
    after, _ = alter(after, [], [up("alice", password=b"two", iterations=5000)])
    assert after[("alice", SHA256)] != first and after[("alice", SHA256)].iterations == 5000


@pytest.mark.parametrize(("upsertion", "error", "message"), [
    (up("", SHA256), ErrorCode.unacceptable_credential, "Username must not be empty"),
    (up("u", 0), ErrorCode.unsupported_sasl_mechanism, "Unknown SCRAM mechanism"),
    (up("u", 7), ErrorCode.unsupported_sasl_mechanism, "Unknown SCRAM mechanism"),
    (up("u", SHA256, 4095), ErrorCode.unacceptable_credential, "Too few iterations"),
    (up("u", SHA512, 16385), ErrorCode.unacceptable_credential, "Too many iterations"),
])
def test_refused_upsertions(upsertion: Upsertion, error: ErrorCode, message: str) -> None:
    after, outcomes = alter({}, [], [upsertion])
    assert after == {}
    assert outcomes == [Outcome(upsertion.name, error, message)]


def test_iteration_bounds_are_inclusive() -> None:
    after, outcomes = alter({}, [], [up("low", iterations=4096), up("high", SHA512, iterations=16384)])
    assert {o.error for o in outcomes} == {ErrorCode.none} and len(after) == 2


def test_delete() -> None:
    creds, _ = alter({}, [], [up("alice", SHA256), up("bob", SHA256)])
    after, outcomes = alter(creds, [Deletion("alice", SHA256), Deletion("bob", SHA512), Deletion("", SHA256),
                                    Deletion("carol", 0)], [])
    assert set(after) == {("bob", SHA256)}
    assert sorted(outcomes) == [
        Outcome("", ErrorCode.unacceptable_credential, "Username must not be empty"),
        Outcome("alice", ErrorCode.none, None),
        Outcome("bob", ErrorCode.resource_not_found, "Attempt to delete a user credential that does not exist"),
        Outcome("carol", ErrorCode.unsupported_sasl_mechanism, "Unknown SCRAM mechanism"),
    ]


def test_a_user_named_twice_fails_whole_and_changes_nothing() -> None:
    """Kafka: "A user credential cannot be altered twice in the same request", whatever the
    mechanisms; the user's other entries do not happen either."""
    creds, _ = alter({}, [], [up("alice", SHA256), up("alice2", SHA256)])
    twice = Outcome("alice", ErrorCode.duplicate_resource, "A user credential cannot be altered twice in the same request")
    assert alter(creds, [], [up("alice", SHA256), up("alice", SHA512)]) == (creds, [twice])
    assert alter(creds, [Deletion("alice", SHA256)], [up("alice", SHA512)]) == (creds, [twice])
    assert alter(creds, [Deletion("alice", SHA256), Deletion("alice", SHA512)], []) == (creds, [twice])
    # A third entry for the user changes nothing more: the first failure is the answer.
    assert alter(creds, [], [up("alice"), up("alice"), up("alice")]) == (creds, [twice])
    # Only the first failure counts: a refused deletion is not "twice" when an upsertion follows.
    missing = Outcome("alice2", ErrorCode.resource_not_found, "Attempt to delete a user credential that does not exist")
    assert alter(creds, [Deletion("alice2", SHA512)], [up("alice2", SHA512)]) == (creds, [missing])


def test_answer_order_is_deletions_upsertions_then_refusals_in_hashmap_order() -> None:
    creds, _ = alter({}, [], [up("d1"), up("d2")])
    _, outcomes = alter(creds, [Deletion("d2", SHA256), Deletion("d1", SHA256)], [up("b", SHA256), up("a", 0)])
    # "d1".hashCode() = 3149, "d2" = 3150: HashMap buckets 13 and 14, so d1 first whatever the
    # request order.
    assert [o.user for o in outcomes] == ["d1", "d2", "b", "a"]


def test_describe_named_users() -> None:
    creds, _ = alter({}, [], [up("alice")])
    got = describe(creds, ["alice", "nobody", "twice", "twice"])
    assert {d.user: (d.error, d.message, d.credentials) for d in got} == {
        "alice": (ErrorCode.none, None, ((SHA256, 4096),)),
        "nobody": (ErrorCode.resource_not_found, "Attempt to describe a user credential that does not exist: nobody", ()),
        "twice": (ErrorCode.duplicate_resource,
                  "Cannot describe SCRAM credentials for the same user twice in a single request: twice", ()),
    }
    assert describe({}, None) == [] and describe({}, []) == []
