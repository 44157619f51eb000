"""KIP-848 consumer groups without sockets: the heartbeat decisions, reconciliation, the
assignors, the records, and replay (what a restart rebuilds). Time and topics are passed in."""

from __future__ import annotations

import uuid
from dataclasses import replace
from typing import Any

import pytest

from minikafka.coordinator.consumer_group import records as rec
from minikafka.coordinator.consumer_group.assignors import range_, uniform
from minikafka.coordinator.consumer_group.decisions import (
    ConsumerGroupConfig,
    HeartbeatRequest,
    decide_heartbeat,
    expired_members,
    fence,
)
from minikafka.coordinator.consumer_group.reconcile import reconcile
from minikafka.coordinator.consumer_group.state import ConsumerGroup, ConsumerGroupMember, ConsumerGroupState, MemberState
from minikafka.protocol.errors import ErrorCode

pytestmark = pytest.mark.unit

T1, T2 = uuid.UUID(int=1), uuid.UUID(int=2)
TOPICS = {"t1": (T1, 6), "t2": (T2, 2)}
CFG = ConsumerGroupConfig(session_timeout_ms=45_000, heartbeat_interval_ms=5_000, assignment_interval_ms=0)


def hb(member_id: str, epoch: int, **kw: Any) -> HeartbeatRequest:
    if epoch == 0:
        kw.setdefault("rebalance_timeout_ms", 30_000)
        kw.setdefault("owned", frozenset())
        kw.setdefault("subscribed_topic_names", ("t1",))
    return HeartbeatRequest(group_id="g", member_id=member_id, member_epoch=epoch, **kw)


class Sim:
    """A group driven by decisions alone, its records replayed into a second copy as a restart would."""

    def __init__(self, topics: dict[str, tuple[uuid.UUID, int]] | None = None) -> None:
        self.group: ConsumerGroup | None = None
        self.topics = topics or dict(TOPICS)
        self.records: list[rec.Record] = []
        self.now = 1_000

    def beat(self, req: HeartbeatRequest) -> Any:
        out = decide_heartbeat(self.group, req, CFG, self.topics, self.now, "generated")
        if out.group is not None:
            self.group = out.group
            self.records += out.records
        self.check()
        return out.reply

    def check(self) -> None:
        if self.group is None:
            return
        owners: dict[Any, str] = {}
        for m in self.group.members.values():
            for tp in m.owned():
                assert tp not in owners, f"{tp} owned by {owners[tp]} and {m.member_id}"
                owners[tp] = m.member_id

    def owned(self, mid: str) -> frozenset[Any]:
        assert self.group is not None
        return self.group.members[mid].owned()

    def converge(self, mids: list[str], rounds: int = 10) -> None:
        """Heartbeats of every member, reporting what it owns, until the group is Stable."""
        for _ in range(rounds):
            for mid in mids:
                assert self.group is not None
                m = self.group.members[mid]
                r = self.beat(hb(mid, m.member_epoch, owned=m.assigned))
                assert r.error is ErrorCode.none, r
            assert self.group is not None
            if self.group.state is ConsumerGroupState.STABLE:
                return
        raise AssertionError(f"not stable: {self.group}")


def test_first_member_gets_everything_at_epoch_two() -> None:
    s = Sim()
    r = s.beat(hb("a", 0))
    assert (r.error, r.member_epoch, r.heartbeat_interval_ms) == (ErrorCode.none, 2, 5_000)
    assert r.assignment == frozenset((T1, p) for p in range(6))
    assert s.group is not None and s.group.state is ConsumerGroupState.STABLE
    types = [rec.decode_key(k).record_type for k, _ in s.records]
    assert types == [rec.MEMBER_METADATA, rec.GROUP_METADATA, rec.TARGET_ASSIGNMENT_MEMBER,
                     rec.TARGET_ASSIGNMENT_METADATA, rec.CURRENT_MEMBER_ASSIGNMENT]


