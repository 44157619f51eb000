"""The Metadata response writer gives the same bytes as downgrading the canonical response and
encoding it with kio, for every version served and any response minikafka can give, including
when a partition list's encoding comes from its cache."""

from __future__ import annotations

import datetime
import uuid

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kio.schema.errors import ErrorCode
from kio.schema.metadata.v13.response import (
    MetadataResponse,
    MetadataResponseBroker,
    MetadataResponsePartition,
    MetadataResponseTopic,
)
from kio.static.primitive import i32, i32Timedelta

from direct_writers import assert_writes_like_kio

from minikafka.protocol import versions
from minikafka.protocol.metadata_response import MAX_VERSION, MIN_VERSION, encode_metadata_response

pytestmark = pytest.mark.unit

int32 = st.integers(-(2**31), 2**31 - 1).map(i32)
nodes = st.lists(st.integers(0, 5).map(i32), max_size=3).map(tuple)
partitions = st.builds(
    MetadataResponsePartition,
    error_code=st.sampled_from([ErrorCode.none, ErrorCode.leader_not_available]),
    partition_index=st.integers(0, 2**31 - 1).map(i32), leader_id=int32, leader_epoch=int32,
    replica_nodes=nodes, isr_nodes=nodes, offline_replicas=nodes,
)
# the same few tuples recur, as the handler's cached partition lists do
shared_lists = st.sampled_from([tuple(MetadataResponsePartition(
    error_code=ErrorCode.none, partition_index=i32(p), leader_id=i32(1), leader_epoch=i32(0),
    replica_nodes=(i32(1),), isr_nodes=(i32(1),), offline_replicas=()) for p in range(n)) for n in (0, 1, 3, 7)])
topics = st.builds(
    MetadataResponseTopic,
    error_code=st.sampled_from([ErrorCode.none, ErrorCode.unknown_topic_or_partition]),
    name=st.text(min_size=1, max_size=30),
    topic_id=st.uuids(),
    is_internal=st.booleans(),
    partitions=st.one_of(shared_lists, st.lists(partitions, max_size=3).map(tuple)),
    topic_authorized_operations=st.sampled_from([-(2**31), 0, 3576]).map(i32),
)
responses = st.builds(
    MetadataResponse,
    throttle_time=st.integers(0, 100_000).map(lambda n: i32Timedelta.parse(datetime.timedelta(milliseconds=n))),
    brokers=st.lists(st.builds(MetadataResponseBroker, node_id=st.integers(0, 9).map(i32),
                               host=st.text(min_size=1, max_size=20), port=st.integers(1, 65535).map(i32),
                               rack=st.one_of(st.none(), st.text(max_size=10))), max_size=2).map(tuple),
    cluster_id=st.one_of(st.none(), st.text(min_size=1, max_size=22)),
    controller_id=st.integers(-1, 9).map(i32),
    topics=st.lists(topics, max_size=4).map(tuple),
    error_code=st.sampled_from([ErrorCode.none, ErrorCode.rebootstrap_required]),
)


@settings(max_examples=400, deadline=None)
@given(response=responses, version=st.integers(MIN_VERSION, MAX_VERSION), correlation_id=st.integers(0, 2**31 - 1))
def test_same_bytes_as_the_generic_writer(response: MetadataResponse, version: int, correlation_id: int) -> None:
    assert_writes_like_kio(3, encode_metadata_response, version, correlation_id, response)
    assert_writes_like_kio(3, encode_metadata_response, version, correlation_id, response)  # from the cache


def test_null_topic_name_below_v12_and_cluster_operations_take_the_generic_path() -> None:
    unnamed = MetadataResponseTopic(error_code=ErrorCode.unknown_topic_id, name=None, topic_id=uuid.uuid4(),
                                    partitions=())
    resp = MetadataResponse(throttle_time=i32Timedelta.parse(datetime.timedelta(0)), brokers=(), topics=(unnamed,),
                            error_code=ErrorCode.none)
    assert encode_metadata_response(11, 1, resp) is None
    assert encode_metadata_response(12, 1, resp) is not None
    v8 = versions.downgrade(resp.__class__(throttle_time=resp.throttle_time, brokers=(), topics=(),
                                            error_code=ErrorCode.none), 8)
    assert encode_metadata_response(8, 1, v8) is None
