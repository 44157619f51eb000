"""The AddPartitionsToTxn and EndTxn response writers give the same bytes as downgrading the
canonical answer and encoding it with kio, for every version served and any answer."""

from __future__ import annotations

import datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kio.schema.add_partitions_to_txn.v3.response import (
    AddPartitionsToTxnPartitionResult,
    AddPartitionsToTxnResponse,
    AddPartitionsToTxnTopicResult,
)
from kio.schema.end_txn.v5.response import EndTxnResponse
from kio.schema.errors import ErrorCode
from kio.schema.types import ProducerId
from kio.static.primitive import i16, i32, i32Timedelta

from direct_writers import assert_writes_like_kio

from minikafka.protocol import versions
from minikafka.protocol.txn_responses import (
    ADD_PARTITIONS_VERSIONS,
    END_TXN_VERSIONS,
    encode_add_partitions_to_txn_response,
    encode_end_txn_response,
)

pytestmark = pytest.mark.unit

throttles = st.integers(0, 100_000).map(lambda n: i32Timedelta.parse(datetime.timedelta(milliseconds=n)))
errors = st.sampled_from(list(ErrorCode))
add_partitions = st.builds(
    AddPartitionsToTxnResponse,
    throttle_time=throttles,
    results_by_topic_v3_and_below=st.lists(st.builds(
        AddPartitionsToTxnTopicResult, name=st.text(max_size=300),  # past 127 bytes: a two-byte length
        results_by_partition=st.lists(st.builds(
            AddPartitionsToTxnPartitionResult, partition_index=st.integers(0, 2**31 - 1).map(i32),
            partition_error_code=errors), max_size=140).map(tuple)), max_size=3).map(tuple),
)
end_txn = st.builds(
    EndTxnResponse, throttle_time=throttles, error_code=errors,
    producer_id=st.integers(-1, 2**63 - 1).map(ProducerId), producer_epoch=st.integers(-1, 2**15 - 1).map(i16),
)


def test_the_writers_cover_every_version_served() -> None:
    assert list(ADD_PARTITIONS_VERSIONS) == list(range(versions.SUPPORTED[24].min, versions.SUPPORTED[24].max + 1))
    assert list(END_TXN_VERSIONS) == list(range(versions.SUPPORTED[26].min, versions.SUPPORTED[26].max + 1))


@settings(max_examples=150, deadline=None)
@given(response=add_partitions, correlation_id=st.integers(0, 2**31 - 1))
def test_add_partitions_to_txn_same_bytes_as_the_generic_writer(response: AddPartitionsToTxnResponse,
                                                                 correlation_id: int) -> None:
    for version in ADD_PARTITIONS_VERSIONS:
        assert_writes_like_kio(24, encode_add_partitions_to_txn_response, version, correlation_id, response)


@settings(max_examples=300, deadline=None)
@given(response=end_txn, correlation_id=st.integers(0, 2**31 - 1))
def test_end_txn_same_bytes_as_the_generic_writer(response: EndTxnResponse, correlation_id: int) -> None:
    for version in END_TXN_VERSIONS:
        assert_writes_like_kio(26, encode_end_txn_response, version, correlation_id, response)


def test_a_version_not_served_is_left_to_kio() -> None:
    assert encode_end_txn_response(6, 1, EndTxnResponse(throttle_time=i32Timedelta.parse(datetime.timedelta(0)),
                                                        error_code=ErrorCode.none)) is None
    assert encode_add_partitions_to_txn_response(4, 1, None) is None
