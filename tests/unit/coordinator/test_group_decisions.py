"""Pure decisions of the classic group coordinator, with a fake clock (plain ints)."""

from __future__ import annotations

import dataclasses

import pytest

from minikafka.coordinator.group import decisions as d
from minikafka.coordinator.group.decisions import GroupConfig, JoinRequest, SyncRequest
from minikafka.coordinator.group.state import Group, GroupState, Member, OffsetAndMetadata
from minikafka.protocol.errors import ErrorCode
from minikafka.protocol.types import TopicPartition

pytestmark = pytest.mark.unit

CFG = GroupConfig(min_session_timeout_ms=100, max_session_timeout_ms=60000, initial_rebalance_delay_ms=0)
SESSION = 1000
REBALANCE = 5000


class FakeClock:
    def __init__(self, now: int = 1_000_000) -> None:
        self.now = now

    def advance(self, ms: int) -> int:
        self.now += ms
        return self.now


def join_req(member_id: str = "", *, instance: str | None = None, protocols: tuple[tuple[str, bytes], ...] =
             (("range", b"m"),), session: int = SESSION, rebalance: int = REBALANCE,
             v: int = 9) -> JoinRequest:
    return JoinRequest(group_id="g", member_id=member_id, group_instance_id=instance, client_id="c",
                       client_host="/127.0.0.1", session_timeout_ms=session, rebalance_timeout_ms=rebalance,
                       protocols=protocols, require_known_member_id=v >= 4, supports_skip_assignment=v >= 9)


class Sim:
    """Applies steps like the coordinator does, recording answers to parked requests."""

    def __init__(self, cfg: GroupConfig = CFG) -> None:
        self.cfg = cfg
        self.clock = FakeClock()
        self.group: Group | None = None
        self.joins: dict[str, d.JoinResult] = {}
        self.syncs: dict[str, d.SyncResult] = {}
        self.persisted: list[Group] = []
        self._ids = 0

    def apply(self, step: d.Step) -> None:
        if step.persist and step.group is not None:
            self.persisted.append(step.group)
        self.group = step.group
        self.joins.update(step.joins)
        self.syncs.update(step.syncs)

    def join(self, member_id: str = "", **kw: object) -> d.JoinDecision:
        self._ids += 1
        decision = d.decide_join(self.group, join_req(member_id, **kw), self.cfg, self.clock.now,  # type: ignore[arg-type]
                                 f"m{self._ids}")
        self.apply(decision.step)
        return decision

    def join_new(self, **kw: object) -> str:
        """A new dynamic member: the MEMBER_ID_REQUIRED round trip, then the parked join."""
        first = self.join(**kw)
        assert first.reply is not None and first.reply.error is ErrorCode.member_id_required
        second = self.join(first.member_id, **kw)
        assert second.reply is None
        return first.member_id

    def tick(self, ms: int = 0) -> None:
        now = self.clock.advance(ms)
        assert self.group is not None
        step = d.expire(self.group, self.cfg, now)
        if step is not None:
            self.apply(step)

    def sync(self, member_id: str, assignments: dict[str, bytes] | None = None,
             generation: int | None = None) -> d.SyncDecision:
        assert self.group is not None
        req = SyncRequest(group_id="g", member_id=member_id, assignments=assignments or {},
                          generation_id=self.group.generation_id if generation is None else generation)
        decision = d.decide_sync(self.group, req, self.cfg, self.clock.now)
        self.apply(decision.step)
        return decision

    def heartbeat(self, member_id: str, generation: int | None = None, instance: str | None = None) -> ErrorCode:
        gen = (self.group.generation_id if self.group else 0) if generation is None else generation
        group, code = d.decide_heartbeat(self.group, member_id, instance, gen, self.clock.now)
        self.group = group
        return code

    def state(self) -> GroupState:
        assert self.group is not None
        return self.group.state

    def stable_group(self, n: int) -> list[str]:
        ids = [self.join_new() for _ in range(n)]
        self.tick()
        assert self.state() is GroupState.COMPLETING_REBALANCE
        leader = self.group.leader_id  # type: ignore[union-attr]
        for m in ids:
            if m != leader:
                assert self.sync(m).reply is None
        self.sync(leader, {m: m.encode() for m in ids})  # type: ignore[arg-type]
        assert self.state() is GroupState.STABLE
        return ids


