"""Group configs (KIP-848's GROUP config resource) under Apache Kafka 4.3's names and rules.

Theory of operation
- GROUP_CONFIGS is Kafka's GroupConfig as a table: each config's type, default, lower bound, and
  the broker properties that bound it (group.consumer.min.session.timeout.ms, ...) with their
  default values. A group config is set per group id with IncrementalAlterConfigs and described
  with DescribeConfigs (source DYNAMIC_GROUP_CONFIG, synonym the broker property that gives the
  default); a group need not exist for either, as in Kafka.
- `parse_group_config` refuses in Kafka's words, in Kafka's order (type, lower bound, broker
  bounds); tests/unit/test_kafka_group_configs.py holds it to Apache Kafka 4.3.1's answers.
- The consumer.* ones govern the consumer groups of KIP-848 (session timeout, heartbeat interval,
  assignment interval: coordinator/consumer_group reads them at each heartbeat), the streams.* ones
  the streams groups of KIP-1071 (coordinator/streams_group), the share.* ones the share groups of
  KIP-932 (coordinator/share_group and broker/share_partitions.py; share.assignment.interval.ms is
  stored only: a share group computes its target at once). Classic groups read none of them (nor
  do Kafka's).
"""

from __future__ import annotations

import re
from typing import Any, NamedTuple

from minikafka.config import ConfigError
from minikafka.config_def import Check, at_least, one_of, parse_value, render_config_value


class GroupConfigDef(NamedTuple):
    kind: str                                # INT, STRING, BOOLEAN
    default: Any
    synonym: str                             # the broker property giving the default
    check: Check | None = None               # the config's own validator
    min_prop: tuple[str, int] | None = None  # broker property bounding it from below, its default
    max_prop: tuple[str, int] | None = None  # ... from above


# java.time.Duration.parse's grammar (case-insensitive), for share.auto.offset.reset=by_duration:...
_DURATION = re.compile(r"([-+]?)P(?:([-+]?\d+)D)?"
                       r"(?:T(?:([-+]?\d+)H)?(?:([-+]?\d+)M)?(?:([-+]?\d+)(?:[.,](\d{0,9}))?S)?)?", re.IGNORECASE)


def duration_seconds(text: str) -> float | None:
    m = _DURATION.fullmatch(text)
    if m is None or not any(m.group(i) for i in (2, 3, 4, 5)) or text.upper().endswith("T"):
        return None
    days, hours, minutes, seconds = (int(m.group(i) or 0) for i in (2, 3, 4, 5))
    fraction = float("0." + m.group(6)) if m.group(6) else 0.0
    total = days * 86400 + hours * 3600 + minutes * 60 + seconds + (fraction if seconds >= 0 else -fraction)
    return -total if m.group(1) == "-" else total


def _auto_offset_reset(value: str) -> str | None:
    """ShareGroupAutoOffsetResetStrategy: earliest, latest, or by_duration:<ISO-8601 duration >= 0>."""
    if value in ("earliest", "latest"):
        return None
    if value.startswith("by_duration:"):
        seconds = duration_seconds(value[len("by_duration:"):])
        if seconds is not None and seconds >= 0:
            return None
    return (f"Invalid value `{value}` for configuration share.auto.offset.reset. The value must be either "
            "'earliest', 'latest' or of the format 'by_duration:<PnDTnHnMn.nS>'.")


