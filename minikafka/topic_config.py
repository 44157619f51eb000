"""Topic configs under Apache Kafka's names: their types, defaults, and Kafka's validators.

Theory of operation
- TOPIC_CONFIGS is Kafka 4.3's LogConfig as a table: every topic config, the broker property that
  gives its default (the synonym DescribeConfigs reports), its ConfigDef type and its validator.
  `parse_topic_config` parses and validates a value the way CreateTopics and (Incremental)
  AlterConfigs do, and refuses in Kafka's words: tests/unit/test_kafka_topic_configs.py compares
  every message with what Apache Kafka 4.3.1 answered for the same values.
- Parsing, validators and messages are Kafka's ConfigDef (config_def.py, shared with the group
  configs); this module says which apply to which topic config.
- `internal.segment.bytes` is Kafka's internal override of segment.bytes (no lower bound): it is
  how Kafka's own tests get small segments, and minikafka's suite uses it the same way. Like
  Kafka, DescribeConfigs lists it only on a topic that sets it.
- Which configs take effect on one node: retention, segments, flush, timestamps, message size,
  index sizes, cleanup.policy, compression.type and min.insync.replicas do. The compaction tunables
  (delete.retention.ms, min/max.compaction.lag.ms, min.cleanable.dirty.ratio) are stored for the
  log cleaner; the compression levels, segment.jitter.ms, preallocate, throttled replicas and the
  tiered-storage configs are accepted, stored and described, and change nothing here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple

from minikafka.config import LONG_MAX, ConfigError
from minikafka.config_def import Check, at_least, between, one_of, parse_value

if TYPE_CHECKING:
    from minikafka.config import BrokerConfig

CLEANUP_POLICIES = ("compact", "delete")
COMPRESSION_TYPES = ("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer")
TIMESTAMP_TYPES = ("CreateTime", "LogAppendTime")
SEGMENT_BYTES_MIN = 1024 * 1024  # Kafka 4.x's floor for segment.bytes


def _gzip_level(v: int) -> str | None:
    return None if v == -1 or 1 <= v <= 9 else "Value must be between 1 and 9 or equal to -1"


def _throttled_replicas(name: str) -> Check:
    """ThrottledReplicaListValidator: `*`, or partition:broker pairs."""
    def check(items: list[str]) -> str | None:
        if items == ["*"] or all(_is_replica(x) for x in items):
            return None
        return (f"{name} must be the literal '*' or a list of replicas in the following format: "
                "[partitionId]:[brokerId],[partitionId]:[brokerId],...")
    return check


def _is_replica(item: str) -> bool:
    partition, sep, broker = item.partition(":")
    return bool(sep) and partition.strip().isdigit() and broker.strip().isdigit()


class TopicConfigDef(NamedTuple):
    broker_prop: str | None  # the broker property that supplies the default (DescribeConfigs synonym)
    kind: str                # Kafka's ConfigDef type: BOOLEAN STRING INT LONG DOUBLE LIST
    check: Check | None = None
    items: Check | None = None  # LIST: checked item by item, the first bad one named
    default: Any = None         # the default where no broker property gives it


TOPIC_CONFIGS: dict[str, TopicConfigDef] = {
    "cleanup.policy": TopicConfigDef("log.cleanup.policy", "LIST", items=one_of(CLEANUP_POLICIES)),
    "compression.gzip.level": TopicConfigDef("compression.gzip.level", "INT", _gzip_level),
    "compression.lz4.level": TopicConfigDef("compression.lz4.level", "INT", between(1, 17)),
    "compression.type": TopicConfigDef("compression.type", "STRING", one_of(COMPRESSION_TYPES)),
    "compression.zstd.level": TopicConfigDef("compression.zstd.level", "INT", between(-131072, 22)),
    "delete.retention.ms": TopicConfigDef("log.cleaner.delete.retention.ms", "LONG", at_least(0)),
    "file.delete.delay.ms": TopicConfigDef("log.segment.delete.delay.ms", "LONG", at_least(0)),
    "flush.messages": TopicConfigDef("log.flush.interval.messages", "LONG", at_least(1)),
    "flush.ms": TopicConfigDef("log.flush.interval.ms", "LONG", at_least(0)),
    "follower.replication.throttled.replicas": TopicConfigDef(
        None, "LIST", _throttled_replicas("follower.replication.throttled.replicas"), default=""),
    "index.interval.bytes": TopicConfigDef("log.index.interval.bytes", "INT", at_least(0)),
    "leader.replication.throttled.replicas": TopicConfigDef(
        None, "LIST", _throttled_replicas("leader.replication.throttled.replicas"), default=""),
    "local.retention.bytes": TopicConfigDef("log.local.retention.bytes", "LONG", at_least(-2)),
    "local.retention.ms": TopicConfigDef("log.local.retention.ms", "LONG", at_least(-2)),
    "max.compaction.lag.ms": TopicConfigDef("log.cleaner.max.compaction.lag.ms", "LONG", at_least(1)),
    "max.message.bytes": TopicConfigDef("message.max.bytes", "INT", at_least(0)),
    "message.timestamp.after.max.ms": TopicConfigDef("log.message.timestamp.after.max.ms", "LONG", at_least(0)),
    "message.timestamp.before.max.ms": TopicConfigDef("log.message.timestamp.before.max.ms", "LONG", at_least(0)),
    "message.timestamp.type": TopicConfigDef("log.message.timestamp.type", "STRING", one_of(TIMESTAMP_TYPES)),
    "min.cleanable.dirty.ratio": TopicConfigDef("log.cleaner.min.cleanable.ratio", "DOUBLE", between(0, 1)),
    "min.compaction.lag.ms": TopicConfigDef("log.cleaner.min.compaction.lag.ms", "LONG", at_least(0)),
    "min.insync.replicas": TopicConfigDef("min.insync.replicas", "INT", at_least(1)),
    "preallocate": TopicConfigDef("log.preallocate", "BOOLEAN"),
    "remote.log.copy.disable": TopicConfigDef(None, "BOOLEAN", default=False),
    "remote.log.delete.on.disable": TopicConfigDef(None, "BOOLEAN", default=False),
    "remote.storage.enable": TopicConfigDef(None, "BOOLEAN", default=False),
    "retention.bytes": TopicConfigDef("log.retention.bytes", "LONG"),
    "retention.ms": TopicConfigDef("log.retention.ms", "LONG", at_least(-1)),
    "segment.bytes": TopicConfigDef("log.segment.bytes", "INT", at_least(SEGMENT_BYTES_MIN)),
    "segment.index.bytes": TopicConfigDef("log.index.size.max.bytes", "INT", at_least(4)),
    "segment.jitter.ms": TopicConfigDef(None, "LONG", at_least(0), default=0),
    "segment.ms": TopicConfigDef("log.roll.ms", "LONG", at_least(1)),
    "unclean.leader.election.enable": TopicConfigDef("unclean.leader.election.enable", "BOOLEAN"),
}
# Kafka's defineInternal keys: accepted and obeyed, described only where a topic sets them.
INTERNAL_TOPIC_CONFIGS: dict[str, TopicConfigDef] = {
    "internal.segment.bytes": TopicConfigDef(None, "INT"),
}


def topic_defaults(config: BrokerConfig) -> dict[str, Any]:
    """Effective defaults for every topic config, from the broker's settings."""
    out: dict[str, Any] = {}
    for name, d in TOPIC_CONFIGS.items():
        if name == "retention.ms":
            out[name] = config.log_retention_ms
        elif name == "segment.ms":
            out[name] = config.log_roll_ms
        elif name == "flush.ms":
            v = config["log.flush.interval.ms"]
            out[name] = LONG_MAX if v is None else v
        else:
            out[name] = config[d.broker_prop] if d.broker_prop else d.default
    return out


