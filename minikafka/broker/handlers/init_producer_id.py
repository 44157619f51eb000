"""InitProducerId (API 22), idempotent producers: a fresh producer id with epoch 0.

Kafka's TransactionCoordinator.handleInitProducerId hands a non-transactional producer a new id
from the id manager whatever id and epoch it sends; idempotent clients bump their epoch locally
(KIP-360) and need nothing else from the broker. Transactional ids are the transaction
coordinator's (not served yet: COORDINATOR_NOT_AVAILABLE).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from minikafka.broker.context import RequestContext
from minikafka.broker.services import BrokerServices
from minikafka.protocol.errors import ErrorCode
from minikafka.protocol.messages import InitProducerIdResponse
from minikafka.protocol.types import ZERO_MS


@dataclass(frozen=True, slots=True)
class InitProducerIdHandler:
    api_key: ClassVar[int] = 22
    svc: BrokerServices

    async def __call__(self, ctx: RequestContext, req: Any) -> InitProducerIdResponse:
        if req.transactional_id is not None:
            return InitProducerIdResponse(throttle_time=ZERO_MS, error_code=ErrorCode.coordinator_not_available,
                                          producer_id=-1, producer_epoch=-1)
        pid = self.svc.producer_ids.generate()
        return InitProducerIdResponse(throttle_time=ZERO_MS, error_code=ErrorCode.none, producer_id=pid,
                                      producer_epoch=0)
