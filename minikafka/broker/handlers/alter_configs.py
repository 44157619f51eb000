"""AlterConfigs (API 33, deprecated by Kafka in favour of IncrementalAlterConfigs but still served):
the configs sent become the resource's whole set of overrides; every other override is removed.
The rules are broker/config_changes.py (replace) and broker/config_resources.py.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from minikafka.broker import config_changes
from minikafka.broker.config_resources import Change, alter_resources
from minikafka.broker.context import RequestContext
from minikafka.broker.services import BrokerServices
from minikafka.protocol import messages
from minikafka.protocol.types import ZERO_MS


@dataclass(frozen=True, slots=True)
class AlterConfigsHandler:
    api_key: ClassVar[int] = 33
    svc: BrokerServices

    async def __call__(self, ctx: RequestContext, req: Any) -> messages.AlterConfigsResponse:
        results = alter_resources(self.svc, req.resources, req.validate_only, _change)
        return messages.AlterConfigsResponse(throttle_time=ZERO_MS, responses=tuple(
            messages.AlterConfigsResourceResponse(error_code=code, error_message=message,
                                                  resource_type=r.resource_type, resource_name=r.resource_name)
            for r, code, message in results))


def _change(resource: Any) -> Change:
    configs = [(c.name, c.value) for c in resource.configs]
    return [name for name, _ in configs], lambda _current, rules: config_changes.replace(configs, rules)
