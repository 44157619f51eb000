"""Broker configs as Kafka describes and changes them (pure).

Kafka 4.3.1 defines 340 broker configs (config.KAFKA_BROKER_CONFIGS, recorded from a real broker:
type, default, whether it can change at runtime, whether it is a secret). minikafka describes all
of them: the ones it implements (config.PROPS) with its own values, the rest with the value given
in server.properties or Kafka's default. The 99 Kafka can change at runtime are accepted by
IncrementalAlterConfigs / AlterConfigs, per broker ("1") or as the cluster default (""), kept in the
data dir and layered over the static settings as in Kafka: per-broker, then cluster default, then
server.properties, then the default. Of those, the ones minikafka implements take effect at once
(the log.* defaults of topics, message.max.bytes, compression.type, ...); the others are stored
and described and change nothing on one node.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from minikafka.config import KAFKA_BROKER_CONFIGS, PROPS_BY_NAME, BrokerConfig, ConfigError
from minikafka.config_def import (
    CONFIG_TYPES,
    SOURCE_DEFAULT,
    SOURCE_DYNAMIC_BROKER,
    SOURCE_DYNAMIC_DEFAULT_BROKER,
    SOURCE_STATIC_BROKER,
    TYPE_CODES,
    ConfigEntry,
    parse_value,
    render_config_value,
)

# Set by the command line (--port, --data-dir) rather than the properties file: still static.
_FROM_COMMAND_LINE = ("listeners", "log.dirs")
# A name Kafka does not define (a plugin's own config) is taken, and described as a secret: Kafka
# cannot tell what it holds. (type code, default, read_only, sensitive), as KAFKA_BROKER_CONFIGS.
_CUSTOM = (TYPE_CODES["UNKNOWN"], None, False, True)


def known(name: str) -> bool:
    return name in KAFKA_BROKER_CONFIGS


def dynamic(name: str) -> bool:
    """Whether a config can change at runtime (DescribeConfigs read_only false): Kafka's dynamic
    ones, and names Kafka does not define (kept for plugins, as Kafka keeps them)."""
    return name not in KAFKA_BROKER_CONFIGS or not KAFKA_BROKER_CONFIGS[name][2]


def broker_config_type(name: str) -> str:
    return CONFIG_TYPES[KAFKA_BROKER_CONFIGS[name][0]] if name in KAFKA_BROKER_CONFIGS else "STRING"


def parse_broker_config(name: str, raw: str) -> Any:
    """The typed value; raises ConfigError in Kafka's words."""
    prop = PROPS_BY_NAME.get(name)
    if prop is not None:
        try:
            value = prop.parse(raw)
        except ValueError:
            kind = broker_config_type(name)
            reason = "Expected value to be either true or false" if kind == "BOOLEAN" else f"Not a number of type {kind}"
            raise ConfigError(f"Invalid value {raw} for configuration {name}: {reason}") from None
        if not prop.check(value):
            raise ConfigError(f"Invalid value {raw} for configuration {name}: out of range")
        return value
    kind = broker_config_type(name)
    if kind in ("BOOLEAN", "INT", "SHORT", "LONG", "DOUBLE"):
        return parse_value(name, raw, kind)
    return raw


def with_dynamic(static: BrokerConfig, static_values: Mapping[str, Any], layers: Mapping[str, str]) -> BrokerConfig:
    """`static` with the dynamic configs minikafka implements in force (values parsed here were
    validated when set; a stored value that no longer parses is left out)."""
    values = dict(static_values)
    for name, raw in layers.items():
        if name in PROPS_BY_NAME:
            try:
                values[name] = parse_broker_config(name, raw)
            except ConfigError:
                continue
    return dataclasses.replace(static, values=values)


def _static_value(config: BrokerConfig, name: str) -> str | None:
    if name in PROPS_BY_NAME:
        value = config[name]
        if name in config.explicit or (name in _FROM_COMMAND_LINE and value != PROPS_BY_NAME[name].default):
            return render_config_value(value)
        return None
    return config.ignored.get(name)


