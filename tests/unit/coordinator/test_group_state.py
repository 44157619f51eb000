"""The classic group state machine as a table: every (state, event) pair, Kafka's previous states."""

from __future__ import annotations

import itertools

import pytest

from minikafka.coordinator.group.state import (
    ALLOWED_PREVIOUS,
    TRANSITIONS,
    Group,
    GroupEvent,
    GroupState,
    IllegalTransition,
    Member,
    next_state,
)

pytestmark = pytest.mark.unit

S, E = GroupState, GroupEvent

# The full product, written out: None means "illegal" (IllegalTransition).
EXPECTED: dict[tuple[GroupState, GroupEvent], GroupState | None] = {
    (S.EMPTY, E.MEMBER_JOINED): S.PREPARING_REBALANCE,
    (S.EMPTY, E.MEMBER_REMOVED): None,
    (S.EMPTY, E.JOIN_COMPLETED): None,
    (S.EMPTY, E.JOIN_COMPLETED_EMPTY): None,
    (S.EMPTY, E.ASSIGNMENT_STORED): None,
    (S.EMPTY, E.DELETED): S.DEAD,
    (S.PREPARING_REBALANCE, E.MEMBER_JOINED): S.PREPARING_REBALANCE,
    (S.PREPARING_REBALANCE, E.MEMBER_REMOVED): S.PREPARING_REBALANCE,
    (S.PREPARING_REBALANCE, E.JOIN_COMPLETED): S.COMPLETING_REBALANCE,
    (S.PREPARING_REBALANCE, E.JOIN_COMPLETED_EMPTY): S.EMPTY,
    (S.PREPARING_REBALANCE, E.ASSIGNMENT_STORED): None,
    (S.PREPARING_REBALANCE, E.DELETED): None,
    (S.COMPLETING_REBALANCE, E.MEMBER_JOINED): S.PREPARING_REBALANCE,
    (S.COMPLETING_REBALANCE, E.MEMBER_REMOVED): S.PREPARING_REBALANCE,
    (S.COMPLETING_REBALANCE, E.JOIN_COMPLETED): None,
    (S.COMPLETING_REBALANCE, E.JOIN_COMPLETED_EMPTY): None,
    (S.COMPLETING_REBALANCE, E.ASSIGNMENT_STORED): S.STABLE,
    (S.COMPLETING_REBALANCE, E.DELETED): None,
    (S.STABLE, E.MEMBER_JOINED): S.PREPARING_REBALANCE,
    (S.STABLE, E.MEMBER_REMOVED): S.PREPARING_REBALANCE,
    (S.STABLE, E.JOIN_COMPLETED): None,
    (S.STABLE, E.JOIN_COMPLETED_EMPTY): None,
    (S.STABLE, E.ASSIGNMENT_STORED): None,
    (S.STABLE, E.DELETED): None,
    (S.DEAD, E.MEMBER_JOINED): None,
    (S.DEAD, E.MEMBER_REMOVED): None,
    (S.DEAD, E.JOIN_COMPLETED): None,
    (S.DEAD, E.JOIN_COMPLETED_EMPTY): None,
    (S.DEAD, E.ASSIGNMENT_STORED): None,
    (S.DEAD, E.DELETED): S.DEAD,
}


def test_expected_covers_every_pair() -> None:
    assert set(EXPECTED) == set(itertools.product(GroupState, GroupEvent))


@pytest.mark.parametrize(("state", "event"), list(itertools.product(GroupState, GroupEvent)),
                         ids=lambda v: v.name)
def test_every_state_and_event(state: GroupState, event: GroupEvent) -> None:
    expected = EXPECTED[(state, event)]
    if expected is None:
        assert (state, event) not in TRANSITIONS
        with pytest.raises(IllegalTransition):
            next_state(state, event)
    else:
        assert next_state(state, event) is expected


def test_allowed_previous_matches_kafka() -> None:
    """ClassicGroupState.java validPreviousStates (Dead's set is wider in Kafka because unloading a
    partition kills groups in any state; here only deletion of an Empty group leads there)."""
    assert ALLOWED_PREVIOUS[S.PREPARING_REBALANCE] == {S.STABLE, S.COMPLETING_REBALANCE, S.EMPTY,
                                                       S.PREPARING_REBALANCE}
    assert ALLOWED_PREVIOUS[S.COMPLETING_REBALANCE] == {S.PREPARING_REBALANCE}
    assert ALLOWED_PREVIOUS[S.STABLE] == {S.COMPLETING_REBALANCE}
    assert ALLOWED_PREVIOUS[S.EMPTY] == {S.PREPARING_REBALANCE}
    assert ALLOWED_PREVIOUS[S.DEAD] == {S.EMPTY, S.DEAD}


def test_every_state_reachable_from_empty() -> None:
    seen = {S.EMPTY}
    frontier = [S.EMPTY]
    while frontier:
        s = frontier.pop()
        for (src, _e), dst in TRANSITIONS.items():
            if src is s and dst not in seen:
                seen.add(dst)
                frontier.append(dst)
    assert seen == set(GroupState)


def _member(mid: str, *protocols: str) -> Member:
    return Member(member_id=mid, rebalance_timeout_ms=1000, session_timeout_ms=1000,
                  protocols=tuple((p, b"") for p in protocols))


@pytest.mark.parametrize(("members", "expected"), [
    ({}, None),
    ({"a": ("range", "roundrobin")}, "range"),
    ({"a": ("range", "roundrobin"), "b": ("roundrobin", "range"), "c": ("roundrobin",)}, "roundrobin"),
    ({"a": ("range",), "b": ("roundrobin",)}, None),
    ({"a": ("cooperative-sticky", "range"), "b": ("cooperative-sticky", "range")}, "cooperative-sticky"),
])
def test_select_protocol(members: dict[str, tuple[str, ...]], expected: str | None) -> None:
    g = Group(group_id="g", members={m: _member(m, *p) for m, p in members.items()})
    assert g.select_protocol() == expected


def test_supports_protocols() -> None:
    g = Group(group_id="g", protocol_type="consumer", members={"a": _member("a", "range", "roundrobin")})
    assert g.supports_protocols("consumer", ("roundrobin",))
    assert not g.supports_protocols("consumer", ("sticky",))
    assert not g.supports_protocols("connect", ("range",))
    assert not g.supports_protocols("consumer", ())
    assert Group(group_id="e").supports_protocols("anything", ("x",))
