"""Where client quotas meet requests: the throttle time of each answer and how long its
connection stays muted (Kafka's ClientQuotaManager / ClientRequestQuotaManager as KafkaApis uses
them). The quotas themselves are minikafka/quota, pure; this module only measures requests.

For every request, when quotas are set:
- request_percentage: the time the event loop spent on the request (decode, handler steps, encode;
  not the time a Fetch sat parked) as a percentage of one thread, per second;
- producer_byte_rate: a Produce request's size;
- consumer_byte_rate: a Fetch response's size; a throttled Fetch is answered empty (its bytes are
  taken back), and a Fetch never asks for more than the quota allows in one window;
- the answer carries the largest throttle time earned, and the connection reads nothing more for
  that long (KIP-219: the client waits as well). Clients too old to wait themselves (Produce v3-5,
  Fetch v4-7) get the answer only after the throttle time, as Kafka delays it for them.
Controller mutations (CreateTopics, CreatePartitions, DeleteTopics) are counted by their handlers
through MutationQuota; connection_creation_rate by the listener.
"""

from __future__ import annotations

import dataclasses
import datetime
import time
from collections.abc import Awaitable, Generator
from typing import Any

from minikafka.config import BrokerConfig
from minikafka.quota.entity import CONSUMER_BYTE_RATE, CONTROLLER_MUTATION_RATE, PRODUCER_BYTE_RATE, REQUEST_PERCENTAGE
from minikafka.quota.manager import ANONYMOUS, ClientQuotas, QuotaWindows

PRODUCE, FETCH, WRITE_TXN_MARKERS = 0, 1, 27
# Versions from which the client itself waits out a throttle time (KIP-219); older ones are
# throttled by delaying the answer. Every other API minikafka serves is past its threshold.
CLIENT_THROTTLES_SINCE = {PRODUCE: 6, FETCH: 8}
EXEMPT = frozenset({WRITE_TXN_MARKERS})  # inter-broker (cluster action) requests are never throttled
NANOS_TO_PERCENT = 100.0 / 1e9  # Kafka's NanosToPercentagePerSecond


def quota_windows(config: BrokerConfig) -> QuotaWindows:
    return QuotaWindows(samples=int(config["quota.window.num"]),
                        window_ms=int(config["quota.window.size.seconds"]) * 1000,
                        controller_samples=int(config["controller.quota.window.num"]),
                        controller_window_ms=int(config["controller.quota.window.size.seconds"]) * 1000)


def client_throttles(api_key: int, api_version: int) -> bool:
    return api_version >= CLIENT_THROTTLES_SINCE.get(api_key, 0)


class _Timed:
    """Await a coroutine, adding up the time spent running its steps (not the time it waits):
    a request's share of the one event-loop thread."""

    def __init__(self, coro: Any) -> None:
        self.coro = coro
        self.ns = 0

    def __await__(self) -> Generator[Any, Any, Any]:
        coro, send, error = self.coro, None, None
        while True:
            start = time.perf_counter_ns()
            try:
                yielded = coro.throw(error) if error is not None else coro.send(send)
            except StopIteration as stop:
                self.ns += time.perf_counter_ns() - start
                return stop.value
            except BaseException:
                self.ns += time.perf_counter_ns() - start
                raise
            self.ns += time.perf_counter_ns() - start
            try:
                send, error = (yield yielded), None
            except BaseException as exc:  # thrown into us (cancellation): pass it on
                send, error = None, exc


@dataclasses.dataclass(slots=True)
class Throttled:
    response: Any
    throttle_ms: int = 0


