"""DescribeCluster (API 60): the single broker, which is also the controller. v2's
include_fenced_brokers changes nothing here: the one broker is never fenced."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from minikafka.broker import authorized_operations
from minikafka.broker.context import RequestContext
from minikafka.broker.services import BrokerServices
from minikafka.protocol import messages
from minikafka.protocol.errors import ErrorCode
from minikafka.protocol.types import ZERO_MS


@dataclass(frozen=True, slots=True)
class DescribeClusterHandler:
    api_key: ClassVar[int] = 60
    svc: BrokerServices

    async def __call__(self, ctx: RequestContext, req: Any) -> messages.DescribeClusterResponse:
        if req.endpoint_type not in (1,):  # 1 = brokers; controllers (2) are not exposed
            return messages.DescribeClusterResponse(throttle_time=ZERO_MS, error_code=ErrorCode.unsupported_endpoint_type,
                                           error_message="Only brokers can be described", cluster_id="",
                                           brokers=())
        host, port = self.svc.advertised(ctx.session)
        return messages.DescribeClusterResponse(
            throttle_time=ZERO_MS, error_code=ErrorCode.none, cluster_id=self.svc.cluster_id,
            controller_id=self.svc.node_id, endpoint_type=req.endpoint_type,
            brokers=(messages.DescribeClusterBroker(broker_id=self.svc.node_id, host=host,
                                           port=port, rack=None, is_fenced=False),),
            cluster_authorized_operations=authorized_operations.answer(
                bool(req.include_cluster_authorized_operations), authorized_operations.CLUSTER),
        )
