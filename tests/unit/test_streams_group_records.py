"""The streams group records (KIP-1071) of `__consumer_offsets`: byte-exact with Kafka's, and parse()
gives back what was written."""

from __future__ import annotations

import pytest

from minikafka.coordinator.streams_group import records as rec
from minikafka.coordinator.streams_group.state import (
    CopartitionGroup,
    MemberState,
    StreamsGroupMember,
    Subtopology,
    TasksTuple,
    TopicInfo,
    Topology,
)

pytestmark = pytest.mark.unit

# Key and value bytes from Kafka 4.3.1's generated serializers: StreamsCoordinatorRecordHelpers
# building the records from equivalent inputs, serialized by GroupCoordinatorRecordSerde (kafka-
# group-coordinator, kafka-clients 4.3.1 jars; a throwaway program outside this repository).
KEY_GROUP = "00110003617070"
KEY_MEMBER_1 = "0013000361707000086d656d6265722d31"
KEY_MEMBER_2 = "0013000361707000086d656d6265722d32"
KEY_TARGET_METADATA = "00140003617070"
KEY_TARGET_MEMBER_1 = "0015000361707000086d656d6265722d31"
KEY_CURRENT_1 = "0016000361707000086d656d6265722d31"
KEY_CURRENT_2 = "0016000361707000086d656d6265722d32"
KEY_TOPOLOGY = "00170003617070"

GM_CONFIGS = ("0000000000050123456789abcdef0200040000000301220306612e6b6579027800156e756d2e7374616e646279"
              "2e7265706c69636173023100")
GM_EMPTY = "000000000001000000000000000000"
GM_NULL = "000000000001000000000000002a01010100"
MM_FULL = ("00000003723109636c69656e742d310a2f31302e302e302e3100007530000000020a70726f636573732d61010a6c6f"
           "63616c686f7374fde8000403617a026100057261636b027200057a6f6e6502620000")
MM_BARE = "00000b696e7374616e63652d32000363320b2f3132372e302e302e310000afc800000000037032ff0100"
TAM_TS = "0000000000070100080000018bcfe5687b"
TAM_ZERO = "00000000000000"
TA_MEMBER = "000005023003000000000000000200023102000000010003313002000000000002320200000003000202310200000000000100"
CA_FULL = ("0000000000070000000602030230030000000000000001010009030000000500000007023102000000020100050200"
           "000007020232020000000000020233020000000100020231020000000001000502000000040202320200000001000100")
CA_EMPTY = "000000000001000000000101010101010100"
TOPO = ("0000000000020302310308696e7075742d6208696e7075742d610102146170702d73746f72652d6368616e67656c6f6700"
        "0000000000030e7365676d656e742e62797465730531303030000f636c65616e75702e706f6c69637908636f6d706163"
        "740000020b6170702d726570617274010100023002066f746865720206696e2d2e2a0101020b6170702d726570617274"
        "0000000400030100030200000200000200000003000000010101000000")

MEMBER_FULL = StreamsGroupMember(
    member_id="member-1", rack_id="r1", client_id="client-1", client_host="/10.0.0.1", rebalance_timeout_ms=30000,
    topology_epoch=2, process_id="process-a", user_endpoint=("localhost", 65000),
    client_tags=(("zone", "b"), ("az", "a"), ("rack", "r")))
MEMBER_BARE = StreamsGroupMember(
    member_id="member-2", instance_id="instance-2", client_id="c2", client_host="/127.0.0.1",
    rebalance_timeout_ms=45000, topology_epoch=0, process_id="p2")
ASSIGNED = StreamsGroupMember(
    member_id="member-1", member_epoch=7, previous_member_epoch=6, state=MemberState.UNREVOKED_TASKS,
    assigned=TasksTuple(active=frozenset({("0", 1), ("0", 0), ("1", 2)}), standby=frozenset({("2", 0)}),
                        warmup=frozenset({("3", 1)})),
    pending_revocation=TasksTuple(active=frozenset({("1", 0)}), standby=frozenset({("2", 1)})),
    # ("1", 2) is left out: it is written with the member epoch (7).
    active_epochs={("0", 0): 5, ("0", 1): 7, ("1", 0): 4})
ASSIGNED_EMPTY = StreamsGroupMember(member_id="member-2", member_epoch=1, previous_member_epoch=0)
TARGET = TasksTuple(active=frozenset({("0", 2), ("0", 0), ("1", 1), ("10", 0), ("2", 3)}), standby=frozenset({("1", 0)}))
TOPOLOGY = Topology(epoch=2, subtopologies=(
    Subtopology(subtopology_id="1", source_topics=("input-b", "input-a"),
                state_changelog_topics=(TopicInfo("app-store-changelog", configs=(
                    ("segment.bytes", "1000"), ("cleanup.policy", "compact"))),),
                repartition_sink_topics=("app-repart",)),
    Subtopology(subtopology_id="0", source_topics=("other",), source_topic_regex=("in-.*",),
                repartition_source_topics=(TopicInfo("app-repart", 4, 3),),
                copartition_groups=(CopartitionGroup((0,), (0,), (0,)), CopartitionGroup((0, 1)))),
))


