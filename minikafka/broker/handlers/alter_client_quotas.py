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
        accepted = {o.entity: o.quotas for o in outcomes if o.error is None}
        not_saved: str | None = None
        if accepted and not req.validate_only:
            try:
                self.svc.save_client_quotas({**quotas.configured, **accepted})  # type: ignore[dict-item]
            except OSError as exc:
                not_saved = f"Cannot persist the change: {exc}"
            else:
                for entity, q in accepted.items():
                    quotas.apply(entity, q)  # type: ignore[arg-type]
                log.info("client_quotas_altered", entities=len(accepted), client_id=ctx.client_id)

        def result(o: Any) -> tuple[Any, ErrorCode, str | None]:
            if o.error is not None:
                return o.pairs, ErrorCode.invalid_request, str(o.error)
            if not_saved is not None:
                return o.pairs, ErrorCode.kafka_storage_error, not_saved
            return o.pairs, ErrorCode.none, None

        results = [result(o) for o in outcomes]
        return messages.AlterClientQuotasResponse(throttle_time=ZERO_MS, entries=tuple(
            messages.AlterClientQuotasEntry(
                error_code=code, error_message=message,
                entity=tuple(messages.AlterClientQuotasEntity(entity_type=t, entity_name=n) for t, n in pairs))
            for pairs, code, message in results))
