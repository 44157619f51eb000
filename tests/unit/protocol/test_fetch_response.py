"""The Fetch response writer gives the same bytes as downgrading the handler's answer and
encoding it with kio, for every version served and any response minikafka can give: v4-v12 from
the by-name (v12) answer, v13-v18 from the by-id (v18) answer the topic-id door makes."""

from __future__ import annotations

import dataclasses
import datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kio.schema.errors import ErrorCode
from kio.schema.fetch.v12.response import (
    AbortedTransaction,
    EpochEndOffset,
    FetchableTopicResponse,
    FetchResponse,
    LeaderIdAndEpoch,
    PartitionData,
)
from kio.schema.fetch.v18.response import AbortedTransaction as AbortedTransactionById
from kio.schema.fetch.v18.response import FetchableTopicResponse as FetchableTopicResponseById
from kio.schema.fetch.v18.response import FetchResponse as FetchResponseById
from kio.schema.fetch.v18.response import PartitionData as PartitionDataById
from kio.static.primitive import i32, i32Timedelta, i64

from direct_writers import assert_writes_like_kio, generic

from minikafka.protocol import codec
from minikafka.protocol.fetch_response import (
    FIRST_BY_ID,
    GATHER_ABOVE,
    MAX_VERSION,
    MIN_VERSION,
    encode_fetch_response,
)
from minikafka.protocol.wire_write import Gathered

pytestmark = pytest.mark.unit

offsets = st.integers(-1, 2**63 - 1).map(i64)
aborted = st.builds(AbortedTransaction, producer_id=offsets, first_offset=offsets)
partitions = st.builds(
    PartitionData,
    partition_index=st.integers(0, 2**31 - 1).map(i32),
    error_code=st.sampled_from([ErrorCode.none, ErrorCode.offset_out_of_range, ErrorCode.corrupt_message,
                                ErrorCode.unknown_topic_or_partition]),
    high_watermark=offsets,
    last_stable_offset=offsets,
    log_start_offset=offsets,
    aborted_transactions=st.one_of(st.none(), st.lists(aborted, max_size=3).map(tuple)),
    preferred_read_replica=st.sampled_from([-1, 0, 1]).map(i32),
    records=st.one_of(st.binary(max_size=300), st.binary(min_size=1, max_size=300).map(memoryview)),
)
responses = st.builds(
    FetchResponse,
    throttle_time=st.integers(0, 100_000).map(lambda n: i32Timedelta.parse(datetime.timedelta(milliseconds=n))),
    error_code=st.sampled_from([ErrorCode.none, ErrorCode.invalid_request]),
    session_id=st.integers(0, 2**31 - 1).map(i32),
    responses=st.lists(st.builds(FetchableTopicResponse, topic=st.text(min_size=1, max_size=30),
                                 partitions=st.lists(partitions, max_size=4).map(tuple)),
                       max_size=3).map(tuple),
)

partitions_by_id = partitions.map(lambda p: PartitionDataById(
    partition_index=p.partition_index, error_code=p.error_code, high_watermark=p.high_watermark,
    last_stable_offset=p.last_stable_offset, log_start_offset=p.log_start_offset,
    aborted_transactions=None if p.aborted_transactions is None else tuple(
        AbortedTransactionById(producer_id=a.producer_id, first_offset=a.first_offset) for a in p.aborted_transactions),
    preferred_read_replica=p.preferred_read_replica, records=p.records))
topic_ids = st.one_of(st.none(), st.uuids())  # kio reads the all-zero id as None
responses_by_id = st.builds(
    FetchResponseById,
    throttle_time=st.integers(0, 100_000).map(lambda n: i32Timedelta.parse(datetime.timedelta(milliseconds=n))),
    error_code=st.sampled_from([ErrorCode.none, ErrorCode.invalid_request]),
    session_id=st.integers(0, 2**31 - 1).map(i32),
    responses=st.lists(st.builds(FetchableTopicResponseById, topic_id=topic_ids,
                                 partitions=st.lists(partitions_by_id, max_size=4).map(tuple)),
                       max_size=3).map(tuple),
)


@settings(max_examples=300, deadline=None)
@given(response=responses, version=st.integers(MIN_VERSION, FIRST_BY_ID - 1), correlation_id=st.integers(0, 2**31 - 1))
def test_same_bytes_as_the_generic_writer(response: FetchResponse, version: int, correlation_id: int) -> None:
    assert_writes_like_kio(1, encode_fetch_response, version, correlation_id, response)


@settings(max_examples=300, deadline=None)
@given(response=responses_by_id, version=st.integers(FIRST_BY_ID, MAX_VERSION),
       correlation_id=st.integers(0, 2**31 - 1))
