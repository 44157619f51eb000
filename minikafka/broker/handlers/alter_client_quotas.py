"""AlterClientQuotas (API 49): set or remove quotas per entity (user, client-id, user+client-id,
ip; name null for the default entity). Each entry succeeds or fails alone, with Kafka's
INVALID_REQUEST messages (quota/entity.py); the changes are saved in the data dir before they are
answered and are in force for the next request."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import structlog

from minikafka.broker.context import RequestContext
from minikafka.broker.services import BrokerServices
from minikafka.protocol import messages
from minikafka.protocol.errors import ErrorCode
from minikafka.protocol.types import ZERO_MS
from minikafka.quota.entity import Op

log = structlog.get_logger("minikafka.broker")


@dataclass(frozen=True, slots=True)
class AlterClientQuotasHandler:
    api_key: ClassVar[int] = 49
    svc: BrokerServices

    async def __call__(self, ctx: RequestContext, req: Any) -> messages.AlterClientQuotasResponse:
        quotas = self.svc.quotas
        outcomes = quotas.alter([
            ([(e.entity_type, e.entity_name) for e in entry.entity],
             [Op(op.key, None if op.remove else float(op.value)) for op in entry.ops])
            for entry in req.entries
        ])
        results: list[tuple[Any, ErrorCode, str | None]] = []
        changed = {o.entity: o.quotas for o in outcomes
                   if o.error is None and o.entity is not None and o.quotas is not None}
        error: tuple[ErrorCode, str] | None = None
        if changed and not req.validate_only:
            new = dict(quotas.configured)
            new.update(changed)
            try:
                self.svc.save_client_quotas(new)
            except OSError as exc:
                error = (ErrorCode.kafka_storage_error, f"Cannot persist the change: {exc}")
            else:
                for entity, q in changed.items():
                    quotas.apply(entity, q)
                log.info("client_quotas_altered", entities=len(changed), client_id=ctx.client_id)
        for o in outcomes:
            if o.error is not None:
                results.append((o.pairs, ErrorCode.invalid_request, str(o.error)))
            elif error is not None:
                results.append((o.pairs, *error))
            else:
                results.append((o.pairs, ErrorCode.none, None))
        return messages.AlterClientQuotasResponse(throttle_time=ZERO_MS, entries=tuple(
            messages.AlterClientQuotasEntry(
                error_code=code, error_message=message,
                entity=tuple(messages.AlterClientQuotasEntity(entity_type=t, entity_name=n) for t, n in pairs))
            for pairs, code, message in results))
