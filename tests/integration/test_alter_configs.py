"""IncrementalAlterConfigs and AlterConfigs on topics (issue 16, item 1) through confluent-kafka's
AdminClient: Kafka's error codes and messages (checked against Apache Kafka 4.3.1 in conformance
mode), changes in force at once and kept across a kill -9.
"""

from __future__ import annotations

import pytest
from clients import create_topic, producer, uniq
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

SET, DELETE, APPEND, SUBTRACT = (AlterConfigOpType.SET, AlterConfigOpType.DELETE, AlterConfigOpType.APPEND,
                                 AlterConfigOpType.SUBTRACT)
DYNAMIC_TOPIC_CONFIG = 1


def _alter(admin: AdminClient, topic: str, *entries: tuple[str, str | None, AlterConfigOpType],
           validate_only: bool = False) -> None:
    resource = ConfigResource(ResourceType.TOPIC, topic, incremental_configs=[
        ConfigEntry(name, value, incremental_operation=op) for name, value, op in entries])
    next(iter(admin.incremental_alter_configs([resource], validate_only=validate_only).values())).result(30)


def _refused(admin: AdminClient, topic: str, *entries: tuple[str, str | None, AlterConfigOpType]) -> tuple[int, str]:
    with pytest.raises(KafkaException) as exc:
        _alter(admin, topic, *entries)
    err = exc.value.args[0]
    return err.code(), err.str()


def _overrides(admin: AdminClient, topic: str) -> dict[str, str]:
    described = next(iter(admin.describe_configs([ConfigResource(ResourceType.TOPIC, topic)]).values())).result(30)
    return {name: e.value for name, e in described.items() if e.source == DYNAMIC_TOPIC_CONFIG}


def test_incremental_changes_and_kafkas_errors(kafka_broker) -> None:
    topic = uniq("alter")
    create_topic(kafka_broker.bootstrap, topic, 1, {"retention.ms": "100000"})
    admin = AdminClient({"bootstrap.servers": kafka_broker.bootstrap})
    _alter(admin, topic, ("retention.ms", "5000", SET), ("cleanup.policy", "compact", APPEND))
    assert _overrides(admin, topic) == {"retention.ms": "5000", "cleanup.policy": "delete,compact"}
    _alter(admin, topic, ("cleanup.policy", "delete", SUBTRACT), ("retention.ms", None, DELETE),
           ("flush.ms", None, DELETE))  # deleting an override that is not set is fine
    assert _overrides(admin, topic) == {"cleanup.policy": "compact"}
    _alter(admin, topic, ("retention.ms", "1", SET), validate_only=True)
    assert _overrides(admin, topic) == {"cleanup.policy": "compact"}

    code, message = _refused(admin, "missing-" + topic, ("retention.ms", "1", SET))
    assert (code, message) == (KafkaError.UNKNOWN_TOPIC_OR_PART, f"The topic 'missing-{topic}' does not exist.")
    assert _refused(admin, topic, ("foo.bar", "1", SET)) == (KafkaError.INVALID_CONFIG, "Unknown topic config name: foo.bar")
    assert _refused(admin, topic, ("retention.ms", "abc", SET)) == (
        KafkaError.INVALID_CONFIG, "Invalid value abc for configuration retention.ms: Not a number of type LONG")
    assert _refused(admin, topic, ("cleanup.policy", "shred", SET)) == (
        KafkaError.INVALID_CONFIG, "Invalid value shred for configuration cleanup.policy: String must be one of: compact, delete")
    assert _refused(admin, topic, ("retention.ms", "1", APPEND)) == (
        KafkaError.INVALID_CONFIG, "Can't APPEND to key retention.ms because its type is not LIST.")
    # One bad change refuses the whole resource: the good one beside it is not applied either.
    _refused(admin, topic, ("retention.ms", "7000", SET), ("foo.bar", "1", SET))
    assert _overrides(admin, topic) == {"cleanup.policy": "compact"}


def test_legacy_alter_configs_replaces_all_overrides(kafka_broker) -> None:
    topic = uniq("alter-legacy")
    create_topic(kafka_broker.bootstrap, topic, 1, {"retention.ms": "100000", "cleanup.policy": "compact"})
    admin = AdminClient({"bootstrap.servers": kafka_broker.bootstrap})
    with pytest.warns(DeprecationWarning):
        futures = admin.alter_configs([ConfigResource(ResourceType.TOPIC, topic, set_config={"segment.ms": "600000"})])
    next(iter(futures.values())).result(30)
    assert _overrides(admin, topic) == {"segment.ms": "600000"}


def test_a_change_is_in_force_at_once_and_kept_across_kill9(broker_factory) -> None:
    broker = broker_factory()
    topic = uniq("alter-live")
    create_topic(broker.bootstrap, topic, 1)
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    _alter(admin, topic, ("max.message.bytes", "1000", SET))
    p = producer(broker.bootstrap, **{"linger.ms": 0})
    errors: list[KafkaError] = []
    p.produce(topic, value=b"x" * 3000, partition=0, on_delivery=lambda err, _m: errors.append(err))
    assert p.flush(30) == 0
    assert [e.code() for e in errors] == [KafkaError.MSG_SIZE_TOO_LARGE]
    broker.restart(hard=True)
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    assert _overrides(admin, topic) == {"max.message.bytes": "1000"}


