"""ApiVersions (API 18): the APIs and version ranges the handler registry serves."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from minikafka.broker.context import RequestContext
from minikafka.broker.services import BrokerServices
from minikafka.features import SUPPORTED as SUPPORTED_FEATURES
from minikafka.protocol import messages
from minikafka.protocol.errors import ErrorCode
from minikafka.protocol.types import ZERO_MS




@dataclass(frozen=True, slots=True)
class ApiVersionsHandler:
    api_key: ClassVar[int] = 18
    svc: BrokerServices

    async def __call__(self, ctx: RequestContext, req: Any) -> messages.ApiVersionsResponse:
        if ctx.session is not None:
            ctx.session.saw_api_versions()  # on a SASL listener, SaslHandshake comes next
        keys = tuple(
            messages.ApiVersion(api_key=k, min_version=r.min, max_version=r.max)
            for k, r in sorted(self.svc.served.items())
        )
        # Features (KIP-584), as Kafka 4.3.1 advertises transaction.version (0-2) and group.version
        # (0-1), finalized at the levels of minikafka/features.py (a level-0 feature is not listed).
        # The Java client speaks transactions v2 when transaction.version is finalized at 2, and
        # lets group.protocol=consumer join when group.version is 1. The epoch moves with every
        # UpdateFeatures, as Kafka's (the offset of its last feature change) does.
        features = self.svc.features
        assert features is not None
        finalized = features.finalized()
        return messages.ApiVersionsResponse(
            error_code=ErrorCode.none, api_keys=keys, throttle_time=ZERO_MS,
            supported_features=tuple(messages.SupportedFeatureKey(name=name, min_version=low, max_version=high)
                                     for name, (low, high) in SUPPORTED_FEATURES.items()),
            finalized_features_epoch=features.epoch,
            finalized_features=tuple(messages.FinalizedFeatureKey(name=name, max_version_level=level,
                                                                  min_version_level=level)
                                     for name, level in finalized.items()))
