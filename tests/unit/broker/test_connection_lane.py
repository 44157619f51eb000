"""The fast lane's hand-over (broker/connection.py): a coroutine started by hand in the read
callback, suspended on a future, goes on in a task as if the task had run it from the start."""

from __future__ import annotations

import asyncio

import pytest

from minikafka.broker.connection import _resume

pytestmark = pytest.mark.unit


async def _in_task(coro, waits_on):
    async def lane():
        return await _resume(coro, waits_on)
    return asyncio.get_running_loop().create_task(lane())


async def test_a_suspended_coroutine_finishes_in_the_task() -> None:
    loop = asyncio.get_running_loop()
    first, second = loop.create_future(), loop.create_future()
    seen = []

    async def handler():
        seen.append(await first)
        await asyncio.sleep(0)  # a bare yield: the task steps it again
        seen.append(await second)
        return sum(seen)

    coro = handler()
    waits_on = coro.send(None)
    assert waits_on is first
    task = await _in_task(coro, waits_on)
    first.set_result(40)
    await asyncio.sleep(0)
    assert not task.done()
    second.set_result(2)
    assert await task == 42
    assert seen == [40, 2]


async def test_an_exception_set_on_the_awaited_future_reaches_the_coroutine() -> None:
    fut = asyncio.get_running_loop().create_future()

    async def handler():
        try:
            await fut
        except ValueError as exc:
            return f"caught {exc}"
        return "not raised"

    coro = handler()
    task = await _in_task(coro, coro.send(None))
    fut.set_exception(ValueError("boom"))
    assert await task == "caught boom"


async def test_an_exception_the_coroutine_raises_fails_the_task() -> None:
    fut = asyncio.get_running_loop().create_future()

    async def handler():
        await fut
        raise KeyError("late")

    coro = handler()
    task = await _in_task(coro, coro.send(None))
    fut.set_result(None)
    with pytest.raises(KeyError):
        await task


async def test_cancelling_the_task_cancels_the_coroutine_where_it_waits() -> None:
    fut = asyncio.get_running_loop().create_future()
    cleaned = []

    async def handler():
        try:
            await fut
        finally:
            cleaned.append(True)

    coro = handler()
    task = await _in_task(coro, coro.send(None))
    await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert cleaned == [True]
    assert fut.cancelled()  # the task cancelled the future the coroutine waited on, as for any task
