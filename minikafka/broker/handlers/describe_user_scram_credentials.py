"""DescribeUserScramCredentials (API 50): each named user's SCRAM mechanisms and iteration counts
(never a salt or key), or every user with a credential when none is named. A named user without
credentials is RESOURCE_NOT_FOUND, one named twice DUPLICATE_RESOURCE (scram/credentials.py).
kafka-configs.sh asks for it whenever it describes user entities.

Kafka: ScramImage.describe.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from minikafka.broker.context import RequestContext
from minikafka.broker.services import BrokerServices
from minikafka.protocol import messages
from minikafka.protocol.errors import ErrorCode
from minikafka.protocol.types import ZERO_MS
from minikafka.scram.credentials import describe


@dataclass(frozen=True, slots=True)
class DescribeUserScramCredentialsHandler:
    api_key: ClassVar[int] = 50
    svc: BrokerServices

    async def __call__(self, ctx: RequestContext, req: Any) -> messages.DescribeUserScramCredentialsResponse:
        users = None if req.users is None else [u.name for u in req.users]
        results = tuple(
            messages.DescribeUserScramCredentialsResult(
                user=d.user, error_code=d.error, error_message=d.message,
                credential_infos=tuple(messages.DescribeUserScramCredentialInfo(mechanism=m, iterations=i)
                                       for m, i in d.credentials))
            for d in describe(self.svc.scram, users))
        return messages.DescribeUserScramCredentialsResponse(throttle_time=ZERO_MS, error_code=ErrorCode.none,
                                                             error_message=None, results=results)
