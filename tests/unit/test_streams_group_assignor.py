"""The streams-group `sticky` task assignor (Kafka 4.3.1's StickyTaskAssignor), as a pure function:
balance by process, stickiness, standby placement, determinism, and seeded random properties."""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Mapping

import pytest

from minikafka.coordinator.streams_group.assignor import AssignorMember, TaskAssignorError, assign
from minikafka.coordinator.streams_group.state import TaskId, TasksTuple

pytestmark = pytest.mark.unit

EMPTY = TasksTuple()


def member(process: str, active: set[TaskId] | frozenset[TaskId] = frozenset(),
           standby: set[TaskId] | frozenset[TaskId] = frozenset(),
           warmup: set[TaskId] | frozenset[TaskId] = frozenset()) -> AssignorMember:
    return AssignorMember(process, None, None, (), TasksTuple(frozenset(active), frozenset(standby), frozenset(warmup)))


def tasks_of(counts: Mapping[str, int]) -> list[TaskId]:
    return [(sub, p) for sub in sorted(counts) for p in range(counts[sub])]


def rerun(members: Mapping[str, AssignorMember], out: Mapping[str, TasksTuple]) -> dict[str, AssignorMember]:
    """The same members, their previous target being `out` (what the coordinator feeds back)."""
    return {m: AssignorMember(s.process_id, s.instance_id, s.rack_id, s.client_tags, out.get(m, EMPTY))
            for m, s in members.items()}


def active_owner(out: Mapping[str, TasksTuple]) -> dict[TaskId, str]:
    owners: dict[TaskId, str] = {}
    for m, tt in out.items():
        for t in tt.active:
            assert t not in owners, f"{t} active twice"
            owners[t] = m
    return owners


