"""EndTxn (API 26): commit or abort the open transaction.

Kafka: TransactionCoordinator.endTransaction. PREPARE_COMMIT/PREPARE_ABORT is persisted, then the
markers are written and COMPLETE_* recorded (see coordinator/transaction/coordinator.py). v5+ is
transactions v2 (KIP-890 part 2): the epoch is bumped by every commit and abort, and the answer
carries the producer id and epoch the client goes on with.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from minikafka.broker.context import RequestContext
from minikafka.broker.handlers.add_partitions_to_txn import fenced_for_old_clients
from minikafka.broker.services import BrokerServices
from minikafka.coordinator.transaction.state import TV_2
from minikafka.protocol import messages
from minikafka.protocol.types import ZERO_MS


TV2_SINCE = 5  # EndTxn v5: transactions v2


@dataclass(frozen=True, slots=True)
class EndTxnHandler:
    api_key: ClassVar[int] = 26
    svc: BrokerServices

    async def __call__(self, ctx: RequestContext, req: Any) -> messages.EndTxnResponse:
        assert self.svc.txn is not None
        client_tv = TV_2 if ctx.api_version >= TV2_SINCE else 0
        error, producer_id, epoch = await self.svc.txn.end_txn(
            req.transactional_id, producer_id=req.producer_id, producer_epoch=req.producer_epoch, commit=req.committed,
            now_ms=self.svc.clock.now_ms, client_tv=client_tv)
        return messages.EndTxnResponse(throttle_time=ZERO_MS, error_code=fenced_for_old_clients(error, ctx.api_version),
                                       producer_id=producer_id, producer_epoch=epoch)
