"""ElectLeaders (API 43): on one node every partition's leader is already its preferred (and only)
replica, so there is never an election to hold (kafka-leader-election.sh, Admin.electLeaders).

Kafka (KRaft): ReplicationControlManager.electLeaders. Named partitions that exist answer
ELECTION_NOT_NEEDED (84), for preferred and unclean elections alike; unknown ones
UNKNOWN_TOPIC_OR_PARTITION; a null partition list means "all partitions" and answers only the
partitions that changed, here none. An election type other than 0/1 is INVALID_REQUEST.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from minikafka.broker.context import RequestContext
from minikafka.broker.services import BrokerServices
from minikafka.protocol import messages
from minikafka.protocol.errors import ErrorCode
from minikafka.protocol.types import ZERO_MS, TopicPartition

PREFERRED, UNCLEAN = 0, 1


@dataclass(frozen=True, slots=True)
class ElectLeadersHandler:
    api_key: ClassVar[int] = 43
    svc: BrokerServices

    async def __call__(self, ctx: RequestContext, req: Any) -> messages.ElectLeadersResponse:
        if req.election_type not in (PREFERRED, UNCLEAN):
            return messages.ElectLeadersResponse(throttle_time=ZERO_MS, error_code=ErrorCode.invalid_request,
                                                 replica_election_results=())
        results = []
        for t in req.topic_partitions or ():
            parts = []
            for p in t.partitions:
                if self.svc.logs.get(TopicPartition(t.topic, p)) is None:
                    parts.append(messages.ElectLeadersPartitionResult(
                        partition_id=p, error_code=ErrorCode.unknown_topic_or_partition,
                        error_message="This server does not host this topic-partition."))
                else:
                    parts.append(messages.ElectLeadersPartitionResult(
                        partition_id=p, error_code=ErrorCode.election_not_needed,
                        error_message="Leader election not needed for topic partition."))
            results.append(messages.ReplicaElectionResult(topic=t.topic, partition_result=tuple(parts)))
        return messages.ElectLeadersResponse(throttle_time=ZERO_MS, error_code=ErrorCode.none,
                                             replica_election_results=tuple(results))
