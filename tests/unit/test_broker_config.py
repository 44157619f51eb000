"""Broker configs, pure: every Kafka 4.3.1 broker config accepted at start-up and described, and
the dynamic layers over the static ones in Kafka's order."""

from __future__ import annotations

import pytest

from minikafka.broker_config import (
    broker_entries,
    cluster_default_entries,
    dynamic,
    ignored_security_configs,
    parse_broker_config,
    value_in_force,
    with_dynamic,
)
from minikafka.config import KAFKA_BROKER_CONFIGS, BrokerConfig, ConfigError
from minikafka.config_def import SOURCE_DEFAULT, SOURCE_DYNAMIC_BROKER, SOURCE_DYNAMIC_DEFAULT_BROKER, SOURCE_STATIC_BROKER


def _entries(props=None, per_broker=None, cluster_default=None):
    cfg = BrokerConfig.build(props or {})
    return {e.name: e for e in broker_entries(cfg, per_broker or {}, cluster_default or {})}


def test_the_record_has_kafkas_340_configs_99_of_them_dynamic() -> None:
    assert len(KAFKA_BROKER_CONFIGS) == 340
    assert sum(1 for n in KAFKA_BROKER_CONFIGS if dynamic(n)) == 99


def test_every_kafka_broker_config_is_accepted_at_start_and_described_as_given() -> None:
    cfg = BrokerConfig.build({"process.roles": "broker,controller", "ssl.keystore.location": "/k.jks",
                              "num.io.threads": "4"})
    assert cfg.ignored == {"process.roles": "broker,controller", "ssl.keystore.location": "/k.jks",
                           "num.io.threads": "4"}
    entries = {e.name: e for e in broker_entries(cfg, {}, {})}
    assert set(entries) == set(KAFKA_BROKER_CONFIGS)
    e = entries["num.io.threads"]
    assert (e.value, e.config_source, e.synonyms) == ("4", SOURCE_STATIC_BROKER, (
        ("num.io.threads", "4", SOURCE_STATIC_BROKER), ("num.io.threads", "8", SOURCE_DEFAULT)))
    with pytest.raises(ConfigError, match="unknown property"):
        BrokerConfig.build({"no.such.property": "1"})


def test_layers_in_kafkas_order_and_the_broker_follows_them() -> None:
    entries = _entries({"message.max.bytes": "5000"}, per_broker={"message.max.bytes": "3000"},
                       cluster_default={"message.max.bytes": "4000"})
    assert entries["message.max.bytes"].synonyms == (
        ("message.max.bytes", "3000", SOURCE_DYNAMIC_BROKER),
        ("message.max.bytes", "4000", SOURCE_DYNAMIC_DEFAULT_BROKER),
        ("message.max.bytes", "5000", SOURCE_STATIC_BROKER),
        ("message.max.bytes", "1048588", SOURCE_DEFAULT),
    )
    static = BrokerConfig.build({"message.max.bytes": "5000"})
    live = with_dynamic(static, static.values, {"message.max.bytes": "3000", "num.io.threads": "2"})
    assert live["message.max.bytes"] == 3000
    assert static["message.max.bytes"] == 5000


def test_secrets_and_unknown_names_are_never_answered() -> None:
    entries = _entries({"ssl.key.password": "hunter2"}, per_broker={"custom.plugin.setting": "1"})
    assert entries["ssl.key.password"].value is None
    assert all(v is None for _, v, _ in entries["ssl.key.password"].synonyms)
    custom = entries["custom.plugin.setting"]
    assert (custom.value, custom.sensitive, custom.read_only, custom.synonyms) == (
        None, True, False, (("custom.plugin.setting", None, SOURCE_DYNAMIC_BROKER),))
    (only,) = cluster_default_entries({"log.cleaner.threads": "2"})
    assert (only.name, only.value, only.config_source) == ("log.cleaner.threads", "2", SOURCE_DYNAMIC_DEFAULT_BROKER)


def test_values_are_checked_with_kafkas_types() -> None:
    assert parse_broker_config("log.cleaner.threads", "2") == 2
    with pytest.raises(ConfigError, match="Invalid value abc for configuration log.cleaner.threads: "
                                          "Not a number of type INT"):
        parse_broker_config("log.cleaner.threads", "abc")
    with pytest.raises(ConfigError, match="Invalid value x for configuration message.max.bytes"):
        parse_broker_config("message.max.bytes", "x")


def test_security_settings_that_are_ignored_are_named() -> None:
    cfg = BrokerConfig.build({"ssl.keystore.location": "/k.jks", "sasl.enabled.mechanisms": "PLAIN",
                              "authorizer.class.name": "x", "num.io.threads": "4",
                              "principal.builder.class": "com.example.Builder"})
    # TLS, SASL and the authorizer are read by minikafka/security; a custom principal builder is not.
    assert ignored_security_configs(cfg) == ["principal.builder.class"]


def test_the_value_in_force_is_the_highest_level_that_sets_it() -> None:
    cfg = BrokerConfig.build({"log.cleaner.threads": "3"})
    assert value_in_force(cfg, {}, "log.cleaner.threads") == "3"
    assert value_in_force(cfg, {"log.cleaner.threads": "5"}, "log.cleaner.threads") == "5"
    assert value_in_force(cfg, {}, "log.retention.ms") is None  # Kafka has no default for it