def check_valid(members: Mapping[str, AssignorMember], counts: Mapping[str, int], out: Mapping[str, TasksTuple],
                replicas: int, stateful: set[str] | None = None) -> None:
    """What every assignment satisfies, whatever the previous one was."""
    tasks = tasks_of(counts)
    assert set(out) == set(members)
    assert all(not tt.warmup for tt in out.values())
    owners = active_owner(out)
    assert sorted(owners) == tasks
    # No member above the initial active quota.
    if members:
        share = -(-len(tasks) // len(members))
        assert all(len(tt.active) <= share for tt in out.values())
    processes = {s.process_id for s in members.values()}
    with_standbys = set(counts) if stateful is None else stateful
    copies: dict[TaskId, list[str]] = {t: [members[m].process_id] for t, m in owners.items()}
    for m, tt in out.items():
        for t in tt.standby:
            copies[t].append(members[m].process_id)
    for t in tasks:
        want = min(replicas, len(processes) - 1) if t[0] in with_standbys else 0
        assert len(copies[t]) == 1 + want, (t, copies[t])
        assert len(set(copies[t])) == len(copies[t]), f"two copies of {t} on one process: {copies[t]}"


def spread(out: Mapping[str, TasksTuple]) -> int:
    sizes = [len(tt.active) for tt in out.values()]
    return max(sizes) - min(sizes)


# ----------------------------------------------------------------------------------- edge cases
def test_empty_topology_gives_every_member_an_empty_target():
    members = {"a": member("p1", {("0", 0)}), "b": member("p2")}
    assert assign(members, {}) == {"a": EMPTY, "b": EMPTY}
    assert assign(members, {"0": 0}, 2) == {"a": EMPTY, "b": EMPTY}


def test_no_members_and_no_tasks_is_fine():
    assert assign({}, {}) == {}
    assert assign({}, {"0": 0}, 1) == {}


def test_tasks_without_members_cannot_be_assigned():
    with pytest.raises(TaskAssignorError, match="0_0"):
        assign({}, {"0": 2})


def test_negative_standby_replicas_rejected():
    with pytest.raises(ValueError):
        assign({"a": member("p")}, {"0": 1}, -1)


def test_members_without_tasks_are_present_with_empty_targets():
    members = {f"m{i}": member(f"p{i}") for i in range(5)}
    out = assign(members, {"0": 2})
    check_valid(members, {"0": 2}, out, 0)
    assert sorted(len(tt.active) for tt in out.values()) == [0, 0, 0, 1, 1]


def test_previous_tasks_outside_the_topology_are_dropped():
    members = {"a": member("p1", {("0", 5), ("gone", 0)}, {("gone", 1)})}
    assert assign(members, {"0": 2}, 1) == {"a": TasksTuple(frozenset({("0", 0), ("0", 1)}))}


def test_warmup_tasks_are_never_produced_and_previous_ones_ignored():
    members = {"a": member("p1", warmup={("0", 0)}), "b": member("p2", warmup={("0", 1)})}
    out = assign(members, {"0": 4}, 1)
    check_valid(members, {"0": 4}, out, 1)
    assert all(not tt.warmup for tt in out.values())


# --------------------------------------------------------------------------------------- balance
def test_one_member_gets_everything_and_no_standby():
    out = assign({"a": member("p")}, {"0": 3, "1": 2}, num_standby_replicas=2)
    assert out == {"a": TasksTuple(frozenset(tasks_of({"0": 3, "1": 2})))}


def test_two_members_fresh_assignment_is_range_like():
    # Fresh tasks go out by subtopology then partition to the least loaded process, so
    # co-partitioned tasks of different subtopologies line up on the same member.
    out = assign({"a": member("pa"), "b": member("pb")}, {"0": 2, "1": 2})
    assert out == {"a": TasksTuple(frozenset({("0", 0), ("1", 0)})),
                   "b": TasksTuple(frozenset({("0", 1), ("1", 1)}))}


@pytest.mark.parametrize("n", [1, 2, 3])
@pytest.mark.parametrize("counts", [{"0": 1}, {"0": 4}, {"0": 7, "1": 7}, {"a": 5, "b": 3, "c": 1}])
def test_members_in_own_processes_are_balanced(n, counts):
    members = {f"m{i}": member(f"p{i}") for i in range(n)}
    out = assign(members, counts)
    check_valid(members, counts, out, 0)
    assert spread(out) <= 1


def test_members_of_one_process_share_its_load():
    # p1 runs three members (threads), p2 one: per-member load is what gets balanced.
    members = {"a1": member("p1"), "a2": member("p1"), "a3": member("p1"), "b": member("p2")}
    out = assign(members, {"0": 8})
    check_valid(members, {"0": 8}, out, 0)
    assert {m: len(tt.active) for m, tt in out.items()} == {"a1": 2, "a2": 2, "a3": 2, "b": 2}


def test_process_load_is_per_member():
    # Four tasks over p1 (3 members) and p2 (1 member): p2 takes one, p1 three (one per member).
    members = {"a1": member("p1"), "a2": member("p1"), "a3": member("p1"), "b": member("p2")}
    out = assign(members, {"0": 4})
    assert {m: len(tt.active) for m, tt in out.items()} == {"a1": 1, "a2": 1, "a3": 1, "b": 1}


# ------------------------------------------------------------------------------------ stickiness
def test_previous_active_owners_keep_their_tasks():
    counts = {"0": 3, "1": 3}
    members = {"a": member("pa", {("0", 2), ("1", 2)}), "b": member("pb", {("0", 0), ("1", 1)}),
               "c": member("pc", {("0", 1), ("1", 0)})}
    out = assign(members, counts)
    assert all(out[m].active == members[m].current.active for m in members)


def test_unchanged_group_keeps_its_assignment():
    members = {f"m{i}": member(f"p{i % 3}") for i in range(5)}
    counts = {"0": 7, "1": 4}
    out = assign(members, counts, 1)
    assert assign(rerun(members, out), counts, 1) == out


def test_a_joining_member_takes_tasks_and_nothing_else_moves():
    counts = {"0": 6, "1": 6}
    members = {m: member(f"p-{m}") for m in "abc"}
    before = assign(members, counts)
    joined = rerun(members, before)
    joined["d"] = member("p-d")
    after = assign(joined, counts)
    check_valid(joined, counts, after, 0)
    assert len(after["d"].active) == 3
    assert all(after[m].active <= before[m].active for m in "abc")
    assert spread(after) == 0


def test_a_leaving_member_only_frees_its_own_tasks():
    counts = {"0": 5, "1": 4}
    members = {m: member(f"p-{m}") for m in "abcd"}
    before = assign(members, counts)
    remaining = {m: s for m, s in rerun(members, before).items() if m != "b"}
    after = assign(remaining, counts)
    check_valid(remaining, counts, after, 0)
    assert all(before[m].active <= after[m].active for m in remaining)
    assert set().union(*(after[m].active - before[m].active for m in remaining)) == before["b"].active
    assert spread(after) <= 1


def test_sticky_tasks_are_capped_by_the_quota():
    # a had everything: it keeps its share, taken in partition-then-subtopology order.
    counts = {"0": 2, "1": 2}
    members = {"a": member("pa", set(tasks_of(counts))), "b": member("pb")}
    out = assign(members, counts)
    assert out["a"].active == {("0", 0), ("1", 0)}
    assert out["b"].active == {("0", 1), ("1", 1)}


def test_conflicting_previous_claims_go_to_the_smallest_member_id():
    members = {"b": member("pb", {("0", 0)}), "a": member("pa", {("0", 0)})}
    out = assign(members, {"0": 2})
    assert out["a"].active == {("0", 0)}
    assert out["b"].active == {("0", 1)}


def test_previous_standby_owner_takes_over_an_orphaned_active():
    # The active owner of 0_1 left; b had it as standby, so b becomes its active owner.
    members = {"a": member("pa", {("0", 0)}, {("0", 1)}), "b": member("pb", standby={("0", 1)}),
               "c": member("pc")}
    out = assign(members, {"0": 3})
    assert out["b"].active == {("0", 1)}
    assert out["a"].active == {("0", 0)}
    assert out["c"].active == {("0", 2)}


def test_standby_fallback_prefers_a_strictly_less_loaded_owner():
    # 0_2 was standby on a and b; a already keeps an active task, b has none: b takes it.
    members = {"a": member("pa", {("0", 0)}, {("0", 2)}), "b": member("pb", standby={("0", 2)}),
               "c": member("pc", {("0", 1)})}
    out = assign(members, {"0": 3})
    assert out["b"].active == {("0", 2)}


# --------------------------------------------------------------------------------------- standby
def test_standbys_never_share_a_process_with_their_active():
    members = {"a1": member("p1"), "a2": member("p1"), "b1": member("p2"), "b2": member("p2")}
    counts = {"0": 4, "1": 4}
    out = assign(members, counts, 1)
    check_valid(members, counts, out, 1)
    for m, tt in out.items():
        for t in tt.standby:
            owner = active_owner(out)[t]
            assert members[owner].process_id != members[m].process_id


@pytest.mark.parametrize("processes,replicas,expected", [(1, 1, 0), (2, 1, 1), (2, 3, 1), (3, 5, 2), (4, 2, 2)])
def test_standby_count_is_limited_by_processes(processes, replicas, expected):
    # Two members per process: a process never holds two copies of a task.
    members = {f"m{p}{i}": member(f"p{p}") for p in range(processes) for i in range(2)}
    out = assign(members, {"0": 3, "1": 2}, replicas)
    check_valid(members, {"0": 3, "1": 2}, out, replicas)
    counts = Counter(t for tt in out.values() for t in tt.standby)
    assert all(counts[t] == expected for t in tasks_of({"0": 3, "1": 2}))


def test_standbys_only_for_stateful_subtopologies():
    members = {m: member(f"p-{m}") for m in "abc"}
    counts = {"stateless": 3, "stateful": 3}
    out = assign(members, counts, 1, stateful={"stateful"})
    check_valid(members, counts, out, 1, {"stateful"})
    assert {t[0] for tt in out.values() for t in tt.standby} == {"stateful"}


def test_previous_standby_owner_keeps_its_standby():
    members = {"a": member("pa", {("0", 0)}, {("0", 1)}), "b": member("pb", {("0", 1)}),
               "c": member("pc", standby={("0", 0)})}
    out = assign(members, {"0": 2}, 1)
    assert out["a"].standby == {("0", 1)}
    assert out["c"].standby == {("0", 0)}


def test_previous_active_owner_becomes_standby_when_its_active_moves():
    # b joins; a keeps one task and the other moves to b; a keeps the moved task as standby.
    members = {"a": member("pa", {("0", 0), ("0", 1)}), "b": member("pb")}
    out = assign(members, {"0": 2}, 1)
    assert out["a"] == TasksTuple(frozenset({("0", 0)}), frozenset({("0", 1)}))
    assert out["b"] == TasksTuple(frozenset({("0", 1)}), frozenset({("0", 0)}))


def test_second_standby_replica_is_not_sticky_when_the_first_listed_owner_got_the_first():
    # Kafka parity: with two replicas the previous standby owners are [b, d]; b keeps the first
    # replica, then b's process holds a copy so the second goes to the least loaded process (c).
    members = {"a": member("pa", {("0", 0)}), "b": member("pb", standby={("0", 0)}),
               "c": member("pc"), "d": member("pd", standby={("0", 0)})}
    out = assign(members, {"0": 1}, 2)
    assert out["b"].standby == {("0", 0)}
    assert out["c"].standby == {("0", 0)}
    assert out["d"].standby == frozenset()


# ----------------------------------------------------------------------------------- determinism
def test_same_input_same_output_whatever_the_mapping_order():
    rnd = random.Random(7)
    counts = {"0": 9, "1": 5, "2": 3}
    tasks = tasks_of(counts)
    members = {f"m{i}": member(f"p{i % 4}", {t for t in tasks if rnd.random() < 0.3},
                               {t for t in tasks if rnd.random() < 0.3}) for i in range(7)}
    out = assign(members, counts, 2)
    assert assign(members, counts, 2) == out
    assert assign(dict(reversed(list(members.items()))), counts, 2) == out


# ---------------------------------------------------------------------------- random properties
def random_case(rnd: random.Random) -> tuple[dict[str, AssignorMember], dict[str, int], int, set[str]]:
    nproc = rnd.randint(1, 5)
    counts = {f"s{i}": rnd.randint(0, 12) for i in range(rnd.randint(0, 4))}
    tasks = tasks_of(counts) + [("gone", 0)]
    members = {}
    for i in range(rnd.randint(1, 9)):
        if rnd.random() < 0.3:
            prev = EMPTY
        else:  # arbitrary, including conflicting claims and tasks no longer in the topology
            prev = TasksTuple(frozenset(t for t in tasks if rnd.random() < 0.25),
                              frozenset(t for t in tasks if rnd.random() < 0.2))
        members[f"m{i}"] = AssignorMember(f"p{rnd.randrange(nproc)}", None, None, (), prev)
    stateful = {s for s in counts if rnd.random() < 0.7}
    return members, counts, rnd.choice([0, 0, 1, 2, 3]), stateful


@pytest.mark.parametrize("seed", range(200))
def test_random_assignments_are_valid(seed):
    members, counts, replicas, stateful = random_case(random.Random(seed))
    out = assign(members, counts, replicas, stateful=stateful)
    check_valid(members, counts, out, replicas, stateful)
    if len({s.process_id for s in members.values()}) == len(members):
        assert spread(out) <= 1
    assert assign(dict(reversed(list(members.items()))), counts, replicas, stateful=stateful) == out


@pytest.mark.parametrize("seed", range(200))
def test_random_fresh_assignments_balance_processes(seed):
    members, counts, _, _ = random_case(random.Random(seed))
    fresh = {m: member(s.process_id) for m, s in members.items()}
    out = assign(fresh, counts)
    check_valid(fresh, counts, out, 0)
    load: Counter[str] = Counter()
    size: Counter[str] = Counter()
    for m, s in fresh.items():
        load[s.process_id] += len(out[m].active)
        size[s.process_id] += 1
    # Each process got its last task while it was the least loaded one.
    for x in size:
        for y in size:
            if load[x]:
                assert (load[x] - 1) * size[y] <= load[y] * size[x]
    # Inside a process, members differ by at most one task.
    for p in size:
        inside = [len(out[m].active) for m, s in fresh.items() if s.process_id == p]
        assert max(inside) - min(inside) <= 1


@pytest.mark.parametrize("seed", range(100))
def test_random_rebalance_without_changes_is_stable(seed):
    members, counts, replicas, stateful = random_case(random.Random(seed))
    replicas = min(replicas, 1)  # with 2+ replicas Kafka's standby choice is not stable (see above)
    out = assign(members, counts, replicas, stateful=stateful)
    assert assign(rerun(members, out), counts, replicas, stateful=stateful) == out


@pytest.mark.parametrize("seed", range(100))
def test_random_join_and_leave_move_few_tasks(seed):
    rnd = random.Random(seed)
    counts = {f"s{i}": rnd.randint(1, 12) for i in range(rnd.randint(1, 3))}
    n = rnd.randint(1, 6)
    members = {f"m{i}": member(f"p{i}") for i in range(n)}
    before = assign(members, counts, rnd.choice([0, 1]))
    joined = rerun(members, before)
    joined["new"] = member("p-new")
    after = assign(joined, counts)
    # Only the newcomer gains active tasks, and it gets its floor share.
    assert all(after[m].active <= before[m].active for m in members)
    assert len(after["new"].active) == len(tasks_of(counts)) // (n + 1)
    if n > 1:
        gone = rnd.choice(sorted(members))
        remaining = {m: s for m, s in rerun(members, before).items() if m != gone}
        after = assign(remaining, counts)
        assert all(before[m].active <= after[m].active for m in remaining)
        assert spread(after) <= 1
