"""The authorization door: with an authorizer configured (security/acl_manager.py), each API's
handler sits behind the checks Kafka's KafkaApis makes for it, so handlers never grow a security
branch. A request the principal may not make at all is answered with the API's error
(GROUP_AUTHORIZATION_FAILED, TRANSACTIONAL_ID_AUTHORIZATION_FAILED, CLUSTER_AUTHORIZATION_FAILED);
one naming some topics it may not touch is handed to the handler without them, and the answer
lists them with TOPIC_AUTHORIZATION_FAILED; listings (Metadata for all topics, ListGroups,
ListTransactions) leave out what it may not describe. Without an authorizer nothing is wrapped.

The checks (Kafka 4.x KafkaApis):
  Produce        WRITE TRANSACTIONAL_ID (transactional data), WRITE TOPIC
  Fetch          READ TOPIC             ListOffsets, OffsetForLeaderEpoch, DescribeTopicPartitions  DESCRIBE TOPIC
  Metadata       DESCRIBE TOPIC, CREATE (CLUSTER or TOPIC) to auto-create
  OffsetCommit   READ GROUP, READ TOPIC           OffsetFetch  DESCRIBE GROUP, DESCRIBE TOPIC
  Join/Sync/Heartbeat/LeaveGroup, Consumer/StreamsGroupHeartbeat  READ GROUP
  DescribeGroups, Consumer/StreamsGroupDescribe  DESCRIBE GROUP      DeleteGroups  DELETE GROUP
  FindCoordinator  DESCRIBE GROUP / DESCRIBE TRANSACTIONAL_ID
  InitProducerId   WRITE TRANSACTIONAL_ID; idempotent: IDEMPOTENT_WRITE CLUSTER or WRITE on any topic
  AddPartitionsToTxn  WRITE TRANSACTIONAL_ID, WRITE TOPIC     EndTxn  WRITE TRANSACTIONAL_ID
  AddOffsetsToTxn, TxnOffsetCommit  WRITE TRANSACTIONAL_ID, READ GROUP (TxnOffsetCommit: READ TOPIC)
  WriteTxnMarkers  ALTER or CLUSTER_ACTION CLUSTER
  CreateTopics     CREATE CLUSTER or TOPIC       DeleteTopics, DeleteRecords  DELETE TOPIC
  CreatePartitions ALTER TOPIC                   DescribeProducers  READ TOPIC
  DescribeTransactions  DESCRIBE TRANSACTIONAL_ID   ListTransactions  (filtered) DESCRIBE TRANSACTIONAL_ID
  Create/DeleteAcls, AlterUserScramCredentials, UpdateFeatures, ElectLeaders,
  AlterPartitionReassignments  ALTER CLUSTER
  DescribeAcls, DescribeUserScramCredentials, DescribeLogDirs, ListPartitionReassignments  DESCRIBE CLUSTER
  DescribeConfigs / (Incremental)AlterConfigs  DESCRIBE_CONFIGS / ALTER_CONFIGS on each resource
  DescribeClientQuotas, ListConfigResources / AlterClientQuotas  DESCRIBE_CONFIGS / ALTER_CONFIGS CLUSTER
  ApiVersions, SaslHandshake, SaslAuthenticate, DescribeCluster: anyone
  The authorized-operations bitfields (KIP-430) a client asks for: the principal's own
"""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable
from typing import Any

from minikafka.broker.authorized_operations import OMITTED, cluster_ops, group_ops, topic_ops, with_operations
from minikafka.broker.context import RequestContext
from minikafka.broker.dispatch import Handler, error_response
from minikafka.broker.refusals import (
    TOPIC_DENIED,
    ZERO_UUID,
    REFUSALS,
    create_topics_denied,
    delete_records_denied,
    delete_topics_denied,
    fetch_denied,
    leader_epoch_denied,
    list_offsets_denied,
    nested,
    topic_partitions_denied,
    via_error_response,
)
from minikafka.protocol import versions
from minikafka.protocol.errors import ErrorCode
from minikafka.protocol.records import read_header
from minikafka.protocol.types import ZERO_MS
from minikafka.security.acl_manager import AclManager
from minikafka.security.acls import CLUSTER_NAME, Operation, ResourceType
from minikafka.security.principal import ANONYMOUS