def test_a_second_member_waits_for_the_first_to_revoke() -> None:
    s = Sim()
    s.beat(hb("a", 0))
    r = s.beat(hb("b", 0))
    # b is at the new epoch, but its partitions are still a's: nothing to consume yet.
    assert r.member_epoch == 3 and r.assignment == frozenset()
    assert s.group is not None and s.group.members["b"].state is MemberState.UNRELEASED_PARTITIONS
    a = s.group.members["a"]
    r = s.beat(hb("a", 2, owned=a.assigned))
    assert r.member_epoch == 2 and len(r.assignment) == 3  # a keeps half, must revoke the rest
    assert s.group.members["a"].state is MemberState.UNREVOKED_PARTITIONS
    assert s.group.members["a"].rebalance_deadline_ms == s.now + 30_000
    r = s.beat(hb("a", 2, owned=r.assignment))  # revoked: a moves to epoch 3
    assert r.member_epoch == 3 and s.group.members["a"].rebalance_deadline_ms is None
    r = s.beat(hb("b", 3, owned=frozenset()))
    assert len(r.assignment) == 3 and s.group.state is ConsumerGroupState.STABLE


def test_previous_epoch_is_accepted_after_a_lost_answer_and_a_newer_one_fenced() -> None:
    s = Sim()
    s.beat(hb("a", 0))
    s.beat(hb("b", 0))
    s.converge(["a", "b"])
    assert s.group is not None
    a = s.group.members["a"]
    r = s.beat(hb("a", a.previous_member_epoch, owned=a.assigned))
    assert r.error is ErrorCode.none and r.member_epoch == a.member_epoch
    r = s.beat(hb("a", a.previous_member_epoch, owned=frozenset((T2, 0),)))  # owns what it was never given
    assert r.error is ErrorCode.fenced_member_epoch
    r = s.beat(hb("a", a.member_epoch + 1, owned=a.assigned))
    assert r.error is ErrorCode.fenced_member_epoch and "greater member epoch" in (r.message or "")


def test_leave_and_session_expiry_fence_and_bump_the_epoch() -> None:
    s = Sim()
    for mid in "abc":
        s.beat(hb(mid, 0))
    s.converge(list("abc"))
    assert s.group is not None
    epoch = s.group.group_epoch
    r = s.beat(hb("c", -1))
    assert (r.member_epoch, r.assignment) == (-1, None)
    assert s.group.group_epoch == epoch + 1 and "c" not in s.group.members
    s.converge(["a", "b"])
    assert sorted(len(s.owned(m)) for m in "ab") == [3, 3]
    # b stops heartbeating; a goes on.
    s.now += 40_000
    s.beat(hb("a", s.group.members["a"].member_epoch, owned=s.group.members["a"].assigned))
    s.now += 10_000
    assert expired_members(s.group, s.now) == ["b"]
    s.group, records = fence(s.group, ["b"], s.topics)
    assert [rec.decode_key(k).record_type for k, _ in records] == [
        rec.CURRENT_MEMBER_ASSIGNMENT, rec.TARGET_ASSIGNMENT_MEMBER, rec.MEMBER_METADATA, rec.GROUP_METADATA]
    s.converge(["a"])
    assert len(s.owned("a")) == 6


def test_static_member_leaves_for_a_restart_and_comes_back_without_a_rebalance() -> None:
    s = Sim()
    s.beat(hb("a", 0, instance_id="i-a"))
    s.beat(hb("b", 0))
    s.converge(["a", "b"])
    assert s.group is not None
    mine, epoch = s.owned("a"), s.group.group_epoch
    r = s.beat(hb("a", -2, instance_id="i-a"))
    assert r.member_epoch == -2 and s.owned("a") == mine and s.group.group_epoch == epoch
    assert s.beat(hb("x", 0, instance_id="i-a")).assignment == mine
    assert s.group.group_epoch == epoch and "a" not in s.group.members
    assert s.beat(hb("y", 0, instance_id="i-x")).error is ErrorCode.none
    r = s.beat(hb("z", 0, instance_id="i-x"))
    assert r.error is ErrorCode.unreleased_instance_id


def test_new_partitions_bump_the_group_epoch() -> None:
    s = Sim()
    s.beat(hb("a", 0))
    assert s.group is not None
    epoch = s.group.group_epoch
    s.topics["t1"] = (T1, 8)
    r = s.beat(hb("a", 2, owned=s.group.members["a"].assigned))
    assert s.group.group_epoch == epoch + 1 and len(r.assignment) == 8


