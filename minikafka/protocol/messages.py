"""The one kio shape per API that handlers use: the highest version we serve.

A unit test checks every alias here against protocol.versions.SUPPORTED, so raising a maximum
version there without updating the import here fails loudly.
"""

# ruff: noqa: F401
from kio.schema.api_versions.v4.response import ApiVersion, ApiVersionsResponse
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

CANONICAL = {
    0: ProduceResponse,
    1: FetchResponse,
    2: ListOffsetsResponse,
    3: MetadataResponse,
    18: ApiVersionsResponse,
    22: InitProducerIdResponse,
    19: CreateTopicsResponse,
    20: DeleteTopicsResponse,
    23: OffsetForLeaderEpochResponse,
    32: DescribeConfigsResponse,
    37: CreatePartitionsResponse,
    60: DescribeClusterResponse,
}
