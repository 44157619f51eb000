"""ListConfigResources (API 74, KIP-1142; v0 was ListClientMetricsResources): the resources that
configs can be described for, as Kafka 4.3.1 answers them (probed).

v0 lists client-metrics resources only. v1 lists the resource types asked for, every type when
none is named: groups that have dynamic configs (32), client-metrics subscriptions (16; none here,
minikafka has no client telemetry), this node as broker logger (8) and as broker (4), and every
topic, internal ones too (2), in that order. A type outside those five is UNSUPPORTED_VERSION with
nothing listed, as Kafka answers.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from minikafka.broker.context import RequestContext
from minikafka.broker.services import BrokerServices
from minikafka.protocol import messages
from minikafka.protocol.errors import ErrorCode
from minikafka.protocol.types import ZERO_MS

TOPIC, BROKER, BROKER_LOGGER, CLIENT_METRICS, GROUP = 2, 4, 8, 16, 32
ALL_TYPES = (GROUP, CLIENT_METRICS, BROKER_LOGGER, BROKER, TOPIC)  # the order Kafka answers in


@dataclass(frozen=True, slots=True)
class ListConfigResourcesHandler:
    api_key: ClassVar[int] = 74
    svc: BrokerServices

    async def __call__(self, ctx: RequestContext, req: Any) -> messages.ListConfigResourcesResponse:
        if ctx.api_version == 0:
            asked: tuple[int, ...] = (CLIENT_METRICS,)
        else:
            asked = tuple(req.resource_types) or ALL_TYPES
        if any(t not in ALL_TYPES for t in asked):
            return messages.ListConfigResourcesResponse(throttle_time=ZERO_MS, error_code=ErrorCode.unsupported_version,
                                                        config_resources=())
        listed = [messages.ConfigResourceListed(resource_name=name, resource_type=t)
                  for t in ALL_TYPES if t in asked for name in self._names(t)]
        return messages.ListConfigResourcesResponse(throttle_time=ZERO_MS, error_code=ErrorCode.none,
                                                    config_resources=tuple(listed))

    def _names(self, resource_type: int) -> list[str]:
        if resource_type == GROUP:
            store = self.svc.group_configs
            return [] if store is None else store.names()
        if resource_type in (BROKER, BROKER_LOGGER):
            return [str(self.svc.node_id)]
        if resource_type == TOPIC:
            return sorted(self.svc.logs.topics)
        return []  # client metrics: no subscriptions without client telemetry
