"""DescribeConfigs (API 32): topic configs (overrides and defaults), group configs, broker loggers
and the broker's configs (Kafka's 340, minikafka/broker_config.py).

Sources and types use Kafka's enum values (config_def: SOURCE_* and TYPE_CODES).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from minikafka.broker import broker_loggers
from minikafka.broker.config_changes import ConfigChangeError
from minikafka.broker.config_resources import RESOURCE_BROKER, RESOURCE_BROKER_LOGGER, RESOURCE_GROUP, RESOURCE_TOPIC
from minikafka.broker.context import RequestContext
from minikafka.broker.services import BrokerServices
from minikafka.broker_config import broker_entries, cluster_default_entries
from minikafka.config_def import (
    SOURCE_DEFAULT,
    SOURCE_DYNAMIC_BROKER_LOGGER,
    SOURCE_GROUP,
    SOURCE_STATIC_BROKER,
    SOURCE_TOPIC,
    TYPE_CODES,
    ConfigEntry,
    render_config_value,
)
from minikafka.group_config import GROUP_CONFIGS, render_default
from minikafka.protocol import messages
from minikafka.protocol.errors import ErrorCode
from minikafka.protocol.types import ZERO_MS
from minikafka.topic_config import (
    INTERNAL_TOPIC_CONFIGS,
    TOPIC_CONFIGS,
    topic_config_type,
    topic_defaults,
)

def topic_config_entries(svc: BrokerServices, topic: str, overrides: Mapping[str, str]) -> list[ConfigEntry]:
    cfg = svc.config
    defaults = topic_defaults(cfg)
    out = []
    # Kafka's internal keys (internal.segment.bytes) appear only where the topic sets them.
    names = sorted(set(TOPIC_CONFIGS) | {n for n in overrides if n in INTERNAL_TOPIC_CONFIGS})
    for name in names:
        broker_prop = TOPIC_CONFIGS[name].broker_prop if name in TOPIC_CONFIGS else None
        broker_source = SOURCE_STATIC_BROKER if broker_prop in cfg.explicit else SOURCE_DEFAULT
        synonyms: list[tuple[str, str | None, int]] = []
        if name in overrides:
            value, source = overrides[name], SOURCE_TOPIC
            synonyms.append((name, value, SOURCE_TOPIC))
        else:
            value, source = render_config_value(defaults.get(name)), broker_source
        if broker_prop and cfg[broker_prop] is not None:  # as Kafka, only a broker property with a value
            synonyms.append((broker_prop, render_config_value(defaults[name]), broker_source))
        out.append(ConfigEntry(name, value, False, source, TYPE_CODES[topic_config_type(name)], tuple(synonyms)))
    return out


def group_config_entries(overrides: Mapping[str, str]) -> list[ConfigEntry]:
    """Every group config of a group id (known or not, as Kafka): its override where set, with the
    broker property that gives the default as synonym."""
    out = []
    for name, d in sorted(GROUP_CONFIGS.items()):
        default = (d.synonym, render_default(name), SOURCE_DEFAULT)
        if name in overrides:
            out.append(ConfigEntry(name, overrides[name], False, SOURCE_GROUP, TYPE_CODES[d.kind],
                                   ((name, overrides[name], SOURCE_GROUP), default)))
        else:
            out.append(ConfigEntry(name, render_default(name), False, SOURCE_DEFAULT, TYPE_CODES[d.kind],
                                   (default,)))
    return out


def broker_config_entries(svc: BrokerServices, resource_name: str) -> list[ConfigEntry]:
    """Kafka's 340 broker configs for the node id; only the cluster-wide dynamic defaults for ""."""
    per_broker, cluster_default = svc.dynamic_broker_configs()
    if resource_name == "":
        return cluster_default_entries(cluster_default)
    return broker_entries(svc.config, per_broker, cluster_default)


@dataclass(frozen=True, slots=True)
class DescribeConfigsHandler:
    api_key: ClassVar[int] = 32
    svc: BrokerServices

    async def __call__(self, ctx: RequestContext, req: Any) -> messages.DescribeConfigsResponse:
        results = [self._resource(r, req.include_synonyms, req.include_documentation) for r in req.resources]
        return messages.DescribeConfigsResponse(throttle_time=ZERO_MS, results=tuple(results))

    def _resource(self, r: Any, include_synonyms: bool, include_doc: bool) -> messages.DescribeConfigsResult:
        if r.resource_type == RESOURCE_TOPIC:
            info = self.svc.logs.topics.get(r.resource_name)
            if info is None:
                return _err(r, ErrorCode.unknown_topic_or_partition, f"Topic {r.resource_name} does not exist")
            entries = topic_config_entries(self.svc, info.name, info.configs)
        elif r.resource_type == RESOURCE_GROUP:
            assert self.svc.group_configs is not None
            entries = group_config_entries(self.svc.group_configs.get(r.resource_name))
        elif r.resource_type == RESOURCE_BROKER_LOGGER:
            try:
                broker_loggers.check_describe_name(r.resource_name, self.svc.node_id)
            except ConfigChangeError as exc:
                return _err(r, exc.error_code, str(exc))
            entries = [ConfigEntry(name, level, False, SOURCE_DYNAMIC_BROKER_LOGGER, TYPE_CODES["UNKNOWN"], ())
                       for name, level in broker_loggers.loggers()]
        elif r.resource_type == RESOURCE_BROKER:
            if r.resource_name not in ("", str(self.svc.node_id)):
                return _err(r, ErrorCode.invalid_request, f"Unexpected broker id {r.resource_name}")
            entries = broker_config_entries(self.svc, r.resource_name)
        else:
            return _err(r, ErrorCode.invalid_request, f"Unsupported resource type {r.resource_type}")
        keys = set(r.configuration_keys) if r.configuration_keys else None
        configs = tuple(
            messages.DescribeConfigsResourceResult(
                name=e.name, value=e.value, read_only=e.read_only, config_source=e.config_source,
                is_sensitive=e.sensitive, config_type=e.config_type, documentation="" if include_doc else None,
                synonyms=tuple(messages.DescribeConfigsSynonym(name=n, value=v, source=s) for n, v, s in e.synonyms)
                if include_synonyms else (),
            )
            for e in entries if keys is None or e.name in keys
        )
        # Kafka 4.3.1 answers an empty message, not null, for a described resource.
        return messages.DescribeConfigsResult(error_code=ErrorCode.none, error_message="",
                                     resource_type=r.resource_type, resource_name=r.resource_name,
                                     configs=configs)


def _err(r: Any, code: ErrorCode, message: str) -> messages.DescribeConfigsResult:
    return messages.DescribeConfigsResult(error_code=code, error_message=message, resource_type=r.resource_type,
                                 resource_name=r.resource_name, configs=())
