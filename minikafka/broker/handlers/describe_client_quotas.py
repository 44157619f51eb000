"""DescribeClientQuotas (API 48): the quotas set with AlterClientQuotas whose entity matches the
filter (quota/entity.py has Kafka's filter rules; a bad filter is a top-level error, no entries)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from minikafka.broker.context import RequestContext
from minikafka.broker.services import BrokerServices
from minikafka.protocol import messages
from minikafka.protocol.errors import ErrorCode
from minikafka.protocol.types import ZERO_MS
from minikafka.quota.entity import Component, QuotaError, filter_of


@dataclass(frozen=True, slots=True)
class DescribeClientQuotasHandler:
    api_key: ClassVar[int] = 48
    svc: BrokerServices

    async def __call__(self, ctx: RequestContext, req: Any) -> messages.DescribeClientQuotasResponse:
        try:
            quota_filter = filter_of([Component(c.entity_type, int(c.match_type), c.match) for c in req.components],
                                     bool(req.strict))
        except QuotaError as exc:
            code = ErrorCode.unsupported_version if exc.unsupported else ErrorCode.invalid_request
            return messages.DescribeClientQuotasResponse(throttle_time=ZERO_MS, error_code=code,
                                                         error_message=str(exc), entries=None)
        entries = tuple(
            messages.DescribeClientQuotasEntry(
                entity=tuple(messages.DescribeClientQuotasEntity(entity_type=t, entity_name=n) for t, n in entity),
                values=tuple(messages.DescribeClientQuotasValue(key=k, value=v) for k, v in quotas),
            )
            for entity, quotas in self.svc.quotas.describe(quota_filter)
        )
        return messages.DescribeClientQuotasResponse(throttle_time=ZERO_MS, error_code=ErrorCode.none,
                                                     error_message=None, entries=entries)
