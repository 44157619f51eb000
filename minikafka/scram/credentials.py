"""SCRAM credentials as Kafka's controller keeps them (ScramControlManager) and its brokers
describe them (ScramImage): pure, no I/O.

A client never sends a password: it sends a salt, an iteration count and the salted password
(PBKDF2 of the password), and the broker keeps only what RFC 5802 needs to verify a SCRAM
exchange, StoredKey = H(HMAC(salted, "Client Key")) and ServerKey = HMAC(salted, "Server Key").
The salted password itself is not kept.

Every user named in a request succeeds or fails on its own, with Kafka's error codes and
messages; a user named twice (whatever the mechanisms) fails DUPLICATE_RESOURCE.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Iterable, Mapping
from typing import NamedTuple

from minikafka.protocol.errors import ErrorCode
from minikafka.java_order import hashmap_order, string_hash


class Mechanism(NamedTuple):
    type: int  # the int8 on the wire (Kafka's ScramMechanism.type)
    name: str  # the SASL mechanism name
    hash_name: str  # hashlib's name for its hash
    min_iterations: int


# Kafka's org.apache.kafka.common.security.scram.internals.ScramMechanism; type 0 is UNKNOWN.
MECHANISMS: dict[int, Mechanism] = {
    1: Mechanism(1, "SCRAM-SHA-256", "sha256", 4096),
    2: Mechanism(2, "SCRAM-SHA-512", "sha512", 4096),
}
MAX_ITERATIONS = 16384  # ScramControlManager.MAX_ITERATIONS, the same for both mechanisms

TWICE = "A user credential cannot be altered twice in the same request"
EMPTY_USER = "Username must not be empty"
UNKNOWN_MECHANISM = "Unknown SCRAM mechanism"
TOO_FEW = "Too few iterations"
TOO_MANY = "Too many iterations"
DELETE_MISSING = "Attempt to delete a user credential that does not exist"
DESCRIBE_MISSING = "Attempt to describe a user credential that does not exist: "
DESCRIBE_TWICE = "Cannot describe SCRAM credentials for the same user twice in a single request: "


class ScramCredential(NamedTuple):
    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int


# (user name, mechanism type) -> credential
Credentials = Mapping[tuple[str, int], ScramCredential]


class Deletion(NamedTuple):
    name: str
    mechanism: int


class Upsertion(NamedTuple):
    name: str
    mechanism: int
    iterations: int
    salt: bytes
    salted_password: bytes


class Outcome(NamedTuple):
    user: str
    error: ErrorCode
    message: str | None


def credential_from_salted_password(mechanism: int, salt: bytes, salted_password: bytes,
                                    iterations: int) -> ScramCredential:
    """What the broker keeps of an upsertion (RFC 5802's StoredKey and ServerKey)."""
    h = MECHANISMS[mechanism].hash_name
    client_key = hmac.new(salted_password, b"Client Key", h).digest()
    return ScramCredential(salt=salt, stored_key=hashlib.new(h, client_key).digest(),
                           server_key=hmac.new(salted_password, b"Server Key", h).digest(),
                           iterations=iterations)


def salted_password(mechanism: int, password: bytes, salt: bytes, iterations: int) -> bytes:
    """Hi(password, salt, i) of RFC 5802: PBKDF2 with the mechanism's HMAC (what clients send)."""
    return hashlib.pbkdf2_hmac(MECHANISMS[mechanism].hash_name, password, salt, iterations)


def _check_name_and_mechanism(name: str, mechanism: int) -> Outcome | None:
    if not name:
        return Outcome(name, ErrorCode.unacceptable_credential, EMPTY_USER)
    if mechanism not in MECHANISMS:
        return Outcome(name, ErrorCode.unsupported_sasl_mechanism, UNKNOWN_MECHANISM)
    return None


def _check_upsertion(u: Upsertion) -> Outcome | None:
    refused = _check_name_and_mechanism(u.name, u.mechanism)
    if refused is not None:
        return refused
    if u.iterations < MECHANISMS[u.mechanism].min_iterations:
        return Outcome(u.name, ErrorCode.unacceptable_credential, TOO_FEW)
    if u.iterations > MAX_ITERATIONS:
        return Outcome(u.name, ErrorCode.unacceptable_credential, TOO_MANY)
    return None


def alter(current: Credentials, deletions: Iterable[Deletion], upsertions: Iterable[Upsertion],
          ) -> tuple[dict[tuple[str, int], ScramCredential], list[Outcome]]:
    """AlterUserScramCredentials: (the credentials after the request, one outcome per user).

    Deletions are checked first, then upsertions; a user's first failure is its answer and later
    entries for it are ignored. The answer lists the deletions done, the upsertions done, then
    the refusals, each group in the order of the Java HashMap Kafka collects it in."""
    to_delete: dict[str, Deletion] = {}
    to_upsert: dict[str, Upsertion] = {}
    refused: dict[str, Outcome] = {}
    for d in deletions:
        if d.name in refused:
            continue
        if to_delete.pop(d.name, None) is not None:
            refused[d.name] = Outcome(d.name, ErrorCode.duplicate_resource, TWICE)
            continue
        error = _check_name_and_mechanism(d.name, d.mechanism)
        if error is None and (d.name, d.mechanism) not in current:
            error = Outcome(d.name, ErrorCode.resource_not_found, DELETE_MISSING)
        if error is not None:
            refused[d.name] = error
        else:
            to_delete[d.name] = d
    for u in upsertions:
        if u.name in refused:
            continue
        if to_delete.pop(u.name, None) is not None or to_upsert.pop(u.name, None) is not None:
            refused[u.name] = Outcome(u.name, ErrorCode.duplicate_resource, TWICE)
            continue
        error = _check_upsertion(u)
        if error is not None:
            refused[u.name] = error
        else:
            to_upsert[u.name] = u

    after = dict(current)
    for d in to_delete.values():
        del after[(d.name, d.mechanism)]
    for u in to_upsert.values():
        after[(u.name, u.mechanism)] = credential_from_salted_password(u.mechanism, u.salt, u.salted_password,
                                                                       u.iterations)

    def in_kafka_order(names: Iterable[str]) -> list[str]:
        return hashmap_order(names, string_hash)

    outcomes = [Outcome(n, ErrorCode.none, None) for n in in_kafka_order(to_delete)]
    outcomes += [Outcome(n, ErrorCode.none, None) for n in in_kafka_order(to_upsert)]
    outcomes += [refused[n] for n in in_kafka_order(refused)]
    return after, outcomes


class Described(NamedTuple):
    user: str
    error: ErrorCode
    message: str | None
    # (mechanism type, iterations) in type order; Kafka's order varies (a HashMap keyed by an enum)
    credentials: tuple[tuple[int, int], ...]


def describe(current: Credentials, users: Iterable[str] | None) -> list[Described]:
    """DescribeUserScramCredentials: every user with a credential when `users` is None or empty;
    otherwise each named user once, RESOURCE_NOT_FOUND without credentials and DUPLICATE_RESOURCE
    when named twice. Users come in Kafka's HashMap order."""
    named = list(users or ())
    seen_twice: dict[str, bool] = {}
    if named:
        for name in named:
            seen_twice[name] = name in seen_twice
    else:
        for name, _ in current:
            seen_twice.setdefault(name, False)
    out = []
    for name in hashmap_order(seen_twice, string_hash):
        if seen_twice[name]:
            out.append(Described(name, ErrorCode.duplicate_resource, DESCRIBE_TWICE + name, ()))
            continue
        found = tuple((m, current[(name, m)].iterations) for m in MECHANISMS if (name, m) in current)
        if found:
            out.append(Described(name, ErrorCode.none, None, found))
        else:
            out.append(Described(name, ErrorCode.resource_not_found, DESCRIBE_MISSING + name, ()))
    return out
