"""`__share_group_state` records (issue 23), held to the bytes Apache Kafka 4.3.1 wrote on this
machine: a ConsoleShareConsumer of group "sg" read 4 of 10 records of topic "st" (share groups are
on by default in 4.3.1) and closed; the share coordinator wrote a snapshot at initialization, an
update acknowledging 0-3 and one releasing 4-9. Pure."""

from __future__ import annotations

import uuid

import pytest

from minikafka.coordinator.share_group import state_log
from minikafka.coordinator.share_group.share_partition import RecordState, StateBatch
from minikafka.coordinator.share_group.state_log import (
    SNAPSHOT,
    UPDATE,
    CorruptShareStateRecord,
    ShareSnapshot,
    ShareStateKey,
    ShareUpdate,
)

pytestmark = pytest.mark.unit

TOPIC_ID = uuid.UUID("3853b25c-b887-4f0a-85fb-7a30725d0097")
KAFKA_SNAPSHOT_KEY = bytes.fromhex("0000000273673853b25cb8874f0a85fb7a30725d009700000000")
KAFKA_UPDATE_KEY = bytes.fromhex("0001000273673853b25cb8874f0a85fb7a30725d009700000000")
KAFKA_SNAPSHOT = bytes.fromhex("0000000000000000000200000000ffffffffffffffff000001a2220051da000001a2220051da0100")
KAFKA_UPDATE_ACCEPTED = bytes.fromhex("00000000000000000000000000000000000002000000000000000000000000000000030200010001"
                                      "000400000004")
KAFKA_UPDATE_RELEASED = bytes.fromhex("00000000000000000000000000000000000402000000000000000400000000000000090000010001"
                                      "000400000000")


def test_keys_read_and_write_as_kafka_wrote_them():
    assert state_log.decode_key(KAFKA_SNAPSHOT_KEY) == ShareStateKey(SNAPSHOT, "sg", TOPIC_ID, 0)
    assert state_log.decode_key(KAFKA_UPDATE_KEY) == ShareStateKey(UPDATE, "sg", TOPIC_ID, 0)
    assert state_log.encode_key(SNAPSHOT, "sg", TOPIC_ID, 0) == KAFKA_SNAPSHOT_KEY
    assert state_log.encode_key(UPDATE, "sg", TOPIC_ID, 0) == KAFKA_UPDATE_KEY


def test_the_initial_snapshot():
    snap = state_log.decode_value(SNAPSHOT, KAFKA_SNAPSHOT)
    assert snap == ShareSnapshot(snapshot_epoch=0, state_epoch=2, leader_epoch=0, start_offset=-1,
                                 create_timestamp_ms=0x01A2220051DA, write_timestamp_ms=0x01A2220051DA)
    assert state_log.encode_snapshot(snap) == KAFKA_SNAPSHOT


def test_the_updates_of_an_acknowledgement_and_a_release():
    accepted = state_log.decode_value(UPDATE, KAFKA_UPDATE_ACCEPTED)
    assert accepted == ShareUpdate(snapshot_epoch=0, leader_epoch=0, start_offset=0,
                                   state_batches=(StateBatch(0, 3, RecordState.ACKNOWLEDGED, 1),),
                                   delivery_complete_count=4)
    released = state_log.decode_value(UPDATE, KAFKA_UPDATE_RELEASED)
    assert released == ShareUpdate(snapshot_epoch=0, leader_epoch=0, start_offset=4,
                                   state_batches=(StateBatch(4, 9, RecordState.AVAILABLE, 1),),
                                   delivery_complete_count=0)
    assert state_log.encode_update(accepted) == KAFKA_UPDATE_ACCEPTED
    assert state_log.encode_update(released) == KAFKA_UPDATE_RELEASED


def test_a_snapshot_with_batches_and_no_delivery_complete_count_round_trips():
    snap = ShareSnapshot(3, 1, 7, 100, 5, 6, (StateBatch(100, 104, RecordState.ARCHIVED, 5),
                                              StateBatch(105, 105, RecordState.AVAILABLE, 2)))
    assert state_log.decode_value(SNAPSHOT, state_log.encode_snapshot(snap)) == snap


@pytest.mark.parametrize(("record_type", "data", "why"), [
    (UPDATE, KAFKA_UPDATE_ACCEPTED[:-3], "cut short"),
    (UPDATE, b"\x00\x01" + KAFKA_UPDATE_ACCEPTED[2:], "an unknown value version"),
    (UPDATE, KAFKA_UPDATE_ACCEPTED.replace(bytes.fromhex("0200010001"), bytes.fromhex("0300010001")), "state 3"),
    (SNAPSHOT, KAFKA_SNAPSHOT[:-2] + b"\x00", "a null batch array"),
])
def test_damaged_values_are_refused_by_name(record_type, data, why):
    with pytest.raises(CorruptShareStateRecord):
        state_log.decode_value(record_type, data)


def test_damaged_keys_are_refused_by_name():
    for bad in (b"\x00\x07" + KAFKA_SNAPSHOT_KEY[2:], KAFKA_SNAPSHOT_KEY[:10], b"\x00\x00\x00\x02\xff\xfe" + KAFKA_SNAPSHOT_KEY[6:]):
        with pytest.raises(CorruptShareStateRecord):
            state_log.decode_key(bad)


def test_an_acquired_state_kafka_never_writes_is_restored_as_available():
    from minikafka.coordinator.share_group.share_partition import ShareConfig, SharePartition

    data = KAFKA_UPDATE_ACCEPTED.replace(bytes.fromhex("0200010001"), bytes.fromhex("0100010001"))
    update = state_log.decode_value(UPDATE, data)
    assert update.state_batches == (StateBatch(0, 3, RecordState.ACQUIRED, 1),)
    sp = SharePartition(ShareConfig(), update.start_offset, update.state_batches)
    assert [sp.records[o].state for o in range(4)] == [RecordState.AVAILABLE] * 4
