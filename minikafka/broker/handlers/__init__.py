"""One module per Kafka API; default_handlers() is the explicit list the registry is built from.

Each entry names its API key, module and class, and the module is imported on the API's first
request (LazyHandler): start-up imports only what serving needs, so a broker answers its first
ApiVersions sooner (issue 17; 40 handler modules cost ~30 ms of imports). A unit test imports
every entry and checks that the names and keys agree.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from types import ModuleType
from typing import Any

from minikafka.broker import authorization, topic_ids
from minikafka.broker.context import RequestContext
from minikafka.broker.dispatch import Handler
from minikafka.broker.services import BrokerServices

# How a handler class is built: from the services alone, with the group coordinator too, or
# (FindCoordinator) with the coordinators this node serves.
SVC, GROUPS, COORDINATORS = "svc", "groups", "coordinators"

# (api key, module, class, how it is built), by part of the broker.
CORE = (
    (0, "produce", "ProduceHandler", SVC),
    (1, "fetch", "FetchHandler", SVC),
    (2, "list_offsets", "ListOffsetsHandler", SVC),
    (3, "metadata", "MetadataHandler", SVC),
    (17, "sasl_handshake", "SaslHandshakeHandler", SVC),
    (18, "api_versions", "ApiVersionsHandler", SVC),
    (19, "create_topics", "CreateTopicsHandler", SVC),
    (20, "delete_topics", "DeleteTopicsHandler", SVC),
    (23, "offset_for_leader_epoch", "OffsetForLeaderEpochHandler", SVC),
    (32, "describe_configs", "DescribeConfigsHandler", SVC),
    (36, "sasl_authenticate", "SaslAuthenticateHandler", SVC),
    (37, "create_partitions", "CreatePartitionsHandler", SVC),
    (60, "describe_cluster", "DescribeClusterHandler", SVC),
    (22, "init_producer_id", "InitProducerIdHandler", SVC),
)
# The admin surface around the core (issue 16): Kafka's answers on a single node without an
# authorizer.
ADMIN = (
    (21, "delete_records", "DeleteRecordsHandler", SVC),
    (29, "describe_acls", "DescribeAclsHandler", SVC),
    (30, "create_acls", "CreateAclsHandler", SVC),
    (31, "delete_acls", "DeleteAclsHandler", SVC),
    (35, "describe_log_dirs", "DescribeLogDirsHandler", SVC),
    (43, "elect_leaders", "ElectLeadersHandler", SVC),
    (45, "alter_partition_reassignments", "AlterPartitionReassignmentsHandler", SVC),
    (46, "list_partition_reassignments", "ListPartitionReassignmentsHandler", SVC),
    (44, "incremental_alter_configs", "IncrementalAlterConfigsHandler", SVC),
    (33, "alter_configs", "AlterConfigsHandler", SVC),
    (48, "describe_client_quotas", "DescribeClientQuotasHandler", SVC),
    (49, "alter_client_quotas", "AlterClientQuotasHandler", SVC),
    (50, "describe_user_scram_credentials", "DescribeUserScramCredentialsHandler", SVC),
    (51, "alter_user_scram_credentials", "AlterUserScramCredentialsHandler", SVC),
    (74, "list_config_resources", "ListConfigResourcesHandler", SVC),
    (75, "describe_topic_partitions", "DescribeTopicPartitionsHandler", SVC),
    (57, "update_features", "UpdateFeaturesHandler", SVC),
)
# The group coordinator's APIs, classic and KIP-848 (svc.groups starts the coordinator at the first).
GROUP = (
    (10, "find_coordinator", "FindCoordinatorHandler", COORDINATORS),
    (11, "join_group", "JoinGroupHandler", GROUPS),
    (14, "sync_group", "SyncGroupHandler", GROUPS),
    (12, "heartbeat", "HeartbeatHandler", GROUPS),
    (13, "leave_group", "LeaveGroupHandler", GROUPS),
    (8, "offset_commit", "OffsetCommitHandler", GROUPS),
    (9, "offset_fetch", "OffsetFetchHandler", GROUPS),
    (16, "list_groups", "ListGroupsHandler", GROUPS),
    (15, "describe_groups", "DescribeGroupsHandler", GROUPS),
    (42, "delete_groups", "DeleteGroupsHandler", GROUPS),
    (47, "offset_delete", "OffsetDeleteHandler", GROUPS),
    (68, "consumer_group_heartbeat", "ConsumerGroupHeartbeatHandler", GROUPS),
    (69, "consumer_group_describe", "ConsumerGroupDescribeHandler", GROUPS),
    (88, "streams_group_heartbeat", "StreamsGroupHeartbeatHandler", GROUPS),
    (89, "streams_group_describe", "StreamsGroupDescribeHandler", GROUPS),
    (76, "share_group_heartbeat", "ShareGroupHeartbeatHandler", GROUPS),
    (77, "share_group_describe", "ShareGroupDescribeHandler", GROUPS),
    (78, "share_fetch", "ShareFetchHandler", SVC),
    (79, "share_acknowledge", "ShareAcknowledgeHandler", SVC),
    (90, "describe_share_group_offsets", "DescribeShareGroupOffsetsHandler", GROUPS),
    (91, "alter_share_group_offsets", "AlterShareGroupOffsetsHandler", GROUPS),
    (92, "delete_share_group_offsets", "DeleteShareGroupOffsetsHandler", GROUPS),
)
# The transaction coordinator's APIs (issue 5) and the transaction tools' (KIP-664).
TXN = (
    (24, "add_partitions_to_txn", "AddPartitionsToTxnHandler", SVC),
    (25, "add_offsets_to_txn", "AddOffsetsToTxnHandler", SVC),
    (26, "end_txn", "EndTxnHandler", SVC),
    (27, "write_txn_markers", "WriteTxnMarkersHandler", SVC),
    (28, "txn_offset_commit", "TxnOffsetCommitHandler", SVC),
    (61, "describe_producers", "DescribeProducersHandler", SVC),
    (65, "describe_transactions", "DescribeTransactionsHandler", SVC),
    (66, "list_transactions", "ListTransactionsHandler", SVC),
)
HANDLERS = CORE + ADMIN + GROUP + TXN


class LazyHandler:
    """A handler whose module is imported when its API is first asked for."""

    __slots__ = ("api_key", "module", "_build", "_handler")

    def __init__(self, api_key: int, module: str, build: Callable[[ModuleType], Handler]) -> None:
        self.api_key = api_key
        self.module = module
        self._build = build
        self._handler: Handler | None = None

    def load(self) -> Handler:
        if self._handler is None:
            self._handler = self._build(importlib.import_module(f"{__name__}.{self.module}"))
        return self._handler

    def __call__(self, ctx: RequestContext, req: Any) -> Any:
        return self.load()(ctx, req)

    def __getattr__(self, name: str) -> Any:  # error_response and the like, from the handler itself
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self.load(), name)


def default_handlers(svc: BrokerServices) -> list[Handler]:
    """Every API this node serves. Tests that only derive the advertised versions pass svc=None.
    An API whose newer versions name topics by id is served through the topic-id door."""
    logs = getattr(svc, "logs", None)
    acls = getattr(svc, "acls", None)
    return [topic_ids.door(key, authorization.door(key, LazyHandler(key, module, _builder(svc, cls, how)), acls), logs)
            for key, module, cls, how in HANDLERS]


def _builder(svc: BrokerServices, cls: str, how: str) -> Callable[[ModuleType], Handler]:
    def build(m: ModuleType) -> Handler:
        handler_class = getattr(m, cls)
        if how == GROUPS:
            return handler_class(svc, getattr(svc, "groups", None))
        if how == COORDINATORS:
            return handler_class(svc, _coordinator_lookups(svc, m))
        return handler_class(svc)
    return build


def _coordinator_lookups(svc: BrokerServices, find_coordinator: ModuleType) -> dict[int, Any]:
    """FindCoordinator key types this node serves -> how to make the coordinator's topic exist."""
    out: dict[int, Any] = {}
    if svc is not None and svc.start_groups is not None:
        # Looked up at the first group key, not here: a transactional producer's FindCoordinator
        # does not start the group coordinator.
        out[find_coordinator.KEY_TYPE_GROUP] = lambda now_ms: svc.groups.ensure_offsets_topic(now_ms)
    t = getattr(svc, "txn_topic", None)
    if t is not None:
        out[find_coordinator.KEY_TYPE_TRANSACTION] = t.ensure_created
    return out
