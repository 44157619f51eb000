"""SCRAM credentials end to end (KIP-554): set, described and deleted with confluent-kafka's
AdminClient and with Kafka's own kafka-configs tool, refused with Kafka's error codes, and kept
across kill -9. Run against Apache Kafka with `make conformance` (MINIKAFKA_TARGET=kafka), which
stores SCRAM credentials with no SASL listener, as minikafka does."""

from __future__ import annotations

import hashlib

from clients import admin, future_errors, uniq
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import (
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialDeletion,
    UserScramCredentialUpsertion,
)
from kafka_ref import kafka_configs
from kio.schema.alter_user_scram_credentials.v0.request import (
    AlterUserScramCredentialsRequest,
    ScramCredentialDeletion,
    ScramCredentialUpsertion,
)
from kio.schema.describe_user_scram_credentials.v0.request import DescribeUserScramCredentialsRequest, UserName
from kio.static.primitive import i8, i32
from rawclient import RawClient

from minikafka.protocol.errors import ErrorCode

SHA256, SHA512 = ScramMechanism.SCRAM_SHA_256, ScramMechanism.SCRAM_SHA_512


def _upsert(user: str, mechanism: ScramMechanism, iterations: int, password: bytes = b"secret"):
    return UserScramCredentialUpsertion(user, ScramCredentialInfo(mechanism, iterations), password, b"salt-" + user.encode())


def _alter(bootstrap: str, alterations: list) -> dict[str, KafkaError | None]:
    """user -> None when altered, else the KafkaError it failed with."""
    client = admin(bootstrap)  # held until the answers are in: a destroyed client fails its futures
    return future_errors(client.alter_user_scram_credentials(alterations), timeout=30)


def _described(bootstrap: str, users: list[str]) -> dict[str, object]:
    """user -> {mechanism: iterations}, or the KafkaError its describe failed with."""
    out: dict[str, object] = {}
    client = admin(bootstrap)
    for user, fut in client.describe_user_scram_credentials(users).items():
        try:
            out[user] = {i.mechanism: i.iterations for i in fut.result(30).scram_credential_infos}
        except KafkaException as exc:
            out[user] = exc.args[0]
    return out


def test_admin_client_sets_describes_and_deletes_credentials(kafka_broker) -> None:
    b = kafka_broker.bootstrap
    alice, bob = uniq("alice"), uniq("bob")
    assert _alter(b, [_upsert(alice, SHA256, 8192), _upsert(alice + "-2", SHA512, 4096),
                      _upsert(bob, SHA512, 16384)]) == {alice: None, alice + "-2": None, bob: None}
    assert _alter(b, [_upsert(alice + "-2", SHA256, 5000)]) == {alice + "-2": None}
    assert _described(b, [alice, alice + "-2", bob]) == {
        alice: {SHA256: 8192}, alice + "-2": {SHA256: 5000, SHA512: 4096}, bob: {SHA512: 16384}}
    client = admin(b)
    everyone = client.describe_user_scram_credentials().result(30)
    assert {u: {i.mechanism: i.iterations for i in d.scram_credential_infos}
            for u, d in everyone.items() if u in (alice, bob)} == {alice: {SHA256: 8192}, bob: {SHA512: 16384}}

    assert _alter(b, [UserScramCredentialDeletion(alice, SHA256),
                      UserScramCredentialDeletion(alice + "-2", SHA512)]) == {alice: None, alice + "-2": None}
    described = _described(b, [alice, alice + "-2"])
    assert described[alice + "-2"] == {SHA256: 5000}
    assert isinstance(described[alice], KafkaError) and described[alice].code() == KafkaError.RESOURCE_NOT_FOUND
    # librdkafka 2.16 hands this message on with one stray byte after it, from Apache Kafka too.
    assert described[alice].str().startswith(f"Attempt to describe a user credential that does not exist: {alice}")
    assert alice not in client.describe_user_scram_credentials().result(30)


def test_refusals_carry_kafkas_error_codes(kafka_broker) -> None:
    b = kafka_broker.bootstrap
    few, many, nobody = uniq("few"), uniq("many"), uniq("nobody")
    got = _alter(b, [_upsert(few, SHA256, 4095), _upsert(many, SHA512, 16385),
                     UserScramCredentialDeletion(nobody, SHA256)])
    assert {u: (e.code(), e.str()) for u, e in got.items() if e is not None} == {
        few: (KafkaError.UNACCEPTABLE_CREDENTIAL, "Too few iterations"),
        many: (KafkaError.UNACCEPTABLE_CREDENTIAL, "Too many iterations"),
        nobody: (KafkaError.RESOURCE_NOT_FOUND, "Attempt to delete a user credential that does not exist"),
    }
    assert all(isinstance(v, KafkaError) for v in _described(b, [few, many, nobody]).values())


