"""FindCoordinator (API 10): this node coordinates every group (and, once wired, transaction).

Kafka: KafkaApis.handleFindCoordinatorRequest. v4 (KIP-699) batches keys in `coordinator_keys`;
v0-3 carry one `key` and answer in top-level fields (versions.REQUEST_FIXUPS / RESPONSE_FIXUPS
translate). Looking up a group coordinator creates `__consumer_offsets`, as Kafka does. A key
type without a registered coordinator answers COORDINATOR_NOT_AVAILABLE; an unknown key type
INVALID_REQUEST.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from minikafka.broker.context import RequestContext
from minikafka.broker.services import BrokerServices
from minikafka.protocol import messages
from minikafka.protocol.errors import ErrorCode
from minikafka.protocol.types import ZERO_MS

KEY_TYPE_GROUP = 0
KEY_TYPE_TRANSACTION = 1
KEY_TYPE_SHARE = 2  # KIP-932: no share coordinator here (issue 23): COORDINATOR_NOT_AVAILABLE
KNOWN_KEY_TYPES = frozenset({KEY_TYPE_GROUP, KEY_TYPE_TRANSACTION, KEY_TYPE_SHARE})


@dataclass(frozen=True, slots=True)
class FindCoordinatorHandler:
    api_key: ClassVar[int] = 10
    svc: BrokerServices
    # key type -> prepare(now_ms): makes sure the coordinator's internal topic exists
    coordinators: Mapping[int, Callable[[int], None]]

    async def __call__(self, ctx: RequestContext, req: Any) -> messages.FindCoordinatorResponse:
        now_ms = self.svc.clock.now_ms()
        prepare = self.coordinators.get(req.key_type)
        if req.key_type not in KNOWN_KEY_TYPES or (req.key_type == KEY_TYPE_SHARE and ctx.api_version < 6):
            code = ErrorCode.invalid_request   # share keys came with v6 (KIP-932), as Kafka checks
        elif prepare is None:
            code = ErrorCode.coordinator_not_available
        else:
            try:
                prepare(now_ms)
                code = ErrorCode.none
            except OSError:  # the internal topic could not be created (a full disk): try later
                code = ErrorCode.coordinator_not_available
        host, port = self.svc.advertised(ctx.session)
        out = []
        for key in req.coordinator_keys:
            if code is ErrorCode.none:
                out.append(messages.Coordinator(key=key, node_id=self.svc.node_id, host=host,
                                       port=port, error_code=code, error_message=None))
            else:
                out.append(messages.Coordinator(key=key, node_id=-1, host="", port=-1, error_code=code,
                                       error_message=code.name))
        return messages.FindCoordinatorResponse(throttle_time=ZERO_MS, coordinators=tuple(out))