def test_unsubscribing_revokes_at_once() -> None:
    s = Sim()
    s.beat(hb("a", 0, subscribed_topic_names=("t1", "t2")))
    assert s.group is not None
    r = s.beat(hb("a", 2, owned=s.group.members["a"].assigned, subscribed_topic_names=("t2",)))
    assert r.assignment is not None and {tid for tid, _ in r.assignment} <= {T2}


def test_replay_rebuilds_the_group() -> None:
    s = Sim()
    for mid in "ab":
        s.beat(hb(mid, 0, instance_id=None if mid == "a" else "i-b", rack_id="r1"))
    s.converge(["a", "b"])
    from minikafka.coordinator.consumer_group.coordinator import ConsumerGroups

    class NoLog:
        partition_count = 1

    rebuilt = ConsumerGroups(NoLog(), CFG, TOPICS)  # type: ignore[arg-type]
    for key, value in s.records:
        k = rec.decode_key(key)
        assert k is not None
        rebuilt.replay(k, value)
    got = rebuilt.groups["g"]
    assert s.group is not None
    assert (got.group_epoch, got.target_assignment_epoch, got.metadata_hash) == (
        s.group.group_epoch, s.group.target_assignment_epoch, s.group.metadata_hash)
    assert dict(got.target_assignment) == dict(s.group.target_assignment)
    for mid, m in s.group.members.items():
        g = got.members[mid]
        assert g.metadata_key() == m.metadata_key() and g.assignment_key() == m.assignment_key()
        assert dict(g.assignment_epochs) == dict(m.assignment_epochs)
    # The snapshot a compaction writes rebuilds the same group.
    again = ConsumerGroups(NoLog(), CFG, TOPICS)  # type: ignore[arg-type]
    for key, value in rebuilt.snapshot_records("g"):
        k = rec.decode_key(key)
        assert k is not None
        again.replay(k, value)
    assert again.groups["g"] == got


def test_member_metadata_bytes_end_with_a_null_classic_member_metadata() -> None:
    m = ConsumerGroupMember(member_id="m", client_id="c", client_host="/h", subscribed_topic_names=("b", "a"))
    key, value = rec.member_metadata("g", m)
    assert key == b"\x00\x05\x00\x01g\x00\x01m"
    assert value is not None and value.endswith(b"\x01\x00\x01\x00")
    assert rec.decode_member_metadata("m", value).subscribed_topic_names == ("a", "b")


def test_uniform_is_balanced_and_sticky() -> None:
    subs = {m: frozenset({"t1"}) for m in "abc"}
    first = uniform(subs, TOPICS, {})
    assert sorted(len(v) for v in first.values()) == [2, 2, 2]
    subs["d"] = frozenset({"t1"})
    second = uniform(subs, TOPICS, first)
    assert sorted(len(v) for v in second.values()) == [1, 1, 2, 2]
    moved = sum(len(first[m] - second[m]) for m in "abc")
    assert moved == 1  # only what d needs moves
    hetero = uniform({"a": frozenset({"t1"}), "b": frozenset({"t1", "t2"})}, TOPICS, {})
    assert sorted(len(v) for v in hetero.values()) == [4, 4]
    assert all(tid == T1 for tid, _ in hetero["a"])


def test_range_gives_contiguous_ranges_static_members_first() -> None:
    got = range_({"m2": frozenset({"t1"}), "m1": frozenset({"t1"}), "s": frozenset({"t1"})}, {"t1": (T1, 7)}, {},
                 {"s": "i-0", "m1": None, "m2": None})
    assert got["s"] == {(T1, p) for p in (0, 1, 2)}
    assert got["m1"] == {(T1, p) for p in (3, 4)}
    assert got["m2"] == {(T1, p) for p in (5, 6)}