TOPIC, GROUP, CLUSTER, TXN_ID = ResourceType.TOPIC, ResourceType.GROUP, ResourceType.CLUSTER, ResourceType.TRANSACTIONAL_ID
GROUP_DENIED = ErrorCode.group_authorization_failed
CLUSTER_DENIED = ErrorCode.cluster_authorization_failed
TXN_DENIED = ErrorCode.transactional_id_authorization_failed


@dataclasses.dataclass(frozen=True)
class Who:
    """The principal and host of one request, and the ACLs that decide for them."""

    acls: AclManager
    ctx: RequestContext

    @property
    def principal(self) -> Any:
        session = self.ctx.session
        return session.principal if session is not None else ANONYMOUS

    @property
    def host(self) -> str:
        return self.ctx.peer.rsplit(":", 1)[0].strip("[]")

    def can(self, op: Operation, rtype: ResourceType, name: str) -> bool:
        return self.acls.authorize(self.principal, self.host, op, rtype, name)

    def cluster(self, op: Operation) -> bool:
        return self.can(op, CLUSTER, CLUSTER_NAME)


Policy = Callable[[Who, Any, Handler], Awaitable[Any]]


class AuthorizationDoor:
    def __init__(self, inner: Handler, policy: Policy, acls: AclManager) -> None:
        self.inner = inner
        self.policy = policy
        self.acls = acls
        self.api_key = inner.api_key

    async def __call__(self, ctx: RequestContext, req: Any) -> Any:
        return await self.policy(Who(self.acls, ctx), req, self.inner)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self.inner, name)


def door(api_key: int, handler: Handler, acls: AclManager | None) -> Handler:
    """`handler` behind its API's checks, or unchanged without an authorizer (or for the APIs
    anyone may call: ApiVersions and the SASL ones)."""
    if acls is None:
        return handler
    policy = POLICIES.get(api_key)
    return handler if policy is None else AuthorizationDoor(handler, policy, acls)  # type: ignore[return-value]


def _deny(handler: Handler, req: Any, code: ErrorCode) -> Any:
    response = error_response(handler, req, code)
    if response is None:  # no top-level error code: every item of the request is refused
        response = REFUSALS[handler.api_key](req, code)
    return response


def _call(handler: Handler, who: Who, req: Any) -> Awaitable[Any]:
    return handler(who.ctx, req)


# -- whole-request checks --------------------------------------------------------------------

def needs(*checks: Callable[[Who, Any], ErrorCode | None]) -> Policy:
    async def policy(who: Who, req: Any, handler: Handler) -> Any:
        for check in checks:
            code = check(who, req)
            if code is not None:
                return _deny(handler, req, code)
        return await _call(handler, who, req)
    return policy


def on_cluster(op: Operation, *alternatives: Operation) -> Callable[[Who, Any], ErrorCode | None]:
    return lambda who, req: None if any(who.cluster(o) for o in (op, *alternatives)) else CLUSTER_DENIED


def on_group(op: Operation, field: str = "group_id") -> Callable[[Who, Any], ErrorCode | None]:
    return lambda who, req: None if who.can(op, GROUP, getattr(req, field)) else GROUP_DENIED


def on_txn_id(op: Operation, field: str = "transactional_id") -> Callable[[Who, Any], ErrorCode | None]:
    return lambda who, req: None if who.can(op, TXN_ID, getattr(req, field)) else TXN_DENIED


def _init_producer_id(who: Who, req: Any) -> ErrorCode | None:
    if req.transactional_id is not None:
        return None if who.can(Operation.WRITE, TXN_ID, req.transactional_id) else TXN_DENIED
    if who.cluster(Operation.IDEMPOTENT_WRITE) or who.acls.authorize_any(who.principal, who.host, Operation.WRITE, TOPIC):
        return None
    return CLUSTER_DENIED


# -- per-topic checks ------------------------------------------------------------------------

def _split(items: Any, allowed: Callable[[Any], bool]) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
    ok, denied = [], []
    for item in items:
        (ok if allowed(item) else denied).append(item)
    return tuple(ok), tuple(denied)


