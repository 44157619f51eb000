"""ListTransactions (API 66, KIP-664; v1 adds KIP-994's duration filter)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from minikafka.broker.context import RequestContext
from minikafka.broker.services import BrokerServices
from minikafka.coordinator.transaction.state import TxnState
from minikafka.protocol import messages
from minikafka.protocol.errors import ErrorCode
from minikafka.protocol.types import ZERO_MS

STATE_NAMES = {s.kafka_name: s for s in TxnState}


@dataclass(frozen=True, slots=True)
class ListTransactionsHandler:
    api_key: ClassVar[int] = 66
    svc: BrokerServices

    async def __call__(self, ctx: RequestContext, req: Any) -> messages.ListTransactionsResponse:
        assert self.svc.txn is not None
        unknown = tuple(s for s in req.state_filters if s not in STATE_NAMES)
        states = {STATE_NAMES[s] for s in req.state_filters if s in STATE_NAMES}
        pids = set(req.producer_id_filters)
        now = self.svc.clock.now_ms()
        listed = []
        for meta in sorted(self.svc.txn.all(), key=lambda m: m.transactional_id):
            if req.state_filters and meta.state not in states:
                continue
            if pids and meta.producer_id not in pids:
                continue
            if req.duration_filter >= 0 and now - meta.start_ms < req.duration_filter:
                continue
            listed.append(messages.ListedTransaction(transactional_id=meta.transactional_id, producer_id=meta.producer_id,
                                            transaction_state=meta.state.kafka_name))
        return messages.ListTransactionsResponse(throttle_time=ZERO_MS, error_code=ErrorCode.none,
                                        unknown_state_filters=unknown, transaction_states=tuple(listed))