# ------------------------------------------------------------------------------------------ join
def test_first_join_needs_member_id_then_completes_after_initial_delay() -> None:
    sim = Sim(dataclasses.replace(CFG, initial_rebalance_delay_ms=300))
    first = sim.join()
    assert first.reply == d.JoinResult(error=ErrorCode.member_id_required, member_id="m1")
    assert sim.state() is GroupState.EMPTY and "m1" in sim.group.pending_members  # type: ignore[union-attr]
    assert sim.join("m1").reply is None
    assert sim.state() is GroupState.PREPARING_REBALANCE
    sim.tick(299)
    assert "m1" not in sim.joins
    sim.tick(1)
    result = sim.joins["m1"]
    assert result.error is ErrorCode.none and result.generation_id == 1 and result.leader_id == "m1"
    assert result.protocol_name == "range" and [m[0] for m in result.members] == ["m1"]
    assert sim.state() is GroupState.COMPLETING_REBALANCE


def test_initial_delay_is_extended_while_members_keep_joining() -> None:
    sim = Sim(dataclasses.replace(CFG, initial_rebalance_delay_ms=300))
    a = sim.join_new()
    sim.tick(200)
    b = sim.join_new()
    sim.tick(100)            # first delay over, but b arrived during it: wait another delay
    assert sim.joins == {}
    sim.tick(300)
    assert {a, b} <= set(sim.joins) and sim.group.generation_id == 1  # type: ignore[union-attr]


def test_old_join_versions_get_a_member_id_without_the_round_trip() -> None:
    sim = Sim()
    decision = sim.join(v=3)
    assert decision.reply is None and decision.member_id in sim.group.members  # type: ignore[union-attr]


def test_three_members_one_generation_leader_gets_metadata() -> None:
    sim = Sim(dataclasses.replace(CFG, initial_rebalance_delay_ms=100))
    ids = [sim.join_new() for _ in range(3)]
    sim.tick(100)   # others joined during the initial delay: it is extended once
    assert sim.joins == {}
    sim.tick(100)
    leader = sim.group.leader_id  # type: ignore[union-attr]
    assert {sim.joins[m].generation_id for m in ids} == {1}
    assert len(sim.joins[leader].members) == 3  # type: ignore[index]
    assert all(sim.joins[m].members == () for m in ids if m != leader)
    followers = [m for m in ids if m != leader]
    assert sim.sync(followers[0]).reply is None            # parked until the leader syncs
    sim.sync(leader, {m: f"a-{m}".encode() for m in ids})  # type: ignore[arg-type]
    assert sim.state() is GroupState.STABLE
    assert sim.persisted[-1].state is GroupState.STABLE
    assert sim.syncs[followers[0]].assignment == f"a-{followers[0]}".encode()
    late = sim.sync(followers[1])                          # after the leader: answered at once
    assert late.reply is not None and late.reply.assignment == f"a-{followers[1]}".encode()


def test_new_member_in_stable_group_triggers_rebalance() -> None:
    sim = Sim()
    ids = sim.stable_group(2)
    newcomer = sim.join_new()
    assert sim.state() is GroupState.PREPARING_REBALANCE
    assert sim.heartbeat(ids[0]) is ErrorCode.rebalance_in_progress
    for m in ids:
        assert sim.join(m).reply is None
    # all three joined: the phase completes without waiting for the rebalance timeout
    assert sim.state() is GroupState.COMPLETING_REBALANCE and sim.group.generation_id == 2  # type: ignore[union-attr]
    assert set(sim.joins) >= {newcomer, *ids}


def test_follower_rejoining_unchanged_in_stable_gets_current_generation() -> None:
    sim = Sim()
    ids = sim.stable_group(2)
    follower = next(m for m in ids if m != sim.group.leader_id)  # type: ignore[union-attr]
    reply = sim.join(follower).reply
    assert reply is not None and reply.error is ErrorCode.none and reply.generation_id == 1
    assert sim.state() is GroupState.STABLE


def test_leader_rejoin_forces_rebalance() -> None:
    sim = Sim()
    sim.stable_group(2)
    assert sim.join(sim.group.leader_id).reply is None  # type: ignore[union-attr,arg-type]
    assert sim.state() is GroupState.PREPARING_REBALANCE


