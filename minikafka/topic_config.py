"""Topic configs under Apache Kafka's names: their types, defaults, and Kafka's validators.

Theory of operation
- TOPIC_CONFIGS is Kafka 4.3's LogConfig as a table: every topic config, the broker property that
  gives its default (the synonym DescribeConfigs reports), its ConfigDef type and its validator.
  `parse_topic_config` parses and validates a value the way CreateTopics and (Incremental)
  AlterConfigs do, and refuses in Kafka's words: tests/unit/test_kafka_topic_configs.py compares
  every message with what Apache Kafka 4.3.1 answered for the same values.
- Kafka renders the parsed value in its message (`-1.0` for a DOUBLE, the first bad item of a
  list), so the validators receive parsed values and `_shown` renders them as Java would.
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

import re
from collections.abc import Callable, Iterable
from decimal import Decimal
from typing import TYPE_CHECKING, Any, NamedTuple

from minikafka.config import LONG_MAX, ConfigError

if TYPE_CHECKING:
    from minikafka.config import BrokerConfig

INT_MIN, INT_MAX = -(2**31), 2**31 - 1
LONG_MIN = -(2**63)

CLEANUP_POLICIES = ("compact", "delete")
COMPRESSION_TYPES = ("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer")
TIMESTAMP_TYPES = ("CreateTime", "LogAppendTime")

# A validator gets the parsed value and returns Kafka's reason, or None when the value is valid.
Check = Callable[[Any], str | None]


def _java_double(d: float) -> str:
    """Double.toString: plain between 1e-3 and 1e7, else computerized scientific notation
    (`9.223372036854776E18`), from the shortest digits that read back as d (as Java picks them)."""
    if d != d or d in (float("inf"), float("-inf")):
        return "NaN" if d != d else ("Infinity" if d > 0 else "-Infinity")
    if d == 0 or 1e-3 <= abs(d) < 1e7:
        return repr(float(d))
    sign, digits, exponent = Decimal(repr(float(d))).normalize().as_tuple()
    assert isinstance(exponent, int)
    text = "".join(map(str, digits))
    return f"{'-' if sign else ''}{text[0]}.{text[1:] or '0'}E{len(text) - 1 + exponent}"


_JAVA_DOUBLE = re.compile(r"[+-]?(NaN|Infinity|(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?[fFdD]?)")


def _shown(value: Any) -> str:
    if isinstance(value, float):
        return _java_double(value)
    return str(value)


def at_least(n: int) -> Check:
    return lambda v: None if v >= n else f"Value must be at least {n}"


def between(lo: int, hi: int) -> Check:
    return lambda v: (f"Value must be at least {lo}" if v < lo
                      else f"Value must be no more than {hi}" if v > hi else None)


def one_of(options: Iterable[str]) -> Check:
    options = tuple(options)
    return lambda v: None if v in options else "String must be one of: " + ", ".join(options)


def _gzip_level(v: int) -> str | None:
    return None if v == -1 or 1 <= v <= 9 else "Value must be between 1 and 9 or equal to -1"


class TopicConfigDef(NamedTuple):
    broker_prop: str | None  # the broker property that supplies the default (DescribeConfigs synonym)
    kind: str                # Kafka's ConfigDef type: BOOLEAN STRING INT LONG DOUBLE LIST
    check: Check | None = None
    items: Check | None = None  # LIST: checked item by item, the first bad one named


_THROTTLED = ("must be the literal '*' or a list of replicas in the following format: "
              "[partitionId]:[brokerId],[partitionId]:[brokerId],...")

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
    "follower.replication.throttled.replicas": TopicConfigDef(None, "LIST"),
    "index.interval.bytes": TopicConfigDef("log.index.interval.bytes", "INT", at_least(0)),
    "leader.replication.throttled.replicas": TopicConfigDef(None, "LIST"),
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
    "remote.log.copy.disable": TopicConfigDef(None, "BOOLEAN"),
    "remote.log.delete.on.disable": TopicConfigDef(None, "BOOLEAN"),
    "remote.storage.enable": TopicConfigDef(None, "BOOLEAN"),
    "retention.bytes": TopicConfigDef("log.retention.bytes", "LONG"),
    "retention.ms": TopicConfigDef("log.retention.ms", "LONG", at_least(-1)),
    "segment.bytes": TopicConfigDef("log.segment.bytes", "INT", at_least(1024 * 1024)),
    "segment.index.bytes": TopicConfigDef("log.index.size.max.bytes", "INT", at_least(4)),
    "segment.jitter.ms": TopicConfigDef(None, "LONG", at_least(0)),
    "segment.ms": TopicConfigDef("log.roll.ms", "LONG", at_least(1)),
    "unclean.leader.election.enable": TopicConfigDef("unclean.leader.election.enable", "BOOLEAN"),
}
# Kafka's defineInternal keys: accepted and obeyed, described only where a topic sets them.
INTERNAL_TOPIC_CONFIGS: dict[str, TopicConfigDef] = {
    "internal.segment.bytes": TopicConfigDef(None, "INT"),
}
# Defaults of configs whose broker synonym is not a single property (or none exists).
_FIXED_DEFAULTS: dict[str, Any] = {
    "follower.replication.throttled.replicas": "", "leader.replication.throttled.replicas": "",
    "remote.log.copy.disable": False, "remote.log.delete.on.disable": False, "remote.storage.enable": False,
    "segment.jitter.ms": 0,
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
        elif name in _FIXED_DEFAULTS:
            out[name] = _FIXED_DEFAULTS[name]
        else:
            out[name] = config[d.broker_prop] if d.broker_prop else None
    return out


def render_config_value(v: Any) -> str | None:
    """A parsed config value as Kafka renders it in DescribeConfigs (booleans lower case)."""
    if v is None:
        return None
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def topic_config_type(name: str) -> str:
    d = TOPIC_CONFIGS.get(name) or INTERNAL_TOPIC_CONFIGS.get(name)
    return d.kind if d is not None else "LONG"


def known_topic_config(name: str) -> bool:
    return name in TOPIC_CONFIGS or name in INTERNAL_TOPIC_CONFIGS


def _parse_as(kind: str, raw: str) -> Any:
    """ConfigDef.parseType: raises ValueError where Java's parser would refuse the string."""
    text = raw.strip()
    if kind == "BOOLEAN":
        low = text.lower()
        if low not in ("true", "false"):
            raise ValueError(raw)
        return low == "true"
    if kind in ("INT", "LONG"):
        if "_" in text:  # Python reads 1_000; Java does not
            raise ValueError(raw)
        n = int(text)
        lo, hi = (INT_MIN, INT_MAX) if kind == "INT" else (LONG_MIN, LONG_MAX)
        if not lo <= n <= hi:
            raise ValueError(raw)
        return n
    if kind == "DOUBLE":
        if not _JAVA_DOUBLE.fullmatch(text):  # Double.parseDouble's grammar, less hex
            raise ValueError(raw)
        return float(text.rstrip("fFdD").replace("Infinity", "inf"))
    return text  # STRING, LIST (kept as the string the client sent, trimmed)