GROUP_CONFIGS: dict[str, GroupConfigDef] = {
    "consumer.assignment.interval.ms": GroupConfigDef("INT", 1000, "group.consumer.assignment.interval.ms", at_least(0),
        max_prop=("group.consumer.max.assignment.interval.ms", 15000)),
    "consumer.heartbeat.interval.ms": GroupConfigDef("INT", 5000, "group.consumer.heartbeat.interval.ms", at_least(1),
        min_prop=("group.consumer.min.heartbeat.interval.ms", 5000),
        max_prop=("group.consumer.max.heartbeat.interval.ms", 15000)),
    "consumer.session.timeout.ms": GroupConfigDef("INT", 45000, "group.consumer.session.timeout.ms", at_least(1),
        min_prop=("group.consumer.min.session.timeout.ms", 45000),
        max_prop=("group.consumer.max.session.timeout.ms", 60000)),
    "share.assignment.interval.ms": GroupConfigDef("INT", 1000, "group.share.assignment.interval.ms", at_least(0),
        max_prop=("group.share.max.assignment.interval.ms", 15000)),
    "share.auto.offset.reset": GroupConfigDef("STRING", "latest", "share.auto.offset.reset", _auto_offset_reset),
    "share.delivery.count.limit": GroupConfigDef("INT", 5, "group.share.delivery.count.limit", at_least(2),
        max_prop=("group.share.max.delivery.count.limit", 10)),
    "share.heartbeat.interval.ms": GroupConfigDef("INT", 5000, "group.share.heartbeat.interval.ms", at_least(1),
        min_prop=("group.share.min.heartbeat.interval.ms", 5000),
        max_prop=("group.share.max.heartbeat.interval.ms", 15000)),
    "share.isolation.level": GroupConfigDef("STRING", "read_uncommitted", "share.isolation.level",
        one_of(("read_committed", "read_uncommitted"))),
    "share.partition.max.record.locks": GroupConfigDef("INT", 2000, "group.share.partition.max.record.locks",
        at_least(100),
        max_prop=("group.share.max.partition.max.record.locks", 4000)),
    "share.record.lock.duration.ms": GroupConfigDef("INT", 30000, "group.share.record.lock.duration.ms", at_least(1000),
        min_prop=("group.share.min.record.lock.duration.ms", 15000),
        max_prop=("group.share.max.record.lock.duration.ms", 60000)),
    "share.renew.acknowledge.enable": GroupConfigDef("BOOLEAN", True, "share.renew.acknowledge.enable"),
    "share.session.timeout.ms": GroupConfigDef("INT", 45000, "group.share.session.timeout.ms", at_least(1),
        min_prop=("group.share.min.session.timeout.ms", 45000),
        max_prop=("group.share.max.session.timeout.ms", 60000)),
    "streams.assignment.interval.ms": GroupConfigDef("INT", 1000, "group.streams.assignment.interval.ms", at_least(0),
        max_prop=("group.streams.max.assignment.interval.ms", 15000)),
    "streams.heartbeat.interval.ms": GroupConfigDef("INT", 5000, "group.streams.heartbeat.interval.ms", at_least(1),
        min_prop=("group.streams.min.heartbeat.interval.ms", 5000),
        max_prop=("group.streams.max.heartbeat.interval.ms", 15000)),
    "streams.initial.rebalance.delay.ms": GroupConfigDef("INT", 3000, "group.streams.initial.rebalance.delay.ms",
        at_least(0)),
    "streams.num.standby.replicas": GroupConfigDef("INT", 0, "group.streams.num.standby.replicas", at_least(0),
        max_prop=("group.streams.max.standby.replicas", 2)),
    "streams.session.timeout.ms": GroupConfigDef("INT", 45000, "group.streams.session.timeout.ms", at_least(1),
        min_prop=("group.streams.min.session.timeout.ms", 45000),
        max_prop=("group.streams.max.session.timeout.ms", 60000)),
}


def parse_group_config(name: str, raw: str) -> Any:
    """The typed value of a group config; raises ConfigError in Kafka's words, in Kafka's order:
    type, the config's own validator, then the broker's bounds."""
    d = GROUP_CONFIGS.get(name)
    if d is None:
        raise ConfigError(f"Unknown group config name: {name}")
    value = parse_value(name, raw, d.kind, d.check)
    if d.min_prop is not None and value < d.min_prop[1]:
        raise ConfigError(f"{name} must be greater than or equal to {d.min_prop[0]}")
    if d.max_prop is not None and value > d.max_prop[1]:
        raise ConfigError(f"{name} must be less than or equal to {d.max_prop[0]}")
    return value


def group_config_type(name: str) -> str:
    d = GROUP_CONFIGS.get(name)
    return d.kind if d is not None else "STRING"


def render_default(name: str) -> str | None:
    return render_config_value(GROUP_CONFIGS[name].default)