def test_wire_level_refusals(kafka_broker) -> None:
    """What the admin clients check before sending: an unknown mechanism, an empty name, a user
    altered twice (whatever the mechanisms) and a user described twice."""
    b = kafka_broker.bootstrap
    twice, odd = uniq("twice"), uniq("odd")

    def upsertion(name: str, mechanism: int) -> ScramCredentialUpsertion:
        return ScramCredentialUpsertion(name=name, mechanism=i8(mechanism), iterations=i32(4096), salt=b"s",
                                        salted_password=hashlib.pbkdf2_hmac("sha256", b"pw", b"s", 4096))

    with RawClient.connect(b) as c:
        set_up = c.request(AlterUserScramCredentialsRequest(deletions=(), upsertions=(upsertion(twice, 1),)),
                           api_version=0)
    assert [(r.user, r.error_code) for r in set_up.results] == [(twice, ErrorCode.none)]
    req = AlterUserScramCredentialsRequest(
        deletions=(ScramCredentialDeletion(name=twice, mechanism=i8(1)),),
        upsertions=(upsertion(twice, 2), upsertion(odd, 3), upsertion("", 1)))
    with RawClient.connect(b) as c:
        resp = c.request(req, api_version=0)
        assert sorted((r.user, r.error_code, r.error_message) for r in resp.results) == sorted([
            ("", ErrorCode.unacceptable_credential, "Username must not be empty"),
            (odd, ErrorCode.unsupported_sasl_mechanism, "Unknown SCRAM mechanism"),
            (twice, ErrorCode.duplicate_resource, "A user credential cannot be altered twice in the same request"),
        ])
        described = c.request(DescribeUserScramCredentialsRequest(users=(UserName(name=twice), UserName(name=twice))),
                              api_version=0)
    assert described.error_code == ErrorCode.none
    assert [(r.user, r.error_code, r.error_message) for r in described.results] == [
        (twice, ErrorCode.duplicate_resource,
         f"Cannot describe SCRAM credentials for the same user twice in a single request: {twice}")]


def test_kafka_configs_manages_scram_credentials(kafka_broker) -> None:
    b = kafka_broker.bootstrap
    user = uniq("cfg-user")
    # Both mechanisms in one command are one request naming the user twice: Kafka refuses it.
    both = kafka_configs(b, "--alter", "--entity-type", "users", "--entity-name", user, "--add-config",
                         "SCRAM-SHA-256=[iterations=8192,password=alice-secret],SCRAM-SHA-512=[password=other]")
    assert both.returncode != 0
    assert ("DuplicateResourceException: A user credential cannot be altered twice in the same request"
            in both.stderr)
    done = kafka_configs(b, "--alter", "--entity-type", "users", "--entity-name", user, "--add-config",
                         "SCRAM-SHA-256=[iterations=8192,password=alice-secret]")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"Completed updating config for user {user}."
    done = kafka_configs(b, "--alter", "--entity-type", "users", "--entity-name", user, "--add-config",
                         "SCRAM-SHA-512=[password=other]")
    assert done.returncode == 0, done.stderr
    described = kafka_configs(b, "--describe", "--entity-type", "users", "--entity-name", user)
    assert described.returncode == 0, described.stderr
    head, _, listed = described.stdout.strip().partition(" are ")
    assert head == f"SCRAM credential configs for user-principal '{user}'"
    # Kafka keeps mechanisms in a HashMap keyed by an enum (identity hash): their order varies.
    assert sorted(listed.split(", ")) == ["SCRAM-SHA-256=iterations=8192", "SCRAM-SHA-512=iterations=4096"]
    removed = kafka_configs(b, "--alter", "--entity-type", "users", "--entity-name", user, "--delete-config",
                            "SCRAM-SHA-512")
    assert removed.returncode == 0, removed.stderr
    described = kafka_configs(b, "--describe", "--entity-type", "users", "--entity-name", user)
    assert described.stdout.strip() == f"SCRAM credential configs for user-principal '{user}' are SCRAM-SHA-256=iterations=8192"
    refused = kafka_configs(b, "--alter", "--entity-type", "users", "--entity-name", user, "--add-config",
                            "SCRAM-SHA-256=[iterations=20000,password=x]")  # the tool checks the minimum itself
    assert refused.returncode != 0
    assert "UnacceptableCredentialException: Too many iterations" in refused.stderr


def test_credentials_are_kept_across_kill9(broker_factory) -> None:
    broker = broker_factory()
    alice = uniq("alice")
    assert _alter(broker.bootstrap, [_upsert(alice, SHA512, 6000)]) == {alice: None}
    broker.restart(hard=True)
    assert _described(broker.bootstrap, [alice]) == {alice: {SHA512: 6000}}
    assert (broker.data_dir / "minikafka-scram-credentials.json").stat().st_mode & 0o077 == 0