def test_reconcile_keeps_a_partition_with_one_owner() -> None:
    a = ConsumerGroupMember(member_id="a", member_epoch=2, assigned=frozenset({(T1, 0), (T1, 1)}),
                            assignment_epochs={(T1, 0): 2, (T1, 1): 2})
    # The target moves partition 1 away: a keeps 0, must revoke 1, stays at epoch 2.
    nxt = reconcile(a, 3, frozenset({(T1, 0)}), lambda tp: False, None, frozenset({T1}))
    assert (nxt.state, nxt.member_epoch, nxt.pending_revocation) == (MemberState.UNREVOKED_PARTITIONS, 2,
                                                                      frozenset({(T1, 1)}))
    # Reported without partition 1: it moves to epoch 3.
    done = reconcile(nxt, 3, frozenset({(T1, 0)}), lambda tp: False, frozenset({(T1, 0)}), frozenset({T1}))
    assert (done.state, done.member_epoch, done.previous_member_epoch) == (MemberState.STABLE, 3, 2)
    # Given a partition someone else still owns: UNRELEASED until it is free.
    b = replace(done, member_epoch=3)
    waiting = reconcile(b, 4, frozenset({(T1, 0), (T1, 5)}), lambda tp: tp == (T1, 5), frozenset({(T1, 0)}),
                        frozenset({T1}))
    assert waiting.state is MemberState.UNRELEASED_PARTITIONS and (T1, 5) not in waiting.assigned
    free = reconcile(waiting, 4, frozenset({(T1, 0), (T1, 5)}), lambda tp: False, frozenset({(T1, 0)}),
                     frozenset({T1}))
    assert free.state is MemberState.STABLE and free.assignment_epochs[(T1, 5)] == 4


# ------------------------------------------------------------------------------ classic members
def _subscription(topics: tuple[str, ...], owned: dict[str, list[int]] | None = None, version: int = 1) -> bytes:
    import struct

    out = bytearray(struct.pack(">hi", version, len(topics)))
    for t in topics:
        out += struct.pack(">h", len(t)) + t.encode()
    out += struct.pack(">i", -1)
    if version >= 1:
        owned = owned or {}
        out += struct.pack(">i", len(owned))
        for t, parts in owned.items():
            out += struct.pack(">h", len(t)) + t.encode() + struct.pack(f">i{len(parts)}i", len(parts), *parts)
    return bytes(out)


def test_embedded_consumer_protocol_round_trip() -> None:
    from minikafka.coordinator.consumer_group import embedded

    sub = embedded.decode_subscription(_subscription(("t1", "t2"), {"t1": [0, 3]}))
    assert (sub.version, sub.topics, dict(sub.owned)) == (1, ("t1", "t2"), {"t1": (0, 3)})
    data = embedded.encode_assignment({"t2": [1], "t1": [2, 0]}, 1)
    assert embedded.decode_assignment(data) == {"t1": (0, 2), "t2": (1,)}
    assert embedded.version_of(data) == 1
    with pytest.raises(embedded.MalformedConsumerProtocol):
        embedded.decode_subscription(b"\x00\x01\x00")


def test_a_classic_member_joins_syncs_and_is_asked_to_rejoin() -> None:
    from minikafka.coordinator.consumer_group import classic_members as cm
    from minikafka.coordinator.consumer_group import embedded

    s = Sim()
    s.beat(hb("a", 0))
    assert s.group is not None

    def join(member_id: str, owned: dict[str, list[int]] | None = None) -> Any:
        return cm.decide_join(s.group, cm.ClassicJoin(
            group_id="g", member_id=member_id, group_instance_id=None, client_id="c", client_host="/h",
            session_timeout_ms=10_000, rebalance_timeout_ms=20_000, protocol_type="consumer",
            protocols=(("range", _subscription(("t1",), owned)),), require_known_member_id=True),
            CFG, s.topics, s.now, "new-classic")

    first = join("")
    assert (first.error, first.member_id) == (ErrorCode.member_id_required, "new-classic")
    out = join("new-classic")
    assert out.error is ErrorCode.none and out.protocol_name == "range" and out.group is not None
    s.group = out.group
    gen = out.generation_id
    assert gen == s.group.members["new-classic"].member_epoch
    # its partitions are still a's: the sync answers an empty assignment at its epoch
    names = {T1: "t1", T2: "t2"}
    sync = cm.decide_sync(s.group, "new-classic", None, gen, "consumer", "range", names, s.now)
    assert sync.error is ErrorCode.none and embedded.decode_assignment(sync.assignment) == {}
    assert cm.decide_sync(s.group, "new-classic", None, gen + 7, "consumer", "range", names, s.now).error \
        is ErrorCode.illegal_generation
    # a revokes; the classic member's heartbeat then says: rejoin to get yours
    a = s.group.members["a"]
    s.beat(hb("a", a.member_epoch, owned=a.assigned))
    s.beat(hb("a", s.group.members["a"].member_epoch, owned=s.group.members["a"].assigned))
    code, g = cm.decide_heartbeat(s.group, "new-classic", None, gen, s.now)
    assert code is ErrorCode.rebalance_in_progress and g is not None
    assert g.members["new-classic"].join_deadline_ms == s.now + 20_000
    s.group = g
    again = join("new-classic")
    assert again.error is ErrorCode.none and again.group is not None
    s.group = again.group
    sync = cm.decide_sync(s.group, "new-classic", None, again.generation_id, "consumer", "range", names, s.now)
    assert len(embedded.decode_assignment(sync.assignment)["t1"]) == 3
    s.check()


