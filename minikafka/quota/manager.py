"""ClientQuotas: the configured quotas and what each client has used of them (pure; time passed in).

Which quota applies to a request is Kafka's default quota callback: for a key, the first of these
entities that sets it, most specific first:
    user+client-id, user+<default client-id>, user,
    <default user>+client-id, <default user>+<default client-id>, <default user>,
    client-id, <default client-id>
The usage is kept per (user, client-id) pair that entity names: a quota set for a user is shared by
all of that user's client ids, a default client-id quota is had by each client id separately.
Without authentication every client is user ANONYMOUS, as in Kafka.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

from minikafka.quota.entity import (
    CLIENT_ID,
    CONNECTION_CREATION_RATE,
    CONTROLLER_MUTATION_RATE,
    IP,
    USER,
    Op,
    QuotaEntity,
    QuotaError,
    QuotaFilter,
    alter_entity,
    check_unique_keys,
    describe_entity,
    entity_of,
)
from minikafka.java_order import hashmap_order, map_hash, string_hash
from minikafka.quota.rate import SampledRate, TokenBucket, throttle_ms

ANONYMOUS = "ANONYMOUS"
MAX_SENSORS = 10_000  # beyond this many usage records, the idle ones are dropped

S = TypeVar("S", SampledRate, TokenBucket)


class _Sensors(Generic[S]):
    """Usage records by key, created on first use. Bounded: when full, records that measure what
    a new one would (idle) are dropped; a record in use is never reset."""

    def __init__(self, make: Callable[[], S]) -> None:
        self._make = make
        self._by_key: dict[Hashable, S] = {}

    def get(self, key: Hashable, now_ms: int) -> S:
        sensor = self._by_key.get(key)
        if sensor is None:
            if len(self._by_key) >= MAX_SENSORS:
                self._by_key = {k: v for k, v in self._by_key.items() if not v.idle(now_ms)}
            sensor = self._by_key[key] = self._make()
        return sensor


@dataclass(frozen=True, slots=True)
class QuotaWindows:
    """quota.window.num / quota.window.size.seconds and their controller.* twins."""

    samples: int = 11
    window_ms: int = 1000
    controller_samples: int = 11
    controller_window_ms: int = 1000


@dataclass(frozen=True, slots=True)
class Alteration:
    """One entry's outcome: the entity's new quotas, or the error that refused them."""

    pairs: tuple[tuple[str, str | None], ...]
    entity: QuotaEntity | None
    quotas: dict[str, float] | None
    error: QuotaError | None


def _precedence(user: str, client_id: str) -> tuple[tuple[QuotaEntity, tuple[str, str]], ...]:
    """(entity, usage tags) in the order Kafka looks for a quota."""
    both, user_only, client_only = (user, client_id), (user, ""), ("", client_id)
    return (
        (((USER, user), (CLIENT_ID, client_id)), both),
        (((USER, user), (CLIENT_ID, None)), both),
        (((USER, user),), user_only),
        (((USER, None), (CLIENT_ID, client_id)), both),
        (((USER, None), (CLIENT_ID, None)), both),
        (((USER, None),), user_only),
        (((CLIENT_ID, client_id),), client_only),
        (((CLIENT_ID, None),), client_only),
    )


class ClientQuotas:
    def __init__(self, windows: QuotaWindows = QuotaWindows(),
                 configured: Mapping[QuotaEntity, Mapping[str, float]] | None = None) -> None:
        self.windows = windows
        self.configured: dict[QuotaEntity, dict[str, float]] = {
            e: dict(q) for e, q in (configured or {}).items() if q}
        self._keys_in_use: set[str] = set()
        self.throttles_requests = False  # a quota on requests is set (the broker's fast path)
        self._rates = _Sensors(lambda: SampledRate(windows.samples, windows.window_ms))
        self._ip_rates = _Sensors(lambda: SampledRate(windows.samples, windows.window_ms))
        self._buckets = _Sensors(lambda: TokenBucket(windows.controller_samples, windows.controller_window_ms))
        self._refresh()

    # -- configuration -------------------------------------------------------------------------

    def _refresh(self) -> None:
        self._keys_in_use = {k for q in self.configured.values() for k in q}
        self.throttles_requests = bool(self._keys_in_use - {CONNECTION_CREATION_RATE})

    def enabled(self, key: str) -> bool:
        """Whether any entity sets `key`: without one the broker skips all accounting for it."""
        return key in self._keys_in_use

    def describe(self, quota_filter: QuotaFilter) -> list[tuple[QuotaEntity, list[tuple[str, float]]]]:
        """Matching entities and their quotas, both in the order Kafka's HashMaps give them (so
        that tools print what they print against Kafka)."""
        found = hashmap_order((e for e in self.configured if quota_filter.matches(e)), map_hash)
        return [(e, [(k, self.configured[e][k]) for k in hashmap_order(self.configured[e], string_hash)])
                for e in found]

    def alter(self, entries: Sequence[tuple[Sequence[tuple[str, str | None]], Sequence[Op]]]
              ) -> list[Alteration]:
        """Outcomes of AlterClientQuotas entries, without applying them (see apply)."""
        out: list[Alteration] = []
        done: set[QuotaEntity] = set()
        for pairs, ops in entries:
            pairs = tuple(pairs)
            try:
                check_unique_keys(pairs, ops)
                entity = entity_of(pairs)
                if entity in done:
                    raise QuotaError(f"Ignoring duplicate entity {describe_entity(entity)}")
                done.add(entity)
                new = alter_entity(self.configured.get(entity, {}), entity, ops)
            except QuotaError as exc:
                out.append(Alteration(pairs, None, None, exc))
                continue
            out.append(Alteration(pairs, entity, new, None))
        return out

    def apply(self, entity: QuotaEntity, quotas: Mapping[str, float]) -> None:
        if quotas:
            self.configured[entity] = dict(quotas)
        else:
            self.configured.pop(entity, None)
        self._refresh()

    # -- enforcement ---------------------------------------------------------------------------

    def quota_for(self, key: str, user: str, client_id: str) -> tuple[float, tuple[str, str]] | None:
        """(bound, usage tags) of the quota that applies, None when none does."""
        if key not in self._keys_in_use:
            return None
        for entity, tags in _precedence(user, client_id):
            q = self.configured.get(entity)
            if q is not None and key in q:
                return q[key], tags
        return None

    def record(self, key: str, user: str, client_id: str, value: float, now_ms: int) -> int:
        """Add `value` to the client's usage of `key`; the throttle time it has earned (ms)."""
        found = self.quota_for(key, user, client_id)
        if found is None:
            return 0
        bound, tags = found
        rate = self._rates.get((key, *tags), now_ms)
        rate.record(value, now_ms)
        return throttle_ms(rate, bound, now_ms)

    def unrecord(self, key: str, user: str, client_id: str, value: float, now_ms: int) -> None:
        """Take back a recorded value (a throttled fetch sends no data, so it used none)."""
        found = self.quota_for(key, user, client_id)
        if found is not None:
            self._rates.get((key, *found[1]), now_ms).record(-value, now_ms)

    def max_in_window(self, key: str, user: str, client_id: str) -> float | None:
        """The most one request may use without being throttled whatever else happened (Kafka
        caps a fetch's size with it, so one response never outgrows the quota window)."""
        found = self.quota_for(key, user, client_id)
        if found is None:
            return None
        return found[0] * (self.windows.samples - 1) * self.windows.window_ms / 1000.0

    # Controller mutations (CreateTopics, CreatePartitions, DeleteTopics): a token bucket.

    def mutation_throttle_ms(self, user: str, client_id: str, now_ms: int) -> int:
        found = self.quota_for(CONTROLLER_MUTATION_RATE, user, client_id)
        if found is None:
            return 0
        bound, tags = found
        return self._buckets.get(tags, now_ms).throttle_ms(bound, now_ms)

    def record_mutation(self, user: str, client_id: str, partitions: int, now_ms: int) -> None:
        found = self.quota_for(CONTROLLER_MUTATION_RATE, user, client_id)
        if found is not None:
            self._buckets.get(found[1], now_ms).record(partitions, found[0], now_ms)

    # Connection creation per IP.

    def connection_throttle_ms(self, ip: str, now_ms: int) -> int:
        """Record a new connection from `ip`; when that breaks its connection_creation_rate the
        connection is not counted and the time to wait before it may be closed is returned."""
        bound = None
        for entity in (((IP, ip),), ((IP, None),)):
            q = self.configured.get(entity)
            if q is not None and CONNECTION_CREATION_RATE in q:
                bound = q[CONNECTION_CREATION_RATE]
                break
        if bound is None:
            return 0
        rate = self._ip_rates.get(ip, now_ms)
        rate.record(1.0, now_ms)
        wait = throttle_ms(rate, bound, now_ms)
        if wait > 0:
            rate.record(-1.0, now_ms)  # a refused connection does not count against the IP
        return wait

