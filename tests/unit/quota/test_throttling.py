"""broker/throttling.py without sockets: what a request earns against its client's quotas, and
the answer it gets (a throttled Fetch is answered empty; the largest throttle time wins)."""

from __future__ import annotations

import dataclasses
import datetime

from minikafka.broker.throttling import FETCH, PRODUCE, WRITE_TXN_MARKERS, Throttler, client_throttles
from minikafka.quota.entity import Op
from minikafka.quota.manager import ClientQuotas, QuotaWindows

NOW = 1_700_000_000_000


@dataclasses.dataclass(frozen=True)
class FakeFetchResponse:
    throttle_time: datetime.timedelta
    responses: tuple


@dataclasses.dataclass(frozen=True)
class FakeFetchRequest:
    max_bytes: int


def _throttler(**quotas: float) -> Throttler:
    q = ClientQuotas(QuotaWindows())
    (o,) = q.alter([([("client-id", "c")], [Op(k, v) for k, v in quotas.items()])])
    q.apply(o.entity, o.quotas)
    return Throttler(q, lambda: NOW)


def test_no_quota_no_work() -> None:
    assert not Throttler(ClientQuotas(), lambda: NOW).active
    assert _throttler(controller_mutation_rate=1).active


def test_a_throttled_fetch_is_answered_empty_and_its_bytes_taken_back() -> None:
    t = _throttler(consumer_byte_rate=1000)
    response = FakeFetchResponse(datetime.timedelta(0), ("partition data",))
    done = t.finish(FETCH, "c", 100, response, response_size=30_000, busy_ns=0)
    assert done.throttle_ms == 20_000  # (3000 - 1000) / 1000 x 10 s
    assert done.response == FakeFetchResponse(datetime.timedelta(milliseconds=20_000), ())
    # The bytes were not sent, so they do not count: a small fetch right after is not throttled.
    assert t.finish(FETCH, "c", 100, response, response_size=5_000, busy_ns=0).throttle_ms == 0


def test_a_fetch_never_asks_for_more_than_one_window_allows() -> None:
    t = _throttler(consumer_byte_rate=1000)
    assert t.prepare(FETCH, "c", FakeFetchRequest(52_428_800)).max_bytes == 10_000
    assert t.prepare(FETCH, "other", FakeFetchRequest(52_428_800)).max_bytes == 52_428_800


def test_produce_counts_request_bytes_and_the_handlers_throttle_time_is_kept() -> None:
    t = _throttler(producer_byte_rate=1000)
    assert t.finish(PRODUCE, "c", 15_000, None, 0, 0).throttle_ms == 5_000  # acks=0: still muted
    handler_set = FakeFetchResponse(datetime.timedelta(milliseconds=90_000), ())
    assert t.finish(PRODUCE, "c", 1, handler_set, 0, 0).throttle_ms == 90_000


def test_request_time_is_bounded_by_one_window_and_inter_broker_requests_are_exempt() -> None:
    t = _throttler(request_percentage=1)
    # 5 s of loop time in one go: 50% over 10 s against 1%, bounded by one 1 s window.
    assert t.finish(PRODUCE, "c", 1, None, 0, busy_ns=5_000_000_000).throttle_ms == 1000
    assert t.finish(WRITE_TXN_MARKERS, "c", 1, None, 0, busy_ns=5_000_000_000).throttle_ms == 0


def test_old_produce_and_fetch_versions_get_their_answer_delayed() -> None:
    assert not client_throttles(PRODUCE, 5) and client_throttles(PRODUCE, 6)
    assert not client_throttles(FETCH, 7) and client_throttles(FETCH, 8)
    assert client_throttles(19, 2)


async def test_request_time_counts_the_handlers_steps_not_its_waits() -> None:
    import asyncio

    async def handler() -> str:
        await asyncio.sleep(0.5)  # parked (a Fetch waiting for data): not the broker's time
        sum(range(10_000))
        return "answer"

    t = _throttler(request_percentage=50)
    response, busy_ns = await t.run(handler())
    assert response == "answer"
    assert 0 < busy_ns < 400_000_000
