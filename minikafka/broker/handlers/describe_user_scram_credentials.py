"""DescribeUserScramCredentials (API 50), answered from an empty credential set: minikafka has no
SASL/SCRAM yet (issue 21), so every named user is RESOURCE_NOT_FOUND and "all users" is none, as
a Kafka broker without SCRAM credentials answers. kafka-configs.sh asks it whenever it describes
user entities (user quotas), so without it describing a user's quotas failed.

Kafka: ScramImage.describe (the messages below are Kafka's).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from minikafka.broker.context import RequestContext
from minikafka.broker.services import BrokerServices
from minikafka.protocol import messages
from minikafka.protocol.errors import ErrorCode
from minikafka.protocol.types import ZERO_MS

NOT_FOUND = "Attempt to describe a user credential that does not exist: "
DUPLICATE = "Cannot describe SCRAM credentials for the same user twice in a single request: "


@dataclass(frozen=True, slots=True)
class DescribeUserScramCredentialsHandler:
    api_key: ClassVar[int] = 50
    svc: BrokerServices

    async def __call__(self, ctx: RequestContext, req: Any) -> messages.DescribeUserScramCredentialsResponse:
        counts: dict[str, int] = {}
        for u in req.users or ():
            counts[u.name] = counts.get(u.name, 0) + 1
        results = tuple(
            messages.DescribeUserScramCredentialsResult(
                user=name, error_code=ErrorCode.duplicate_resource if n > 1 else ErrorCode.resource_not_found,
                error_message=(DUPLICATE if n > 1 else NOT_FOUND) + name, credential_infos=())
            for name, n in counts.items()
        )
        return messages.DescribeUserScramCredentialsResponse(throttle_time=ZERO_MS, error_code=ErrorCode.none,
                                                             error_message=None, results=results)
