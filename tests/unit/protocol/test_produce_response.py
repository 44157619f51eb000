"""The Produce response writer gives the same bytes as downgrading the canonical response and
encoding it with kio, for every version served and any response minikafka can give."""

from __future__ import annotations

import datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kio.schema.errors import ErrorCode
from kio.schema.produce.v12.response import (
    BatchIndexAndErrorMessage,
    LeaderIdAndEpoch,
    NodeEndpoint,
    PartitionProduceResponse,
    ProduceResponse,
    TopicProduceResponse,
)
from kio.schema.produce.v13.response import BatchIndexAndErrorMessage as BatchIndexAndErrorMessageById
from kio.schema.produce.v13.response import PartitionProduceResponse as PartitionProduceResponseById
from kio.schema.produce.v13.response import ProduceResponse as ProduceResponseById
from kio.schema.produce.v13.response import TopicProduceResponse as TopicProduceResponseById
from kio.static.primitive import i32, i32Timedelta, i64

from direct_writers import assert_writes_like_kio

from minikafka.protocol.produce_response import FIRST_BY_ID, MAX_VERSION, MIN_VERSION, encode_produce_response
from minikafka.protocol.types import ZERO_MS

pytestmark = pytest.mark.unit

text = st.text(min_size=0, max_size=40)
times = st.one_of(st.none(), st.integers(0, 4_102_444_800_000).map(
    lambda ms: datetime.datetime.fromtimestamp(ms / 1000, tz=datetime.UTC)))
partitions = st.builds(
    PartitionProduceResponse,
    index=st.integers(0, 2**31 - 1).map(i32),
    error_code=st.sampled_from([ErrorCode.none, ErrorCode.corrupt_message, ErrorCode.invalid_record,
                                ErrorCode.not_leader_or_follower, ErrorCode.duplicate_sequence_number]),
    base_offset=st.integers(-1, 2**63 - 1).map(i64),
    log_append_time=times,
    log_start_offset=st.integers(-1, 2**63 - 1).map(i64),
    record_errors=st.lists(st.builds(BatchIndexAndErrorMessage, batch_index=st.integers(0, 1000).map(i32),
                                     batch_index_error_message=st.one_of(st.none(), text)), max_size=3).map(tuple),
    error_message=st.one_of(st.none(), text),
)
# ZERO_MS itself, as handlers answer, and other values: one partition's answer without a throttle
# time is written by a shortcut (_one_partition).
throttles = st.one_of(st.just(ZERO_MS), st.integers(0, 100_000).map(
    lambda n: i32Timedelta.parse(datetime.timedelta(milliseconds=n))))
responses = st.builds(
    ProduceResponse,
    responses=st.lists(st.builds(TopicProduceResponse, name=st.text(min_size=1, max_size=30),
                                 partition_responses=st.lists(partitions, max_size=4).map(tuple)),
                       max_size=4).map(tuple),
    throttle_time=throttles,
)
one_partition = st.builds(
    ProduceResponse,
    responses=st.builds(TopicProduceResponse, name=st.text(min_size=1, max_size=30),
                        partition_responses=st.tuples(partitions)).map(lambda t: (t,)),
    throttle_time=throttles,
)


partitions_by_id = partitions.map(lambda p: PartitionProduceResponseById(
    index=p.index, error_code=p.error_code, base_offset=p.base_offset, log_append_time=p.log_append_time,
    log_start_offset=p.log_start_offset, error_message=p.error_message, record_errors=tuple(
        BatchIndexAndErrorMessageById(batch_index=e.batch_index, batch_index_error_message=e.batch_index_error_message)
        for e in p.record_errors)))
responses_by_id = st.builds(  # v13: topics named by id (the topic-id door's answer); None is the zero id
    ProduceResponseById,
    responses=st.lists(st.builds(TopicProduceResponseById, topic_id=st.one_of(st.none(), st.uuids()),
                                 partition_responses=st.lists(partitions_by_id, max_size=4).map(tuple)),
                       max_size=4).map(tuple),
    throttle_time=st.integers(0, 100_000).map(lambda n: i32Timedelta.parse(datetime.timedelta(milliseconds=n))),
)


@settings(max_examples=300, deadline=None)
@given(response=responses, version=st.integers(MIN_VERSION, FIRST_BY_ID - 1), correlation_id=st.integers(0, 2**31 - 1))
def test_same_bytes_as_the_generic_writer(response: ProduceResponse, version: int, correlation_id: int) -> None:
    assert_writes_like_kio(0, encode_produce_response, version, correlation_id, response)


@settings(max_examples=300, deadline=None)
@given(response=one_partition, version=st.integers(MIN_VERSION, FIRST_BY_ID - 1),
       correlation_id=st.integers(0, 2**31 - 1))
def test_one_partition_same_bytes_as_the_generic_writer(response: ProduceResponse, version: int,
                                                        correlation_id: int) -> None:
    assert_writes_like_kio(0, encode_produce_response, version, correlation_id, response)


@settings(max_examples=200, deadline=None)
@given(response=responses_by_id, correlation_id=st.integers(0, 2**31 - 1))
def test_same_bytes_as_the_generic_writer_by_topic_id(response: ProduceResponseById, correlation_id: int) -> None:
    for version in range(FIRST_BY_ID, MAX_VERSION + 1):
        assert_writes_like_kio(0, encode_produce_response, version, correlation_id, response)


def test_tagged_fields_take_the_generic_path() -> None:
    part = PartitionProduceResponse(index=i32(0), error_code=ErrorCode.not_leader_or_follower, base_offset=i64(-1),
                                    log_append_time=None, log_start_offset=i64(-1), record_errors=(),
                                    error_message=None,
                                    current_leader=LeaderIdAndEpoch(leader_id=i32(1), leader_epoch=i32(0)))
    resp = ProduceResponse(responses=(TopicProduceResponse(name="t", partition_responses=(part,)),),
                           throttle_time=i32Timedelta.parse(datetime.timedelta(0)))
    assert encode_produce_response(10, 7, resp) is None
    with_endpoints = ProduceResponse(responses=(), throttle_time=i32Timedelta.parse(datetime.timedelta(0)),
                                     node_endpoints=(NodeEndpoint(node_id=i32(1), host="h", port=i32(1), rack=None),))
    assert encode_produce_response(11, 7, with_endpoints) is None
    assert encode_produce_response(2, 7, resp) is None  # below the versions served
