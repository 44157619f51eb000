"""ListTransactions (API 66, KIP-664; v1 adds KIP-994's duration filter, v2 KIP-1152's
transactional id pattern).

The pattern is a Java regular expression that must match the whole id (Pattern.matches), and an
empty or null one lists every transaction, as Kafka 4.3.1 answers; one that does not compile is
INVALID_REGULAR_EXPRESSION. Python's `re` stands in for java.util.regex: the two agree on the
common syntax (classes, quantifiers, groups, (?i)); the Java-only constructs (\\p{Alpha} and the
like) are refused here where Kafka would take them.
"""

from __future__ import annotations

import re
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
        pattern = None
        if req.transactional_id_pattern:
            try:
                pattern = re.compile(req.transactional_id_pattern)
            except re.error:
                return messages.ListTransactionsResponse(throttle_time=ZERO_MS,
                                                         error_code=ErrorCode.invalid_regular_expression,
                                                         unknown_state_filters=(), transaction_states=())
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
            if pattern is not None and pattern.fullmatch(meta.transactional_id) is None:
                continue
            if req.duration_filter >= 0 and now - meta.start_ms < req.duration_filter:
                continue
            listed.append(messages.ListedTransaction(transactional_id=meta.transactional_id, producer_id=meta.producer_id,
                                            transaction_state=meta.state.kafka_name))
        return messages.ListTransactionsResponse(throttle_time=ZERO_MS, error_code=ErrorCode.none,
                                        unknown_state_filters=unknown, transaction_states=tuple(listed))
