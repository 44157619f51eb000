"""Client quota entities and keys: what AlterClientQuotas accepts and what a DescribeClientQuotas
filter matches, with Kafka's rules and messages (KRaft's ClientQuotaControlManager and
ClientQuotasImage).

An entity is a set of (type, name) pairs, name None meaning the default entity of that type:
{user}, {client-id}, {user, client-id} or {ip}. Each key has a type that bounds its values.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

USER, CLIENT_ID, IP = "user", "client-id", "ip"
ENTITY_TYPES = (USER, CLIENT_ID, IP)  # also the order entities are written in

PRODUCER_BYTE_RATE = "producer_byte_rate"
CONSUMER_BYTE_RATE = "consumer_byte_rate"
REQUEST_PERCENTAGE = "request_percentage"
CONTROLLER_MUTATION_RATE = "controller_mutation_rate"
CONNECTION_CREATION_RATE = "connection_creation_rate"

# key -> ConfigDef type (Kafka's QuotaConfig): integral types refuse fractions and large values.
USER_CLIENT_KEYS: Mapping[str, str] = {
    PRODUCER_BYTE_RATE: "LONG", CONSUMER_BYTE_RATE: "LONG",
    REQUEST_PERCENTAGE: "DOUBLE", CONTROLLER_MUTATION_RATE: "DOUBLE",
}
IP_KEYS: Mapping[str, str] = {CONNECTION_CREATION_RATE: "INT"}
_LIMITS = {"INT": (2**31 - 1, "an INT"), "LONG": (2**63 - 1, "a LONG")}

# An entity: ((type, name or None), ...) in ENTITY_TYPES order, hashable and comparable.
QuotaEntity = tuple[tuple[str, str | None], ...]

MATCH_EXACT, MATCH_DEFAULT, MATCH_SPECIFIED = 0, 1, 2


class QuotaError(Exception):
    """A refused alteration or filter: Kafka's error (INVALID_REQUEST unless said) and message."""

    def __init__(self, message: str, unsupported: bool = False) -> None:
        super().__init__(message)
        self.unsupported = unsupported  # UNSUPPORTED_VERSION rather than INVALID_REQUEST


def entity_of(pairs: Iterable[tuple[str, str | None]]) -> QuotaEntity:
    """An entity from (type, name) pairs, checked as the controller checks it."""
    seen: dict[str, str | None] = {}
    for etype, name in pairs:
        if etype in seen:
            raise QuotaError(f"Invalid client quota entity, duplicate entity entry {etype}")
        if etype not in ENTITY_TYPES:
            raise QuotaError(f"Unhandled client quota entity type: {etype}")
        if name is not None and name == "":
            raise QuotaError(f"Empty {etype} not supported")
        seen[etype] = name
    if not seen:
        raise QuotaError("Invalid empty client quota entity")
    return tuple((t, seen[t]) for t in ENTITY_TYPES if t in seen)


def describe_entity(entity: QuotaEntity) -> str:
    """Kafka's ClientQuotaEntity toString, used in its messages."""
    inner = ", ".join(f"{t}={n}" for t, n in entity)
    return f"ClientQuotaEntity(entries={{{inner}}})"


def keys_for(entity: QuotaEntity) -> Mapping[str, str]:
    """The quota keys an entity may carry (which depends on its combination of types)."""
    types = {t for t, _ in entity}
    if IP in types:
        if types != {IP}:
            # Kafka's message, its missing space included.
            raise QuotaError("Invalid quota entity combination, IP entity shouldnot be combined with User or ClientId")
        ip = dict(entity)[IP]
        if ip is not None and not _valid_ip(ip):
            raise QuotaError(f"{ip} is not a valid IP or resolvable host.")
        return IP_KEYS
    return USER_CLIENT_KEYS


def _valid_ip(text: str) -> bool:
    # Kafka also accepts a host name it can resolve; resolving in the request path would block the
    # broker, so minikafka takes IP literals (and localhost, the one name that needs no lookup).
    if text == "localhost":
        return True
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True