def per_topic(op: Operation, field: str, answer_field: str, denied_answer: Callable[[Handler, Any, tuple[Any, ...]], tuple[Any, ...]],
              name: Callable[[Any], str] = lambda t: t.name, first: Policy | None = None) -> Policy:
    """The handler sees only the topics the principal may `op`; the others are answered denied."""
    async def policy(who: Who, req: Any, handler: Handler) -> Any:
        ok, denied = _split(getattr(req, field), lambda t: who.can(op, TOPIC, name(t)))
        if not denied:
            return await _call(handler, who, req)
        refused = denied_answer(handler, req, denied)
        if not ok:
            return _only(handler, req, answer_field, refused)
        response = await _call(handler, who, dataclasses.replace(req, **{field: ok}))
        if response is None:  # Produce with acks=0: no answer at all
            return None
        return dataclasses.replace(response, **{answer_field: tuple(getattr(response, answer_field)) + refused})
    return policy


def _only(handler: Handler, req: Any, answer_field: str, refused: tuple[Any, ...]) -> Any:
    """The answer when the handler has nothing left to do: only the refused entries."""
    response = error_response(handler, req, ErrorCode.none)
    if response is None:  # an API without a top-level error code: its answer is its list
        cls = versions.canonical_response(handler.api_key)
        return cls(throttle_time=ZERO_MS, **{answer_field: refused})
    return dataclasses.replace(response, **{answer_field: refused})


async def _produce(who: Who, req: Any, handler: Handler) -> Any:
    if _transactional(req) and (req.transactional_id is None
                                or not who.can(Operation.WRITE, TXN_ID, req.transactional_id)):
        return handler.error_response(req, TXN_DENIED)  # type: ignore[attr-defined]
    return await _PRODUCE_TOPICS(who, req, handler)


def _transactional(req: Any) -> bool:
    """Kafka's RequestUtils.hasTransactionalRecords: the first batch of a partition says so."""
    for t in req.topic_data:
        for p in t.partition_data:
            records = p.records
            if records:
                try:
                    return bool(read_header(records, 0).is_transactional)
                except Exception:  # noqa: BLE001 - a malformed batch is the handler's to refuse
                    return False
    return False


_PRODUCE_TOPICS = per_topic(Operation.WRITE, "topic_data", "responses", via_error_response("topic_data", "responses"))
_OFFSET_TOPICS = per_topic(Operation.READ, "topics", "topics", via_error_response("topics", "topics"))
_CREATE_TOPICS = per_topic(Operation.CREATE, "topics", "topics", create_topics_denied)


def _then(check: Callable[[Who, Any], ErrorCode | None], policy: Policy) -> Policy:
    async def run(who: Who, req: Any, handler: Handler) -> Any:
        code = check(who, req)
        if code is not None:
            return _deny(handler, req, code)
        return await policy(who, req, handler)
    return run


def _can_create(who: Who, name: str) -> bool:
    return who.cluster(Operation.CREATE) or who.can(Operation.CREATE, TOPIC, name)


async def _create_topics(who: Who, req: Any, handler: Handler) -> Any:
    if who.cluster(Operation.CREATE):
        return await _call(handler, who, req)
    return await _CREATE_TOPICS(who, req, handler)


async def _metadata(who: Who, req: Any, handler: Handler) -> Any:
    """DESCRIBE filters the topics (all topics: the ones it may see; named: the others denied),
    and auto-creation needs CREATE on the cluster or the topic."""
    topic_cls = nested(3, "topics")
    if req.topics is None:
        response = await _call(handler, who, req)
        return dataclasses.replace(response, topics=tuple(t for t in response.topics
                                                          if who.can(Operation.DESCRIBE, TOPIC, t.name)))
    logs = _services_logs(handler)

    def denied(t: Any) -> bool:
        if t.name is None:
            return False
        if not who.can(Operation.DESCRIBE, TOPIC, t.name):
            return True
        creating = req.allow_auto_topic_creation and logs is not None and t.name not in logs.topics
        return bool(creating and not _can_create(who, t.name))

    ok, refused = _split(req.topics, lambda t: not denied(t))
    if not refused:
        return await _call(handler, who, req)
    response = await _call(handler, who, dataclasses.replace(req, topics=ok))
    return dataclasses.replace(response, topics=tuple(response.topics) + tuple(
        topic_cls(error_code=TOPIC_DENIED, name=t.name, topic_id=ZERO_UUID, is_internal=False, partitions=(),
                  topic_authorized_operations=-2147483648) for t in refused))


