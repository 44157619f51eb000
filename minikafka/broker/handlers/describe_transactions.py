"""DescribeTransactions (API 65, KIP-664): the coordinator's view of transactional ids."""

from __future__ import annotations

import datetime
from collections import defaultdict
from dataclasses import dataclass
from typing import Any, ClassVar

from minikafka.broker.context import RequestContext
from minikafka.broker.services import BrokerServices
from minikafka.protocol import messages
from minikafka.protocol.errors import ErrorCode
from minikafka.protocol.types import ZERO_MS


# TransactionStartTimeMs is a plain int64 (not nullable): Kafka sends -1 when no transaction has
# started (Empty). kio writes a datetime as round(timestamp * 1000), so -1 ms is
# the instant one millisecond before the epoch.
NO_START_TIME = datetime.datetime.fromtimestamp(-0.001, datetime.UTC)


def _time(ms: int) -> datetime.datetime:
    return NO_START_TIME if ms < 0 else datetime.datetime.fromtimestamp(ms / 1000, datetime.UTC)


@dataclass(frozen=True, slots=True)
class DescribeTransactionsHandler:
    api_key: ClassVar[int] = 65
    svc: BrokerServices

    async def __call__(self, ctx: RequestContext, req: Any) -> messages.DescribeTransactionsResponse:
        assert self.svc.txn is not None
        out = []
        for txn_id in req.transactional_ids:
            meta = self.svc.txn.get(txn_id)
            if meta is None:
                # Kafka sets only the error code: every other field keeps its schema default (0).
                out.append(messages.DescribedTransaction(error_code=ErrorCode.transactional_id_not_found,
                                                transactional_id=txn_id, transaction_state="",
                                                transaction_timeout=ZERO_MS, transaction_start_time=_time(0),
                                                producer_id=0, producer_epoch=0, topics=()))
                continue
            by_topic: dict[str, list[int]] = defaultdict(list)
            for tp in meta.partitions:
                by_topic[tp.topic].append(tp.partition)
            out.append(messages.DescribedTransaction(
                error_code=ErrorCode.none, transactional_id=txn_id, transaction_state=meta.state.kafka_name,
                transaction_timeout=datetime.timedelta(milliseconds=meta.timeout_ms),
                transaction_start_time=_time(meta.start_ms), producer_id=meta.producer_id,
                producer_epoch=meta.producer_epoch,
                topics=tuple(messages.DescribedTransactionTopic(topic=t, partitions=tuple(sorted(ps)))
                             for t, ps in sorted(by_topic.items()))))
        return messages.DescribeTransactionsResponse(throttle_time=ZERO_MS, transaction_states=tuple(out))
