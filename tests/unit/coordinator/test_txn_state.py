"""The transaction state machine as a table: every (state, event) pair, Kafka's ids and previous states."""

from __future__ import annotations

import dataclasses
import itertools

import pytest

from minikafka.coordinator.transaction.state import (
    ALLOWED_PREVIOUS,
    MAX_EPOCH,
    NO_PRODUCER_EPOCH,
    TRANSITIONS,
    IllegalTransition,
    TxnEvent,
    TxnMetadata,
    TxnState,
    transition,
)
from minikafka.protocol.types import TopicPartition

pytestmark = pytest.mark.unit

S, E = TxnState, TxnEvent

# The legal moves, written out independently of state.py; every other pair of the product is illegal.
LEGAL: dict[tuple[TxnState, TxnEvent], TxnState] = {
    (S.EMPTY, E.INIT_PRODUCER_ID): S.EMPTY,
    (S.COMPLETE_COMMIT, E.INIT_PRODUCER_ID): S.EMPTY,
    (S.COMPLETE_ABORT, E.INIT_PRODUCER_ID): S.EMPTY,
    (S.EMPTY, E.ADD_PARTITIONS): S.ONGOING,
    (S.EMPTY, E.END_ABORT): S.PREPARE_ABORT,
    (S.COMPLETE_COMMIT, E.END_ABORT): S.PREPARE_ABORT,
    (S.COMPLETE_ABORT, E.END_ABORT): S.PREPARE_ABORT,
    (S.COMPLETE_COMMIT, E.ADD_PARTITIONS): S.ONGOING,
    (S.COMPLETE_ABORT, E.ADD_PARTITIONS): S.ONGOING,
    (S.ONGOING, E.ADD_PARTITIONS): S.ONGOING,
    (S.EMPTY, E.EXPIRED): S.DEAD,
    (S.COMPLETE_COMMIT, E.EXPIRED): S.DEAD,
    (S.COMPLETE_ABORT, E.EXPIRED): S.DEAD,
    (S.ONGOING, E.END_COMMIT): S.PREPARE_COMMIT,
    (S.ONGOING, E.END_ABORT): S.PREPARE_ABORT,
    (S.ONGOING, E.FENCE): S.PREPARE_EPOCH_FENCE,
    (S.PREPARE_EPOCH_FENCE, E.ABORT_FENCED): S.PREPARE_ABORT,
    (S.PREPARE_COMMIT, E.MARKERS_WRITTEN): S.COMPLETE_COMMIT,
    (S.PREPARE_ABORT, E.MARKERS_WRITTEN): S.COMPLETE_ABORT,
}

# Kafka's TransactionState.validPreviousStates, transactions v1 (protocol.md section 9).
KAFKA_VALID_PREVIOUS: dict[TxnState, frozenset[TxnState]] = {
    S.EMPTY: frozenset({S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT}),
    S.ONGOING: frozenset({S.ONGOING, S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT}),
    S.PREPARE_COMMIT: frozenset({S.ONGOING}),
    # Kafka 4.x (TransactionState.java): from EMPTY/COMPLETE_* too, a TV2 EndTxn(abort)
    S.PREPARE_ABORT: frozenset({S.ONGOING, S.PREPARE_EPOCH_FENCE, S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT}),
    S.COMPLETE_COMMIT: frozenset({S.PREPARE_COMMIT}),
    S.COMPLETE_ABORT: frozenset({S.PREPARE_ABORT}),
    S.DEAD: frozenset({S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT}),
    S.PREPARE_EPOCH_FENCE: frozenset({S.ONGOING}),
}

# Kafka's TransactionStatus ids (the int8 in __transaction_state) and Java enum names.
KAFKA_IDS = {
    "Empty": 0, "Ongoing": 1, "PrepareCommit": 2, "PrepareAbort": 3,
    "CompleteCommit": 4, "CompleteAbort": 5, "Dead": 6, "PrepareEpochFence": 7,
}

T0 = TopicPartition("t", 0)
T1 = TopicPartition("t", 1)
U0 = TopicPartition("u", 0)


