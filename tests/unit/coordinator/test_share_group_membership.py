"""Share group membership (issue 23): the heartbeat decisions and the room over an in-memory
`__consumer_offsets` and `__share_group_state`. Pure (no sockets); the integration tests drive
the same code with confluent-kafka's ShareConsumer."""

from __future__ import annotations

import asyncio
import uuid

import pytest
from fakes import InMemoryRecordLog

from minikafka.coordinator.share_group import decisions as d
from minikafka.coordinator.share_group import records as rec
from minikafka.coordinator.share_group import state_log as sl
from minikafka.coordinator.share_group.coordinator import ShareGroups
from minikafka.coordinator.share_group.share_coordinator import ShareCoordinator
from minikafka.coordinator.share_group.state import ShareGroup, ShareGroupState
from minikafka.protocol.errors import ErrorCode

pytestmark = pytest.mark.unit

T1, T2 = uuid.UUID(int=1), uuid.UUID(int=2)
TOPICS = {"a": (T1, 2), "b": (T2, 3)}
CFG = d.ShareGroupConfig()


def hb(member: str, epoch: int, topics: tuple[str, ...] | None = ("a",), group: str = "g") -> d.HeartbeatRequest:
    return d.HeartbeatRequest(group_id=group, member_id=member, member_epoch=epoch, subscribed_topic_names=topics,
                              client_id="c", client_host="/127.0.0.1")


def types(records) -> list[int]:
    return [rec.decode_key(k)[0] for k, _v in records]


@pytest.mark.parametrize("req, message", [
    (hb("", 0), "MemberId can't be empty."),
    (hb("m", 0, group=" "), "GroupId can't be empty."),
    (hb("m", 0, topics=()), "SubscribedTopicNames must be set in first request."),
    (hb("m", 0, topics=None), "SubscribedTopicNames must be set in first request."),
    (hb("m", -2), "MemberEpoch is -2, but must be greater than or equal to -1."),
])
def test_malformed_heartbeats_are_invalid_request(req, message):
    out = d.decide_heartbeat(None, req, CFG, TOPICS, 0)
    assert (out.reply.error, out.reply.message, out.group) == (ErrorCode.invalid_request, message, None)


def test_first_member_joins_with_its_partitions_initialized_in_the_same_heartbeat():
    out = d.decide_heartbeat(None, hb("m1", 0), CFG, TOPICS, 1000)
    # Kafka's records, in minikafka's order: member, initialized partitions, epoch, target, current.
    assert types(out.records) == [10, 15, 11, 13, 12, 14]
    assert out.to_initialize == ((T1, 0), (T1, 1)) and out.state_epoch == 2
    g = out.group
    assert (g.group_epoch, g.target_assignment_epoch, g.state) == (2, 2, ShareGroupState.STABLE)
    assert out.reply.member_epoch == 2 and out.reply.assignment == {(T1, 0), (T1, 1)}
    assert out.reply.heartbeat_interval_ms == 5000


def test_members_share_partitions_and_a_steady_heartbeat_changes_nothing():
    g = d.decide_heartbeat(None, hb("m1", 0), CFG, TOPICS, 0).group
    out = d.decide_heartbeat(g, hb("m2", 0), CFG, TOPICS, 10)
    assert out.to_initialize == ()   # already initialized by m1's join
    g = out.group
    assert g.group_epoch == 3
    # balance: one partition each (the simple assignor may give one partition to both)
    assert {len(p) for p in g.target_assignment.values()} == {1}
    assert out.reply.assignment == g.target_of("m2")
    # m1 catches up on its next heartbeat: epoch 3 with its new target
    out = d.decide_heartbeat(g, hb("m1", 2, topics=None), CFG, TOPICS, 20)
    assert out.reply.member_epoch == 3 and out.reply.assignment == out.group.target_of("m1")
    g = out.group
    steady = d.decide_heartbeat(g, hb("m1", 3, topics=None), CFG, TOPICS, 30)
    assert steady.records == () and steady.reply.assignment is None and steady.reply.member_epoch == 3


def test_epochs_are_fenced_as_kafka_fences_them():
    g = d.decide_heartbeat(None, hb("m1", 0), CFG, TOPICS, 0).group
    ahead = d.decide_heartbeat(g, hb("m1", 7, topics=None), CFG, TOPICS, 1)
    assert ahead.reply.error is ErrorCode.fenced_member_epoch
    unknown = d.decide_heartbeat(g, hb("zz", 2, topics=None), CFG, TOPICS, 1)
    assert unknown.reply.error is ErrorCode.unknown_member_id
    missing = d.decide_heartbeat(None, hb("m1", 3, topics=None), CFG, TOPICS, 1)
    assert missing.reply.error is ErrorCode.group_id_not_found
    # the previous epoch (an answer was lost) is accepted
    g2 = d.decide_heartbeat(g, hb("m2", 0), CFG, TOPICS, 2).group
    g3 = d.decide_heartbeat(g2, hb("m1", 2, topics=None), CFG, TOPICS, 3).group
    assert g3.members["m1"].member_epoch == 3
    assert d.decide_heartbeat(g3, hb("m1", 2, topics=None), CFG, TOPICS, 4).reply.error is ErrorCode.none


