"""AlterUserScramCredentials (API 51): add, replace or delete users' SCRAM credentials (KIP-554),
each user on its own with Kafka's checks (scram/credentials.py). The changes are saved in the
data dir before they are answered; when the disk refuses, nothing changes and every user that
would have changed gets KAFKA_STORAGE_ERROR.

Kafka: ControllerApis.handleAlterUserScramCredentials -> ScramControlManager.alterCredentials.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import structlog

from minikafka.broker.context import RequestContext
from minikafka.broker.services import BrokerServices
from minikafka.protocol import messages
from minikafka.protocol.errors import ErrorCode
from minikafka.protocol.types import ZERO_MS
from minikafka.scram.credentials import Deletion, Outcome, Upsertion, alter

log = structlog.get_logger("minikafka.broker")


@dataclass(frozen=True, slots=True)
class AlterUserScramCredentialsHandler:
    api_key: ClassVar[int] = 51
    svc: BrokerServices

    async def __call__(self, ctx: RequestContext, req: Any) -> messages.AlterUserScramCredentialsResponse:
        after, outcomes = alter(
            self.svc.scram,
            [Deletion(d.name, int(d.mechanism)) for d in req.deletions],
            [Upsertion(u.name, int(u.mechanism), int(u.iterations), u.salt, u.salted_password) for u in req.upsertions])
        changed = [o.user for o in outcomes if o.error == ErrorCode.none]
        if changed:
            try:
                self.svc.save_scram_credentials(after)
            except OSError as exc:
                message = f"Cannot persist the change: {exc}"
                outcomes = [Outcome(o.user, ErrorCode.kafka_storage_error, message) if o.error == ErrorCode.none
                            else o for o in outcomes]
            else:
                # Names only: a credential is a secret and never logged.
                log.info("scram_credentials_altered", users=changed, client_id=ctx.client_id)
        return messages.AlterUserScramCredentialsResponse(throttle_time=ZERO_MS, results=tuple(
            messages.AlterUserScramCredentialsResult(user=o.user, error_code=o.error, error_message=o.message)
            for o in outcomes))