def parse_topic_config(name: str, raw: str, *, validate: bool = True) -> Any:
    """The typed value of a topic config; raises ConfigError for an unknown name or a value Kafka
    refuses, in Kafka's words (what CreateTopics and the AlterConfigs APIs answer).

    validate=False only parses: a topic stored by an older minikafka with a value today's rules
    refuse (a segment.bytes below 1 MiB) still loads."""
    d = TOPIC_CONFIGS.get(name) or INTERNAL_TOPIC_CONFIGS.get(name)
    if d is None:
        raise ConfigError(f"Unknown topic config name: {name}")
    try:
        value = _parse_as(d.kind, raw)
    except ValueError:
        reason = ("Expected value to be either true or false" if d.kind == "BOOLEAN"
                  else f"Not a number of type {d.kind}")
        raise ConfigError(f"Invalid value {raw} for configuration {name}: {reason}") from None
    if not validate:
        return value
    if d.kind == "LIST":
        _check_list(name, d, value)
    elif d.check is not None:
        reason = d.check(value)
        if reason is not None:
            raise ConfigError(f"Invalid value {_shown(value)} for configuration {name}: {reason}")
    if name == "remote.storage.enable" and value:
        raise ConfigError("Tiered Storage functionality is disabled in the broker. "
                          "Topic cannot be configured with remote log storage.")
    return value


def _check_list(name: str, d: TopicConfigDef, value: str) -> None:
    items = [x.strip() for x in value.split(",") if x.strip()]
    if name.endswith(".throttled.replicas"):
        if value.strip() == "*" or all(_is_replica(x) for x in items):
            return
        raise ConfigError(f"Invalid value [{', '.join(items)}] for configuration {name}: {name} {_THROTTLED}")
    if d.items is not None:
        for item in items:
            reason = d.items(item)
            if reason is not None:
                raise ConfigError(f"Invalid value {item} for configuration {name}: {reason}")


def _is_replica(item: str) -> bool:
    partition, sep, broker = item.partition(":")
    return bool(sep) and partition.strip().isdigit() and broker.strip().isdigit()


def segment_size_config(size: int) -> dict[str, str]:
    """The config that gives a broker-made topic (an internal one) segments of `size` bytes:
    segment.bytes, or internal.segment.bytes below segment.bytes' 1 MiB floor (small segments in tests)."""
    key = "segment.bytes" if size >= 1024 * 1024 else "internal.segment.bytes"
    return {key: str(size)}