def test_group_max_size():
    cfg = d.ShareGroupConfig(max_size=1)
    g = d.decide_heartbeat(None, hb("m1", 0), cfg, TOPICS, 0).group
    full = d.decide_heartbeat(g, hb("m2", 0), cfg, TOPICS, 0)
    assert full.reply.error is ErrorCode.group_max_size_reached


def test_leave_writes_kafkas_tombstones_and_bumps_the_epoch_with_hash_zero():
    g = d.decide_heartbeat(None, hb("m1", 0), CFG, TOPICS, 0).group
    out = d.decide_heartbeat(g, hb("m1", -1, topics=None), CFG, TOPICS, 5)
    assert out.reply.member_epoch == -1
    assert types(out.records) == [14, 13, 10, 11]   # as Kafka 4.3.1 wrote a leave
    assert [v for _k, v in out.records[:3]] == [None, None, None]
    assert rec.decode_value(11, out.records[3][1]) == rec.GroupMetadata(3, 0)
    assert out.group.state is ShareGroupState.EMPTY


def test_a_new_subscription_initializes_only_the_new_topics_partitions():
    g = d.decide_heartbeat(None, hb("m1", 0), CFG, TOPICS, 0).group
    out = d.decide_heartbeat(g, hb("m1", 2, topics=("a", "b")), CFG, TOPICS, 1)
    assert out.to_initialize == ((T2, 0), (T2, 1), (T2, 2))
    assert out.reply.assignment == {(T1, 0), (T1, 1), (T2, 0), (T2, 1), (T2, 2)}


def test_session_timeout_fences_the_member():
    g = d.decide_heartbeat(None, hb("m1", 0), CFG, TOPICS, 0).group
    assert d.next_deadline(g) == 45_000
    assert d.expired_members(g, 44_999) == [] and d.expired_members(g, 45_000) == ["m1"]
    fenced, records = d.fence(g, ["m1"], TOPICS)
    assert not fenced.members and types(records) == [14, 13, 10, 11]


def run(coro):
    return asyncio.run(coro)


def room() -> tuple[ShareGroups, InMemoryRecordLog, InMemoryRecordLog]:
    offsets, share_log = InMemoryRecordLog(1), InMemoryRecordLog(1)
    return ShareGroups(offsets, CFG, TOPICS, ShareCoordinator(share_log)), offsets, share_log


def test_the_room_writes_share_state_before_the_records_that_name_it_and_replays_to_the_same_group():
    groups, offsets, share_log = room()
    reply = run(groups.heartbeat(hb("m1", 0), 1000))
    assert reply.error is ErrorCode.none and reply.assignment == {(T1, 0), (T1, 1)}
    snapshots = [(sl.decode_key(k), sl.decode_value(0, v)) for k, v in share_log.records()]
    assert [(k.topic_id, k.partition) for k, _v in snapshots] == [(T1, 0), (T1, 1)]
    assert all(v.start_offset == -1 and v.state_epoch == 2 and v.snapshot_epoch == 0 for _k, v in snapshots)
    # a restart: the log replayed gives the same group
    again = ShareGroups(offsets, CFG, TOPICS, ShareCoordinator(share_log))
    for k, v in offsets.records():
        again.replay(k, v)
    again.loaded(5000)
    before, after = groups.groups["g"], again.groups["g"]
    assert (after.group_epoch, after.target_assignment_epoch, after.initialized, after.target_assignment) == \
        (before.group_epoch, before.target_assignment_epoch, before.initialized, before.target_assignment)
    assert after.members["m1"].assigned == before.members["m1"].assigned
    assert after.members["m1"].session_deadline_ms == 5000 + CFG.session_timeout_ms
    # share groups have no committed offsets
    assert groups.validate_offset_commit("g", "m1", None, 2, transactional=False, api_version=9).error \
        is ErrorCode.group_id_not_found


def test_the_room_deletes_in_kafkas_order():
    groups, _offsets, _share = room()
    run(groups.heartbeat(hb("m1", 0), 0))
    run(groups.heartbeat(hb("m1", -1, topics=None), 1))
    assert groups.deletable("g") is ErrorCode.none
    assert types(groups.tombstones("g")) == [12, 15, 11]
    run(groups.heartbeat(hb("m2", 0), 2))
    assert groups.deletable("g") is ErrorCode.non_empty_group
    assert types(groups.tombstones("g")) == [14, 13, 12, 10, 15, 11]


def test_groups_start_at_epoch_one():
    assert ShareGroup(group_id="g").group_epoch == 1