@pytest.mark.parametrize(("setup", "request_kw", "expected"), [
    ("none", {"member_id": "ghost"}, ErrorCode.unknown_member_id),
    ("stable", {"member_id": "ghost"}, ErrorCode.unknown_member_id),
    ("stable", {"member_id": "", "session": 10}, ErrorCode.invalid_session_timeout),
    ("stable", {"member_id": "", "session": 10**9}, ErrorCode.invalid_session_timeout),
    ("stable", {"member_id": "", "protocols": (("sticky", b""),)}, ErrorCode.inconsistent_group_protocol),
    ("stable", {"member_id": "", "protocols": ()}, ErrorCode.inconsistent_group_protocol),
])
def test_join_errors(setup: str, request_kw: dict[str, object], expected: ErrorCode) -> None:
    sim = Sim()
    if setup == "stable":
        sim.stable_group(1)
    member_id = request_kw.pop("member_id")
    reply = sim.join(member_id, **request_kw).reply  # type: ignore[arg-type]
    assert reply is not None and reply.error is expected


def test_group_max_size() -> None:
    sim = Sim(dataclasses.replace(CFG, max_size=1))
    sim.stable_group(1)
    reply = sim.join().reply
    assert reply is not None and reply.error is ErrorCode.group_max_size_reached


# ------------------------------------------------------------------------------------------ sync
@pytest.mark.parametrize(("case", "expected"), [
    ("unknown_group", ErrorCode.unknown_member_id),
    ("unknown_member", ErrorCode.unknown_member_id),
    ("wrong_generation", ErrorCode.illegal_generation),
    ("preparing", ErrorCode.rebalance_in_progress),
    ("wrong_protocol", ErrorCode.inconsistent_group_protocol),
])
def test_sync_errors(case: str, expected: ErrorCode) -> None:
    sim = Sim()
    if case == "unknown_group":
        r = d.decide_sync(None, SyncRequest(group_id="g", generation_id=1, member_id="x"), CFG, 0)
        assert r.reply is not None and r.reply.error is expected
        return
    ids = sim.stable_group(2)
    g = sim.group
    assert g is not None
    req = SyncRequest(group_id="g", generation_id=g.generation_id, member_id=ids[0])
    if case == "unknown_member":
        req = dataclasses.replace(req, member_id="ghost")
    elif case == "wrong_generation":
        req = dataclasses.replace(req, generation_id=7)
    elif case == "preparing":
        sim.join_new()
        g = sim.group
    elif case == "wrong_protocol":
        req = dataclasses.replace(req, protocol_name="roundrobin")
    r = d.decide_sync(g, req, CFG, sim.clock.now)
    assert r.reply is not None and r.reply.error is expected


def test_rebalance_during_sync_answers_parked_followers_with_rebalance_in_progress() -> None:
    sim = Sim()
    ids = [sim.join_new() for _ in range(2)]
    sim.tick()
    follower = next(m for m in ids if m != sim.group.leader_id)  # type: ignore[union-attr]
    assert sim.sync(follower).reply is None
    sim.join_new()
    assert sim.syncs[follower].error is ErrorCode.rebalance_in_progress
    assert sim.state() is GroupState.PREPARING_REBALANCE


# ------------------------------------------------------------------------------------------ heartbeat
@pytest.mark.parametrize(("case", "expected"), [
    ("ok", ErrorCode.none),
    ("unknown_group", ErrorCode.unknown_member_id),
    ("unknown_member", ErrorCode.unknown_member_id),
    ("wrong_generation", ErrorCode.illegal_generation),
    ("preparing", ErrorCode.rebalance_in_progress),
    ("fenced_instance", ErrorCode.fenced_instance_id),
])
def test_heartbeat(case: str, expected: ErrorCode) -> None:
    sim = Sim()
    if case == "unknown_group":
        assert d.decide_heartbeat(None, "m", None, 1, 0)[1] is expected
        return
    if case == "fenced_instance":
        a = sim.join(instance="i1").member_id
        sim.tick()
        sim.sync(a, {a: b"x"})
        assert sim.heartbeat("someone-else", instance="i1") is expected
        return
    ids = sim.stable_group(2)
    if case == "preparing":
        sim.join_new()
    member = "ghost" if case == "unknown_member" else ids[0]
    generation = 9 if case == "wrong_generation" else None
    assert sim.heartbeat(member, generation) is expected


