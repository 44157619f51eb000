"""IncrementalAlterConfigs (API 44): SET / DELETE / APPEND / SUBTRACT on a resource's configs
(kafka-configs.sh --alter, Admin.incrementalAlterConfigs). The change rules are
broker/config_changes.py; which resources can change and how, broker/config_resources.py.
"""

from __future__ import annotations

import functools
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
class IncrementalAlterConfigsHandler:
    api_key: ClassVar[int] = 44
    svc: BrokerServices

    async def __call__(self, ctx: RequestContext, req: Any) -> messages.IncrementalAlterConfigsResponse:
        responses = []
        for r in req.resources:
            ops = [(c.name, int(c.config_operation), c.value) for c in r.configs]
            code, message = ErrorCode.none, None
            try:
                change_resource(self.svc, int(r.resource_type), r.resource_name, [n for n, _, _ in ops],
                                functools.partial(_incremental, ops=ops), req.validate_only)
            except ConfigChangeError as exc:
                code, message = exc.error_code, str(exc)
            responses.append(messages.IncrementalAlterConfigsResourceResponse(
                error_code=code, error_message=message, resource_type=r.resource_type,
                resource_name=r.resource_name))
        return messages.IncrementalAlterConfigsResponse(throttle_time=ZERO_MS, responses=tuple(responses))


def _incremental(current: dict[str, str], *, ops: list[tuple[str, int, str | None]], **rules: Any) -> dict[str, str]:
    return config_changes.incremental(current, ops, **rules)
