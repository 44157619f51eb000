"""Broker configs as Kafka describes and changes them: all of Kafka 4.3.1's broker configs
described (with confluent-kafka's AdminClient and with kafka-configs.sh), the dynamic ones changed
per broker and cluster-wide with Kafka's errors for the others, in force at once and kept across
kill -9. The describe and alter tests also run against Apache Kafka (make conformance)."""

from __future__ import annotations

import json

from clients import create_topic, producer, uniq
from confluent_kafka import KafkaError
from confluent_kafka.admin import AdminClient, ConfigResource, ConfigSource, ResourceType
from kafka_ref import kafka_configs

from minikafka.config import KAFKA_BROKER_CONFIGS


def _describe(bootstrap: str, name: str = "1") -> dict:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    fut = admin.describe_configs([ConfigResource(ResourceType.BROKER, name)])
    return next(iter(fut.values())).result(30)


def test_every_kafka_broker_config_is_described(kafka_broker) -> None:
    entries = _describe(kafka_broker.bootstrap)
    assert set(entries) == set(KAFKA_BROKER_CONFIGS)  # 340 names, as Kafka 4.3.1
    for name, e in entries.items():
        _, _, read_only, sensitive = KAFKA_BROKER_CONFIGS[name]
        assert e.is_read_only == read_only, name
        assert e.is_sensitive == sensitive, name
        if sensitive:
            assert e.value is None, name
    assert entries["log.retention.ms"].value is None  # Kafka: no default; hours decide
    assert entries["log.dirs"].source == ConfigSource.STATIC_BROKER_CONFIG.value
    assert entries["compression.type"].value == "producer"


def test_dynamic_broker_configs_and_kafkas_refusals(kafka_broker) -> None:
    b = kafka_broker.bootstrap
    try:
        done = kafka_configs(b, "--alter", "--entity-type", "brokers", "--entity-name", "1",
                             "--add-config", "log.cleaner.backoff.ms=20000,log.cleaner.threads=2")
        assert done.returncode == 0, done.stderr
        done = kafka_configs(b, "--alter", "--entity-type", "brokers", "--entity-default",
                             "--add-config", "log.cleaner.backoff.ms=25000")
        assert done.returncode == 0, done.stderr
        shown = kafka_configs(b, "--describe", "--entity-type", "brokers", "--entity-name", "1")
        assert shown.stdout.splitlines() == [
            "Dynamic configs for broker 1 are:",
            "  log.cleaner.backoff.ms=20000 sensitive=false synonyms={DYNAMIC_BROKER_CONFIG:log.cleaner.backoff.ms"
            "=20000, DYNAMIC_DEFAULT_BROKER_CONFIG:log.cleaner.backoff.ms=25000, DEFAULT_CONFIG:log.cleaner."
            "backoff.ms=15000}",
            "  log.cleaner.threads=2 sensitive=false synonyms={DYNAMIC_BROKER_CONFIG:log.cleaner.threads=2, "
            "DEFAULT_CONFIG:log.cleaner.threads=1}",
        ]
        shown = kafka_configs(b, "--describe", "--entity-type", "brokers", "--entity-default").stdout.splitlines()
        assert shown[0] == "Default configs for brokers in the cluster are:"
        # (Kafka also lists min.insync.replicas here: its storage format writes it as a cluster config.)
        assert ("  log.cleaner.backoff.ms=25000 sensitive=false synonyms={DYNAMIC_DEFAULT_BROKER_CONFIG:"
                "log.cleaner.backoff.ms=25000}") in shown[1:]
        static = kafka_configs(b, "--alter", "--entity-type", "brokers", "--entity-name", "1",
                               "--add-config", "log.dirs=/elsewhere")
        assert "InvalidRequestException: Cannot update these configs dynamically: [log.dirs]" in static.stderr
        bad = kafka_configs(b, "--alter", "--entity-type", "brokers", "--entity-name", "1",
                            "--add-config", "log.cleaner.threads=abc")
        assert ("InvalidRequestException: Invalid value abc for configuration log.cleaner.threads: "
                "Not a number of type INT") in bad.stderr
        # Kafka takes names it does not know (custom configs for plugins) and describes them.
        unknown = kafka_configs(b, "--alter", "--entity-type", "brokers", "--entity-name", "1",
                                "--add-config", "custom.plugin.setting=1")
        assert unknown.returncode == 0, unknown.stderr
        shown = kafka_configs(b, "--describe", "--entity-type", "brokers", "--entity-name", "1")
        # ... as secrets: it cannot tell.
        assert ("  custom.plugin.setting=null sensitive=true synonyms={DYNAMIC_BROKER_CONFIG:"
                "custom.plugin.setting=null}") in shown.stdout.splitlines()
    finally:
        kafka_configs(b, "--alter", "--entity-type", "brokers", "--entity-name", "1",
                      "--delete-config", "log.cleaner.backoff.ms,log.cleaner.threads,custom.plugin.setting")
        kafka_configs(b, "--alter", "--entity-type", "brokers", "--entity-default",
                      "--delete-config", "log.cleaner.backoff.ms")


def test_a_dynamic_default_is_in_force_at_once_and_kept_across_kill9(broker_factory) -> None:
    broker = broker_factory()
    topic = uniq("dyn-broker")
    create_topic(broker.bootstrap, topic, 1)
    done = kafka_configs(broker.bootstrap, "--alter", "--entity-type", "brokers", "--entity-default",
                         "--add-config", "message.max.bytes=2000")
    assert done.returncode == 0, done.stderr

    def produce(size: int) -> list:
        p = producer(broker.bootstrap, **{"linger.ms": 0})
        errors: list = []
        p.produce(topic, value=b"x" * size, partition=0, on_delivery=lambda err, _m: errors.append(err))
        assert p.flush(30) == 0
        return [e.code() if e else None for e in errors]

    assert produce(3000) == [KafkaError.MSG_SIZE_TOO_LARGE]  # the topic follows the broker default
    assert produce(500) == [None]
    broker.restart(hard=True)
    assert produce(3000) == [KafkaError.MSG_SIZE_TOO_LARGE]
    entry = _describe(broker.bootstrap)["message.max.bytes"]
    assert (entry.value, entry.source) == ("2000", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG.value)
    stored = json.loads((broker.data_dir / "minikafka-broker-configs.json").read_text())
    assert stored == {"": {"message.max.bytes": "2000"}}