def test_every_kafka_topic_config_is_accepted_and_described(kafka_broker) -> None:
    """The topic configs minikafka stores without acting on them (compaction tunables, compression
    levels, tiered storage, throttled replicas) are accepted, validated and described as Kafka does;
    internal.segment.bytes is described only where it is set."""
    topic = uniq("allcfg")
    configs = {"min.cleanable.dirty.ratio": "0.25", "compression.zstd.level": "-5", "delete.retention.ms": "1000",
               "leader.replication.throttled.replicas": "0:1", "segment.jitter.ms": "10", "preallocate": "true",
               "local.retention.ms": "-2", "max.compaction.lag.ms": "60000", "internal.segment.bytes": "4096"}
    create_topic(kafka_broker.bootstrap, topic, 1, configs)
    admin = AdminClient({"bootstrap.servers": kafka_broker.bootstrap})
    assert _overrides(admin, topic) == configs
    _alter(admin, topic, ("internal.segment.bytes", None, DELETE), ("compression.gzip.level", "9", SET))
    described = next(iter(admin.describe_configs([ConfigResource(ResourceType.TOPIC, topic)]).values())).result(30)
    assert "internal.segment.bytes" not in described
    assert described["compression.gzip.level"].value == "9"
    assert described["remote.storage.enable"].value == "false"
    assert len(described) == 33
    assert _refused(admin, topic, ("min.cleanable.dirty.ratio", "2", SET)) == (
        KafkaError.INVALID_CONFIG, "Invalid value 2.0 for configuration min.cleanable.dirty.ratio: Value must be no more than 1")
    assert _refused(admin, topic, ("segment.bytes", "1024", SET)) == (
        KafkaError.INVALID_CONFIG, "Invalid value 1024 for configuration segment.bytes: Value must be at least 1048576")
    assert _refused(admin, topic, ("remote.storage.enable", "true", SET)) == (
        KafkaError.INVALID_CONFIG,
        "Tiered Storage functionality is disabled in the broker. Topic cannot be configured with remote log storage.")


def test_internal_segment_bytes_rolls_small_segments(broker_factory) -> None:
    """Kafka's internal override: segments of a few KiB, below segment.bytes' 1 MiB floor."""
    broker = broker_factory()
    topic = uniq("small")
    create_topic(broker.bootstrap, topic, 1, {"internal.segment.bytes": "4096"})
    p = producer(broker.bootstrap)
    for i in range(100):
        p.produce(topic, b"x" * 200, partition=0)
        p.flush(10)
    segments = list((broker.data_dir / f"{topic}-0").glob("*.log"))
    assert len(segments) >= 5, segments


def _group_configs(admin: AdminClient, group: str) -> dict:
    return next(iter(admin.describe_configs([ConfigResource(ResourceType.GROUP, group)]).values())).result(30)


def _alter_group(admin: AdminClient, group: str, *entries: tuple[str, str | None, AlterConfigOpType]) -> None:
    resource = ConfigResource(ResourceType.GROUP, group, incremental_configs=[
        ConfigEntry(name, value, incremental_operation=op) for name, value, op in entries])
    next(iter(admin.incremental_alter_configs([resource]).values())).result(30)


def test_group_configs_are_set_and_described_as_kafka(kafka_broker) -> None:
    """GROUP config resources (KIP-848): a group id carries configs whether or not the group exists."""
    admin = AdminClient({"bootstrap.servers": kafka_broker.bootstrap})
    group = uniq("grp")
    described = _group_configs(admin, group)
    assert len(described) == 17
    assert (described["consumer.session.timeout.ms"].value, described["consumer.session.timeout.ms"].source) == \
        ("45000", 5)  # DEFAULT_CONFIG
    _alter_group(admin, group, ("consumer.session.timeout.ms", "50000", SET), ("share.isolation.level", "read_committed", SET))
    described = _group_configs(admin, group)
    entry = described["consumer.session.timeout.ms"]
    assert (entry.value, entry.source) == ("50000", 8)  # DYNAMIC_GROUP_CONFIG
    assert [(s.name, s.value) for s in entry.synonyms.values()] == \
        [("consumer.session.timeout.ms", "50000"), ("group.consumer.session.timeout.ms", "45000")]
    with pytest.raises(KafkaException) as exc:
        _alter_group(admin, group, ("consumer.session.timeout.ms", "5", SET))
    assert (exc.value.args[0].code(), exc.value.args[0].str()) == (
        KafkaError.INVALID_CONFIG, "consumer.session.timeout.ms must be greater than or equal to "
                                   "group.consumer.min.session.timeout.ms")
    _alter_group(admin, group, ("share.isolation.level", None, DELETE))
    described = _group_configs(admin, group)
    assert described["share.isolation.level"].value == "read_uncommitted"
    assert described["consumer.session.timeout.ms"].value == "50000"


def test_group_configs_survive_a_restart(broker_factory) -> None:
    broker = broker_factory()
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    _alter_group(admin, "g", ("streams.num.standby.replicas", "2", SET))
    broker.kill9()
    broker.start()
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    assert _group_configs(admin, "g")["streams.num.standby.replicas"].value == "2"
