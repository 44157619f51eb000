"""The one kio shape per API that handlers use: the highest version we serve.

Loaded lazily (PEP 562): a kio schema module is imported the first time a handler uses one of its
classes, so the broker starts without importing every API it serves. A unit test checks every
alias against protocol.versions.SUPPORTED, so raising a maximum version there without updating
the table here fails loudly.
"""

from __future__ import annotations

import importlib
from typing import Any

# alias -> (kio module, class name)
_CLASSES: dict[str, tuple[str, str]] = {
    "AbortedTransaction": ("kio.schema.fetch.v12.response", "AbortedTransaction"),
    "AclCreationResult": ("kio.schema.create_acls.v3.response", "AclCreationResult"),
    "AddOffsetsToTxnResponse": ("kio.schema.add_offsets_to_txn.v4.response", "AddOffsetsToTxnResponse"),
    "AddPartitionsToTxnPartitionResult": ("kio.schema.add_partitions_to_txn.v3.response", "AddPartitionsToTxnPartitionResult"),
    "AddPartitionsToTxnResponse": ("kio.schema.add_partitions_to_txn.v3.response", "AddPartitionsToTxnResponse"),
    "AddPartitionsToTxnTopicResult": ("kio.schema.add_partitions_to_txn.v3.response", "AddPartitionsToTxnTopicResult"),
    "AlterConfigsResourceResponse": ("kio.schema.alter_configs.v2.response", "AlterConfigsResourceResponse"),
    "AlterConfigsResponse": ("kio.schema.alter_configs.v2.response", "AlterConfigsResponse"),
    "AlterPartitionReassignmentsResponse": ("kio.schema.alter_partition_reassignments.v1.response", "AlterPartitionReassignmentsResponse"),
    "ApiVersion": ("kio.schema.api_versions.v4.response", "ApiVersion"),
    "ApiVersionsResponse": ("kio.schema.api_versions.v4.response", "ApiVersionsResponse"),
    "BatchIndexAndErrorMessage": ("kio.schema.produce.v11.response", "BatchIndexAndErrorMessage"),
    "Coordinator": ("kio.schema.find_coordinator.v4.response", "Coordinator"),
    "CreatableTopicConfigs": ("kio.schema.create_topics.v7.response", "CreatableTopicConfigs"),
    "CreatableTopicResult": ("kio.schema.create_topics.v7.response", "CreatableTopicResult"),
    "CreateAclsResponse": ("kio.schema.create_acls.v3.response", "CreateAclsResponse"),
    "CreatePartitionsResponse": ("kio.schema.create_partitions.v3.response", "CreatePartitionsResponse"),
    "CreatePartitionsTopicResult": ("kio.schema.create_partitions.v3.response", "CreatePartitionsTopicResult"),
    "CreateTopicsResponse": ("kio.schema.create_topics.v7.response", "CreateTopicsResponse"),
    "DeletableGroupResult": ("kio.schema.delete_groups.v2.response", "DeletableGroupResult"),
    "DeletableTopicResult": ("kio.schema.delete_topics.v6.response", "DeletableTopicResult"),
    "DeleteAclsFilterResult": ("kio.schema.delete_acls.v3.response", "DeleteAclsFilterResult"),
    "DeleteAclsResponse": ("kio.schema.delete_acls.v3.response", "DeleteAclsResponse"),
    "DeleteGroupsResponse": ("kio.schema.delete_groups.v2.response", "DeleteGroupsResponse"),
    "DeleteRecordsPartitionResult": ("kio.schema.delete_records.v2.response", "DeleteRecordsPartitionResult"),
    "DeleteRecordsResponse": ("kio.schema.delete_records.v2.response", "DeleteRecordsResponse"),
    "DeleteRecordsTopicResult": ("kio.schema.delete_records.v2.response", "DeleteRecordsTopicResult"),
    "DeleteTopicsResponse": ("kio.schema.delete_topics.v6.response", "DeleteTopicsResponse"),
    "DescribeAclsResponse": ("kio.schema.describe_acls.v3.response", "DescribeAclsResponse"),
    "DescribeClusterBroker": ("kio.schema.describe_cluster.v1.response", "DescribeClusterBroker"),
    "DescribeClusterResponse": ("kio.schema.describe_cluster.v1.response", "DescribeClusterResponse"),
    "DescribeConfigsResourceResult": ("kio.schema.describe_configs.v4.response", "DescribeConfigsResourceResult"),
    "DescribeConfigsResponse": ("kio.schema.describe_configs.v4.response", "DescribeConfigsResponse"),
    "DescribeConfigsResult": ("kio.schema.describe_configs.v4.response", "DescribeConfigsResult"),
    "DescribeConfigsSynonym": ("kio.schema.describe_configs.v4.response", "DescribeConfigsSynonym"),
    "DescribeGroupsResponse": ("kio.schema.describe_groups.v5.response", "DescribeGroupsResponse"),
    "DescribeLogDirsPartition": ("kio.schema.describe_log_dirs.v5.response", "DescribeLogDirsPartition"),
    "DescribeLogDirsResponse": ("kio.schema.describe_log_dirs.v5.response", "DescribeLogDirsResponse"),
    "DescribeLogDirsResult": ("kio.schema.describe_log_dirs.v5.response", "DescribeLogDirsResult"),
    "DescribeLogDirsTopic": ("kio.schema.describe_log_dirs.v5.response", "DescribeLogDirsTopic"),
    "DescribeProducersPartitionResponse": ("kio.schema.describe_producers.v0.response", "PartitionResponse"),
    "DescribeProducersResponse": ("kio.schema.describe_producers.v0.response", "DescribeProducersResponse"),
    "DescribeProducersTopicResponse": ("kio.schema.describe_producers.v0.response", "TopicResponse"),
    "DescribeTransactionsResponse": ("kio.schema.describe_transactions.v0.response", "DescribeTransactionsResponse"),
    "DescribedGroup": ("kio.schema.describe_groups.v5.response", "DescribedGroup"),
    "DescribedGroupMember": ("kio.schema.describe_groups.v5.response", "DescribedGroupMember"),
    "DescribedTransaction": ("kio.schema.describe_transactions.v0.response", "TransactionState"),
    "DescribedTransactionTopic": ("kio.schema.describe_transactions.v0.response", "TopicData"),
    "ElectLeadersPartitionResult": ("kio.schema.elect_leaders.v2.response", "PartitionResult"),
    "ElectLeadersResponse": ("kio.schema.elect_leaders.v2.response", "ElectLeadersResponse"),
    "EndTxnResponse": ("kio.schema.end_txn.v4.response", "EndTxnResponse"),
    "EpochEndOffset": ("kio.schema.offset_for_leader_epoch.v4.response", "EpochEndOffset"),
    "FetchResponse": ("kio.schema.fetch.v12.response", "FetchResponse"),
    "FetchableTopicResponse": ("kio.schema.fetch.v12.response", "FetchableTopicResponse"),
    "FindCoordinatorResponse": ("kio.schema.find_coordinator.v4.response", "FindCoordinatorResponse"),
    "HeartbeatResponse": ("kio.schema.heartbeat.v4.response", "HeartbeatResponse"),
    "IncrementalAlterConfigsResourceResponse": ("kio.schema.incremental_alter_configs.v1.response", "AlterConfigsResourceResponse"),
    "IncrementalAlterConfigsResponse": ("kio.schema.incremental_alter_configs.v1.response", "IncrementalAlterConfigsResponse"),
    "InitProducerIdResponse": ("kio.schema.init_producer_id.v5.response", "InitProducerIdResponse"),
    "JoinGroupResponse": ("kio.schema.join_group.v9.response", "JoinGroupResponse"),
    "JoinGroupResponseMember": ("kio.schema.join_group.v9.response", "JoinGroupResponseMember"),
    "LeaveGroupResponse": ("kio.schema.leave_group.v5.response", "LeaveGroupResponse"),
    "ListGroupsResponse": ("kio.schema.list_groups.v5.response", "ListGroupsResponse"),
    "ListOffsetsPartitionResponse": ("kio.schema.list_offsets.v11.response", "ListOffsetsPartitionResponse"),
    "ListOffsetsResponse": ("kio.schema.list_offsets.v11.response", "ListOffsetsResponse"),
    "ListOffsetsTopicResponse": ("kio.schema.list_offsets.v11.response", "ListOffsetsTopicResponse"),
    "ListPartitionReassignmentsResponse": ("kio.schema.list_partition_reassignments.v0.response", "ListPartitionReassignmentsResponse"),
    "ListTransactionsResponse": ("kio.schema.list_transactions.v1.response", "ListTransactionsResponse"),
    "ListedGroup": ("kio.schema.list_groups.v5.response", "ListedGroup"),
    "ListedTransaction": ("kio.schema.list_transactions.v1.response", "TransactionState"),
    "MemberResponse": ("kio.schema.leave_group.v5.response", "MemberResponse"),
    "MetadataResponse": ("kio.schema.metadata.v12.response", "MetadataResponse"),
    "MetadataResponseBroker": ("kio.schema.metadata.v12.response", "MetadataResponseBroker"),
    "MetadataResponsePartition": ("kio.schema.metadata.v12.response", "MetadataResponsePartition"),
    "MetadataResponseTopic": ("kio.schema.metadata.v12.response", "MetadataResponseTopic"),
    "OffsetCommitResponse": ("kio.schema.offset_commit.v9.response", "OffsetCommitResponse"),
    "OffsetCommitResponsePartition": ("kio.schema.offset_commit.v9.response", "OffsetCommitResponsePartition"),
    "OffsetCommitResponseTopic": ("kio.schema.offset_commit.v9.response", "OffsetCommitResponseTopic"),
    "OffsetDeleteResponse": ("kio.schema.offset_delete.v0.response", "OffsetDeleteResponse"),
    "OffsetDeleteResponsePartition": ("kio.schema.offset_delete.v0.response", "OffsetDeleteResponsePartition"),
    "OffsetDeleteResponseTopic": ("kio.schema.offset_delete.v0.response", "OffsetDeleteResponseTopic"),
    "OffsetFetchResponse": ("kio.schema.offset_fetch.v9.response", "OffsetFetchResponse"),
    "OffsetFetchResponseGroup": ("kio.schema.offset_fetch.v9.response", "OffsetFetchResponseGroup"),
    "OffsetFetchResponsePartition": ("kio.schema.offset_fetch.v9.response", "OffsetFetchResponsePartitions"),
    "OffsetFetchResponseTopic": ("kio.schema.offset_fetch.v9.response", "OffsetFetchResponseTopics"),
    "OffsetForLeaderEpochResponse": ("kio.schema.offset_for_leader_epoch.v4.response", "OffsetForLeaderEpochResponse"),
    "OffsetForLeaderTopicResult": ("kio.schema.offset_for_leader_epoch.v4.response", "OffsetForLeaderTopicResult"),
    "PartitionData": ("kio.schema.fetch.v12.response", "PartitionData"),
    "PartitionProduceResponse": ("kio.schema.produce.v11.response", "PartitionProduceResponse"),
    "ProduceResponse": ("kio.schema.produce.v11.response", "ProduceResponse"),
    "ProducerState": ("kio.schema.describe_producers.v0.response", "ProducerState"),
    "ReassignablePartitionResponse": ("kio.schema.alter_partition_reassignments.v1.response", "ReassignablePartitionResponse"),
    "ReassignableTopicResponse": ("kio.schema.alter_partition_reassignments.v1.response", "ReassignableTopicResponse"),
    "ReplicaElectionResult": ("kio.schema.elect_leaders.v2.response", "ReplicaElectionResult"),
    "SyncGroupResponse": ("kio.schema.sync_group.v5.response", "SyncGroupResponse"),
    "TopicProduceResponse": ("kio.schema.produce.v11.response", "TopicProduceResponse"),
    "TxnOffsetCommitResponse": ("kio.schema.txn_offset_commit.v4.response", "TxnOffsetCommitResponse"),
    "TxnOffsetCommitResponsePartition": ("kio.schema.txn_offset_commit.v4.response", "TxnOffsetCommitResponsePartition"),
    "TxnOffsetCommitResponseTopic": ("kio.schema.txn_offset_commit.v4.response", "TxnOffsetCommitResponseTopic"),
    "WritableTxnMarkerPartitionResult": ("kio.schema.write_txn_markers.v1.response", "WritableTxnMarkerPartitionResult"),
    "WritableTxnMarkerResult": ("kio.schema.write_txn_markers.v1.response", "WritableTxnMarkerResult"),
    "WritableTxnMarkerTopicResult": ("kio.schema.write_txn_markers.v1.response", "WritableTxnMarkerTopicResult"),
    "WriteTxnMarkersResponse": ("kio.schema.write_txn_markers.v1.response", "WriteTxnMarkersResponse"),
}