def _services_logs(handler: Handler) -> Any:
    svc = getattr(handler, "svc", None)
    return getattr(svc, "logs", None)


async def _offset_fetch(who: Who, req: Any, handler: Handler) -> Any:
    group_cls = nested(9, "groups")
    allowed_groups, denied_groups = _split(req.groups, lambda g: who.can(Operation.DESCRIBE, GROUP, g.group_id))
    if not allowed_groups:
        return _only(handler, req, "groups", tuple(
            group_cls(group_id=g.group_id, topics=(), error_code=GROUP_DENIED) for g in denied_groups))
    response = await _call(handler, who, dataclasses.replace(req, groups=allowed_groups))
    groups = []
    topic_cls, part_cls = nested(9, "groups", "topics"), nested(9, "groups", "topics", "partitions")
    for g in response.groups:
        topics = []
        for t in g.topics:  # a topic it may not describe: its offsets are not told
            if who.can(Operation.DESCRIBE, TOPIC, t.name):
                topics.append(t)
            else:
                topics.append(topic_cls(name=t.name, partitions=tuple(dataclasses.replace(
                    p, committed_offset=-1, committed_leader_epoch=-1, metadata=None, error_code=TOPIC_DENIED)
                    for p in t.partitions)))
        groups.append(dataclasses.replace(g, topics=tuple(topics)))
    _ = part_cls
    groups += [group_cls(group_id=g.group_id, topics=(), error_code=GROUP_DENIED) for g in denied_groups]
    return dataclasses.replace(response, groups=tuple(groups))


async def _find_coordinator(who: Who, req: Any, handler: Handler) -> Any:
    rtype, code = (GROUP, GROUP_DENIED) if req.key_type == 0 else (TXN_ID, TXN_DENIED)
    ok, denied = _split(req.coordinator_keys, lambda k: who.can(Operation.DESCRIBE, rtype, k))
    coordinator_cls = nested(10, "coordinators")
    refused = tuple(coordinator_cls(key=k, node_id=-1, host="", port=-1, error_code=code, error_message=None)
                    for k in denied)
    if not ok:
        return _only(handler, req, "coordinators", refused)
    response = await _call(handler, who, dataclasses.replace(req, coordinator_keys=ok) if denied else req)
    return dataclasses.replace(response, coordinators=tuple(response.coordinators) + refused) if denied else response


def _filtered(answer_field: str, allowed: Callable[[Who, Any], bool]) -> Policy:
    """Listings: leave out what the principal may not describe."""
    async def policy(who: Who, req: Any, handler: Handler) -> Any:
        response = await _call(handler, who, req)
        return dataclasses.replace(response, **{answer_field: tuple(
            x for x in getattr(response, answer_field) if allowed(who, x))})
    return policy


async def _describe_transactions(who: Who, req: Any, handler: Handler) -> Any:
    response = await _call(handler, who, req)
    states = []
    for s in response.transaction_states:
        if who.can(Operation.DESCRIBE, TXN_ID, s.transactional_id):
            states.append(dataclasses.replace(s, topics=tuple(
                t for t in s.topics if who.can(Operation.DESCRIBE, TOPIC, t.topic))))
        else:
            states.append(dataclasses.replace(s, error_code=TXN_DENIED, topics=()))
    return dataclasses.replace(response, transaction_states=tuple(states))


_CONFIG_RESOURCES = {2: (TOPIC, TOPIC_DENIED), 4: (CLUSTER, CLUSTER_DENIED), 8: (CLUSTER, CLUSTER_DENIED),
                     32: (GROUP, GROUP_DENIED)}