def meta(state: TxnState = S.EMPTY, *, producer_id: int = 42, epoch: int = 3,
         partitions: frozenset[TopicPartition] = frozenset()) -> TxnMetadata:
    return TxnMetadata(transactional_id="txn", producer_id=producer_id, producer_epoch=epoch, timeout_ms=60_000,
                       state=state, partitions=partitions, start_ms=100, last_update_ms=100)


# ---------------------------------------------------------------------------------- the table
@pytest.mark.parametrize(("state", "event"), list(itertools.product(TxnState, TxnEvent)),
                         ids=lambda v: v.name)
def test_every_pair_is_a_transition_or_illegal(state: TxnState, event: TxnEvent) -> None:
    expected = LEGAL.get((state, event))
    m = meta(state)
    if expected is None:
        assert (state, event) not in TRANSITIONS
        with pytest.raises(IllegalTransition) as info:
            transition(m, event)
        assert (info.value.state, info.value.event) == (state, event)
    else:
        assert TRANSITIONS[(state, event)] is expected
        assert transition(m, event).state is expected


def test_table_has_no_pairs_beyond_the_legal_ones() -> None:
    assert dict(TRANSITIONS) == LEGAL


def test_table_is_read_only() -> None:
    with pytest.raises(TypeError):
        TRANSITIONS[(S.DEAD, E.INIT_PRODUCER_ID)] = S.EMPTY  # type: ignore[index]


def test_illegal_transition_is_an_exception_not_an_assert() -> None:
    # `python -O` strips asserts; an illegal move must still stop the coordinator.
    assert issubclass(IllegalTransition, Exception)
    assert not issubclass(IllegalTransition, AssertionError)


@pytest.mark.parametrize("state", list(TxnState), ids=lambda s: s.name)
def test_allowed_previous_matches_kafka(state: TxnState) -> None:
    assert ALLOWED_PREVIOUS[state] == KAFKA_VALID_PREVIOUS[state]


def test_allowed_previous_covers_every_state() -> None:
    assert dict(ALLOWED_PREVIOUS) == KAFKA_VALID_PREVIOUS


def test_every_state_reachable_from_empty() -> None:
    seen, frontier = {S.EMPTY}, [S.EMPTY]
    while frontier:
        src = frontier.pop()
        for (s, _e), dst in TRANSITIONS.items():
            if s is src and dst not in seen:
                seen.add(dst)
                frontier.append(dst)
    assert seen == set(TxnState)


@pytest.mark.parametrize("state", [s for s in TxnState if s is not S.DEAD], ids=lambda s: s.name)
def test_only_dead_is_terminal(state: TxnState) -> None:
    assert any(s is state for s, _e in TRANSITIONS)


def test_dead_is_terminal() -> None:
    assert not any(s is S.DEAD for s, _e in TRANSITIONS)


@pytest.mark.parametrize(("kafka_name", "kafka_id"), list(KAFKA_IDS.items()))
def test_state_values_are_kafka_ids(kafka_name: str, kafka_id: int) -> None:
    state = TxnState(kafka_id)
    assert state.kafka_name == kafka_name


def test_state_ids_are_exactly_0_to_7() -> None:
    assert sorted(s.value for s in TxnState) == list(range(8))


# ---------------------------------------------------------------------------------- invariants
def test_transition_returns_a_new_value_and_keeps_the_old() -> None:
    before = meta(S.EMPTY)
    after = transition(before, E.ADD_PARTITIONS, partitions=frozenset({T0}), start_ms=500, last_update_ms=500)
    assert before.state is S.EMPTY and before.partitions == frozenset()
    assert after == dataclasses.replace(before, state=S.ONGOING, partitions=frozenset({T0}), start_ms=500,
                                        last_update_ms=500, previous_producer_id=before.producer_id)


def test_the_previous_producer_id_is_the_one_before_the_transition() -> None:
    """As Kafka 4.3.1 writes it in every TransactionLogValue v1 (its prepareTransitionTo): the
    producer's own id, unless the transition rotates to a new one."""
    before = meta(S.EMPTY)
    assert before.previous_producer_id == -1
    assert transition(before, E.INIT_PRODUCER_ID).previous_producer_id == before.producer_id
    rotated = transition(before, E.INIT_PRODUCER_ID, producer_id=before.producer_id + 1, producer_epoch=0)
    assert (rotated.producer_id, rotated.previous_producer_id) == (before.producer_id + 1, before.producer_id)


