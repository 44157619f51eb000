"""UpdateFeatures (API 57): `kafka-features.sh upgrade | downgrade` of transaction.version and
group.version on this node.

Kafka: the broker forwards the request to the KRaft controller (KafkaApis.handleUpdateFeatures),
whose FeatureControlManager checks every update and applies all or none; one node is its own
controller, so minikafka/features.py decides here. v0-1 answer one result per feature (message
"NONE" when it went through, none at all when the request failed, as Kafka's controller answers);
v2 only the top-level error. validate_only (v1+) checks without changing anything
(`--dry-run`). A changed level is stored in the data dir and takes effect at once: ApiVersions
advertises it, the transaction coordinator and the consumer protocol follow it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from minikafka.broker.context import RequestContext
from minikafka.broker.services import BrokerServices
from minikafka.features import FeatureUpdate
from minikafka.protocol import messages, versions
from minikafka.protocol.errors import ErrorCode
from minikafka.protocol.types import ZERO_MS

PER_FEATURE_RESULTS_UNTIL = 1  # v2 (KIP-1022) dropped the per-feature results


@dataclass(frozen=True, slots=True)
class UpdateFeaturesHandler:
    api_key: ClassVar[int] = 57
    svc: BrokerServices

    async def __call__(self, ctx: RequestContext, req: Any) -> Any:
        features = self.svc.features
        assert features is not None
        updates = [FeatureUpdate(u.feature, int(u.max_version_level), int(u.upgrade_type)) for u in req.feature_updates]
        try:
            result = features.update(updates, self.svc.config.node_id, bool(req.validate_only))
            code, message = result.error, result.message
        except OSError as exc:  # the levels could not be stored: nothing changed
            code, message = ErrorCode.kafka_storage_error, f"the feature levels could not be stored: {exc}"
        if ctx.api_version > PER_FEATURE_RESULTS_UNTIL:
            return messages.UpdateFeaturesResponse(throttle_time=ZERO_MS, error_code=code, error_message=message)
        # The v1 shape (v0 reads the same fields): the canonical v2 has no place for the results.
        v1 = versions.response_class(self.api_key, PER_FEATURE_RESULTS_UNTIL)
        result_cls = versions.nested_class(v1, "results")
        results = () if code is not ErrorCode.none else tuple(
            result_cls(feature=u.feature, error_code=ErrorCode.none, error_message="NONE") for u in updates)
        return v1(throttle_time=ZERO_MS, error_code=code, error_message=message, results=results)

    def error_response(self, req: Any, code: ErrorCode) -> Any:
        return messages.UpdateFeaturesResponse(throttle_time=ZERO_MS, error_code=code, error_message=None)