class Throttler:
    def __init__(self, quotas: ClientQuotas, now_ms: Any) -> None:
        self.quotas = quotas
        self._now_ms = now_ms

    @property
    def active(self) -> bool:
        """Whether any quota on requests is set (else requests skip all of this); a
        controller_mutation_rate counts too, as its throttle time (set by the handler) mutes."""
        return self.quotas.throttles_requests

    def prepare(self, api_key: int, client_id: str | None, body: Any) -> Any:
        """A Fetch asks for at most what the consumer quota allows in one window (else every
        answer to it would be throttled and the consumer would starve)."""
        if api_key != FETCH or not self.quotas.enabled(CONSUMER_BYTE_RATE):
            return body
        cap = self.quotas.max_in_window(CONSUMER_BYTE_RATE, ANONYMOUS, client_id or "")
        if cap is None or body.max_bytes <= cap:
            return body
        return dataclasses.replace(body, max_bytes=type(body.max_bytes)(max(1, int(cap))))

    async def run(self, handler_call: Awaitable[Any]) -> tuple[Any, int]:
        """The handler's response and the loop time it took (ns), when request quotas are set."""
        if not self.quotas.enabled(REQUEST_PERCENTAGE):
            return await handler_call, 0
        timed = _Timed(handler_call)
        response = await timed
        return response, timed.ns

    def finish(self, api_key: int, client_id: str | None, request_size: int, response: Any,
               response_size: int, busy_ns: int) -> Throttled:
        """Record the request against the client's quotas; its answer with the throttle time set."""
        if api_key in EXEMPT:
            return Throttled(response)
        now = self._now_ms()
        cid = client_id or ""
        q = self.quotas
        throttle = 0
        if q.enabled(REQUEST_PERCENTAGE):
            throttle = min(q.record(REQUEST_PERCENTAGE, ANONYMOUS, cid, busy_ns * NANOS_TO_PERCENT, now),
                           q.windows.window_ms)  # Kafka bounds request throttling by one window
        if api_key == PRODUCE:
            throttle = max(throttle, q.record(PRODUCER_BYTE_RATE, ANONYMOUS, cid, request_size, now))
        elif api_key == FETCH and response is not None and q.enabled(CONSUMER_BYTE_RATE):
            fetch_throttle = q.record(CONSUMER_BYTE_RATE, ANONYMOUS, cid, response_size, now)
            if fetch_throttle > 0:
                q.unrecord(CONSUMER_BYTE_RATE, ANONYMOUS, cid, response_size, now)
                response = dataclasses.replace(response, responses=())
                throttle = max(throttle, fetch_throttle)
        if response is not None:
            current = getattr(response, "throttle_time", None)
            if isinstance(current, datetime.timedelta):
                throttle = max(throttle, int(current.total_seconds() * 1000))
                if throttle > 0:
                    response = dataclasses.replace(response, throttle_time=datetime.timedelta(milliseconds=throttle))
        return Throttled(response, throttle)


def mutation_quota(quotas: ClientQuotas, api_key: int, api_version: int, client_id: str | None,
                   now_ms: int) -> MutationQuota:
    """The request's controller mutation quota; strict from the versions Kafka makes it strict."""
    return MutationQuota(quotas, client_id, now_ms, strict=api_version >= STRICT_MUTATIONS_SINCE[api_key])


STRICT_MUTATIONS_SINCE = {19: 6, 37: 3, 20: 5}  # CreateTopics, CreatePartitions, DeleteTopics


class MutationQuota:
    """controller_mutation_rate for one CreateTopics / CreatePartitions / DeleteTopics request.
    Strict (newer versions): a topic is refused with THROTTLING_QUOTA_EXCEEDED once the quota is
    already used up, and only a refusal carries a throttle time; permissive (older versions):
    everything is done, and the request is throttled once it took the bucket below zero."""

    def __init__(self, quotas: ClientQuotas, client_id: str | None, now_ms: int, strict: bool) -> None:
        self.quotas = quotas
        self.client_id = client_id or ""
        self.now_ms = now_ms
        self.strict = strict
        self._throttle_ms = 0

    @property
    def applies(self) -> bool:
        return self.quotas.quota_for(CONTROLLER_MUTATION_RATE, ANONYMOUS, self.client_id) is not None

    def admit(self, partitions: int) -> bool:
        if not self.applies:
            return True
        q, cid, now = self.quotas, self.client_id, self.now_ms
        if self.strict:
            owed = q.mutation_throttle_ms(ANONYMOUS, cid, now)
            if owed > 0:
                self._throttle_ms = owed
                return False
            q.record_mutation(ANONYMOUS, cid, partitions, now)
            return True
        q.record_mutation(ANONYMOUS, cid, partitions, now)
        self._throttle_ms = max(self._throttle_ms, q.mutation_throttle_ms(ANONYMOUS, cid, now))
        return True

    def throttle_ms(self) -> int:
        return self._throttle_ms

    def throttle_time(self) -> datetime.timedelta:
        return datetime.timedelta(milliseconds=self._throttle_ms)


# Kafka leaves the message out (null) where it would only repeat the error's own text ("The
# throttling quota has been exceeded."), as Kafka 4.3.1 answers a refused CreateTopics.
THROTTLING_QUOTA_EXCEEDED_MESSAGE: str | None = None
