"""IncrementalAlterConfigs (API 44): SET / DELETE / APPEND / SUBTRACT on a resource's configs
(kafka-configs.sh --alter, Admin.incrementalAlterConfigs). The change rules are
broker/config_changes.py; which resources can change and how, broker/config_resources.py.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from minikafka.broker import broker_loggers, config_changes
from minikafka.broker.config_changes import ConfigChangeError
from minikafka.broker.config_resources import RESOURCE_BROKER_LOGGER, Change, alter_resource
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
        results = [self._broker_logger(r, req.validate_only) if r.resource_type == RESOURCE_BROKER_LOGGER
                   else alter_resource(self.svc, r, req.validate_only, _change) for r in req.resources]
        return messages.IncrementalAlterConfigsResponse(throttle_time=ZERO_MS, responses=tuple(
            messages.IncrementalAlterConfigsResourceResponse(error_code=code, error_message=message,
                                                             resource_type=r.resource_type,
                                                             resource_name=r.resource_name)
            for r, code, message in results))

    def _broker_logger(self, r: Any, validate_only: bool) -> tuple[Any, ErrorCode, str | None]:
        """Log levels are not configs of a stored resource: their own rules (broker_loggers.py)."""
        try:
            changed = broker_loggers.changes(r.resource_name, self.svc.node_id,
                                             [(c.name, int(c.config_operation), c.value) for c in r.configs])
        except ConfigChangeError as exc:
            return r, exc.error_code, str(exc)
        if not validate_only:
            broker_loggers.apply(changed)
        return r, ErrorCode.none, None


def _change(resource: Any) -> Change:
    ops = [(c.name, int(c.config_operation), c.value) for c in resource.configs]
    return [name for name, _, _ in ops], lambda current, rules: config_changes.incremental(current, ops, rules)
