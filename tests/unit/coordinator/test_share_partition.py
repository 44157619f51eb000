"""The share-partition state machine (issue 23): Kafka 4.3's SharePartition rules, without sockets."""

from __future__ import annotations

import pytest

from minikafka.coordinator.share_group.share_coordinator import compress
from minikafka.coordinator.share_group.share_partition import (
    AckBatch,
    AcknowledgeType,
    AcquiredRecords,
    LogBatch,
    RecordState,
    ShareConfig,
    SharePartition,
    StateBatch,
    validate_ack_batches,
)
from minikafka.protocol.errors import ErrorCode

pytestmark = pytest.mark.unit

A, B = "member-a", "member-b"
ACCEPT, RELEASE, REJECT, GAP, RENEW = (AcknowledgeType.ACCEPT, AcknowledgeType.RELEASE, AcknowledgeType.REJECT,
                                       AcknowledgeType.GAP, AcknowledgeType.RENEW)
LOCK = 30_000


def part(limit: int = 5, locks: int = 2000, start: int = 0) -> SharePartition:
    return SharePartition(ShareConfig(delivery_count_limit=limit, max_record_locks=locks, lock_duration_ms=LOCK), start)


def batches(*spans: tuple[int, int]) -> list[LogBatch]:
    return [LogBatch(first, last) for first, last in spans]


def ack(first: int, last: int, *types: int) -> AckBatch:
    return AckBatch(first, last, tuple(types))


def states(sp: SharePartition, first: int, last: int) -> list[tuple[RecordState, int]]:
    return [(sp.records[o].state, sp.records[o].delivery_count) for o in range(first, last + 1)]


# ------------------------------------------------------------------------------ acquisition
def test_the_first_fetch_acquires_whole_batches_with_delivery_count_one():
    sp = part()
    got = sp.acquire(A, batches((0, 4), (5, 9)), max_records=500, now_ms=0)
    assert got == [AcquiredRecords(0, 9, 1)]
    assert (sp.start_offset, sp.end_offset, sp.in_flight) == (0, 9, 10)
    assert all(r.member_id == A and r.lock_deadline_ms == LOCK for r in sp.records.values())


def test_max_records_is_a_soft_limit_a_batch_is_never_split():
    sp = part()
    got = sp.acquire(A, batches((0, 4), (5, 9), (10, 14)), max_records=7, now_ms=0)
    assert got == [AcquiredRecords(0, 9, 1)]  # the second batch is taken whole, the third not
    assert sp.next_fetch_offset() == 10


def test_another_member_gets_the_next_records_and_acquired_ones_are_not_shared():
    sp = part()
    sp.acquire(A, batches((0, 4)), max_records=500, now_ms=0)
    assert sp.next_fetch_offset() == 5
    got = sp.acquire(B, batches((0, 4), (5, 9)), max_records=500, now_ms=0)  # a read from before
    assert got == [AcquiredRecords(5, 9, 1)]
    assert {sp.records[o].member_id for o in range(0, 5)} == {A}


def test_the_in_flight_limit_stops_new_records_but_not_redelivery():
    sp = part(locks=10)
    sp.acquire(A, batches((0, 9)), max_records=500, now_ms=0)
    assert not sp.can_acquire()
    assert sp.acquire(B, batches((10, 19)), max_records=500, now_ms=0) == []
    assert sp.acknowledge(A, [ack(0, 1, RELEASE)], now_ms=1) is ErrorCode.none
    assert sp.can_acquire()
    assert sp.acquire(B, batches((0, 9), (10, 19)), max_records=500, now_ms=2) == [AcquiredRecords(0, 1, 2)]
    assert sp.end_offset == 9  # nothing new while the window is full


def test_an_aborted_transactions_records_are_archived_not_delivered():
    sp = part()
    got = sp.acquire(A, [LogBatch(0, 2), LogBatch(3, 5, aborted=True), LogBatch(6, 6)], max_records=500, now_ms=0)
    assert got == [AcquiredRecords(0, 2, 1), AcquiredRecords(6, 6, 1)]
    assert states(sp, 3, 5) == [(RecordState.ARCHIVED, 1)] * 3


