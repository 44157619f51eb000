"""IncrementalAlterConfigs (API 44): SET / DELETE / APPEND / SUBTRACT on a resource's configs
(kafka-configs.sh --alter, Admin.incrementalAlterConfigs). The change rules are
broker/config_changes.py; which resources can change and how, broker/config_resources.py.
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
class IncrementalAlterConfigsHandler:
    api_key: ClassVar[int] = 44
    svc: BrokerServices

    async def __call__(self, ctx: RequestContext, req: Any) -> messages.IncrementalAlterConfigsResponse:
        results = alter_resources(self.svc, req.resources, req.validate_only, _change)
        return messages.IncrementalAlterConfigsResponse(throttle_time=ZERO_MS, responses=tuple(
            messages.IncrementalAlterConfigsResourceResponse(error_code=code, error_message=message,
                                                             resource_type=r.resource_type,
                                                             resource_name=r.resource_name)
            for r, code, message in results))


def _change(resource: Any) -> Change:
    ops = [(c.name, int(c.config_operation), c.value) for c in resource.configs]
    return [name for name, _, _ in ops], lambda current, rules: config_changes.incremental(current, ops, rules)
