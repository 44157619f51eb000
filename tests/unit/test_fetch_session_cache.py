"""The fetch session cache (KIP-227) without sockets: contexts, what an incremental answer keeps,
partition rotation, epochs and eviction, as Kafka 4.3's FetchManager / FetchSessionCacheShard."""

from __future__ import annotations

import itertools

import pytest

from minikafka.broker.fetch_sessions import (
    EVICTION_MS,
    FINAL_EPOCH,
    FetchSessionCache,
    Read,
    Wanted,
    next_epoch,
)
from minikafka.protocol.errors import ErrorCode
from minikafka.protocol.types import TopicPartition

pytestmark = pytest.mark.unit

T0, T1, T2 = (TopicPartition("t", p) for p in range(3))


def ids() -> FetchSessionCache:
    counter = itertools.count(100)
    return FetchSessionCache(3, new_id=lambda: next(counter))


def open_session(cache: FetchSessionCache, parts=(T0, T1, T2), now: int = 0, hw: int = 5) -> int:
    ctx = cache.new_context(12, 0, 0, [Wanted(tp, 0, 1000) for tp in parts], [], now)
    assert ctx.kind == "full"
    error, sid, send = cache.answer(ctx, [Read(tp, True, hw, 0, ErrorCode.none) for tp in parts], now, 0)
    assert error is ErrorCode.none and send == list(parts)
    return sid


def test_epochs() -> None:
    assert (next_epoch(0), next_epoch(1), next_epoch(2**31 - 1), next_epoch(-1)) == (1, 2, 1, FINAL_EPOCH)


def test_full_then_incremental_sends_only_changes_and_rotates() -> None:
    cache = ids()
    sid = open_session(cache)
    assert sid == 100 and cache.sessions[sid].epoch == 1
    ctx = cache.new_context(12, sid, 1, [Wanted(T1, 7, 1000)], [], 10)
    assert ctx.kind == "incremental" and [w.tp for w in ctx.partitions] == [T0, T1, T2]
    assert ctx.partitions[1].fetch_offset == 7 and cache.sessions[sid].epoch == 2
    read = [Read(T0, False, 5, 0, ErrorCode.none), Read(T1, True, 9, 0, ErrorCode.none),
            Read(T2, False, 6, 0, ErrorCode.none)]
    error, got_sid, send = cache.answer(ctx, read, 10, 1)
    assert (error, got_sid, send) == (ErrorCode.none, sid, [T1, T2])   # records; a moved watermark
    # T1 returned records: it goes to the back of the session.
    assert list(cache.sessions[sid].partitions) == [T0, T2, T1]


def test_errors_are_always_sent_and_resent_when_gone() -> None:
    cache = ids()
    sid = open_session(cache, (T0,))
    ctx = cache.new_context(12, sid, 1, [], [], 1)
    assert cache.answer(ctx, [Read(T0, False, -1, -1, ErrorCode.unknown_topic_or_partition)], 1, 1)[2] == [T0]
    ctx = cache.new_context(12, sid, 2, [], [], 2)
    assert cache.answer(ctx, [Read(T0, False, 5, 0, ErrorCode.none)], 2, 2)[2] == [T0]   # back to normal: sent


def test_session_errors_and_closing() -> None:
    cache = ids()
    sid = open_session(cache)
    assert cache.new_context(12, sid, 5, [], [], 0).error is ErrorCode.invalid_fetch_session_epoch
    assert cache.new_context(12, 999, 1, [], [], 0).error is ErrorCode.fetch_session_id_not_found
    assert cache.new_context(13, sid, 1, [], [], 0).error is ErrorCode.fetch_session_topic_id_error
    assert cache.sessions[sid].epoch == 1   # errors change nothing
    closing = cache.new_context(12, sid, FINAL_EPOCH, [Wanted(T0, 0, 10)], [], 0)
    assert closing.kind == "sessionless" and sid not in cache.sessions
    sid2 = open_session(cache)
    ctx = cache.new_context(12, sid2, 1, [], [T0, T1, T2], 0)
    assert ctx.kind == "sessionless" and sid2 not in cache.sessions   # everything forgotten


def test_a_session_used_twice_at_once_is_refused_at_answer_time() -> None:
    cache = ids()
    sid = open_session(cache)
    first = cache.new_context(12, sid, 1, [], [], 0)
    second = cache.new_context(12, sid, 2, [], [], 0)   # the client moved on before the answer
    assert cache.answer(first, [], 0, 1)[0] is ErrorCode.invalid_fetch_session_epoch
    assert cache.answer(second, [], 0, 2)[0] is ErrorCode.none


def test_eviction_as_kafka() -> None:
    cache = ids()
    a = open_session(cache, (T0,), now=0)
    b = open_session(cache, (T0, T1), now=0)
    c = open_session(cache, (T0, T1, T2), now=0)
    # Full, nothing stale nor old enough: no session for the newcomer.
    ctx = cache.new_context(12, 0, 0, [Wanted(T0, 0, 1)], [], 1000)
    assert cache.answer(ctx, [Read(T0, False, 0, 0, ErrorCode.none)], 1000, 0)[1] == 0
    # Past the eviction time, the stalest (least recently used) goes, whatever its size.
    cache.new_context(12, c, 1, [], [], EVICTION_MS - 10)   # c used recently
    now = EVICTION_MS + 50
    ctx = cache.new_context(12, 0, 0, [Wanted(T0, 0, 1)], [], now)
    new = cache.answer(ctx, [Read(T0, False, 0, 0, ErrorCode.none)], now, 0)[1]
    assert new != 0 and a not in cache.sessions and {b, c} <= set(cache.sessions)
    # No stale one left: an old session smaller than the newcomer makes room for it.
    cache.new_context(12, b, 1, [], [], now)
    cache.new_context(12, c, 2, [], [], now)
    cache.new_context(12, new, 1, [], [], now)
    ctx = cache.new_context(12, 0, 0, [Wanted(tp, 0, 1) for tp in (T0, T1, T2)], [], now + 1)
    big = cache.answer(ctx, [Read(tp, False, 0, 0, ErrorCode.none) for tp in (T0, T1, T2)], now + 1, 0)[1]
    assert big != 0 and b not in cache.sessions and new in cache.sessions   # new is too young to evict


def test_no_sessions_when_the_cache_has_no_slots() -> None:
    cache = FetchSessionCache(0)
    ctx = cache.new_context(12, 0, 0, [Wanted(T0, 0, 1)], [], 0)
    assert cache.answer(ctx, [Read(T0, True, 1, 0, ErrorCode.none)], 0, 0) == (ErrorCode.none, 0, [T0])