def test_offsets_the_log_no_longer_has_are_archived():
    sp = part()
    sp.acquire(A, batches((0, 3)), max_records=500, now_ms=0)
    got = sp.acquire(A, batches((8, 9)), max_records=500, now_ms=0)  # 4-7 compacted away
    assert got == [AcquiredRecords(8, 9, 1)]
    assert states(sp, 4, 7) == [(RecordState.ARCHIVED, 0)] * 4
    assert sp.acknowledge(A, [ack(0, 3, ACCEPT)], now_ms=1) is ErrorCode.none
    assert sp.start_offset == 8


# ------------------------------------------------------------------------------ acknowledgement
def test_accept_moves_the_start_offset_past_the_leading_final_records():
    sp = part()
    sp.acquire(A, batches((0, 9)), max_records=500, now_ms=0)
    assert sp.acknowledge(A, [ack(3, 9, ACCEPT)], now_ms=1) is ErrorCode.none
    assert sp.start_offset == 0  # 0-2 are still held
    assert sp.acknowledge(A, [ack(0, 2, REJECT)], now_ms=1) is ErrorCode.none
    assert (sp.start_offset, sp.in_flight, sp.records) == (10, 0, {})


def test_one_type_per_offset():
    sp = part()
    sp.acquire(A, batches((0, 3)), max_records=500, now_ms=0)
    assert sp.acknowledge(A, [ack(0, 3, ACCEPT, RELEASE, REJECT, GAP)], now_ms=1) is ErrorCode.none
    assert states(sp, 1, 3) == [(RecordState.AVAILABLE, 1), (RecordState.ARCHIVED, 1), (RecordState.ARCHIVED, 1)]
    assert sp.start_offset == 1 and sp.next_fetch_offset() == 1


def test_acknowledging_anothers_records_or_unacquired_ones_changes_nothing():
    sp = part()
    sp.acquire(A, batches((0, 4)), max_records=500, now_ms=0)
    before = states(sp, 0, 4)
    assert sp.acknowledge(B, [ack(0, 0, ACCEPT)], now_ms=1) is ErrorCode.invalid_record_state
    # all or nothing: a valid first batch is not applied when a later one fails
    assert sp.acknowledge(A, [ack(0, 1, ACCEPT), ack(3, 3, ACCEPT), ack(4, 4, ACCEPT)], now_ms=1) is ErrorCode.none
    assert sp.acknowledge(A, [ack(2, 2, ACCEPT), ack(3, 3, ACCEPT)], now_ms=1) is ErrorCode.invalid_record_state
    assert sp.records[2].state is RecordState.ACQUIRED
    assert before[2] == states(sp, 2, 2)[0]
    assert sp.acknowledge(A, [ack(2, 7, ACCEPT)], now_ms=1) is ErrorCode.invalid_request  # past the window


@pytest.mark.parametrize(("bad", "why"), [
    ([ack(5, 4, ACCEPT)], "first after last"),
    ([ack(0, 4, ACCEPT), ack(3, 6, ACCEPT)], "overlapping"),
    ([ack(0, 4)], "no type"),
    ([ack(0, 4, ACCEPT, ACCEPT)], "neither one type nor one per offset"),
    ([ack(0, 0, 9)], "an unknown type"),
])
def test_malformed_acknowledgements_are_invalid_requests(bad, why):
    assert not validate_ack_batches(bad), why
    sp = part()
    sp.acquire(A, batches((0, 9)), max_records=500, now_ms=0)
    assert sp.acknowledge(A, bad, now_ms=1) is ErrorCode.invalid_request


def test_renew_holds_the_lock_again():
    sp = part()
    sp.acquire(A, batches((0, 0)), max_records=500, now_ms=0)
    assert sp.acknowledge(A, [ack(0, 0, RENEW)], now_ms=LOCK - 1) is ErrorCode.none
    assert sp.expire_locks(LOCK + 1) == []
    assert sp.expire_locks(2 * LOCK - 1) == [0]


# ------------------------------------------------------------------------------ locks and the delivery limit
def test_an_expired_lock_makes_the_records_available_for_anyone():
    sp = part()
    sp.acquire(A, batches((0, 4)), max_records=500, now_ms=0)
    assert sp.next_lock_deadline() == LOCK
    assert sp.expire_locks(LOCK - 1) == []
    assert sp.expire_locks(LOCK) == [0, 1, 2, 3, 4]
    assert sp.acknowledge(A, [ack(0, 0, ACCEPT)], now_ms=LOCK) is ErrorCode.invalid_record_state  # too late
    assert sp.acquire(B, batches((0, 4)), max_records=500, now_ms=LOCK) == [AcquiredRecords(0, 4, 2)]


