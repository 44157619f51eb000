"""RequestMemoryPool (queued.max.request.bytes): grants in order, back-pressure, cancellation."""

from __future__ import annotations

import asyncio

import pytest

from minikafka.broker.request_memory import RequestMemoryPool

pytestmark = pytest.mark.unit


async def test_grants_wait_for_releases_first_come_first_served() -> None:
    pool = RequestMemoryPool(100)
    assert await pool.reserve(60) == 60
    big = asyncio.create_task(pool.reserve(70))
    small = asyncio.create_task(pool.reserve(10))
    await asyncio.sleep(0)
    assert not big.done() and not small.done()  # the small one queues behind the big one
    pool.release(60)
    assert await big == 70 and await small == 10
    assert pool.available == 20 and pool.in_use == 80


async def test_a_cancelled_waiter_gives_its_turn_away() -> None:
    pool = RequestMemoryPool(100)
    await pool.reserve(90)
    waiting = asyncio.create_task(pool.reserve(50))
    behind = asyncio.create_task(pool.reserve(5))
    await asyncio.sleep(0)
    waiting.cancel()
    await asyncio.gather(waiting, return_exceptions=True)
    assert await asyncio.wait_for(behind, 1) == 5
    pool.release(90)
    pool.release(5)
    assert pool.available == 100


async def test_requests_larger_than_the_pool_are_capped() -> None:
    pool = RequestMemoryPool(100)
    assert await pool.reserve(500) == 100
    pool.release(100)
    assert pool.available == 100


async def test_try_reserve_grants_only_what_reserve_would_grant_at_once() -> None:
    # The fast lane's grant (broker/connection.py): now or not at all, never before a waiter.
    pool = RequestMemoryPool(100)
    assert pool.try_reserve(60) == 60
    assert pool.try_reserve(50) == 0 and pool.available == 40
    waiting = asyncio.create_task(pool.reserve(50))
    await asyncio.sleep(0)
    assert pool.try_reserve(10) == 0  # 40 are free, but the waiter comes first
    pool.release(60)
    assert await waiting == 50
    pool.release(50)
    assert pool.try_reserve(500) == 100  # capped at the capacity, as reserve is
    assert pool.available == 0