def test_same_bytes_as_the_generic_writer_by_topic_id(response: FetchResponseById, version: int,
                                                      correlation_id: int) -> None:
    assert_writes_like_kio(1, encode_fetch_response, version, correlation_id, response)


def test_records_given_as_a_view_of_a_larger_read_are_written_as_the_view() -> None:
    """A segment read that ends inside a batch answers a memoryview slice of its buffer: only
    the slice goes into the frame."""
    buffer = bytearray(b"batch" * 1000)
    records = memoryview(buffer)[:4000]
    part = PartitionData(partition_index=i32(0), error_code=ErrorCode.none, high_watermark=i64(9),
                         last_stable_offset=i64(9), log_start_offset=i64(0), aborted_transactions=(),
                         preferred_read_replica=i32(-1), records=records)
    resp = FetchResponse(throttle_time=i32Timedelta.parse(datetime.timedelta(0)), error_code=ErrorCode.none,
                         session_id=i32(0), responses=(FetchableTopicResponse(topic="t", partitions=(part,)),))
    frame = encode_fetch_response(12, 7, resp)
    assert frame is not None
    assert frame == generic(1, 12, 7, dataclasses.replace(resp, responses=(FetchableTopicResponse(
        topic="t", partitions=(dataclasses.replace(part, records=bytes(buffer[:4000])),)),)))
    assert int.from_bytes(frame[:4], "big", signed=True) == len(frame) - 4


def test_tagged_fields_take_the_generic_path() -> None:
    diverging = PartitionData(partition_index=i32(0), error_code=ErrorCode.none, high_watermark=i64(9),
                              last_stable_offset=i64(9), log_start_offset=i64(0), aborted_transactions=None,
                              preferred_read_replica=i32(-1), records=b"",
                              diverging_epoch=EpochEndOffset(epoch=i32(3), end_offset=i64(5)))
    leader = PartitionData(partition_index=i32(0), error_code=ErrorCode.not_leader_or_follower,
                           high_watermark=i64(9), last_stable_offset=i64(9), log_start_offset=i64(0),
                           aborted_transactions=None, preferred_read_replica=i32(-1), records=b"",
                           current_leader=LeaderIdAndEpoch(leader_id=i32(1), leader_epoch=i32(0)))
    for part in (diverging, leader):
        resp = FetchResponse(throttle_time=i32Timedelta.parse(datetime.timedelta(0)), error_code=ErrorCode.none,
                             session_id=i32(0), responses=(FetchableTopicResponse(topic="t", partitions=(part,)),))
        assert encode_fetch_response(12, 7, resp) is None
        assert codec.encode_answer(1, 12, 7, resp) == generic(1, 12, 7, resp)
    assert encode_fetch_response(3, 7, resp) is None  # below the versions served


@pytest.mark.parametrize("version", [4, 12])
def test_an_answer_above_the_gather_size_stays_its_parts_with_the_same_bytes(version: int) -> None:
    """A Fetch over many partitions answers up to the client's fetch.max.bytes (50 MB): kept as
    its parts, the records buffers themselves among them (not copies), joined the same as kio's."""
    per_partition = 1_000_000
    reads = [memoryview(bytearray([p % 251]) * (per_partition + 10))[:per_partition] for p in range(6)]
    parts = tuple(PartitionData(partition_index=i32(p), error_code=ErrorCode.none, high_watermark=i64(9),
                                last_stable_offset=i64(9), log_start_offset=i64(0), aborted_transactions=None,
                                preferred_read_replica=i32(-1), records=r) for p, r in enumerate(reads))
    resp = FetchResponse(throttle_time=i32Timedelta.parse(datetime.timedelta(0)), error_code=ErrorCode.none,
                         session_id=i32(0), responses=(FetchableTopicResponse(topic="t", partitions=parts),))
    frame = encode_fetch_response(version, 7, resp)
    assert isinstance(frame, Gathered) and len(frame) > GATHER_ABOVE
    assert [p for p in frame.parts if any(p is r for r in reads)] == reads  # handed on, not copied
    joined = frame.joined()
    assert len(joined) == len(frame)
    assert int.from_bytes(joined[:4], "big", signed=True) == len(joined) - 4
    as_bytes = dataclasses.replace(resp, responses=(FetchableTopicResponse(
        topic="t", partitions=tuple(dataclasses.replace(p, records=bytes(p.records)) for p in parts)),))
    assert joined == generic(1, version, 7, as_bytes)
    # Below the size, one buffer as before.
    small = dataclasses.replace(resp, responses=(FetchableTopicResponse(topic="t", partitions=parts[:1]),))
    assert isinstance(encode_fetch_response(version, 7, small), bytes)