def test_a_record_delivered_as_often_as_the_limit_allows_is_archived():
    sp = part(limit=3)
    for delivery in (1, 2, 3):
        got = sp.acquire(A, batches((0, 0)), max_records=500, now_ms=delivery * LOCK)
        assert got == [AcquiredRecords(0, 0, delivery)]
        if delivery < 3:
            assert sp.acknowledge(A, [ack(0, 0, RELEASE)], now_ms=delivery * LOCK) is ErrorCode.none
    assert sp.expire_locks(10 * LOCK) == [0]  # the third delivery timed out: archived
    assert (sp.start_offset, sp.records) == (1, {})


def test_a_member_that_leaves_gives_its_records_back_undelivered():
    sp = part(limit=2)
    sp.acquire(A, batches((0, 1)), max_records=500, now_ms=0)
    sp.acknowledge(A, [ack(0, 1, RELEASE)], now_ms=1)
    sp.acquire(A, batches((0, 1)), max_records=500, now_ms=2)  # the second (last) delivery
    sp.acquire(B, batches((2, 3)), max_records=500, now_ms=2)
    assert sp.release_member(A) == [0, 1]
    assert states(sp, 0, 1) == [(RecordState.AVAILABLE, 1)] * 2  # not archived: fetched, not delivered
    assert states(sp, 2, 3) == [(RecordState.ACQUIRED, 1)] * 2


# ------------------------------------------------------------------------------ start offset and persistence
def test_the_log_start_moving_archives_available_records_below_it():
    sp = part()
    sp.acquire(A, batches((0, 9)), max_records=500, now_ms=0)
    sp.acknowledge(A, [ack(0, 4, RELEASE)], now_ms=1)
    sp.log_start_moved(3)
    assert sp.start_offset == 3
    assert 0 not in sp.records and states(sp, 3, 4) == [(RecordState.AVAILABLE, 1)] * 2
    part_empty = part(start=5)
    part_empty.log_start_moved(20)
    assert (part_empty.start_offset, part_empty.next_fetch_offset()) == (20, 20)


def test_what_is_persisted_never_holds_an_acquisition():
    sp = part()
    sp.acquire(A, batches((0, 9)), max_records=500, now_ms=0)
    sp.acknowledge(A, [ack(5, 9, ACCEPT)], now_ms=1)
    sp.acknowledge(A, [ack(2, 2, RELEASE)], now_ms=1)
    sp.acquire(B, batches((2, 2)), max_records=500, now_ms=2)  # redelivered: count 2
    written = compress(sp.take_changes())   # what the share state's writes carried: no acquisition
    assert written == (StateBatch(2, 2, RecordState.AVAILABLE, 1), StateBatch(5, 9, RecordState.ACKNOWLEDGED, 1))
    assert sp.take_changes() == {}
    # After a restart every held record is delivered again, nothing acknowledged is.
    again = SharePartition(sp.config, sp.start_offset, written)
    got = again.acquire(A, batches((0, 9), (10, 11)), max_records=500, now_ms=3)
    assert got == [AcquiredRecords(0, 1, 1), AcquiredRecords(2, 2, 2), AcquiredRecords(3, 4, 1),
                   AcquiredRecords(10, 11, 1)]


def test_a_restart_with_persisted_gaps_redelivers_them():
    sp = SharePartition(ShareConfig(), 10, [StateBatch(13, 14, RecordState.ACKNOWLEDGED, 1)])
    assert (sp.start_offset, sp.end_offset, sp.next_fetch_offset()) == (10, 14, 10)
    got = sp.acquire(A, batches((10, 14), (15, 15)), max_records=500, now_ms=0)
    assert got == [AcquiredRecords(10, 12, 1), AcquiredRecords(15, 15, 1)]


def test_released_records_the_log_lost_to_compaction_are_archived_when_the_read_skips_them():
    sp = part()
    sp.acquire(A, batches((0, 9)), max_records=500, now_ms=0)
    sp.acknowledge(A, [ack(0, 3, ACCEPT), ack(4, 7, RELEASE), ack(8, 9, ACCEPT)], now_ms=1)
    assert (sp.start_offset, sp.next_fetch_offset()) == (4, 4)
    got = sp.acquire(B, batches((8, 9), (10, 11)), max_records=500, now_ms=2)  # the read found 4-7 gone
    assert got == [AcquiredRecords(10, 11, 1)]
    assert sp.start_offset == 10
