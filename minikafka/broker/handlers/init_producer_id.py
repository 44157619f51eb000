"""InitProducerId (API 22).

Without a transactional id (idempotent producers): a fresh producer id with epoch 0, whatever id
and epoch the request carries — Kafka's TransactionCoordinator.handleInitProducerId does the
same, and idempotent clients bump their epoch locally (KIP-360).
With a transactional id: the transaction coordinator maps it to a producer id and bumps the
epoch, fencing older instances (and aborting their open transaction first). Clients below v4 do
not know PRODUCER_FENCED and get INVALID_PRODUCER_EPOCH (protocol.md P-13).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from minikafka.broker.context import RequestContext
from minikafka.broker.handlers.add_partitions_to_txn import fenced_for_old_clients
from minikafka.broker.services import BrokerServices
from minikafka.protocol import messages
from minikafka.protocol.errors import ErrorCode
from minikafka.protocol.types import ZERO_MS, ms


@dataclass(frozen=True, slots=True)
class InitProducerIdHandler:
    api_key: ClassVar[int] = 22
    svc: BrokerServices

    async def __call__(self, ctx: RequestContext, req: Any) -> messages.InitProducerIdResponse:
        if req.transactional_id is None:
            return messages.InitProducerIdResponse(throttle_time=ZERO_MS, error_code=ErrorCode.none,
                                          producer_id=self.svc.producer_ids.generate(), producer_epoch=0)
        assert self.svc.txn is not None
        error, pid, epoch = await self.svc.txn.init_producer_id(
            req.transactional_id, timeout_ms=ms(req.transaction_timeout), producer_id=req.producer_id,
            producer_epoch=req.producer_epoch, now_ms=self.svc.clock.now_ms)
        return messages.InitProducerIdResponse(throttle_time=ZERO_MS, error_code=fenced_for_old_clients(error, ctx.api_version, 4),
                                      producer_id=pid, producer_epoch=epoch)