# ------------------------------------------------------------------------------------------ timeouts
def test_member_that_stops_heartbeating_is_expired_and_others_rebalance() -> None:
    sim = Sim()
    a, b = sim.stable_group(2)
    for _ in range(5):
        sim.tick(SESSION // 2)
        assert sim.heartbeat(a) is ErrorCode.none or sim.state() is GroupState.PREPARING_REBALANCE
        if sim.state() is GroupState.PREPARING_REBALANCE:
            break
    assert b not in sim.group.members  # type: ignore[union-attr]
    assert sim.state() is GroupState.PREPARING_REBALANCE
    assert sim.join(a).reply is None
    assert sim.state() is GroupState.COMPLETING_REBALANCE and sim.joins[a].generation_id == 2


def test_member_that_does_not_rejoin_is_dropped_at_the_rebalance_timeout() -> None:
    sim = Sim()
    a, b = sim.stable_group(2)
    c = sim.join_new()                 # rebalance; a rejoins, b does not (but keeps heartbeating)
    assert sim.join(a).reply is None
    for _ in range(REBALANCE // 500):
        sim.tick(500)
        sim.heartbeat(b)
        sim.heartbeat(a)
    assert sim.state() is GroupState.COMPLETING_REBALANCE
    assert set(sim.group.members) == {a, c}  # type: ignore[union-attr]


def test_pending_member_that_never_rejoins_expires_without_a_rebalance() -> None:
    sim = Sim()
    (a,) = sim.stable_group(1)
    assert sim.join().reply.error is ErrorCode.member_id_required  # type: ignore[union-attr]
    sim.tick(SESSION // 2)
    assert sim.heartbeat(a) is ErrorCode.none
    sim.tick(SESSION // 2)
    assert sim.group.pending_members == {} and sim.state() is GroupState.STABLE  # type: ignore[union-attr]


def test_member_that_never_syncs_is_removed_after_the_rebalance_timeout() -> None:
    sim = Sim()
    ids = [sim.join_new() for _ in range(2)]
    sim.tick()
    leader = sim.group.leader_id  # type: ignore[union-attr]
    follower = next(m for m in ids if m != leader)
    assert sim.sync(follower).reply is None   # the follower syncs, the leader never does
    for _ in range(REBALANCE // 500):
        sim.tick(500)
        for m in ids:
            sim.heartbeat(m)
    assert sim.state() is GroupState.PREPARING_REBALANCE
    assert set(sim.group.members) == {follower}  # type: ignore[union-attr]
    assert sim.syncs[follower].error is ErrorCode.rebalance_in_progress


def test_last_member_leaving_empties_the_group_and_persists_it() -> None:
    sim = Sim()
    (a,) = sim.stable_group(1)
    step, top, codes = d.decide_leave(sim.group, [(a, None), ("ghost", None)], CFG, sim.clock.now)
    sim.apply(step)
    assert top is ErrorCode.none and codes == [ErrorCode.none, ErrorCode.unknown_member_id]
    assert sim.state() is GroupState.EMPTY and sim.group.generation_id == 2  # type: ignore[union-attr]
    assert sim.persisted[-1].state is GroupState.EMPTY


# ------------------------------------------------------------------------------------------ static
def test_static_member_restart_in_stable_keeps_generation_and_fences_old_id() -> None:
    sim = Sim()
    a = sim.join(instance="i-a").member_id
    b = sim.join(instance="i-b").member_id
    sim.tick()
    sim.sync(b)
    sim.sync(a, {a: b"A", b: b"B"})
    assert sim.state() is GroupState.STABLE
    persisted = len(sim.persisted)
    rejoin = sim.join(instance="i-b")
    assert rejoin.reply is not None and rejoin.reply.error is ErrorCode.none
    assert rejoin.reply.generation_id == 1 and rejoin.member_id != b
    assert sim.state() is GroupState.STABLE and len(sim.persisted) == persisted + 1
    assert sim.heartbeat(b, instance="i-b") is ErrorCode.fenced_instance_id
    assert sim.sync(rejoin.member_id).reply.assignment == b"B"  # type: ignore[union-attr]


def test_static_leader_restart_gets_skip_assignment() -> None:
    sim = Sim()
    a = sim.join(instance="i-a").member_id
    sim.tick()
    sim.sync(a, {a: b"A"})
    rejoin = sim.join(instance="i-a")
    assert rejoin.reply is not None and rejoin.reply.skip_assignment
    assert rejoin.reply.leader_id == rejoin.member_id and len(rejoin.reply.members) == 1


def test_static_member_leaving_by_instance_id() -> None:
    sim = Sim()
    sim.join(instance="i-a")
    sim.tick()
    step, top, codes = d.decide_leave(sim.group, [("", "i-a"), ("", "i-zzz")], CFG, sim.clock.now)
    assert codes == [ErrorCode.none, ErrorCode.unknown_member_id]


# ------------------------------------------------------------------------------------------ offsets
def _g(state: GroupState, generation: int = 3, members: tuple[str, ...] = ("m",)) -> Group:
    return Group(group_id="g", state=state, generation_id=generation, protocol_type="consumer",
                 members={m: Member(member_id=m, rebalance_timeout_ms=1, session_timeout_ms=1) for m in members})


@pytest.mark.parametrize(("group", "member", "generation", "expected"), [
    (None, "", -1, ErrorCode.none),                                        # simple consumer, new group
    (None, "m", 3, ErrorCode.illegal_generation),
    (_g(GroupState.EMPTY, members=()), "", -1, ErrorCode.none),
    (_g(GroupState.STABLE), "", -1, ErrorCode.unknown_member_id),          # admin commit to an active group
    (_g(GroupState.STABLE), "m", 3, ErrorCode.none),
    (_g(GroupState.STABLE), "m", 2, ErrorCode.illegal_generation),
    (_g(GroupState.STABLE), "x", 3, ErrorCode.unknown_member_id),
    (_g(GroupState.PREPARING_REBALANCE), "m", 3, ErrorCode.none),          # commit before revoking
    (_g(GroupState.COMPLETING_REBALANCE), "m", 3, ErrorCode.rebalance_in_progress),
    (_g(GroupState.DEAD), "m", 3, ErrorCode.coordinator_not_available),
])
def test_validate_offset_commit(group: Group | None, member: str, generation: int, expected: ErrorCode) -> None:
    assert d.validate_offset_commit(group, member, None, generation) is expected


@pytest.mark.parametrize(("group", "expected"), [
    (None, ErrorCode.group_id_not_found),
    (_g(GroupState.EMPTY, members=()), ErrorCode.none),
    (_g(GroupState.STABLE), ErrorCode.non_empty_group),
    (_g(GroupState.PREPARING_REBALANCE), ErrorCode.non_empty_group),
    (_g(GroupState.DEAD), ErrorCode.group_id_not_found),
])
def test_decide_delete(group: Group | None, expected: ErrorCode) -> None:
    assert d.decide_delete(group) is expected


def _subscription(*topics: str) -> bytes:
    out = b"\x00\x00" + len(topics).to_bytes(4, "big")
    for t in topics:
        out += len(t).to_bytes(2, "big") + t.encode()
    return out + b"\xff\xff\xff\xff"


def test_offset_delete_refuses_subscribed_topics() -> None:
    member = Member(member_id="m", rebalance_timeout_ms=1, session_timeout_ms=1,
                    protocols=(("range", _subscription("t1")),))
    g = Group(group_id="g", state=GroupState.STABLE, protocol_type="consumer", protocol_name="range",
              members={"m": member})
    top, by_topic = d.decide_offset_delete(g, ["t1", "t2"])
    assert top is ErrorCode.none
    assert by_topic == {"t1": ErrorCode.group_subscribed_to_topic, "t2": ErrorCode.none}
    assert d.decide_offset_delete(None, ["t1"])[0] is ErrorCode.group_id_not_found


RET = 60_000


@pytest.mark.parametrize(("group", "commit_ts", "now", "expired"), [
    (None, 0, RET - 1, False),
    (None, 0, RET, True),
    (_g(GroupState.STABLE), 0, 10 * RET, False),
    (dataclasses.replace(_g(GroupState.EMPTY, members=()), state_timestamp_ms=5 * RET), 0, 5 * RET + 10, False),
    (dataclasses.replace(_g(GroupState.EMPTY, members=()), state_timestamp_ms=5 * RET), 0, 6 * RET, True),
])
def test_expired_offsets(group: Group | None, commit_ts: int, now: int, expired: bool) -> None:
    tp = TopicPartition("t", 0)
    offsets = {tp: OffsetAndMetadata(offset=1, commit_timestamp_ms=commit_ts)}
    assert d.expired_offsets(group, offsets, now, RET) == ([tp] if expired else [])
