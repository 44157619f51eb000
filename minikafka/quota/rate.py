"""The two measures Kafka's quotas are built on, as Kafka's metrics library computes them, with
the time passed in (milliseconds) so that tests drive them without waiting.

SampledRate is Kafka's Rate over a SampledStat: `samples` windows of `window_ms` each (the broker's
quota.window.num and quota.window.size.seconds); the rate is the sum of the retained samples
divided by the time they span, and that span is never taken as less than samples-1 full windows,
so a client's first burst is measured over ten seconds, not over the few milliseconds it took.

TokenBucket is what the controller mutation quota uses (KIP-599): a bucket of
quota x samples x window seconds of credit, refilled at the quota, that may go below zero once;
while it is below zero, strict callers are refused.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(slots=True)
class _Sample:
    start_ms: int
    last_event_ms: int
    value: float = 0.0
    events: int = 0

    def reset(self, now_ms: int) -> None:
        self.start_ms = self.last_event_ms = now_ms
        self.value = 0.0
        self.events = 0


@dataclass(slots=True)
class SampledRate:
    """Units recorded per second over the last samples x window_ms."""

    samples: int
    window_ms: int
    _samples: list[_Sample] = field(default_factory=list)
    _current: int = 0

    def record(self, value: float, now_ms: int) -> None:
        sample = self._current_sample(now_ms)
        if now_ms - sample.start_ms >= self.window_ms:
            sample = self._advance(now_ms)
        sample.value += value
        sample.events += 1
        sample.last_event_ms = now_ms

    def rate(self, now_ms: int) -> float:
        """The measured rate per second (Kafka's Rate.measure)."""
        self._purge(now_ms)
        total = sum(s.value for s in self._samples)
        return total / (self.window_size_ms(now_ms) / 1000.0)

    def window_size_ms(self, now_ms: int) -> int:
        """The span the rate is averaged over (Kafka's Rate.windowSize): at least samples-1
        full windows, so that the first requests of a client are not measured over a few ms."""
        self._purge(now_ms)
        oldest = min((s.start_ms for s in self._samples), default=now_ms)
        elapsed = now_ms - oldest
        full = elapsed // self.window_ms
        if full < self.samples - 1:
            elapsed += (self.samples - 1 - full) * self.window_ms
        return max(elapsed, 1)

    def _current_sample(self, now_ms: int) -> _Sample:
        if not self._samples:
            self._samples.append(_Sample(now_ms, now_ms))
        return self._samples[self._current]

    def _advance(self, now_ms: int) -> _Sample:
        # One extra slot, as Kafka keeps, for the sample overlapping the start of the window.
        self._current = (self._current + 1) % (self.samples + 1)
        if self._current >= len(self._samples):
            sample = _Sample(now_ms, now_ms)
            self._samples.append(sample)
            return sample
        sample = self._samples[self._current]
        sample.reset(now_ms)
        return sample

    def idle(self, now_ms: int) -> bool:
        """Nothing recorded for the whole window: it measures zero, as a new one would."""
        return all(now_ms - s.last_event_ms >= self.samples * self.window_ms for s in self._samples)

    def _purge(self, now_ms: int) -> None:
        expire = self.samples * self.window_ms
        for s in self._samples:
            if now_ms - s.last_event_ms >= expire:
                s.reset(now_ms)


def throttle_ms(rate: SampledRate, bound: float, now_ms: int) -> int:
    """How long the client must wait for its rate to come back to `bound`, assuming it sends
    nothing meanwhile (Kafka's QuotaUtils.throttleTime); 0 when within the quota."""
    value = rate.rate(now_ms)
    if value <= bound:
        return 0
    return round((value - bound) / bound * rate.window_size_ms(now_ms))


@dataclass(slots=True)
class TokenBucket:
    """Credit in units, refilled at `quota` per second up to quota x samples x window seconds."""

    samples: int
    window_ms: int
    tokens: float = 0.0
    last_update_ms: int | None = None

    def _refill(self, quota: float, now_ms: int) -> None:
        burst = self.samples * self.window_ms / 1000.0 * quota
        if self.last_update_ms is None:
            self.tokens = burst  # a new bucket starts full
        else:
            self.tokens = min(burst, self.tokens + quota * (now_ms - self.last_update_ms) / 1000.0)
        self.last_update_ms = now_ms

    def record(self, value: float, quota: float, now_ms: int) -> None:
        self._refill(quota, now_ms)
        self.tokens -= value

    def idle(self, now_ms: int) -> bool:
        """Full again, as a new bucket starts: from any credit >= 0 the refill takes at most
        samples x window, whatever the quota."""
        return self.last_update_ms is None or (
            self.tokens >= 0 and now_ms - self.last_update_ms >= self.samples * self.window_ms)

    def throttle_ms(self, quota: float, now_ms: int) -> int:
        """Time until the bucket is back at zero credit; 0 while it has credit."""
        self._refill(quota, now_ms)
        return 0 if self.tokens >= 0 else round(-self.tokens / quota * 1000)
