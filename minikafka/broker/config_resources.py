"""Where IncrementalAlterConfigs and AlterConfigs meet the broker: the resource a change names, the
current overrides and the defaults it starts from, and applying the result (one narrow door for
both handlers; the change itself is config_changes.py, pure).

Topic resources are changed as Kafka changes them (persisted with the topic, in force at once);
group resources (KIP-848 group configs) are kept per group id in the data dir.
Broker resources ("" for the cluster default, or the node id) take the configs Kafka can change at
runtime (broker_config.py), kept in the data dir; a static one is refused as Kafka refuses it
("Cannot update these configs dynamically: [...]").
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from minikafka.broker.config_changes import ConfigChangeError, Rules
from minikafka.broker.services import BrokerServices
from minikafka.broker_config import broker_config_type, parse_broker_config, value_in_force
from minikafka.broker_config import dynamic as dynamic_broker_config
from minikafka.broker_config import known as known_broker_config
from minikafka.config import ConfigError
from minikafka.config_def import render_config_value
from minikafka.group_config import GROUP_CONFIGS, group_config_type, parse_group_config, render_default
from minikafka.protocol.errors import ErrorCode
from minikafka.topic_config import (
    known_topic_config,
    parse_topic_config,
    topic_config_type,
    topic_defaults,
)

RESOURCE_TOPIC = 2  # Kafka's ConfigResource.Type codes, shared with DescribeConfigs
RESOURCE_BROKER = 4
RESOURCE_BROKER_LOGGER = 8
RESOURCE_GROUP = 32


def _validator(kind: str, known: Callable[[str], bool], parse: Callable[[str, str], object]
               ) -> Callable[[str, str | None], None]:
    """Rules.validate for one kind of resource: an unknown name, or a value its parser refuses, is
    INVALID_CONFIG with Kafka's message; value None checks the name only (DELETE)."""
    def validate(name: str, value: str | None) -> None:
        if not known(name):
            raise ConfigChangeError(ErrorCode.invalid_config, f"Unknown {kind} config name: {name}")
        if value is not None:
            try:
                parse(name, value)
            except ConfigError as exc:
                raise ConfigChangeError(ErrorCode.invalid_config, str(exc)) from None
    return validate


validate_topic_config = _validator("topic", known_topic_config, parse_topic_config)
validate_group_config = _validator("group", GROUP_CONFIGS.__contains__, parse_group_config)


def validate_broker_config(name: str, value: str | None) -> None:
    """Broker configs: any name (Kafka keeps names it does not define, for plugins); a value its
    type refuses is INVALID_REQUEST, as Kafka 4.3.1 answers for brokers (INVALID_CONFIG elsewhere)."""
    if value is not None and known_broker_config(name):
        try:
            parse_broker_config(name, value)
        except ConfigError as exc:
            raise ConfigChangeError(ErrorCode.invalid_request, str(exc)) from None


# One resource's change: the config names it touches and the new overrides from the current ones.
Change = tuple[list[str], Callable[[dict[str, str], Rules], dict[str, str]]]


def alter_resource(svc: BrokerServices, r: Any, validate_only: bool,
                   change_of: Callable[[Any], Change]) -> tuple[Any, ErrorCode, str | None]:
    """(resource, error code, error message) for one resource of an IncrementalAlterConfigs or
    AlterConfigs request; the resource is changed all or nothing."""
    names, compute = change_of(r)
    try:
        _change_resource(svc, int(r.resource_type), r.resource_name, names, compute, validate_only)
    except ConfigChangeError as exc:
        return r, exc.error_code, str(exc)
    return r, ErrorCode.none, None


def alter_resources(svc: BrokerServices, resources: Iterable[Any], validate_only: bool,
                    change_of: Callable[[Any], Change]) -> list[tuple[Any, ErrorCode, str | None]]:
    return [alter_resource(svc, r, validate_only, change_of) for r in resources]


def _stored(svc: BrokerServices, resource_type: int, resource_name: str
            ) -> tuple[dict[str, str], Rules, Callable[[dict[str, str]], None]] | None:
    """A resource whose overrides are stored: its current overrides, its rules, and how to save
    new ones; None for other resource types."""
    if resource_type == RESOURCE_TOPIC:
        info = svc.logs.topics.get(resource_name)
        if info is None:
            raise ConfigChangeError(ErrorCode.unknown_topic_or_partition,
                                    f"The topic '{resource_name}' does not exist.")
        defaults = topic_defaults(svc.config)
        rules = Rules(type_of=topic_config_type, effective=lambda n: render_config_value(defaults.get(n)),
                      validate=validate_topic_config)
        return dict(info.configs), rules, lambda new: svc.logs.set_topic_configs(info.name, new)
    if resource_type == RESOURCE_BROKER:
        if resource_name not in ("", str(svc.node_id)):
            raise ConfigChangeError(ErrorCode.invalid_request, f"Unexpected broker id {resource_name}")
        store = svc.broker_configs
        assert store is not None

        def save(new: dict[str, str]) -> None:
            store.set(resource_name, new)
            svc.apply_broker_configs()

        rules = Rules(type_of=broker_config_type, validate=validate_broker_config,
                      effective=lambda n: value_in_force(svc.config, svc.dynamic_broker_layers(), n))
        return store.get(resource_name), rules, save
    if resource_type == RESOURCE_GROUP:
        # A group need not exist to carry configs (Kafka keeps them by group id).
        store = svc.group_configs
        assert store is not None
        rules = Rules(type_of=group_config_type, effective=render_default, validate=validate_group_config)
        return store.get(resource_name), rules, lambda new: store.set(resource_name, new)
    return None


def _change_resource(svc: BrokerServices, resource_type: int, resource_name: str, names: list[str],
                     compute: Callable[[dict[str, str], Rules], dict[str, str]], validate_only: bool) -> None:
    if resource_type == RESOURCE_BROKER:
        static = sorted(n for n in names if not dynamic_broker_config(n))
        if static:
            raise ConfigChangeError(ErrorCode.invalid_request,
                                    f"Cannot update these configs dynamically: [{', '.join(static)}]")
    stored = _stored(svc, resource_type, resource_name)
    if stored is not None:
        current, rules, save = stored
        new = compute(current, rules)
        if not validate_only:
            try:
                save(new)
            except OSError as exc:
                raise ConfigChangeError(ErrorCode.kafka_storage_error, f"Cannot persist the change: {exc}") from None
        return
    raise ConfigChangeError(ErrorCode.invalid_request, f"Unsupported resource type {resource_type}")