def check_value(keys: Mapping[str, str], key: str, value: float) -> None:
    kind = keys.get(key)
    if kind is None:
        raise QuotaError(f"Invalid configuration key {key}")
    if value <= 0.0:
        raise QuotaError(f"Quota {key} must be greater than 0")
    if kind in _LIMITS:
        limit, name = _LIMITS[kind]
        if value > limit:
            raise QuotaError(f"Proposed value for {key} is too large for {name}.")
        if abs(value % 1.0) > 1e-6:
            raise QuotaError(f"{key} cannot be a fractional value.")


@dataclass(frozen=True, slots=True)
class Op:
    key: str
    value: float | None  # None: remove the key


def check_unique_keys(pairs: Sequence[tuple[str, str | None]], ops: Sequence[Op]) -> None:
    """Kafka checks this first, before the entity itself."""
    seen: set[str] = set()
    for op in ops:
        if op.key in seen:
            raise QuotaError(f"Duplicate quota key {op.key} not updating quota for this entity "
                             f"{describe_entity(tuple(pairs))}")
        seen.add(op.key)


def alter_entity(current: Mapping[str, float], entity: QuotaEntity, ops: Sequence[Op]) -> dict[str, float]:
    """The entity's quotas after `ops`, all or nothing (raises QuotaError)."""
    keys = keys_for(entity)
    new = dict(current)
    for op in ops:
        if op.value is None:
            new.pop(op.key, None)  # removing an absent key is no error (Kafka writes nothing)
        else:
            check_value(keys, op.key, op.value)
            new[op.key] = float(op.value)
    return new


@dataclass(frozen=True, slots=True)
class Component:
    entity_type: str
    match_type: int
    match: str | None


@dataclass(frozen=True, slots=True)
class QuotaFilter:
    exact: Mapping[str, str | None]  # type -> name (None: the default entity)
    specified: frozenset[str]  # types that must be present, any name
    strict: bool

    def matches(self, entity: QuotaEntity) -> bool:
        names = dict(entity)
        if self.strict and len(names) != len(self.exact) + len(self.specified):
            return False
        for etype, name in self.exact.items():
            if etype not in names or names[etype] != name:
                return False
        return all(t in names for t in self.specified)


def filter_of(components: Sequence[Component], strict: bool) -> QuotaFilter:
    """A DescribeClientQuotas filter, checked as Kafka checks it (raises QuotaError)."""
    exact: dict[str, str | None] = {}
    specified: set[str] = set()
    for c in components:
        if not c.entity_type:
            raise QuotaError("Invalid empty entity type.")
        if c.entity_type in exact or c.entity_type in specified:
            raise QuotaError(f"Entity type {c.entity_type} cannot appear more than once in the filter.")
        if c.entity_type not in ENTITY_TYPES:
            raise QuotaError(f"Unsupported entity type {c.entity_type}", unsupported=True)
        if c.match_type == MATCH_EXACT:
            if c.match is None:
                raise QuotaError("Request specified MATCH_TYPE_EXACT, but set match string to null.")
            exact[c.entity_type] = c.match
        elif c.match_type == MATCH_DEFAULT:
            if c.match is not None:
                raise QuotaError("Request specified MATCH_TYPE_DEFAULT, but also specified a match string.")
            exact[c.entity_type] = None
        elif c.match_type == MATCH_SPECIFIED:
            if c.match is not None:
                raise QuotaError("Request specified MATCH_TYPE_SPECIFIED, but also specified a match string.")
            specified.add(c.entity_type)
        else:
            raise QuotaError(f"Unknown match type {c.match_type}")
    types = set(exact) | specified
    if IP in types and (USER in types or CLIENT_ID in types):
        raise QuotaError("Invalid entity filter component combination. IP filter component should not be "
                         "used with user or clientId filter component.")
    return QuotaFilter(exact=exact, specified=frozenset(specified), strict=strict)