def test_conversions_between_the_group_types_keep_the_assignment() -> None:
    from minikafka.coordinator.consumer_group import classic_members as cm
    from minikafka.coordinator.consumer_group import embedded

    images = [cm.ClassicMemberImage(mid, None, "c", "/h", 20_000, 10_000, (("range", _subscription(("t1",))),),
                                    embedded.encode_assignment({"t1": parts}, 1))
              for mid, parts in (("m1", [0, 1, 2]), ("m2", [3, 4, 5]))]
    group, records = cm.from_classic("g", 7, "range", images, TOPICS, 1_000)
    assert (group.group_epoch, group.target_assignment_epoch, group.state) == (7, 7, ConsumerGroupState.STABLE)
    assert group.members["m1"].assigned == {(T1, p) for p in (0, 1, 2)}
    assert all(m.classic is not None for m in group.members.values()) and cm.all_classic(group)
    assert rec.decode_key(records[0][0]).record_type == rec.MEMBER_METADATA
    decoded = rec.decode_member_metadata("m1", records[0][1] or b"")
    assert decoded.classic == group.members["m1"].classic
    back = {i.member_id: embedded.decode_assignment(i.assignment) for i in cm.to_classic(group, {T1: "t1"})}
    assert back == {"m1": {"t1": (0, 1, 2)}, "m2": {"t1": (3, 4, 5)}}


def test_a_classic_member_commits_with_its_generation() -> None:
    from minikafka.coordinator.consumer_group import classic_members as cm
    from minikafka.coordinator.consumer_group import embedded
    from minikafka.coordinator.consumer_group.coordinator import ConsumerGroups

    class NoLog:
        partition_count = 1

    groups = ConsumerGroups(NoLog(), CFG, TOPICS)  # type: ignore[arg-type]
    image = cm.ClassicMemberImage("m1", None, "c", "/h", 20_000, 10_000, (("range", _subscription(("t1",))),),
                                  embedded.encode_assignment({"t1": [0, 1]}, 1))
    groups.groups["g"], _records = cm.from_classic("g", 4, "range", [image], TOPICS, 1_000)
    assert groups.validate_offset_commit("g", "m1", None, 4, transactional=False, api_version=8).error \
        is ErrorCode.none  # older OffsetCommit versions are fine for a classic member
    assert groups.validate_offset_commit("g", "m1", None, 5, transactional=False, api_version=9).error \
        is ErrorCode.illegal_generation
    assert groups.validate_offset_fetch("g", "m1", 3) is ErrorCode.illegal_generation
    s = Sim()
    s.beat(hb("a", 0))
    assert s.group is not None
    groups.groups["g2"] = s.group
    assert groups.validate_offset_commit("g2", "a", None, 2, transactional=False, api_version=8).error \
        is ErrorCode.unsupported_version
    assert groups.validate_offset_commit("g2", "a", None, 9, transactional=False, api_version=9).error \
        is ErrorCode.stale_member_epoch


def test_metadata_hash_is_kafkas() -> None:
    """Vectors computed with hash4j 0.22.0 as Kafka 4.3.1's Utils.computeTopicHash/computeGroupHash."""
    from minikafka.coordinator.metadata_hash import group_hash, topic_hash

    foo = topic_hash("foo", uuid.UUID(int=(0x0123456789ABCDEF << 64) | 0xFEDCBA9876543210), 3)
    bar = topic_hash("bar", uuid.UUID(int=(0x1111111111111111 << 64) | 0x2222222222222222), 3,
                     (("rack-b", "rack-a"), ("rack-a", "rack-a"), ("rack-c",)))
    assert (foo, bar) == (-6866685120132495045, 6948385996080975407)
    assert group_hash({"foo": foo, "bar": bar}) == -5494693510647035751
    assert group_hash({}) == 0
