"""The share groups' simple assignor (issue 23): every partition served, every member given work,
no member past one more than its share (Kafka's SimpleAssignor allows that one for hash
collisions), sticky, deterministic. Pure."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minikafka.coordinator.share_group.assignor import assign
from minikafka.java_order import string_hash

pytestmark = pytest.mark.unit


def loads(out, topic):
    return {m: sum(1 for t, _ in tps if t == topic) for m, tps in out.items()}


@settings(max_examples=200, deadline=None)
@given(members=st.lists(st.text("abcdef0123456789-", min_size=1, max_size=12), min_size=1, max_size=12, unique=True),
       count=st.integers(1, 20))
def test_every_partition_is_served_every_member_works_and_the_load_is_balanced(members, count):
    out = assign({m: ["t"] for m in members}, {"t": count})
    served = {p for tps in out.values() for _, p in tps}
    assert served == set(range(count))
    per_member = loads(out, "t")
    assert min(per_member.values()) >= 1
    assert max(per_member.values()) <= math.ceil(count / len(members)) + 1
    assert out == assign({m: ["t"] for m in reversed(members)}, {"t": count})  # order of arrival does not matter


def test_more_members_than_partitions_share_them():
    out = assign({f"m{i}": ["t"] for i in range(5)}, {"t": 2})
    assert all(len(tps) == 1 for tps in out.values())
    assert {p for tps in out.values() for _, p in tps} == {0, 1}


def test_a_member_lands_on_the_partition_its_id_hashes_to():
    out = assign({"member-x": ["t"], "member-y": ["t"]}, {"t": 7})
    for m in ("member-x", "member-y"):
        assert ("t", abs(string_hash(m)) % 7) in out[m]


def test_what_a_member_held_stays_with_it_while_the_group_grows():
    before = assign({"a": ["t"], "b": ["t"]}, {"t": 8})
    after = assign({"a": ["t"], "b": ["t"], "c": ["t"]}, {"t": 8}, current=before)
    for m in ("a", "b"):
        kept = before[m] & after[m]
        assert len(kept) >= len(after[m]) - 1  # at most the hashed partition is new
    assert max(map(len, after.values())) <= math.ceil(8 / 3) + 1
    assert set().union(*after.values()) == {("t", p) for p in range(8)}


def test_different_subscriptions_share_each_topic_among_its_subscribers():
    out = assign({"a": ["x"], "b": ["x", "y"], "c": ["y"]}, {"x": 2, "y": 3, "gone": 0})
    assert {t for t, _ in out["a"]} == {"x"} and {t for t, _ in out["c"]} == {"y"}
    assert {p for m in ("a", "b") for t, p in out[m] if t == "x"} == {0, 1}
    assert {p for m in ("b", "c") for t, p in out[m] if t == "y"} == {0, 1, 2}


def test_a_member_of_topics_that_do_not_exist_gets_nothing():
    assert assign({"a": ["missing"]}, {}) == {"a": set()}


def test_round_robin_gives_one_past_the_desired_count_before_a_member_leaves_the_rotation():
    """Kafka's roundRobinAssignmentWithCount: a member at the desired count still takes one more."""
    from minikafka.coordinator.share_group.assignor import _round_robin_with_count

    out = {"a": {("t", 0)}, "b": {("t", 1), ("t", 2)}, "c": set()}
    _round_robin_with_count(["a", "b", "c"], [("t", 3), ("t", 4), ("t", 5)], out, desired=1)
    # a: 1 <= 1 takes 3; b: 2 > 1 leaves; c takes 4; a: 2 > 1 leaves; c (1 <= 1) takes 5
    assert out == {"a": {("t", 0), ("t", 3)}, "b": {("t", 1), ("t", 2)}, "c": {("t", 4), ("t", 5)}}


def test_one_topic_list_is_hashed_over_not_each_topic():
    """Homogeneous: the member's hash picks one partition of all subscribed topics together."""
    out = assign({"m": ["x", "y"]}, {"x": 2, "y": 3})
    assert out["m"] == {("x", 0), ("x", 1), ("y", 0), ("y", 1), ("y", 2)}
    two = assign({"m1": ["x", "y"], "m2": ["x", "y"]}, {"x": 2, "y": 3})
    target = [("x", 0), ("x", 1), ("y", 0), ("y", 1), ("y", 2)]
    for m in ("m1", "m2"):
        assert target[abs(string_hash(m)) % 5] in two[m]
