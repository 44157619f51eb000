"""The authorizer's decision and the ACL filters (security/authorizer.py, security/acls.py), pure:
Kafka's StandardAuthorizer rules, case by case."""

from __future__ import annotations

import pytest

from minikafka.security.acl_manager import AclManager, authorizer_enabled
from minikafka.security.acl_store import AclStore
from minikafka.security.acls import (
    AclBinding,
    AclFilter,
    InvalidAcl,
    Operation,
    PatternType,
    Permission,
    ResourceType,
    validate_new,
)
from minikafka.security.authorizer import AuthorizerSettings, authorize, authorize_any
from minikafka.security.principal import KafkaPrincipal

pytestmark = pytest.mark.unit

ALICE, BOB = KafkaPrincipal("User", "alice"), KafkaPrincipal("User", "bob")
TOPIC, GROUP, CLUSTER = ResourceType.TOPIC, ResourceType.GROUP, ResourceType.CLUSTER
LIT, PRE = PatternType.LITERAL, PatternType.PREFIXED
ALLOW, DENY = Permission.ALLOW, Permission.DENY
STRICT = AuthorizerSettings()


def acl(name: str, op: Operation, perm: Permission = ALLOW, who: str = "User:alice", pattern: PatternType = LIT,
        rtype: ResourceType = TOPIC, host: str = "*") -> AclBinding:
    return AclBinding(rtype, name, pattern, who, host, op, perm)


def can(acls: list[AclBinding], op: Operation, name: str, who: KafkaPrincipal = ALICE, host: str = "10.0.0.1",
        rtype: ResourceType = TOPIC, settings: AuthorizerSettings = STRICT) -> bool:
    return authorize(who, host, op, rtype, name, acls, settings)


def test_literal_prefixed_and_wildcard_names() -> None:
    acls = [acl("orders", Operation.READ), acl("logs-", Operation.WRITE, pattern=PRE), acl("*", Operation.DESCRIBE)]
    assert can(acls, Operation.READ, "orders") and not can(acls, Operation.READ, "orders2")
    assert can(acls, Operation.WRITE, "logs-app") and not can(acls, Operation.WRITE, "logs")
    assert can(acls, Operation.DESCRIBE, "anything")


def test_deny_wins_and_all_covers_every_operation() -> None:
    acls = [acl("t-", Operation.ALL, pattern=PRE), acl("t-secret", Operation.READ, DENY)]
    assert can(acls, Operation.READ, "t-public") and can(acls, Operation.DELETE, "t-public")
    assert not can(acls, Operation.READ, "t-secret") and can(acls, Operation.WRITE, "t-secret")
    assert not can([acl("t", Operation.READ), acl("t", Operation.ALL, DENY)], Operation.READ, "t")


def test_implied_operations() -> None:
    for op in (Operation.READ, Operation.WRITE, Operation.DELETE, Operation.ALTER):
        assert can([acl("t", op)], Operation.DESCRIBE, "t")
    assert can([acl("t", Operation.ALTER_CONFIGS)], Operation.DESCRIBE_CONFIGS, "t")
    assert not can([acl("t", Operation.DESCRIBE)], Operation.READ, "t")
    assert not can([acl("t", Operation.READ, DENY), acl("t", Operation.DESCRIBE)], Operation.READ, "t")


def test_principal_and_host_must_match() -> None:
    acls = [acl("t", Operation.READ, who="User:*"), acl("u", Operation.READ, host="10.0.0.9")]
    assert can(acls, Operation.READ, "t", who=BOB)
    assert not can(acls, Operation.READ, "u") and can(acls, Operation.READ, "u", host="10.0.0.9")
    assert not can([acl("t", Operation.READ)], Operation.READ, "t", who=BOB)


def test_super_users_and_resources_without_acls() -> None:
    supers = AuthorizerSettings(frozenset({"User:bob"}))
    assert can([acl("t", Operation.READ, DENY, who="User:bob")], Operation.WRITE, "t", who=BOB, settings=supers)
    everyone = AuthorizerSettings(allow_everyone_if_no_acl_found=True)
    assert can([], Operation.READ, "t", settings=everyone) and not can([], Operation.READ, "t")
    # a resource with ACLs for someone else is not "without ACLs"
    assert not can([acl("t", Operation.READ, who="User:carol")], Operation.READ, "t", settings=everyone)
    assert AuthorizerSettings.parse("User:a; User:b", "TRUE") == AuthorizerSettings(frozenset({"User:a", "User:b"}), True)