# api key -> the alias of its canonical response class
CANONICAL_NAMES: dict[int, str] = {
    0: "ProduceResponse",
    1: "FetchResponse",
    2: "ListOffsetsResponse",
    3: "MetadataResponse",
    8: "OffsetCommitResponse",
    9: "OffsetFetchResponse",
    10: "FindCoordinatorResponse",
    11: "JoinGroupResponse",
    12: "HeartbeatResponse",
    13: "LeaveGroupResponse",
    14: "SyncGroupResponse",
    15: "DescribeGroupsResponse",
    16: "ListGroupsResponse",
    18: "ApiVersionsResponse",
    19: "CreateTopicsResponse",
    20: "DeleteTopicsResponse",
    21: "DeleteRecordsResponse",
    22: "InitProducerIdResponse",
    23: "OffsetForLeaderEpochResponse",
    24: "AddPartitionsToTxnResponse",
    25: "AddOffsetsToTxnResponse",
    26: "EndTxnResponse",
    27: "WriteTxnMarkersResponse",
    28: "TxnOffsetCommitResponse",
    29: "DescribeAclsResponse",
    30: "CreateAclsResponse",
    31: "DeleteAclsResponse",
    32: "DescribeConfigsResponse",
    33: "AlterConfigsResponse",
    35: "DescribeLogDirsResponse",
    37: "CreatePartitionsResponse",
    42: "DeleteGroupsResponse",
    43: "ElectLeadersResponse",
    44: "IncrementalAlterConfigsResponse",
    45: "AlterPartitionReassignmentsResponse",
    46: "ListPartitionReassignmentsResponse",
    47: "OffsetDeleteResponse",
    60: "DescribeClusterResponse",
    61: "DescribeProducersResponse",
    65: "DescribeTransactionsResponse",
    66: "ListTransactionsResponse",
}


def __getattr__(name: str) -> Any:
    try:
        module, cls = _CLASSES[name]
    except KeyError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    value = getattr(importlib.import_module(module), cls)
    globals()[name] = value  # later lookups do not come back here
    return value


def canonical() -> dict[int, Any]:
    """api key -> canonical response class (imports them all; for tests)."""
    return {k: __getattr__(v) for k, v in CANONICAL_NAMES.items()}
