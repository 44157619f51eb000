"""ACL bindings and filters with Kafka's enums and matching rules (pure).

An ACL binds a resource pattern (type, name, LITERAL or PREFIXED) to an entry (principal, host,
operation, ALLOW or DENY). Filters (DescribeAcls, DeleteAcls) match with ANY for every field;
pattern type MATCH finds every binding that would apply to the named resource (literal name,
the `*` wildcard, or a prefix of it). Validation follows Kafka's AclControlManager and AclApis:
each refusal is INVALID_REQUEST with Kafka's message.
"""

from __future__ import annotations

import dataclasses
import enum

CLUSTER_NAME = "kafka-cluster"
WILDCARD = "*"  # a literal resource name or host matching all; User:* matches every principal
WILDCARD_PRINCIPAL = "User:*"


class ResourceType(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    TOPIC = 2
    GROUP = 3
    CLUSTER = 4
    TRANSACTIONAL_ID = 5
    DELEGATION_TOKEN = 6
    USER = 7


class PatternType(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    MATCH = 2
    LITERAL = 3
    PREFIXED = 4


class Operation(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    ALL = 2
    READ = 3
    WRITE = 4
    CREATE = 5
    DELETE = 6
    ALTER = 7
    DESCRIBE = 8
    CLUSTER_ACTION = 9
    DESCRIBE_CONFIGS = 10
    ALTER_CONFIGS = 11
    IDEMPOTENT_WRITE = 12
    CREATE_TOKENS = 13
    DESCRIBE_TOKENS = 14
    TWO_PHASE_COMMIT = 15


class Permission(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    DENY = 2
    ALLOW = 3


def _enum(kind: type[enum.IntEnum], value: int) -> enum.IntEnum:
    try:
        return kind(value)
    except ValueError:
        return kind(0)  # UNKNOWN, as Kafka's fromCode maps a code it does not know


@dataclasses.dataclass(frozen=True)
class AclBinding:
    resource_type: ResourceType
    resource_name: str
    pattern_type: PatternType
    principal: str
    host: str
    operation: Operation
    permission: Permission

    @classmethod
    def of(cls, resource_type: int, resource_name: str, pattern_type: int, principal: str, host: str,
           operation: int, permission: int) -> AclBinding:
        return cls(_enum(ResourceType, resource_type), resource_name, _enum(PatternType, pattern_type),  # type: ignore[arg-type]
                   principal, host, _enum(Operation, operation), _enum(Permission, permission))  # type: ignore[arg-type]

    def to_json(self) -> list[object]:
        return [int(self.resource_type), self.resource_name, int(self.pattern_type), self.principal, self.host,
                int(self.operation), int(self.permission)]

    @classmethod
    def from_json(cls, row: list[object]) -> AclBinding:
        rt, name, pt, principal, host, op, perm = row
        return cls.of(int(rt), str(name), int(pt), str(principal), str(host), int(op), int(perm))  # type: ignore[call-overload]


class InvalidAcl(ValueError):
    """INVALID_REQUEST, with Kafka's message."""


def validate_new(b: AclBinding) -> None:
    if b.resource_type in (ResourceType.UNKNOWN, ResourceType.ANY):
        raise InvalidAcl(f"Invalid resourceType {b.resource_type.name}")
    if b.pattern_type not in (PatternType.LITERAL, PatternType.PREFIXED):
        raise InvalidAcl(f"Invalid patternType {b.pattern_type.name}")
    if b.operation in (Operation.UNKNOWN, Operation.ANY):
        raise InvalidAcl(f"Invalid operation {b.operation.name}")
    if b.permission not in (Permission.ALLOW, Permission.DENY):
        raise InvalidAcl(f"Invalid permissionType {b.permission.name}")
    if b.resource_type == ResourceType.CLUSTER and b.resource_name != CLUSTER_NAME:
        raise InvalidAcl(f"The only valid name for the CLUSTER resource is {CLUSTER_NAME}")
    if not b.resource_name:
        raise InvalidAcl("Invalid empty resource name")
    if ":" not in b.principal:
        raise InvalidAcl(f"Could not parse principal from `{b.principal}` (no colon is present separating the "
                         "principal type from the principal name)")


@dataclasses.dataclass(frozen=True)
class AclFilter:
    """A DescribeAcls or DeleteAcls filter; None for a name, principal or host matches any."""

    resource_type: ResourceType
    resource_name: str | None
    pattern_type: PatternType
    principal: str | None
    host: str | None
    operation: Operation
    permission: Permission

    @classmethod
    def of(cls, resource_type: int, resource_name: str | None, pattern_type: int, principal: str | None,
           host: str | None, operation: int, permission: int) -> AclFilter:
        return cls(_enum(ResourceType, resource_type), resource_name, _enum(PatternType, pattern_type),  # type: ignore[arg-type]
                   principal, host, _enum(Operation, operation), _enum(Permission, permission))  # type: ignore[arg-type]

    def validate(self) -> None:
        if PatternType.UNKNOWN in (self.pattern_type,) or self.resource_type == ResourceType.UNKNOWN:
            raise InvalidAcl("Unknown patternFilter.")
        if Operation.UNKNOWN == self.operation or Permission.UNKNOWN == self.permission:
            raise InvalidAcl("Unknown entryFilter.")

    def _pattern_matches(self, b: AclBinding) -> bool:
        if self.resource_type != ResourceType.ANY and self.resource_type != b.resource_type:
            return False
        if self.pattern_type == PatternType.MATCH:
            if self.resource_name is None:
                return True
            if b.pattern_type == PatternType.LITERAL:
                return b.resource_name in (self.resource_name, WILDCARD)
            return b.pattern_type == PatternType.PREFIXED and self.resource_name.startswith(b.resource_name)
        if self.pattern_type != PatternType.ANY and self.pattern_type != b.pattern_type:
            return False
        return self.resource_name is None or self.resource_name == b.resource_name

    def matches(self, b: AclBinding) -> bool:
        return (self._pattern_matches(b)
                and (self.principal is None or self.principal == b.principal)
                and (self.host is None or self.host == b.host)
                and (self.operation == Operation.ANY or self.operation == b.operation)
                and (self.permission == Permission.ANY or self.permission == b.permission))