def topic_config_type(name: str) -> str:
    d = TOPIC_CONFIGS.get(name) or INTERNAL_TOPIC_CONFIGS.get(name)
    return d.kind if d is not None else "LONG"


def known_topic_config(name: str) -> bool:
    return name in TOPIC_CONFIGS or name in INTERNAL_TOPIC_CONFIGS


def parse_topic_config(name: str, raw: str, *, validate: bool = True) -> Any:
    """The typed value of a topic config; raises ConfigError for an unknown name or a value Kafka
    refuses, in Kafka's words (what CreateTopics and the AlterConfigs APIs answer).

    validate=False only parses: a topic stored by an older minikafka with a value today's rules
    refuse (a segment.bytes below 1 MiB) still loads."""
    d = TOPIC_CONFIGS.get(name) or INTERNAL_TOPIC_CONFIGS.get(name)
    if d is None:
        raise ConfigError(f"Unknown topic config name: {name}")
    value = parse_value(name, raw, d.kind, d.check, d.items, validate=validate)
    if validate and name == "remote.storage.enable" and value:
        # LogConfig.validate against the broker: this one has no tiered storage.
        raise ConfigError("Tiered Storage functionality is disabled in the broker. "
                          "Topic cannot be configured with remote log storage.")
    return value


def segment_size_config(size: int) -> dict[str, str]:
    """The config that gives a broker-made topic (an internal one) segments of `size` bytes:
    segment.bytes, or internal.segment.bytes below segment.bytes' 1 MiB floor (small segments in tests)."""
    key = "segment.bytes" if size >= SEGMENT_BYTES_MIN else "internal.segment.bytes"
    return {key: str(size)}