def _default_value(config: BrokerConfig, name: str) -> str | None:
    if name in PROPS_BY_NAME:
        mine = render_config_value(PROPS_BY_NAME[name].default)
        if mine not in (None, ""):  # minikafka's own default (listeners on 127.0.0.1, node.id 1)
            return mine
    return KAFKA_BROKER_CONFIGS[name][1]  # Kafka's (null where Kafka has none, as log.dirs)


def _levels(config: BrokerConfig, name: str, per_broker: Mapping[str, str], cluster_default: Mapping[str, str]
            ) -> list[tuple[str | None, int]]:
    """(value, source) of every level that sets `name`, in Kafka's order of precedence."""
    levels: list[tuple[str | None, int]] = []
    if name in per_broker:
        levels.append((per_broker[name], SOURCE_DYNAMIC_BROKER))
    if name in cluster_default:
        levels.append((cluster_default[name], SOURCE_DYNAMIC_DEFAULT_BROKER))
    if name in KAFKA_BROKER_CONFIGS:
        static = _static_value(config, name)
        if static is not None:
            levels.append((static, SOURCE_STATIC_BROKER))
        default = _default_value(config, name)
        if default is not None:
            levels.append((default, SOURCE_DEFAULT))
    return levels


def value_in_force(config: BrokerConfig, layers: Mapping[str, str], name: str) -> str | None:
    """A broker config's value as it stands (what a list APPEND or SUBTRACT starts from)."""
    levels = _levels(config, name, layers, {})
    return levels[0][0] if levels else None


def broker_entries(config: BrokerConfig, per_broker: Mapping[str, str], cluster_default: Mapping[str, str]
                   ) -> list[ConfigEntry]:
    """Every broker config of this node, as DescribeConfigs(BROKER <node id>) answers it."""
    out = []
    custom = {n: _CUSTOM for n in (*per_broker, *cluster_default) if n not in KAFKA_BROKER_CONFIGS}
    for name, (type_code, _, read_only, sensitive) in sorted({**KAFKA_BROKER_CONFIGS, **custom}.items()):
        levels = _levels(config, name, per_broker, cluster_default)
        if sensitive:  # secrets are never answered, as Kafka
            levels = [(None, source) for _, source in levels]
        value, source = levels[0] if levels else (None, SOURCE_DEFAULT)
        out.append(ConfigEntry(name, value, read_only, source, type_code, tuple((name, v, s) for v, s in levels),
                               sensitive))
    return out


def cluster_default_entries(cluster_default: Mapping[str, str]) -> list[ConfigEntry]:
    """DescribeConfigs(BROKER "") : the cluster-wide dynamic defaults only."""
    out = []
    for name, raw in sorted(cluster_default.items()):
        type_code, _, read_only, sensitive = KAFKA_BROKER_CONFIGS.get(name, _CUSTOM)
        value = None if sensitive else raw
        out.append(ConfigEntry(name, value, read_only, SOURCE_DYNAMIC_DEFAULT_BROKER, type_code,
                               ((name, value, SOURCE_DYNAMIC_DEFAULT_BROKER),), sensitive))
    return out


_SECURITY_PREFIXES = ("ssl.", "sasl.", "security.", "authorizer.", "principal.", "super.users")
# What minikafka/security reads: TLS and SASL on the listeners that ask for them.
_SECURITY_HANDLED = ("ssl.", "sasl.", "authorizer.class.name", "super.users")


def ignored_security_configs(config: BrokerConfig) -> list[str]:
    """Security settings given to the broker that it ignores (a custom principal builder, say),
    and a user who set them must be told."""
    return sorted(n for n in config.ignored if n.startswith(_SECURITY_PREFIXES) and not n.startswith(_SECURITY_HANDLED))
