"""Listeners, their security protocols and advertised addresses (security/listeners.py), and the
TLS principal mapping rules (security/principal.py): pure."""

from __future__ import annotations

import pytest

from minikafka.security.listeners import parse_listeners
from minikafka.security.principal import KafkaPrincipal, NoMatchingRule, SslPrincipalMapper

pytestmark = pytest.mark.unit


def test_listeners_take_their_protocol_from_the_map_and_advertise_their_own_address() -> None:
    ls = parse_listeners("PLAINTEXT://127.0.0.1:9092,sasl_ssl://0.0.0.0:9093,INTERNAL://[::1]:9094",
                         "SASL_SSL://broker.example:19093",
                         "INTERNAL:SSL,PLAINTEXT:PLAINTEXT,SASL_SSL:SASL_SSL")
    assert [(x.name, x.security_protocol, x.host, x.port) for x in ls] == [
        ("PLAINTEXT", "PLAINTEXT", "127.0.0.1", 9092), ("SASL_SSL", "SASL_SSL", "0.0.0.0", 9093),
        ("INTERNAL", "SSL", "::1", 9094)]
    assert [(x.advertised_host, x.advertised_port) for x in ls] == [
        ("127.0.0.1", 9092), ("broker.example", 19093), ("::1", 9094)]
    assert [(x.tls, x.sasl) for x in ls] == [(False, False), (True, True), (True, False)]
    assert ls[2].config_prefix == "listener.name.internal."


def test_the_default_map_names_the_four_protocols_after_themselves() -> None:
    ls = parse_listeners("SSL://127.0.0.1:1,SASL_PLAINTEXT://127.0.0.1:2")
    assert [x.security_protocol for x in ls] == ["SSL", "SASL_PLAINTEXT"]


def test_a_listener_bound_to_port_zero_advertises_the_port_it_got() -> None:
    (plain,) = parse_listeners("PLAINTEXT://127.0.0.1:0")
    assert plain.bound(40001).advertised_port == 40001
    (fixed,) = parse_listeners("PLAINTEXT://127.0.0.1:0", "PLAINTEXT://proxy:9000")
    assert fixed.bound(40001).advertised_port == 9000


@pytest.mark.parametrize("listeners, advertised, pmap, message", [
    ("FOO://127.0.0.1:1", "", None, "No security protocol defined for listener FOO"),
    ("PLAINTEXT://127.0.0.1:1,PLAINTEXT://127.0.0.1:2", "", None, "Each listener must have a different name"),
    ("PLAINTEXT://127.0.0.1:1,SSL://127.0.0.1:1", "", None, "Each listener must have a different port"),
    ("PLAINTEXT://127.0.0.1:1", "SSL://x:2", None, "must be equal to or a subset"),
    ("PLAINTEXT://127.0.0.1:1", "", "PLAINTEXT:TLS", "SecurityProtocol.TLS"),
    ("127.0.0.1:1", "", None, "Unable to parse"),
])
def test_kafka_refuses_these_listener_settings(listeners: str, advertised: str, pmap: str | None,
                                                message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_listeners(listeners, advertised, pmap)


DN = "CN=alice,OU=Dev,O=Example,C=DE"


def test_the_default_rule_keeps_the_whole_dn() -> None:
    assert SslPrincipalMapper().name(DN) == DN


def test_the_first_rule_that_matches_the_whole_dn_names_the_principal() -> None:
    mapper = SslPrincipalMapper("RULE:^CN=(.*?),OU=Ops.*$/ops-$1/, RULE:^CN=(.*?),OU=(.*?),.*$/$1@$2/L,DEFAULT")
    assert mapper.name(DN) == "alice@dev"
    assert mapper.name("CN=Bob,OU=Ops,O=Example") == "ops-Bob"
    assert mapper.name("O=Example") == "O=Example"  # only DEFAULT matches
    assert SslPrincipalMapper("RULE:^CN=([^,]*).*$/$1/U").name(DN) == "ALICE"


def test_a_slash_in_a_rule_is_escaped_and_no_matching_rule_is_an_error() -> None:
    mapper = SslPrincipalMapper(r"RULE:^CN=a\/b,(.*)$/$1/")
    assert mapper.name("CN=a/b,O=x") == "O=x"
    with pytest.raises(NoMatchingRule):
        mapper.name(DN)
    with pytest.raises(ValueError, match="Invalid rule"):
        SslPrincipalMapper("RULES:x/y/")


def test_principals_print_and_parse_as_type_colon_name() -> None:
    p = KafkaPrincipal.parse("User:CN=alice,O=x")
    assert (p.type, p.name, str(p)) == ("User", "CN=alice,O=x", "User:CN=alice,O=x")
    with pytest.raises(ValueError):
        KafkaPrincipal.parse("alice")
