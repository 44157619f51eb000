"""One module per Kafka API; default_handlers() is the explicit list the registry is built from."""

from __future__ import annotations

from typing import Any

from minikafka.broker.dispatch import Handler

# transaction coordinator APIs (issue 5)
from minikafka.broker.handlers.add_offsets_to_txn import AddOffsetsToTxnHandler
from minikafka.broker.handlers.add_partitions_to_txn import AddPartitionsToTxnHandler
from minikafka.broker.handlers.api_versions import ApiVersionsHandler
from minikafka.broker.handlers.create_partitions import CreatePartitionsHandler
from minikafka.broker.handlers.create_topics import CreateTopicsHandler

# group coordinator APIs (issue 3)
from minikafka.broker.handlers.delete_groups import DeleteGroupsHandler
from minikafka.broker.handlers.delete_topics import DeleteTopicsHandler
from minikafka.broker.handlers.describe_client_quotas import DescribeClientQuotasHandler
from minikafka.broker.handlers.describe_cluster import DescribeClusterHandler
from minikafka.broker.handlers.describe_configs import DescribeConfigsHandler
from minikafka.broker.handlers.describe_groups import DescribeGroupsHandler
from minikafka.broker.handlers.describe_producers import DescribeProducersHandler
from minikafka.broker.handlers.describe_transactions import DescribeTransactionsHandler
from minikafka.broker.handlers.describe_user_scram_credentials import DescribeUserScramCredentialsHandler
from minikafka.broker.handlers.end_txn import EndTxnHandler
from minikafka.broker.handlers.fetch import FetchHandler
from minikafka.broker.handlers.incremental_alter_configs import IncrementalAlterConfigsHandler
from minikafka.broker.handlers.find_coordinator import KEY_TYPE_GROUP, KEY_TYPE_TRANSACTION, FindCoordinatorHandler
from minikafka.broker.handlers.heartbeat import HeartbeatHandler
from minikafka.broker.handlers.init_producer_id import InitProducerIdHandler
from minikafka.broker.handlers.join_group import JoinGroupHandler
from minikafka.broker.handlers.leave_group import LeaveGroupHandler
from minikafka.broker.handlers.list_groups import ListGroupsHandler
from minikafka.broker.handlers.list_offsets import ListOffsetsHandler
from minikafka.broker.handlers.list_transactions import ListTransactionsHandler
from minikafka.broker.handlers.metadata import MetadataHandler
from minikafka.broker.handlers.offset_commit import OffsetCommitHandler
from minikafka.broker.handlers.offset_delete import OffsetDeleteHandler
from minikafka.broker.handlers.offset_fetch import OffsetFetchHandler
from minikafka.broker.handlers.offset_for_leader_epoch import OffsetForLeaderEpochHandler
from minikafka.broker.handlers.produce import ProduceHandler
from minikafka.broker.handlers.sync_group import SyncGroupHandler
from minikafka.broker.handlers.txn_offset_commit import TxnOffsetCommitHandler
from minikafka.broker.handlers.write_txn_markers import WriteTxnMarkersHandler
from minikafka.broker.handlers.alter_client_quotas import AlterClientQuotasHandler
from minikafka.broker.handlers.alter_configs import AlterConfigsHandler
from minikafka.broker.handlers.alter_partition_reassignments import AlterPartitionReassignmentsHandler
from minikafka.broker.handlers.alter_user_scram_credentials import AlterUserScramCredentialsHandler
from minikafka.broker.handlers.create_acls import CreateAclsHandler
from minikafka.broker.handlers.delete_acls import DeleteAclsHandler
from minikafka.broker.handlers.delete_records import DeleteRecordsHandler
from minikafka.broker.handlers.describe_acls import DescribeAclsHandler
from minikafka.broker.handlers.describe_log_dirs import DescribeLogDirsHandler
from minikafka.broker.handlers.elect_leaders import ElectLeadersHandler
from minikafka.broker.handlers.list_partition_reassignments import ListPartitionReassignmentsHandler
from minikafka.broker.services import BrokerServices


def default_handlers(svc: BrokerServices) -> list[Handler]:
    return [
        ProduceHandler(svc),
        FetchHandler(svc),
        ListOffsetsHandler(svc),
        MetadataHandler(svc),
        ApiVersionsHandler(svc),
        CreateTopicsHandler(svc),
        DeleteTopicsHandler(svc),
        OffsetForLeaderEpochHandler(svc),
        DescribeConfigsHandler(svc),
        CreatePartitionsHandler(svc),
        DescribeClusterHandler(svc),
        InitProducerIdHandler(svc),
    ] + admin_handlers(svc) + group_handlers(svc) + txn_handlers(svc)


def admin_handlers(svc: BrokerServices) -> list[Handler]:
    """The admin surface around the core (issue 16): Kafka's answers on a single node without an
    authorizer."""
    return [
        DeleteRecordsHandler(svc),
        DescribeAclsHandler(svc),
        CreateAclsHandler(svc),
        DeleteAclsHandler(svc),
        DescribeLogDirsHandler(svc),
        ElectLeadersHandler(svc),
        AlterPartitionReassignmentsHandler(svc),
        ListPartitionReassignmentsHandler(svc),
        IncrementalAlterConfigsHandler(svc),
        AlterConfigsHandler(svc),
        DescribeClientQuotasHandler(svc),
        AlterClientQuotasHandler(svc),
        DescribeUserScramCredentialsHandler(svc),
        AlterUserScramCredentialsHandler(svc),
    ]


def txn_handlers(svc: BrokerServices) -> list[Handler]:
    return [
        AddPartitionsToTxnHandler(svc),
        AddOffsetsToTxnHandler(svc),
        EndTxnHandler(svc),
        WriteTxnMarkersHandler(svc),
        TxnOffsetCommitHandler(svc),
        DescribeProducersHandler(svc),
        DescribeTransactionsHandler(svc),
        ListTransactionsHandler(svc),
    ]


def _coordinator_lookups(svc: BrokerServices) -> dict[int, Any]:
    """FindCoordinator key types this node serves -> how to make the coordinator's topic exist."""
    out: dict[int, Any] = {}
    g = getattr(svc, "groups", None)
    if g is not None:
        out[KEY_TYPE_GROUP] = g.ensure_offsets_topic
    t = getattr(svc, "txn_topic", None)
    if t is not None:
        out[KEY_TYPE_TRANSACTION] = t.ensure_created
    return out


def group_handlers(svc: BrokerServices) -> list[Handler]:
    """The classic group coordinator's APIs (app.py sets svc.groups before building the registry;
    tests that only derive the advertised versions pass svc=None)."""
    g = getattr(svc, "groups", None)
    return [
        FindCoordinatorHandler(svc, _coordinator_lookups(svc)),
        JoinGroupHandler(svc, g),
        SyncGroupHandler(svc, g),
        HeartbeatHandler(svc, g),
        LeaveGroupHandler(svc, g),
        OffsetCommitHandler(svc, g),
        OffsetFetchHandler(svc, g),
        ListGroupsHandler(svc, g),
        DescribeGroupsHandler(svc, g),
        DeleteGroupsHandler(svc, g),
        OffsetDeleteHandler(svc, g),
    ]