@pytest.mark.parametrize("new_epoch", [3, 4], ids=["same", "plus-one"])
def test_epoch_may_stay_or_grow_by_one(new_epoch: int) -> None:
    assert transition(meta(S.EMPTY, epoch=3), E.INIT_PRODUCER_ID, producer_epoch=new_epoch).producer_epoch \
        == new_epoch


@pytest.mark.parametrize("new_epoch", [5, 2, 0, NO_PRODUCER_EPOCH], ids=["plus-two", "minus-one", "zero", "none"])
def test_epoch_may_not_jump_for_the_same_producer_id(new_epoch: int) -> None:
    with pytest.raises(IllegalTransition):
        transition(meta(S.EMPTY, epoch=3), E.INIT_PRODUCER_ID, producer_epoch=new_epoch)


def test_a_new_producer_id_may_restart_at_epoch_zero() -> None:
    old = meta(S.COMPLETE_COMMIT, epoch=MAX_EPOCH - 1)
    new = transition(old, E.INIT_PRODUCER_ID, producer_id=43, previous_producer_id=42, producer_epoch=0)
    assert (new.producer_id, new.producer_epoch, new.previous_producer_id) == (43, 0, 42)


def test_first_epoch_of_a_new_id() -> None:
    fresh = meta(S.EMPTY, epoch=NO_PRODUCER_EPOCH)
    assert transition(fresh, E.INIT_PRODUCER_ID, producer_epoch=0).producer_epoch == 0


def test_fence_bumps_by_one() -> None:
    fenced = transition(meta(S.ONGOING, epoch=3), E.FENCE, producer_epoch=4)
    assert (fenced.state, fenced.producer_epoch) == (S.PREPARE_EPOCH_FENCE, 4)
    with pytest.raises(IllegalTransition):
        transition(meta(S.ONGOING, epoch=3), E.FENCE, producer_epoch=5)


def test_partitions_grow_while_ongoing() -> None:
    ongoing = meta(S.ONGOING, partitions=frozenset({T0}))
    grown = transition(ongoing, E.ADD_PARTITIONS, partitions=frozenset({T0, T1, U0}))
    assert grown.partitions == {T0, T1, U0}


@pytest.mark.parametrize("partitions", [frozenset(), frozenset({T1}), frozenset({U0, T1})],
                         ids=["emptied", "replaced", "swapped"])
def test_partitions_never_shrink_while_ongoing(partitions: frozenset[TopicPartition]) -> None:
    ongoing = meta(S.ONGOING, partitions=frozenset({T0, T1}))
    with pytest.raises(IllegalTransition):
        transition(ongoing, E.ADD_PARTITIONS, partitions=partitions)


def test_partitions_are_cleared_when_markers_are_written() -> None:
    prepared = meta(S.PREPARE_COMMIT, partitions=frozenset({T0, T1}))
    done = transition(prepared, E.MARKERS_WRITTEN, partitions=frozenset())
    assert (done.state, done.partitions) == (S.COMPLETE_COMMIT, frozenset())


def test_a_new_transaction_may_start_with_any_partitions() -> None:
    done = meta(S.COMPLETE_ABORT, partitions=frozenset())
    assert transition(done, E.ADD_PARTITIONS, partitions=frozenset({U0})).partitions == {U0}


@pytest.mark.parametrize(("epoch", "exhausted"), [(0, False), (MAX_EPOCH - 2, False), (MAX_EPOCH - 1, True),
                                                   (MAX_EPOCH, True)])
def test_epoch_exhausted_like_kafka(epoch: int, exhausted: bool) -> None:
    # TransactionMetadata.isEpochExhausted: epoch >= Short.MAX_VALUE - 1
    assert MAX_EPOCH == 32767
    assert meta(epoch=epoch).epoch_exhausted is exhausted
