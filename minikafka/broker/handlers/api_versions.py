"""ApiVersions (API 18): the APIs and version ranges the handler registry serves."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from minikafka.broker.context import RequestContext
from minikafka.broker.services import BrokerServices
from minikafka.protocol import messages
from minikafka.protocol.errors import ErrorCode
from minikafka.protocol.types import ZERO_MS


TRANSACTION_VERSION = "transaction.version"
MAX_TRANSACTION_VERSION = 2
# Kafka answers the metadata log offset of the last feature change; the features of one node never
# change while it runs, so any fixed non-negative epoch says "these are final".
FINALIZED_FEATURES_EPOCH = 1


@dataclass(frozen=True, slots=True)
class ApiVersionsHandler:
    api_key: ClassVar[int] = 18
    svc: BrokerServices

    async def __call__(self, ctx: RequestContext, req: Any) -> messages.ApiVersionsResponse:
        keys = tuple(
            messages.ApiVersion(api_key=k, min_version=r.min, max_version=r.max)
            for k, r in sorted(self.svc.served.items())
        )
        level = int(self.svc.config["transaction.version"])
        # Features (KIP-584), as Kafka 4.3.1 advertises transaction.version: supported 0-2, and
        # finalized at the configured level unless that is 0 (a level-0 feature is not listed). The
        # Java client speaks transactions v2 when it is finalized at 2 and Produce v12 is served.
        # The features of protocols minikafka does not serve yet (group.version for KIP-848,
        # share.version, streams.version) are left out, so no client asks for them.
        return messages.ApiVersionsResponse(
            error_code=ErrorCode.none, api_keys=keys, throttle_time=ZERO_MS,
            supported_features=(messages.SupportedFeatureKey(name=TRANSACTION_VERSION, min_version=0,
                                                             max_version=MAX_TRANSACTION_VERSION),),
            finalized_features_epoch=FINALIZED_FEATURES_EPOCH,
            finalized_features=(messages.FinalizedFeatureKey(name=TRANSACTION_VERSION, max_version_level=level,
                                                             min_version_level=level),) if level else ())
