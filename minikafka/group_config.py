"""Group configs (KIP-848's GROUP config resource) under Apache Kafka 4.3's names and rules.

Theory of operation
- GROUP_CONFIGS is Kafka's GroupConfig as a table: each config's type, default, lower bound, and
  the broker properties that bound it (group.consumer.min.session.timeout.ms, ...) with their
  default values. A group config is set per group id with IncrementalAlterConfigs and described
  with DescribeConfigs (source DYNAMIC_GROUP_CONFIG, synonym the broker property that gives the
  default); a group need not exist for either, as in Kafka.
- `parse_group_config` refuses in Kafka's words, in Kafka's order (type, lower bound, broker
  bounds); tests/unit/test_kafka_group_configs.py holds it to Apache Kafka 4.3.1's answers.
- They govern consumer groups of the new protocol, share groups and streams groups, which
  minikafka does not serve yet (issues 18 and 23): they are stored and described, and the classic
  groups minikafka serves do not read them (nor do Kafka's).
"""

from __future__ import annotations

import re
from typing import Any, NamedTuple

from minikafka.config import ConfigError
from minikafka.topic_config import INT_MAX, INT_MIN


class GroupConfigDef(NamedTuple):
    kind: str                              # INT, STRING, BOOLEAN
    default: Any
    synonym: str                           # the broker property giving the default
    at_least: int | None = None
    min_prop: tuple[str, int] | None = None  # broker property bounding it from below, its default
    max_prop: tuple[str, int] | None = None  # ... from above
    one_of: tuple[str, ...] = ()


def _g(kind: str, default: Any, synonym: str, at_least: int | None = None, *, low: tuple[str, int] | None = None,
       high: tuple[str, int] | None = None, one_of: tuple[str, ...] = ()) -> GroupConfigDef:
    return GroupConfigDef(kind, default, synonym, at_least, low, high, one_of)


GROUP_CONFIGS: dict[str, GroupConfigDef] = {
    "consumer.assignment.interval.ms": _g("INT", 1000, "group.consumer.assignment.interval.ms", 0,
                                          high=("group.consumer.max.assignment.interval.ms", 15000)),
    "consumer.heartbeat.interval.ms": _g("INT", 5000, "group.consumer.heartbeat.interval.ms", 1,
                                         low=("group.consumer.min.heartbeat.interval.ms", 5000),
                                         high=("group.consumer.max.heartbeat.interval.ms", 15000)),
    "consumer.session.timeout.ms": _g("INT", 45000, "group.consumer.session.timeout.ms", 1,
                                      low=("group.consumer.min.session.timeout.ms", 45000),
                                      high=("group.consumer.max.session.timeout.ms", 60000)),
    "share.assignment.interval.ms": _g("INT", 1000, "group.share.assignment.interval.ms", 0,
                                       high=("group.share.max.assignment.interval.ms", 15000)),
    "share.auto.offset.reset": _g("STRING", "latest", "share.auto.offset.reset"),
    "share.delivery.count.limit": _g("INT", 5, "group.share.delivery.count.limit", 2,
                                     high=("group.share.max.delivery.count.limit", 10)),
    "share.heartbeat.interval.ms": _g("INT", 5000, "group.share.heartbeat.interval.ms", 1,
                                      low=("group.share.min.heartbeat.interval.ms", 5000),
                                      high=("group.share.max.heartbeat.interval.ms", 15000)),
    "share.isolation.level": _g("STRING", "read_uncommitted", "share.isolation.level",
                                one_of=("read_committed", "read_uncommitted")),
    "share.partition.max.record.locks": _g("INT", 2000, "group.share.partition.max.record.locks", 100,
                                           high=("group.share.max.partition.max.record.locks", 4000)),
    "share.record.lock.duration.ms": _g("INT", 30000, "group.share.record.lock.duration.ms", 1000,
                                        low=("group.share.min.record.lock.duration.ms", 15000),
                                        high=("group.share.max.record.lock.duration.ms", 60000)),
    "share.renew.acknowledge.enable": _g("BOOLEAN", True, "share.renew.acknowledge.enable"),
    "share.session.timeout.ms": _g("INT", 45000, "group.share.session.timeout.ms", 1,
                                   low=("group.share.min.session.timeout.ms", 45000),
                                   high=("group.share.max.session.timeout.ms", 60000)),
    "streams.assignment.interval.ms": _g("INT", 1000, "group.streams.assignment.interval.ms", 0,
                                         high=("group.streams.max.assignment.interval.ms", 15000)),
    "streams.heartbeat.interval.ms": _g("INT", 5000, "group.streams.heartbeat.interval.ms", 1,
                                        low=("group.streams.min.heartbeat.interval.ms", 5000),
                                        high=("group.streams.max.heartbeat.interval.ms", 15000)),
    "streams.initial.rebalance.delay.ms": _g("INT", 3000, "group.streams.initial.rebalance.delay.ms", 0),
    "streams.num.standby.replicas": _g("INT", 0, "group.streams.num.standby.replicas", 0,
                                       high=("group.streams.max.standby.replicas", 2)),
    "streams.session.timeout.ms": _g("INT", 45000, "group.streams.session.timeout.ms", 1,
                                     low=("group.streams.min.session.timeout.ms", 45000),
                                     high=("group.streams.max.session.timeout.ms", 60000)),
}

