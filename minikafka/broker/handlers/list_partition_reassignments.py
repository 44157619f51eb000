"""ListPartitionReassignments (API 46): nothing is ever being reassigned on one node, so the answer
lists no partitions (kafka-reassign-partitions.sh --verify/--list, Admin.listPartitionReassignments).

Kafka (KRaft): ReplicationControlManager.listPartitionReassignments answers only ongoing
reassignments, for all topics (null) or the named ones; names that do not exist are left out.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from minikafka.broker.context import RequestContext
from minikafka.broker.services import BrokerServices
from minikafka.protocol import messages
from minikafka.protocol.errors import ErrorCode
from minikafka.protocol.types import ZERO_MS


@dataclass(frozen=True, slots=True)
class ListPartitionReassignmentsHandler:
    api_key: ClassVar[int] = 46
    svc: BrokerServices

    async def __call__(self, ctx: RequestContext, req: Any) -> messages.ListPartitionReassignmentsResponse:
        return messages.ListPartitionReassignmentsResponse(throttle_time=ZERO_MS, error_code=ErrorCode.none,
                                                           error_message=None, topics=())