def _configs(op: Operation, answer_field: str, api_key: int) -> Policy:
    """(Describe|Alter|IncrementalAlter)Configs: each resource on its own (BROKER and
    BROKER_LOGGER are the cluster's)."""
    def resource_of(r: Any) -> tuple[ResourceType, str, ErrorCode]:
        rtype, code = _CONFIG_RESOURCES.get(r.resource_type, (CLUSTER, CLUSTER_DENIED))
        return rtype, (r.resource_name if rtype is not CLUSTER else CLUSTER_NAME), code

    async def policy(who: Who, req: Any, handler: Handler) -> Any:
        ok, denied = _split(req.resources, lambda r: who.can(op, *resource_of(r)[:2]))
        if not denied:
            return await _call(handler, who, req)
        cls = nested(api_key, answer_field)
        names = {f.name for f in dataclasses.fields(cls)}
        refused = []
        for r in denied:
            fields = {"error_code": resource_of(r)[2], "error_message": None, "resource_type": r.resource_type,
                      "resource_name": r.resource_name}
            if "configs" in names:
                fields["configs"] = ()
            refused.append(cls(**{k: v for k, v in fields.items() if k in names}))
        if not ok:
            return _only(handler, req, answer_field, tuple(refused))
        response = await _call(handler, who, dataclasses.replace(req, resources=ok))
        return dataclasses.replace(response, **{answer_field: tuple(getattr(response, answer_field)) + tuple(refused)})
    return policy


async def _txn_offset_commit(who: Who, req: Any, handler: Handler) -> Any:
    if not who.can(Operation.WRITE, TXN_ID, req.transactional_id):
        return handler.error_response(req, TXN_DENIED)  # type: ignore[attr-defined]
    if not who.can(Operation.READ, GROUP, req.group_id):
        return handler.error_response(req, GROUP_DENIED)  # type: ignore[attr-defined]
    return await _OFFSET_TOPICS(who, req, handler)


async def _add_partitions_to_txn(who: Who, req: Any, handler: Handler) -> Any:
    if not who.can(Operation.WRITE, TXN_ID, req.v3_and_below_transactional_id):
        return handler.error_response(req, TXN_DENIED)  # type: ignore[attr-defined]
    denied = {t.name for t in req.v3_and_below_topics
              if not t.name.startswith("__") and not who.can(Operation.WRITE, TOPIC, t.name)}
    if not denied:
        return await _call(handler, who, req)
    # Kafka adds none of them: the denied ones fail, the rest OPERATION_NOT_ATTEMPTED.
    response = handler.error_response(req, ErrorCode.operation_not_attempted)  # type: ignore[attr-defined]
    return dataclasses.replace(response, results_by_topic_v3_and_below=tuple(
        dataclasses.replace(r, results_by_partition=tuple(
            dataclasses.replace(p, partition_error_code=TOPIC_DENIED) for p in r.results_by_partition))
        if r.name in denied else r for r in response.results_by_topic_v3_and_below))


async def _describe_groups(who: Who, req: Any, handler: Handler) -> Any:
    """DescribeGroups: a group the principal may not describe is answered GROUP_AUTHORIZATION_FAILED
    in its place (KafkaApis), the others by the handler, in the order asked."""
    ok, denied = _split(req.groups, lambda g: who.can(Operation.DESCRIBE, GROUP, g))
    response = await _call(handler, who, dataclasses.replace(req, groups=ok)) if ok else \
        _only(handler, req, "groups", ())
    cls = nested(15, "groups")
    refused = {g: cls(error_code=GROUP_DENIED, error_message=None, group_id=g, group_state="", protocol_type="",
                      protocol_data="", members=(), authorized_operations=OMITTED) for g in denied}
    described = {g.group_id: g for g in response.groups}
    return dataclasses.replace(response, groups=tuple(refused.get(g) or described[g] for g in req.groups
                                                      if g in refused or g in described))


async def _anyone(who: Who, req: Any, handler: Handler) -> Any:
    return await _call(handler, who, req)


READ, WRITE, DESCRIBE, ALTER = Operation.READ, Operation.WRITE, Operation.DESCRIBE, Operation.ALTER