def _hex(record: rec.Record) -> tuple[str, str | None]:
    key, value = record
    return key.hex(), None if value is None else value.hex()


@pytest.mark.parametrize("record, expected", [
    (rec.group_metadata("app", 5, 0x0123456789ABCDEF, 3, (("num.standby.replicas", "1"), ("a.key", "x"))),
     (KEY_GROUP, GM_CONFIGS)),
    (rec.group_metadata("app", 1, 0, -1, ()), (KEY_GROUP, GM_EMPTY)),
    (rec.group_metadata("app", 1, 42), (KEY_GROUP, GM_NULL)),
    (rec.group_metadata_tombstone("app"), (KEY_GROUP, None)),
    (rec.member_metadata("app", MEMBER_FULL), (KEY_MEMBER_1, MM_FULL)),
    (rec.member_metadata("app", MEMBER_BARE), (KEY_MEMBER_2, MM_BARE)),
    (rec.member_metadata_tombstone("app", "member-1"), (KEY_MEMBER_1, None)),
    (rec.target_assignment_metadata("app", 7, 1_700_000_000_123), (KEY_TARGET_METADATA, TAM_TS)),
    (rec.target_assignment_metadata("app", 0, 0), (KEY_TARGET_METADATA, TAM_ZERO)),
    (rec.target_assignment_metadata_tombstone("app"), (KEY_TARGET_METADATA, None)),
    (rec.target_assignment_member("app", "member-1", TARGET), (KEY_TARGET_MEMBER_1, TA_MEMBER)),
    (rec.target_assignment_member_tombstone("app", "member-1"), (KEY_TARGET_MEMBER_1, None)),
    (rec.current_member_assignment("app", ASSIGNED), (KEY_CURRENT_1, CA_FULL)),
    (rec.current_member_assignment("app", ASSIGNED_EMPTY), (KEY_CURRENT_2, CA_EMPTY)),
    (rec.current_member_assignment_tombstone("app", "member-1"), (KEY_CURRENT_1, None)),
    (rec.topology("app", TOPOLOGY), (KEY_TOPOLOGY, TOPO)),
    (rec.topology_tombstone("app"), (KEY_TOPOLOGY, None)),
])
def test_bytes_are_kafkas(record: rec.Record, expected: tuple[str, str | None]) -> None:
    assert _hex(record) == expected


def _parse(record: rec.Record) -> rec.ParsedStreamsRecord:
    return rec.parse(*record)


def test_group_metadata_round_trips() -> None:
    p = _parse(rec.group_metadata("app", 5, 0x0123456789ABCDEF, 3, (("num.standby.replicas", "1"), ("a.key", "x"))))
    assert (p.record_type, p.group_id, p.member_id) == (rec.GROUP_METADATA, "app", None)
    # Written sorted by key, as Kafka's (sorted) configs map is.
    assert p.value == rec.GroupMetadataValue(5, 0x0123456789ABCDEF, 3, (("a.key", "x"), ("num.standby.replicas", "1")))
    assert _parse(rec.group_metadata("app", 1, 0, -1, ())).value == rec.GroupMetadataValue(1, 0, -1, ())
    assert _parse(rec.group_metadata("app", 1, 42)).value == rec.GroupMetadataValue(1, 42, -1, None)
    assert _parse(rec.group_metadata("app", 1, -1)).value.metadata_hash == -1


def test_member_metadata_round_trips() -> None:
    p = _parse(rec.member_metadata("app", MEMBER_FULL))
    assert (p.record_type, p.group_id, p.member_id) == (rec.MEMBER_METADATA, "app", "member-1")
    assert isinstance(p.value, StreamsGroupMember)
    assert p.value.metadata_key() == StreamsGroupMember(
        member_id="member-1", rack_id="r1", client_id="client-1", client_host="/10.0.0.1",
        rebalance_timeout_ms=30000, topology_epoch=2, process_id="process-a", user_endpoint=("localhost", 65000),
        client_tags=(("az", "a"), ("rack", "r"), ("zone", "b"))).metadata_key()
    assert _parse(rec.member_metadata("app", MEMBER_BARE)).value == MEMBER_BARE


