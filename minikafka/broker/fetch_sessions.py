"""Incremental fetch sessions (KIP-227), as Kafka 4.3's FetchManager keeps them.

Theory of operation
- A consumer polling many partitions sends, once, a *full* Fetch (session id 0, epoch 0) naming
  every partition; the broker answers them all and opens a session: an id, epoch 1, and for each
  partition the fetch offset and max bytes asked and the high watermark and log start offset last
  answered. Then each *incremental* Fetch (the id, the next epoch) names only the partitions whose
  fetch position changed (and `forgotten_topics_data`, the ones to drop); the broker reads every
  partition of the session and answers only those with records, a moved high watermark or log
  start offset, or an error. Over 1,000 partitions that is the difference between listing 1,000
  partitions twice per poll and listing the few that have data.
- `new_context` turns a request into one of four contexts, as Kafka's FetchManager.newContext:
  a session error (FETCH_SESSION_ID_NOT_FOUND, INVALID_FETCH_SESSION_EPOCH,
  FETCH_SESSION_TOPIC_ID_ERROR: the whole response is that error and nothing is read);
  sessionless (epoch -1, or an incremental request that forgot every partition: session id 0 in
  the answer); full (epoch 0: a session is created when the answer is made, if the cache has room);
  incremental. A full request with a session id closes that session first.
- `answer` filters what was read through the context (Kafka's updateAndGenerateResponseData): the
  incremental context keeps only what must be sent, remembers what it sent, and moves partitions
  that returned records to the end of the session so the next response starts with the others
  (response-size fairness).
- The cache holds `max.incremental.fetch.session.cache.slots` sessions (Kafka's default 1,000; 0
  turns sessions off); when full, a session unused for 120 s is evicted, or else one older than
  120 s with fewer partitions than the new one, as Kafka's FetchSessionCacheShard does.
- Pure and synchronous: the clock and the source of session ids are passed in.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final

from minikafka.protocol.errors import ErrorCode
from minikafka.protocol.types import TopicPartition

INVALID_SESSION_ID: Final = 0
INITIAL_EPOCH: Final = 0
FINAL_EPOCH: Final = -1
EVICTION_MS: Final = 120_000          # Kafka's fetch session eviction time (not configurable)
FIRST_TOPIC_ID_VERSION: Final = 13    # Fetch v13+ name topics by id; a session keeps to one kind


def next_epoch(epoch: int) -> int:
    """FetchMetadata.nextEpoch: after the initial epoch comes 1, and 2**31-1 wraps to 1."""
    if epoch < 0:
        return FINAL_EPOCH
    return 1 if epoch == 2**31 - 1 else epoch + 1


@dataclass(slots=True)
class CachedPartition:
    fetch_offset: int
    max_bytes: int
    high_watermark: int = -1
    log_start_offset: int = -1


@dataclass(slots=True)
class FetchSession:
    id: int
    uses_topic_ids: bool
    creation_ms: int
    last_used_ms: int
    epoch: int
    partitions: dict[TopicPartition, CachedPartition] = field(default_factory=dict)  # in session order


@dataclass(frozen=True, slots=True)
class Wanted:
    """A partition a Fetch reads: where from and how much."""

    tp: TopicPartition
    fetch_offset: int
    max_bytes: int


@dataclass(frozen=True, slots=True)
class Read:
    """What the handler read for one partition: the parts the session compares."""

    tp: TopicPartition
    has_records: bool
    high_watermark: int
    log_start_offset: int
    error: ErrorCode


@dataclass(slots=True)
class FetchContext:
    kind: str                          # "error", "sessionless", "full", "incremental"
    partitions: tuple[Wanted, ...] = ()
    error: ErrorCode = ErrorCode.none
    session: FetchSession | None = None
    uses_topic_ids: bool = False


class FetchSessionCache:
    def __init__(self, max_entries: int = 1000, *, eviction_ms: int = EVICTION_MS,
                 new_id: Callable[[], int] | None = None) -> None:
        self.max_entries = max_entries
        self.eviction_ms = eviction_ms
        self.sessions: dict[int, FetchSession] = {}
        self._rng = random.Random()
        self._new_id = new_id or (lambda: self._rng.randint(1, 2**31 - 1))

    # ------------------------------------------------------------------------------ contexts
    def new_context(self, version: int, session_id: int, epoch: int, fetch_data: Sequence[Wanted],
                    forgotten: Iterable[TopicPartition], now_ms: int) -> FetchContext:
        """Kafka's FetchManager.newContext. `fetch_data`: the request's partitions, in its order."""
        uses_ids = version >= FIRST_TOPIC_ID_VERSION
        if epoch in (INITIAL_EPOCH, FINAL_EPOCH):   # a full request
            if session_id != INVALID_SESSION_ID:
                self.sessions.pop(session_id, None)
            kind = "sessionless" if epoch == FINAL_EPOCH else "full"
            return FetchContext(kind, tuple(fetch_data), uses_topic_ids=uses_ids)
        session = self.sessions.get(session_id)
        if session is None:
            return FetchContext("error", error=ErrorCode.fetch_session_id_not_found)
        if session.epoch != epoch:
            return FetchContext("error", error=ErrorCode.invalid_fetch_session_epoch)
        if session.uses_topic_ids != uses_ids:
            return FetchContext("error", error=ErrorCode.fetch_session_topic_id_error)
        for w in fetch_data:
            cached = session.partitions.get(w.tp)
            if cached is None:
                session.partitions[w.tp] = CachedPartition(w.fetch_offset, w.max_bytes)
            else:
                cached.fetch_offset, cached.max_bytes = w.fetch_offset, w.max_bytes
        for tp in forgotten:
            session.partitions.pop(tp, None)
        if not session.partitions:
            del self.sessions[session.id]
            return FetchContext("sessionless", tuple(fetch_data), uses_topic_ids=uses_ids)
        session.last_used_ms = now_ms
        session.epoch = next_epoch(session.epoch)
        wanted = tuple(Wanted(tp, c.fetch_offset, c.max_bytes) for tp, c in session.partitions.items())
        return FetchContext("incremental", wanted, session=session, uses_topic_ids=uses_ids)

    def answer(self, ctx: FetchContext, read: Sequence[Read], now_ms: int,
               request_epoch: int) -> tuple[ErrorCode, int, list[TopicPartition]]:
        """(top-level error, session id, the partitions to send, in order) for what was read."""
        if ctx.kind == "error":
            return ctx.error, INVALID_SESSION_ID, []
        if ctx.kind == "sessionless":
            return ErrorCode.none, INVALID_SESSION_ID, [r.tp for r in read]
        if ctx.kind == "full":
            wanted = {w.tp: w for w in ctx.partitions}
            session_id = self._maybe_create(now_ms, ctx.uses_topic_ids, {
                r.tp: CachedPartition(wanted[r.tp].fetch_offset, wanted[r.tp].max_bytes, r.high_watermark,
                                      r.log_start_offset) for r in read})
            return ErrorCode.none, session_id, [r.tp for r in read]
        session = ctx.session
        assert session is not None
        if self.sessions.get(session.id) is not session or session.epoch != next_epoch(request_epoch):
            # Another request of the session came in between (Kafka checks the same).
            return ErrorCode.invalid_fetch_session_epoch, session.id, []
        send: list[TopicPartition] = []
        for r in read:
            cached = session.partitions.get(r.tp)
            if cached is None:
                continue
            must = r.has_records
            if cached.high_watermark != r.high_watermark:
                must, cached.high_watermark = True, r.high_watermark
            if cached.log_start_offset != r.log_start_offset:
                must, cached.log_start_offset = True, r.log_start_offset
            if r.error is not ErrorCode.none:
                # resent once the error is gone: the cached watermark no longer matches
                must, cached.high_watermark = True, -1
            if must:
                send.append(r.tp)
                if r.has_records:   # to the back of the session: the others go first next time
                    session.partitions[r.tp] = session.partitions.pop(r.tp)
        return ErrorCode.none, session.id, send

    # ------------------------------------------------------------------------------ the cache
    def _maybe_create(self, now_ms: int, uses_ids: bool, partitions: Mapping[TopicPartition, CachedPartition]) -> int:
        if self.max_entries <= 0:
            return INVALID_SESSION_ID
        if len(self.sessions) >= self.max_entries and not self._evict_for(len(partitions), now_ms):
            return INVALID_SESSION_ID
        sid = self._new_id()
        while sid == INVALID_SESSION_ID or sid in self.sessions:
            sid = self._new_id()
        self.sessions[sid] = FetchSession(sid, uses_ids, now_ms, now_ms, next_epoch(INITIAL_EPOCH), dict(partitions))
        return sid

    def _evict_for(self, size: int, now_ms: int) -> bool:
        """A stale session (unused for eviction_ms) goes first; else the smallest of those older
        than eviction_ms, if smaller than the new one (Kafka's tryEvict for an unprivileged one)."""
        if not self.sessions:
            return False
        stalest = min(self.sessions.values(), key=lambda s: (s.last_used_ms, s.id))
        if now_ms - stalest.last_used_ms > self.eviction_ms:
            del self.sessions[stalest.id]
            return True
        old = [s for s in self.sessions.values() if now_ms - s.creation_ms > self.eviction_ms]
        if not old:
            return False
        smallest = min(old, key=lambda s: (len(s.partitions), s.id))
        if (size, 0) < (len(smallest.partitions), smallest.id):
            return False
        del self.sessions[smallest.id]
        return True