# java.time.Duration.parse's grammar (case-insensitive), for share.auto.offset.reset=by_duration:...
_DURATION = re.compile(r"([-+]?)P(?:([-+]?\d+)D)?(?:T(?:([-+]?\d+)H)?(?:([-+]?\d+)M)?(?:([-+]?\d+)(?:[.,](\d{0,9}))?S)?)?",
                       re.IGNORECASE)


def _duration_seconds(text: str) -> float | None:
    m = _DURATION.fullmatch(text)
    if m is None or not any(m.group(i) for i in (2, 3, 4, 5)) or text.upper().endswith("T"):
        return None
    days, hours, minutes, seconds = (int(m.group(i) or 0) for i in (2, 3, 4, 5))
    fraction = float("0." + m.group(6)) if m.group(6) else 0.0
    total = days * 86400 + hours * 3600 + minutes * 60 + seconds + (fraction if seconds >= 0 else -fraction)
    return -total if m.group(1) == "-" else total


def _auto_offset_reset_ok(value: str) -> bool:
    if value in ("earliest", "latest"):
        return True
    if value.startswith("by_duration:"):
        seconds = _duration_seconds(value[len("by_duration:"):])
        return seconds is not None and seconds >= 0
    return False


def parse_group_config(name: str, raw: str) -> Any:
    """The typed value of a group config; raises ConfigError in Kafka's words."""
    d = GROUP_CONFIGS.get(name)
    if d is None:
        raise ConfigError(f"Unknown group config name: {name}")
    text = raw.strip()
    if d.kind == "BOOLEAN":
        if text.lower() not in ("true", "false"):
            raise ConfigError(f"Invalid value {raw} for configuration {name}: Expected value to be either true or false")
        return text.lower() == "true"
    if d.kind == "STRING":
        if d.one_of and text not in d.one_of:
            raise ConfigError(f"Invalid value {text} for configuration {name}: String must be one of: "
                              + ", ".join(d.one_of))
        if name == "share.auto.offset.reset" and not _auto_offset_reset_ok(text):
            raise ConfigError(f"Invalid value {text} for configuration {name}: Invalid value `{text}` for configuration "
                              f"{name}. The value must be either 'earliest', 'latest' or of the format "
                              "'by_duration:<PnDTnHnMn.nS>'.")
        return text
    try:
        if "_" in text:
            raise ValueError(raw)
        value = int(text)
        if not INT_MIN <= value <= INT_MAX:
            raise ValueError(raw)
    except ValueError:
        raise ConfigError(f"Invalid value {raw} for configuration {name}: Not a number of type INT") from None
    if d.at_least is not None and value < d.at_least:
        raise ConfigError(f"Invalid value {value} for configuration {name}: Value must be at least {d.at_least}")
    if d.min_prop is not None and value < d.min_prop[1]:
        raise ConfigError(f"{name} must be greater than or equal to {d.min_prop[0]}")
    if d.max_prop is not None and value > d.max_prop[1]:
        raise ConfigError(f"{name} must be less than or equal to {d.max_prop[0]}")
    return value


def group_config_type(name: str) -> str:
    d = GROUP_CONFIGS.get(name)
    return d.kind if d is not None else "STRING"


def render_default(name: str) -> str:
    v = GROUP_CONFIGS[name].default
    return ("true" if v else "false") if isinstance(v, bool) else str(v)