POLICIES: dict[int, Policy] = {
    0: _produce,
    1: per_topic(READ, "topics", "responses", fetch_denied, name=lambda t: t.topic),
    2: per_topic(DESCRIBE, "topics", "topics", list_offsets_denied),
    3: with_operations(_metadata, topic_ops),
    8: _then(on_group(READ), _OFFSET_TOPICS),
    9: _offset_fetch,
    10: _find_coordinator,
    11: needs(on_group(READ)),
    12: needs(on_group(READ)),
    13: needs(on_group(READ)),
    14: needs(on_group(READ)),
    15: with_operations(_describe_groups, group_ops),
    16: _filtered("groups", lambda who, g: who.cluster(DESCRIBE) or who.can(DESCRIBE, GROUP, g.group_id)),
    19: _create_topics,
    20: per_topic(Operation.DELETE, "topics", "responses", delete_topics_denied, name=lambda t: t.name or ""),
    21: per_topic(Operation.DELETE, "topics", "topics", delete_records_denied),
    22: needs(_init_producer_id),
    23: per_topic(DESCRIBE, "topics", "topics", leader_epoch_denied, name=lambda t: t.topic),
    24: _add_partitions_to_txn,
    25: needs(on_txn_id(WRITE), on_group(READ)),
    26: needs(on_txn_id(WRITE)),
    27: needs(on_cluster(ALTER, Operation.CLUSTER_ACTION)),
    28: _txn_offset_commit,
    29: needs(on_cluster(DESCRIBE)),
    30: needs(on_cluster(ALTER)),
    31: needs(on_cluster(ALTER)),
    32: _configs(Operation.DESCRIBE_CONFIGS, "results", 32),
    33: _configs(Operation.ALTER_CONFIGS, "responses", 33),
    35: needs(on_cluster(DESCRIBE)),
    37: needs(lambda who, req: None if all(who.can(ALTER, TOPIC, t.name) for t in req.topics) else TOPIC_DENIED),
    42: needs(lambda who, req: None if all(who.can(Operation.DELETE, GROUP, g) for g in req.groups_names) else GROUP_DENIED),
    43: needs(on_cluster(ALTER)),
    44: _configs(Operation.ALTER_CONFIGS, "responses", 44),
    45: needs(on_cluster(ALTER)),
    46: needs(on_cluster(DESCRIBE)),
    47: needs(on_group(Operation.DELETE)),
    48: needs(on_cluster(Operation.DESCRIBE_CONFIGS)),
    49: needs(on_cluster(Operation.ALTER_CONFIGS)),
    50: needs(on_cluster(DESCRIBE)),
    51: needs(on_cluster(ALTER)),
    57: needs(on_cluster(ALTER)),
    61: needs(lambda who, req: None if all(who.can(READ, TOPIC, t.name) for t in req.topics) else TOPIC_DENIED),
    65: _describe_transactions,
    66: _filtered("transaction_states", lambda who, s: who.can(DESCRIBE, TXN_ID, s.transactional_id)),
    68: needs(on_group(READ)),
    60: with_operations(_anyone, cluster_ops),  # DescribeCluster: anyone, its bits the principal's
    69: with_operations(needs(lambda who, req: None if all(who.can(DESCRIBE, GROUP, g) for g in req.group_ids)
                              else GROUP_DENIED), group_ops),
    74: needs(on_cluster(Operation.DESCRIBE_CONFIGS)),
    75: with_operations(per_topic(DESCRIBE, "topics", "topics", topic_partitions_denied),
                        topic_ops),
    88: needs(on_group(READ)),
    89: needs(lambda who, req: None if all(who.can(DESCRIBE, GROUP, g) for g in req.group_ids) else GROUP_DENIED),
    # Share groups (KIP-932): READ on the group (topic-level READ of ShareFetch is not checked yet).
    76: needs(on_group(READ)),
    77: needs(lambda who, req: None if all(who.can(DESCRIBE, GROUP, g) for g in req.group_ids) else GROUP_DENIED),
    78: needs(on_group(READ)),
    79: needs(on_group(READ)),
    90: needs(lambda who, req: None if all(who.can(DESCRIBE, GROUP, g.group_id) for g in req.groups) else GROUP_DENIED),
    91: needs(on_group(READ)),
    92: needs(on_group(Operation.DELETE)),
}
