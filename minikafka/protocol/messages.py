"""The one kio shape per API that handlers use: the highest version we serve.

A unit test checks every alias here against protocol.versions.SUPPORTED, so raising a maximum
version there without updating the import here fails loudly.
"""

# ruff: noqa: F401
from kio.schema.add_offsets_to_txn.v4.response import AddOffsetsToTxnResponse
from kio.schema.add_partitions_to_txn.v3.response import (
    AddPartitionsToTxnPartitionResult,
    AddPartitionsToTxnResponse,
    AddPartitionsToTxnTopicResult,
)
from kio.schema.api_versions.v4.response import ApiVersion, ApiVersionsResponse
from kio.schema.describe_producers.v0.response import DescribeProducersResponse, ProducerState
from kio.schema.describe_producers.v0.response import PartitionResponse as DescribeProducersPartitionResponse
from kio.schema.describe_producers.v0.response import TopicResponse as DescribeProducersTopicResponse
from kio.schema.describe_transactions.v0.response import DescribeTransactionsResponse
from kio.schema.describe_transactions.v0.response import TopicData as DescribedTransactionTopic
from kio.schema.describe_transactions.v0.response import TransactionState as DescribedTransaction
from kio.schema.end_txn.v4.response import EndTxnResponse
from kio.schema.list_transactions.v1.response import ListTransactionsResponse
from kio.schema.list_transactions.v1.response import TransactionState as ListedTransaction
from kio.schema.txn_offset_commit.v4.response import (
    TxnOffsetCommitResponse,
    TxnOffsetCommitResponsePartition,
    TxnOffsetCommitResponseTopic,
)
from kio.schema.write_txn_markers.v1.response import (
    WritableTxnMarkerPartitionResult,
    WritableTxnMarkerResult,
    WritableTxnMarkerTopicResult,
    WriteTxnMarkersResponse,
)
from kio.schema.create_partitions.v3.response import CreatePartitionsResponse, CreatePartitionsTopicResult
from kio.schema.create_topics.v7.response import CreatableTopicConfigs, CreatableTopicResult, CreateTopicsResponse
from kio.schema.delete_topics.v6.response import DeletableTopicResult, DeleteTopicsResponse
from kio.schema.describe_cluster.v1.response import DescribeClusterBroker, DescribeClusterResponse
from kio.schema.describe_configs.v4.response import (
    DescribeConfigsResourceResult,
    DescribeConfigsResponse,
    DescribeConfigsResult,
    DescribeConfigsSynonym,
)
from kio.schema.fetch.v12.response import AbortedTransaction, FetchableTopicResponse, FetchResponse, PartitionData
from kio.schema.init_producer_id.v5.response import InitProducerIdResponse
from kio.schema.list_offsets.v7.response import (
    ListOffsetsPartitionResponse,
    ListOffsetsResponse,
    ListOffsetsTopicResponse,
)
from kio.schema.metadata.v12.response import (
    MetadataResponse,
    MetadataResponseBroker,
    MetadataResponsePartition,
    MetadataResponseTopic,
)
from kio.schema.offset_for_leader_epoch.v4.response import (
    EpochEndOffset,
    OffsetForLeaderEpochResponse,
    OffsetForLeaderTopicResult,
)
from kio.schema.produce.v11.response import PartitionProduceResponse, ProduceResponse, TopicProduceResponse
# group coordinator (issue 3)
from kio.schema.delete_groups.v2.response import DeletableGroupResult, DeleteGroupsResponse
from kio.schema.describe_groups.v5.response import DescribedGroup, DescribedGroupMember, DescribeGroupsResponse
from kio.schema.find_coordinator.v4.response import Coordinator, FindCoordinatorResponse
from kio.schema.heartbeat.v4.response import HeartbeatResponse
from kio.schema.join_group.v9.response import JoinGroupResponse, JoinGroupResponseMember
from kio.schema.leave_group.v5.response import LeaveGroupResponse, MemberResponse
from kio.schema.list_groups.v5.response import ListedGroup, ListGroupsResponse
from kio.schema.offset_commit.v9.response import (
    OffsetCommitResponse,
    OffsetCommitResponsePartition,
    OffsetCommitResponseTopic,
)
from kio.schema.offset_delete.v0.response import (
    OffsetDeleteResponse,
    OffsetDeleteResponsePartition,
    OffsetDeleteResponseTopic,
)
from kio.schema.offset_fetch.v7.response import (
    OffsetFetchResponse,
    OffsetFetchResponsePartition,
    OffsetFetchResponseTopic,
)
from kio.schema.sync_group.v5.response import SyncGroupResponse

CANONICAL = {
    0: ProduceResponse,
    1: FetchResponse,
    2: ListOffsetsResponse,
    3: MetadataResponse,
    18: ApiVersionsResponse,
    22: InitProducerIdResponse,
    24: AddPartitionsToTxnResponse,
    25: AddOffsetsToTxnResponse,
    26: EndTxnResponse,
    27: WriteTxnMarkersResponse,
    28: TxnOffsetCommitResponse,
    61: DescribeProducersResponse,
    65: DescribeTransactionsResponse,
    66: ListTransactionsResponse,
    19: CreateTopicsResponse,
    20: DeleteTopicsResponse,
    23: OffsetForLeaderEpochResponse,
    32: DescribeConfigsResponse,
    37: CreatePartitionsResponse,
    60: DescribeClusterResponse,
    8: OffsetCommitResponse,
    9: OffsetFetchResponse,
    10: FindCoordinatorResponse,
    11: JoinGroupResponse,
    12: HeartbeatResponse,
    13: LeaveGroupResponse,
    14: SyncGroupResponse,
    15: DescribeGroupsResponse,
    16: ListGroupsResponse,
    42: DeleteGroupsResponse,
    47: OffsetDeleteResponse,
}
