"""AlterConfigs (API 33, deprecated by Kafka in favour of IncrementalAlterConfigs but still served):
the configs sent become the resource's whole set of overrides; every other override is removed.
The rules are broker/config_changes.py (replace) and broker/config_resources.py.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from minikafka.broker import config_changes
from minikafka.broker.config_changes import ConfigChangeError
from minikafka.broker.config_resources import change_resource
from minikafka.broker.context import RequestContext
from minikafka.broker.services import BrokerServices
from minikafka.protocol import messages
from minikafka.protocol.errors import ErrorCode
from minikafka.protocol.types import ZERO_MS


@dataclass(frozen=True, slots=True)
class AlterConfigsHandler:
    api_key: ClassVar[int] = 33
    svc: BrokerServices

    async def __call__(self, ctx: RequestContext, req: Any) -> messages.AlterConfigsResponse:
        responses = []
        for r in req.resources:
            configs = [(c.name, c.value) for c in r.configs]
            code, message = ErrorCode.none, None
            try:
                change_resource(self.svc, int(r.resource_type), r.resource_name, [n for n, _ in configs],
                                lambda _current, *, validate, configs=configs, **_: config_changes.replace(
                                    configs, validate=validate),
                                req.validate_only)
            except ConfigChangeError as exc:
                code, message = exc.error_code, str(exc)
            responses.append(messages.AlterConfigsResourceResponse(
                error_code=code, error_message=message, resource_type=r.resource_type,
                resource_name=r.resource_name))
        return messages.AlterConfigsResponse(throttle_time=ZERO_MS, responses=tuple(responses))
