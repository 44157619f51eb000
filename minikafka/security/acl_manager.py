"""The authorizer's state on the broker: the ACLs, their store and the settings, behind the calls
the broker makes (create, describe, delete, authorize). On when `authorizer.class.name` names
Kafka's StandardAuthorizer (or the older AclAuthorizer); off, every ACL request is
SECURITY_DISABLED and everything is allowed, as Kafka without an authorizer."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from minikafka.security.acl_store import AclStore
from minikafka.security.acls import AclBinding, AclFilter, InvalidAcl, Operation, ResourceType, validate_new
from minikafka.security.authorizer import AuthorizerSettings, authorize, authorize_any
from minikafka.security.principal import KafkaPrincipal

AUTHORIZER_CLASSES = ("org.apache.kafka.metadata.authorizer.StandardAuthorizer", "kafka.security.authorizer.AclAuthorizer")


def authorizer_enabled(class_name: str | None) -> bool:
    """Raises ValueError for an authorizer minikafka does not implement."""
    name = (class_name or "").strip()
    if not name:
        return False
    if name not in AUTHORIZER_CLASSES:
        raise ValueError(f"authorizer.class.name {name} is not supported by minikafka "
                         f"(use {AUTHORIZER_CLASSES[0]})")
    return True


class AclManager:
    def __init__(self, store: AclStore, settings: AuthorizerSettings) -> None:
        self.store = store
        self.settings = settings
        self.acls: list[AclBinding] = store.load()

    def authorize(self, principal: KafkaPrincipal, host: str, operation: Operation, resource_type: ResourceType,
                  name: str) -> bool:
        return authorize(principal, host, operation, resource_type, name, self.acls, self.settings)

    def authorize_any(self, principal: KafkaPrincipal, host: str, operation: Operation,
                      resource_type: ResourceType) -> bool:
        return authorize_any(principal, host, operation, resource_type, self.acls, self.settings)

    def create(self, bindings: Sequence[AclBinding]) -> list[str | None]:
        """One outcome per binding: None (created, or already there) or the INVALID_REQUEST message.
        Stored before it takes effect (raises OSError when the disk refuses: nothing changed)."""
        outcomes: list[str | None] = []
        new = list(self.acls)
        for b in bindings:
            try:
                validate_new(b)
            except InvalidAcl as exc:
                outcomes.append(str(exc))
                continue
            if b not in new:
                new.append(b)
            outcomes.append(None)
        if new != self.acls:
            self.store.save(new)
            self.acls = new
        return outcomes

    def describe(self, f: AclFilter) -> list[AclBinding]:
        """Raises InvalidAcl for a filter Kafka refuses."""
        f.validate()
        return [b for b in self.acls if f.matches(b)]

    def delete(self, filters: Iterable[AclFilter]) -> list[list[AclBinding] | str]:
        """Per filter: the bindings it removed, or the INVALID_REQUEST message."""
        results: list[list[AclBinding] | str] = []
        keep = list(self.acls)
        for f in filters:
            try:
                f.validate()
            except InvalidAcl as exc:
                results.append(str(exc))
                continue
            gone = [b for b in self.acls if f.matches(b)]  # as Kafka: each filter sees the ACLs before the request
            keep = [b for b in keep if not f.matches(b)]
            results.append(gone)
        if keep != self.acls:
            self.store.save(keep)
            self.acls = keep
        return results
