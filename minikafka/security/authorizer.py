"""Kafka's StandardAuthorizer decision, as a pure function over the ACLs (no I/O, no state).

For (principal, host, operation, resource):
- a super user (`super.users`, `User:alice;User:bob`) may do everything;
- the ACLs that apply are those of the resource's type whose pattern covers its name: LITERAL with
  the same name or `*`, PREFIXED with a prefix of it; of those, the ones for the principal (or
  User:*) and host (or `*`);
- any matching DENY for the operation (or ALL) denies: deny wins;
- an ALLOW for the operation or ALL allows; DESCRIBE is also allowed by READ, WRITE, DELETE or
  ALTER, and DESCRIBE_CONFIGS by ALTER_CONFIGS (Kafka's implied operations);
- a resource that no ACL covers at all follows `allow.everyone.if.no.acl.found` (default false:
  denied); one covered by ACLs for others only is denied.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

from minikafka.security.acls import (
    WILDCARD,
    WILDCARD_PRINCIPAL,
    AclBinding,
    Operation,
    PatternType,
    Permission,
    ResourceType,
)
from minikafka.security.principal import KafkaPrincipal

IMPLIED_BY = {
    Operation.DESCRIBE: frozenset({Operation.DESCRIBE, Operation.READ, Operation.WRITE, Operation.DELETE,
                                   Operation.ALTER, Operation.ALL}),
    Operation.DESCRIBE_CONFIGS: frozenset({Operation.DESCRIBE_CONFIGS, Operation.ALTER_CONFIGS, Operation.ALL}),
}


@dataclasses.dataclass(frozen=True)
class AuthorizerSettings:
    super_users: frozenset[str] = frozenset()
    allow_everyone_if_no_acl_found: bool = False

    @classmethod
    def parse(cls, super_users: str | None, allow_everyone: str | None) -> AuthorizerSettings:
        users = frozenset(u.strip() for u in (super_users or "").split(";") if u.strip())
        return cls(users, (allow_everyone or "false").strip().lower() == "true")


def covers(acl: AclBinding, resource_type: ResourceType, name: str) -> bool:
    if acl.resource_type != resource_type:
        return False
    if acl.pattern_type == PatternType.LITERAL:
        return acl.resource_name == name or acl.resource_name == WILDCARD
    return acl.pattern_type == PatternType.PREFIXED and name.startswith(acl.resource_name)


def _applies_to(acl: AclBinding, principal: str, host: str) -> bool:
    return acl.principal in (principal, WILDCARD_PRINCIPAL) and acl.host in (host, WILDCARD)


def authorize(principal: KafkaPrincipal, host: str, operation: Operation, resource_type: ResourceType, name: str,
              acls: Iterable[AclBinding], settings: AuthorizerSettings) -> bool:
    who = str(principal)
    if who in settings.super_users:
        return True
    allowed_by = IMPLIED_BY.get(operation, frozenset({operation, Operation.ALL}))
    covered = allowed = False
    for acl in acls:
        if not covers(acl, resource_type, name):
            continue
        covered = True
        if not _applies_to(acl, who, host):
            continue
        if acl.permission == Permission.DENY and acl.operation in (operation, Operation.ALL):
            return False
        if acl.permission == Permission.ALLOW and acl.operation in allowed_by:
            allowed = True
    if allowed:
        return True
    return not covered and settings.allow_everyone_if_no_acl_found


def authorize_any(principal: KafkaPrincipal, host: str, operation: Operation, resource_type: ResourceType,
                  acls: Iterable[AclBinding], settings: AuthorizerSettings) -> bool:
    """Kafka's authorizeByResourceType: may the principal do the operation on at least one resource
    of the type (an ALLOW for it that no DENY of the principal covers)? InitProducerId without a
    transactional id asks it of WRITE on topics."""
    who = str(principal)
    if who in settings.super_users:
        return True
    acls = [a for a in acls if a.resource_type == resource_type]
    mine = [a for a in acls if _applies_to(a, who, host) and a.operation in (operation, Operation.ALL)]
    denies = [a for a in mine if a.permission == Permission.DENY]
    if any(d.pattern_type == PatternType.LITERAL and d.resource_name == WILDCARD for d in denies):
        return False
    for allow in (a for a in mine if a.permission == Permission.ALLOW):
        name = allow.resource_name
        if not any(covers(d, resource_type, name) and (d.pattern_type == PatternType.PREFIXED or d.resource_name == name)
                   for d in denies):
            return True
    return not acls and settings.allow_everyone_if_no_acl_found
