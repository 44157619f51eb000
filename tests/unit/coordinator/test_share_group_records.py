"""Share group records in `__consumer_offsets` (issue 23), held to the bytes Apache Kafka 4.3.1
wrote on this machine for one member of group "sg" joining on topic "st" (1 partition), being
assigned it once its share state was initialized, and leaving. Pure."""

from __future__ import annotations

import uuid

import pytest

from minikafka.coordinator.share_group import records as r
from minikafka.coordinator.share_group.records import ShareTopic

pytestmark = pytest.mark.unit

G, M = "sg", "rQPJHZwLQMqXsDbXXiMwPQ"
T = uuid.UUID("3853b25c-b887-4f0a-85fb-7a30725d0097")
MEMBER_KEY = "0002736700167251504a485a774c514d71587344625858694d775051"
# (record type, key hex, value hex) in the order Kafka wrote them.
KAFKA = [
    (10, "000a" + MEMBER_KEY, "00000017636f6e736f6c652d73686172652d636f6e73756d65720b2f3132372e302e302e310203737400"),
    (11, "000b00027367", "0000000000027986375c392d4b3b00"),
    (13, "000d" + MEMBER_KEY, "00000100"),
    (12, "000c00027367", "000000000002010008000001a222004994"),
    (14, "000e" + MEMBER_KEY, "00000000000200000000000100"),
    (15, "000f00027367", "0000023853b25cb8874f0a85fb7a30725d0097037374020000000000010100"),
    (15, "000f00027367", "000001023853b25cb8874f0a85fb7a30725d00970373740200000000000100"),
    (11, "000b00027367", "0000000000037986375c392d4b3b00"),
    (13, "000d" + MEMBER_KEY, "0000023853b25cb8874f0a85fb7a30725d009702000000000000"),
    (12, "000c00027367", "000000000003010008000001a222005d88"),
    (14, "000e" + MEMBER_KEY, "0000000000030000000200023853b25cb8874f0a85fb7a30725d009702000000000000"),
    (11, "000b00027367", "000000000004000000000000000000"),
]
HASH = 0x7986375C392D4B3B


def written() -> list[tuple[bytes, bytes | None]]:
    """What minikafka writes for the same story."""
    st = ShareTopic(T, "st", (0,))
    return [
        r.member_metadata(G, M, rack_id=None, client_id="console-share-consumer", client_host="/127.0.0.1",
                          subscribed_topic_names=["st"]),
        r.group_metadata(G, 2, HASH),
        r.target_assignment_member(G, M, {}),
        r.target_assignment_metadata(G, 2, 0x01A222004994),
        r.current_member_assignment(G, M, member_epoch=2, previous_member_epoch=0, state=0, assigned={}),
        r.state_partition_metadata(G, initializing=[st]),
        r.state_partition_metadata(G, initialized=[st]),
        r.group_metadata(G, 3, HASH),
        r.target_assignment_member(G, M, {T: [0]}),
        r.target_assignment_metadata(G, 3, 0x01A222005D88),
        r.current_member_assignment(G, M, member_epoch=3, previous_member_epoch=2, state=0, assigned={T: [0]}),
        r.group_metadata(G, 4, 0),
    ]


def test_the_records_are_kafkas_bytes():
    assert [(k.hex(), v.hex() if v else v) for k, v in written()] == [(k, v) for _, k, v in KAFKA]


def test_the_records_read_back():
    got = [r.decode_value(t, bytes.fromhex(v)) for t, _, v in KAFKA]
    assert got[0] == r.MemberMetadata(None, "console-share-consumer", "/127.0.0.1", ("st",))
    assert got[1] == r.GroupMetadata(2, HASH)
    assert got[2] == {}
    assert got[3] == r.TargetAssignmentMetadata(2, 0x01A222004994)
    assert got[5] == r.StatePartitionMetadata((ShareTopic(T, "st", (0,)),), (), ())
    assert got[6] == r.StatePartitionMetadata((), (ShareTopic(T, "st", (0,)),), ())
    assert got[8] == {T: (0,)}
    assert got[10] == r.CurrentMemberAssignment(3, 2, 0, {T: (0,)})
    assert got[11] == r.GroupMetadata(4, 0)


def test_a_member_leaves_with_tombstones():
    assert [r.tombstone(t, G, M) for t in (14, 13, 10)] == [
        (bytes.fromhex(f"{t:04x}" + MEMBER_KEY), None) for t in (14, 13, 10)]


@pytest.mark.parametrize(("record_type", "value"), [
    (11, "0000000000027986375c39"),          # cut short
    (11, "0001000000027986375c392d4b3b00"),  # an unknown version
    (10, "000000ff"),                        # a string longer than the value
    (9, "000000"),                           # not a share group record type
    (10, "0000000317ff" + "00" * 30),        # a client id that is not UTF-8
])
def test_damaged_values_are_refused_by_name(record_type, value):
    with pytest.raises(r.CorruptShareGroupRecord):
        r.decode_value(record_type, bytes.fromhex(value))
