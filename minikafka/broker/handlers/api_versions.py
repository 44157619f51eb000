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
GROUP_VERSION = "group.version"
MAX_GROUP_VERSION = 1
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
        # Features (KIP-584), as Kafka 4.3.1 advertises them: transaction.version supported 0-2 and
        # group.version 0-1, each finalized at the configured level unless that is 0 (a level-0
        # feature is not listed). The Java client speaks transactions v2 when transaction.version
        # is finalized at 2, and lets group.protocol=consumer join when group.version is 1. The
        # features of protocols minikafka does not serve yet (share.version, streams.version) are
        # left out, so no client asks for them.
        features = ((GROUP_VERSION, MAX_GROUP_VERSION, int(self.svc.config["group.version"])),
                    (TRANSACTION_VERSION, MAX_TRANSACTION_VERSION, int(self.svc.config["transaction.version"])))
        return messages.ApiVersionsResponse(
            error_code=ErrorCode.none, api_keys=keys, throttle_time=ZERO_MS,
            supported_features=tuple(messages.SupportedFeatureKey(name=name, min_version=0, max_version=top)
                                     for name, top, _level in features),
            finalized_features_epoch=FINALIZED_FEATURES_EPOCH,
            finalized_features=tuple(messages.FinalizedFeatureKey(name=name, max_version_level=level,
                                                                  min_version_level=level)
                                     for name, _top, level in features if level))
