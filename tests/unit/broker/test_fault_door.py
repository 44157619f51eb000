"""The fault door's view of a request (broker/fault_door.py): the names a rule can match, taken
from the newest-version bodies dispatch hands it."""

from __future__ import annotations

import datetime
import uuid

import pytest
from kio.schema.add_partitions_to_txn.v3.request import AddPartitionsToTxnRequest, AddPartitionsToTxnTopic
from kio.schema.offset_fetch.v8.request import OffsetFetchRequest, OffsetFetchRequestGroup, OffsetFetchRequestTopics
from kio.schema.fetch.v13.request import FetchPartition as FetchPartitionV13
from kio.schema.fetch.v13.request import FetchRequest as FetchRequestV13
from kio.schema.fetch.v13.request import FetchTopic as FetchTopicV13
from kio.static.primitive import i16, i32, i32Timedelta, i64
from rawclient import fetch_v12, produce_v9, valid_batch

from minikafka.broker.fault_door import FaultDoor
from minikafka.control.rules import FaultRules
from minikafka.protocol import versions

pytestmark = pytest.mark.unit

TOPIC_ID = uuid.uuid4()


def view(api_key: int, version: int, body):
    door = FaultDoor(FaultRules(), lambda tid: "by-id" if tid == TOPIC_ID else None)
    return door.view(api_key, version, "client-1", versions.upgrade(body))


def test_produce_names_its_transactional_id_and_partitions():
    v = view(0, 9, produce_v9("orders", 2, bytes(valid_batch(1)), transactional_id="copier"))
    assert (v.client_id, v.transactional_id, v.partitions, v.topics) == (
        "client-1", "copier", frozenset({("orders", 2)}), frozenset({"orders"}))


def test_add_partitions_to_txn_up_to_v3():
    body = AddPartitionsToTxnRequest(v3_and_below_transactional_id="t1", v3_and_below_producer_id=i64(5),
                                     v3_and_below_producer_epoch=i16(0),
                                     v3_and_below_topics=(AddPartitionsToTxnTopic(name="out", partitions=(i32(0), i32(3))),))
    v = view(24, 3, body)
    assert (v.transactional_id, v.partitions) == ("t1", frozenset({("out", 0), ("out", 3)}))


def test_fetch_by_name_and_by_topic_id():
    assert view(1, 12, fetch_v12("in", 1, 0)).partitions == frozenset({("in", 1)})
    by_id = FetchRequestV13(max_wait=i32Timedelta.parse(datetime.timedelta(0)), min_bytes=i32(1), topics=(
        FetchTopicV13(topic_id=TOPIC_ID, partitions=(FetchPartitionV13(
            partition=i32(1), fetch_offset=i64(0), partition_max_bytes=i32(1024)),)),), forgotten_topics_data=())
    assert view(1, 13, by_id).partitions == frozenset({("by-id", 1)})


def test_offset_fetch_groups_name_the_group():
    body = OffsetFetchRequest(groups=(OffsetFetchRequestGroup(group_id="g1", topics=(
        OffsetFetchRequestTopics(name="in", partition_indexes=(i32(0),)),)),), require_stable=True)
    v = view(9, 8, body)
    assert (v.group_id, v.partitions) == ("g1", frozenset({("in", 0)}))