def test_any_topic_for_idempotent_producers() -> None:
    assert authorize_any(ALICE, "h", Operation.WRITE, TOPIC, [acl("t", Operation.WRITE)], STRICT)
    assert not authorize_any(ALICE, "h", Operation.WRITE, TOPIC, [acl("t", Operation.READ)], STRICT)
    denied = [acl("t", Operation.WRITE), acl("t", Operation.WRITE, DENY)]
    assert not authorize_any(ALICE, "h", Operation.WRITE, TOPIC, denied, STRICT)
    assert not authorize_any(ALICE, "h", Operation.WRITE, TOPIC, [acl("t", Operation.WRITE), acl("*", Operation.WRITE, DENY)],
                             STRICT)


@pytest.mark.parametrize("binding, message", [
    (AclBinding(ResourceType.ANY, "t", LIT, "User:a", "*", Operation.READ, ALLOW), "Invalid resourceType ANY"),
    (AclBinding(TOPIC, "t", PatternType.MATCH, "User:a", "*", Operation.READ, ALLOW), "Invalid patternType MATCH"),
    (AclBinding(TOPIC, "t", LIT, "User:a", "*", Operation.ANY, ALLOW), "Invalid operation ANY"),
    (AclBinding(TOPIC, "t", LIT, "User:a", "*", Operation.READ, Permission.ANY), "Invalid permissionType ANY"),
    (AclBinding(CLUSTER, "c", LIT, "User:a", "*", Operation.ALTER, ALLOW), "The only valid name for the CLUSTER"),
    (AclBinding(TOPIC, "", LIT, "User:a", "*", Operation.READ, ALLOW), "Invalid empty resource name"),
    (AclBinding(TOPIC, "t", LIT, "alice", "*", Operation.READ, ALLOW), "Could not parse principal from `alice` "
                                                                        r"\(no colon is present"),
    (AclBinding.of(99, "t", 3, "User:a", "*", 3, 3), "Invalid resourceType UNKNOWN"),
])
def test_invalid_bindings(binding: AclBinding, message: str) -> None:
    with pytest.raises(InvalidAcl, match=message):
        validate_new(binding)


def test_filters_match_any_and_match_finds_what_applies() -> None:
    lit, pre, star = acl("orders", Operation.READ), acl("ord", Operation.READ, pattern=PRE), acl("*", Operation.READ)
    other = acl("x", Operation.WRITE, rtype=GROUP)
    acls = [lit, pre, star, other]
    f = AclFilter(TOPIC, "orders", PatternType.MATCH, None, None, Operation.ANY, Permission.ANY)
    assert [b for b in acls if f.matches(b)] == [lit, pre, star]
    f = AclFilter(ResourceType.ANY, None, PatternType.ANY, "User:alice", None, Operation.WRITE, Permission.ANY)
    assert [b for b in acls if f.matches(b)] == [other]
    f = AclFilter(TOPIC, "ord", PatternType.PREFIXED, None, None, Operation.ANY, ALLOW)
    assert [b for b in acls if f.matches(b)] == [pre]


def test_the_manager_keeps_acls_across_restarts_and_deletes_by_filter(tmp_path) -> None:  # type: ignore[no-untyped-def]
    m = AclManager(AclStore(tmp_path), STRICT)
    a, b = acl("t", Operation.READ), acl("u", Operation.WRITE)
    assert m.create([a, a, b, AclBinding(TOPIC, "", LIT, "User:x", "*", Operation.READ, ALLOW)]) == [
        None, None, None, "Invalid empty resource name"]
    again = AclManager(AclStore(tmp_path), STRICT)
    assert again.acls == [a, b]
    everything = AclFilter(ResourceType.ANY, None, PatternType.ANY, None, None, Operation.ANY, Permission.ANY)
    only_t = AclFilter(TOPIC, "t", PatternType.ANY, None, None, Operation.ANY, Permission.ANY)
    assert again.delete([only_t, everything]) == [[a], [a, b]]  # each filter sees the ACLs before the request
    assert AclManager(AclStore(tmp_path), STRICT).acls == []


def test_only_kafkas_authorizer_classes_are_taken() -> None:
    assert authorizer_enabled("org.apache.kafka.metadata.authorizer.StandardAuthorizer")
    assert not authorizer_enabled("") and not authorizer_enabled(None)
    with pytest.raises(ValueError, match="not supported"):
        authorizer_enabled("com.example.MyAuthorizer")


def test_a_damaged_acl_file_stops_the_broker_instead_of_guessing(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from minikafka.broker.app import Broker
    from minikafka.config import BrokerConfig
    from minikafka.storage.errors import StartupError

    (tmp_path / "minikafka-acls.json").write_text('{"version": 1, "acls": [[2, "t"')
    config = BrokerConfig.build({"authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer"},
                                port=0, data_dir=tmp_path)
    with pytest.raises(StartupError, match="ACL file"):
        Broker(config)
