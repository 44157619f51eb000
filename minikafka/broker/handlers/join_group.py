"""JoinGroup (API 11): join or rejoin a classic group; may park until the join phase completes.

Kafka: KafkaApis.handleJoinGroupRequest, GroupMetadataManager.classicGroupJoin. v4+ get
MEMBER_ID_REQUIRED on a first join without a member id (KIP-394); v5+ carry group.instance.id
(KIP-345); v9 may answer skip_assignment to a rejoining static leader (KIP-814). Versions below 7
have a non-nullable protocol name: Kafka sends "" there instead of null.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from minikafka.broker.context import RequestContext
from minikafka.broker.services import BrokerServices
from minikafka.coordinator.group.coordinator import GroupCoordinator
from minikafka.coordinator.group.decisions import JoinRequest
from minikafka.protocol import messages
from minikafka.protocol.errors import ErrorCode
from minikafka.protocol.types import ZERO_MS, ms


def client_host(peer: str) -> str:
    """Kafka shows the client address as InetAddress.toString(): "/127.0.0.1"."""
    host = peer.rsplit(":", 1)[0] if ":" in peer else peer
    return "/" + host.strip("[]")


@dataclass(frozen=True, slots=True)
class JoinGroupHandler:
    api_key: ClassVar[int] = 11
    svc: BrokerServices
    groups: GroupCoordinator

    async def __call__(self, ctx: RequestContext, req: Any) -> messages.JoinGroupResponse:
        if not req.group_id:
            return _error(ErrorCode.invalid_group_id, req.member_id, ctx.api_version)
        session_ms = ms(req.session_timeout)
        rebalance_ms = ms(req.rebalance_timeout)
        result = await self.groups.join_group(JoinRequest(
            group_id=req.group_id, member_id=req.member_id, group_instance_id=req.group_instance_id,
            client_id=ctx.client_id or "", client_host=client_host(ctx.peer),
            session_timeout_ms=session_ms, rebalance_timeout_ms=rebalance_ms if rebalance_ms >= 0 else session_ms,
            protocol_type=req.protocol_type, protocols=tuple((p.name, p.metadata) for p in req.protocols),
            require_known_member_id=ctx.api_version >= 4, supports_skip_assignment=ctx.api_version >= 9,
        ), self.svc.clock.now_ms())
        protocol_name = result.protocol_name
        if protocol_name is None and ctx.api_version < 7:
            protocol_name = ""
        return messages.JoinGroupResponse(
            throttle_time=ZERO_MS, error_code=result.error, generation_id=result.generation_id,
            protocol_type=result.protocol_type, protocol_name=protocol_name, leader=result.leader_id,
            skip_assignment=result.skip_assignment, member_id=result.member_id,
            members=tuple(messages.JoinGroupResponseMember(member_id=m, group_instance_id=i, metadata=meta)
                          for m, i, meta in result.members))

    def error_response(self, req: Any, code: ErrorCode) -> messages.JoinGroupResponse:
        return _error(code, req.member_id, 9)


def _error(code: ErrorCode, member_id: str, version: int) -> messages.JoinGroupResponse:
    return messages.JoinGroupResponse(throttle_time=ZERO_MS, error_code=code, generation_id=-1, protocol_type=None,
                             protocol_name=None if version >= 7 else "", leader="", skip_assignment=False,
                             member_id=member_id, members=())
