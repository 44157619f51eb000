"""CreateTopics (API 19). Kafka: ControllerApis / ReplicationControlManager.createTopics.

One node: a replication factor above 1 is INVALID_REPLICATION_FACTOR, as on a one-broker Kafka.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any, ClassVar

from minikafka.broker import controller_limits
from minikafka.broker.context import RequestContext
from minikafka.broker.handlers.describe_configs import topic_config_entries
from minikafka.broker.services import BrokerServices
from minikafka.broker.throttling import THROTTLING_QUOTA_EXCEEDED_MESSAGE, mutation_quota
from minikafka.protocol import messages
from minikafka.protocol.errors import ErrorCode
from minikafka.storage.log_manager import NewTopic, TopicError, TopicInfo

ZERO_UUID = uuid.UUID(int=0)


@dataclass(frozen=True, slots=True)
class CreateTopicsHandler:
    api_key: ClassVar[int] = 19
    svc: BrokerServices

    async def __call__(self, ctx: RequestContext, req: Any) -> messages.CreateTopicsResponse:
        seen: dict[str, int] = {}
        for t in req.topics:
            seen[t.name] = seen.get(t.name, 0) + 1
        quota = mutation_quota(self.svc.quotas, self.api_key, ctx.api_version, ctx.client_id, self.svc.clock.now_ms())
        # One validation pass: each topic's partition count, or the error it is answered.
        plans = [self._plan(t) if seen[t.name] == 1 else _err(
            t.name, ErrorCode.invalid_request, f"Create topics request from client contains multiple entries for {t.name}")
            for t in req.topics]
        refusal = self._refusal(req.topics, plans)
        if refusal is not None:
            return messages.CreateTopicsResponse(throttle_time=quota.throttle_time(), topics=tuple(
                _err(t.name, ErrorCode.policy_violation, refusal) for t in req.topics))
        # Kafka counts the partitions against controller_mutation_rate once the topic passed every
        # other check, and refuses it (strict versions) when used up.
        admitted = [plan if isinstance(plan, messages.CreatableTopicResult) or not quota.applies
                    or quota.admit(plan) else _err(t.name, ErrorCode.throttling_quota_exceeded,
                                                   THROTTLING_QUOTA_EXCEEDED_MESSAGE)
                    for t, plan in zip(req.topics, plans, strict=True)]
        new = [NewTopic(t.name, plan, {c.name: c.value for c in t.configs})
               for t, plan in zip(req.topics, admitted, strict=True) if isinstance(plan, int)]
        # one step of the log manager for the whole request: it makes all of it durable at once
        made = iter(self.svc.logs.create_topics(new, now_ms=self.svc.clock.now_ms(),
                                                validate_only=req.validate_only))
        results = [plan if isinstance(plan, messages.CreatableTopicResult) else self._answer(t, next(made),
                                                                                             req.validate_only)
                   for t, plan in zip(req.topics, admitted, strict=True)]
        return messages.CreateTopicsResponse(throttle_time=quota.throttle_time(), topics=tuple(results))

    def _refusal(self, topics: Any, plans: list[int | messages.CreatableTopicResult]) -> str | None:
        """Kafka's controller limits on the whole request (controller_limits): the message every
        topic gets, or None. The records count only the topics that passed validation."""
        default = int(self.svc.config["num.partitions"])
        if controller_limits.requested_partitions(topics, default) > controller_limits.MAX_PARTITIONS_PER_REQUEST:
            return controller_limits.TOO_MANY_PARTITIONS_MESSAGE
        records = sum(controller_limits.topic_records(plan, len({c.name for c in t.configs}))
                      for t, plan in zip(topics, plans, strict=True) if isinstance(plan, int))
        if records > controller_limits.MAX_RECORDS_PER_USER_OP:
            return controller_limits.EXCESSIVE_BATCH_MESSAGE
        return None

    def _plan(self, t: Any) -> int | messages.CreatableTopicResult:
        """The topic's partition count once every check of a creation passed (assignment,
        replication factor, name, existence, configs), or the error it is answered."""
        shape = self._shape(t)
        if isinstance(shape, messages.CreatableTopicResult):
            return shape
        try:
            self.svc.logs.create_topic(t.name, shape, {c.name: c.value for c in t.configs},
                                       now_ms=self.svc.clock.now_ms(), validate_only=True)
        except TopicError as exc:
            return _err(t.name, exc.error_code, str(exc))
        return shape

    def _shape(self, t: Any) -> int | messages.CreatableTopicResult:
        """The topic's partition count, or the error its assignment or replication factor gets."""
        cfg = self.svc.config
        if t.assignments:
            partitions = len(t.assignments)
            replication = max((len(a.broker_ids) for a in t.assignments), default=1)
            if any(b != self.svc.node_id for a in t.assignments for b in a.broker_ids):
                return _err(t.name, ErrorCode.invalid_replica_assignment,
                            f"The manual partition assignment includes a broker other than {self.svc.node_id}")
        else:
            partitions = t.num_partitions if t.num_partitions != -1 else int(cfg["num.partitions"])
            replication = t.replication_factor if t.replication_factor != -1 else int(cfg["default.replication.factor"])
        if replication <= 0:
            return _err(t.name, ErrorCode.invalid_replication_factor, "Replication factor must be larger than 0.")
        if replication > 1:
            return _err(t.name, ErrorCode.invalid_replication_factor,
                        f"Unable to replicate the partition {replication} time(s): The target replication "
                        f"factor of {replication} cannot be reached because only 1 broker(s) are registered.")
        return partitions

    def _answer(self, t: Any, info: TopicInfo | TopicError, validate_only: bool) -> messages.CreatableTopicResult:
        """A created (or, validate_only, described) topic's answer, with its configs, or its error."""
        if isinstance(info, TopicError):
            return _err(t.name, info.error_code, str(info))
        configs = tuple(
            messages.CreatableTopicConfigs(name=e.name, value=e.value, read_only=e.read_only,
                                  config_source=e.config_source, is_sensitive=False)
            for e in topic_config_entries(self.svc, t.name, overrides=info.configs)
        )
        return messages.CreatableTopicResult(name=t.name, topic_id=info.topic_id, error_code=ErrorCode.none,
                                    error_message=None, num_partitions=info.partitions,
                                    replication_factor=1, configs=configs)


def _err(name: str, code: ErrorCode, message: str | None) -> messages.CreatableTopicResult:
    return messages.CreatableTopicResult(name=name, topic_id=ZERO_UUID, error_code=code, error_message=message,
                                configs=None)