def test_target_assignment_round_trips() -> None:
    p = _parse(rec.target_assignment_metadata("app", 7, 1_700_000_000_123))
    assert (p.record_type, p.member_id, p.value) == (
        rec.TARGET_ASSIGNMENT_METADATA, None, rec.TargetAssignmentMetadataValue(7, 1_700_000_000_123))
    assert _parse(rec.target_assignment_metadata("app", 3, 0)).value == rec.TargetAssignmentMetadataValue(3, 0)
    p = _parse(rec.target_assignment_member("app", "member-1", TARGET))
    assert (p.record_type, p.member_id, p.value) == (rec.TARGET_ASSIGNMENT_MEMBER, "member-1", TARGET)
    assert _parse(rec.target_assignment_member("app", "m", TasksTuple())).value == TasksTuple()


def test_current_assignment_round_trips() -> None:
    p = _parse(rec.current_member_assignment("app", ASSIGNED))
    assert (p.record_type, p.group_id, p.member_id) == (rec.CURRENT_MEMBER_ASSIGNMENT, "app", "member-1")
    assert isinstance(p.value, StreamsGroupMember)
    assert p.value.assignment_key() == StreamsGroupMember(
        member_id="member-1", member_epoch=7, previous_member_epoch=6, state=MemberState.UNREVOKED_TASKS,
        assigned=ASSIGNED.assigned, pending_revocation=ASSIGNED.pending_revocation,
        active_epochs={("0", 0): 5, ("0", 1): 7, ("1", 2): 7, ("1", 0): 4}).assignment_key()
    assert _parse(rec.current_member_assignment("app", ASSIGNED_EMPTY)).value == ASSIGNED_EMPTY


def test_current_assignment_without_epochs_uses_the_member_epoch() -> None:
    # An active entry without AssignmentEpochs (records of older brokers): its tasks get the member epoch.
    value = bytes.fromhex("0000" "00000009" "00000008" "01"
                          "02" "0230" "03" "00000000" "00000001" "00"   # active: 0_0, 0_1, no tags
                          "01" "01" "01" "01" "01" "00")
    p = rec.parse(bytes.fromhex(KEY_CURRENT_1), value)
    assert p.value.assigned == TasksTuple(active=frozenset({("0", 0), ("0", 1)}))
    assert p.value.active_epochs == {("0", 0): 9, ("0", 1): 9}
    assert p.value.state is MemberState.STABLE


def test_unknown_member_state_reads_as_unknown() -> None:
    key, value = rec.current_member_assignment("app", ASSIGNED_EMPTY)
    value = value[:10] + b"\x05" + value[11:]
    assert rec.parse(key, value).value.state is MemberState.UNKNOWN


def test_topology_round_trips() -> None:
    p = _parse(rec.topology("app", TOPOLOGY))
    assert (p.record_type, p.group_id, p.member_id, p.value) == (rec.TOPOLOGY, "app", None, TOPOLOGY)
    assert _parse(rec.topology("app", Topology(0))).value == Topology(0)


@pytest.mark.parametrize("record", [
    rec.group_metadata_tombstone("g"), rec.member_metadata_tombstone("g", "m"),
    rec.target_assignment_metadata_tombstone("g"), rec.target_assignment_member_tombstone("g", "m"),
    rec.current_member_assignment_tombstone("g", "m"), rec.topology_tombstone("g"),
])
def test_tombstones_parse(record: rec.Record) -> None:
    p = _parse(record)
    assert rec.is_streams_record_type(p.record_type)
    assert (p.group_id, p.value) == ("g", None)
    assert p.member_id == ("m" if p.record_type in (19, 21, 22) else None)


def test_record_types() -> None:
    assert rec.RECORD_TYPES == {17, 19, 20, 21, 22, 23}
    assert not rec.is_streams_record_type(3) and rec.is_streams_record_type(23)


@pytest.mark.parametrize("key, value", [
    (bytes.fromhex("00030003617070"), None),                          # a consumer group record type
    (bytes.fromhex("0011000561"), None),                              # group id past the end
    (bytes.fromhex(KEY_GROUP), bytes.fromhex("0001" "00000001")),     # unknown value version
    (bytes.fromhex(KEY_GROUP), bytes.fromhex(GM_CONFIGS)[:-6]),       # truncated
    (bytes.fromhex(KEY_TOPOLOGY), bytes.fromhex(TOPO)[:40]),
    (bytes.fromhex(KEY_MEMBER_1), bytes.fromhex(MM_FULL)[:30]),
    (bytes.fromhex(KEY_CURRENT_1), bytes.fromhex(CA_FULL)[:-3]),
    (bytes.fromhex("0011" "0002ff fe".replace(" ", "")), None),       # not UTF-8
    (bytes.fromhex(KEY_TARGET_MEMBER_1), bytes.fromhex("0000" "00")),  # null where an array is required
])
def test_bad_records_raise(key: bytes, value: bytes | None) -> None:
    with pytest.raises(rec.CorruptStreamsGroupRecord):
        rec.parse(key, value)
