"""Time, passed in everywhere so timeouts can be tested with a fake clock."""

from __future__ import annotations

import time
from typing import Protocol


class Clock(Protocol):
    def now_ms(self) -> int: ...  # wall clock, for timestamps written to disk
    def monotonic_ms(self) -> int: ...  # for deadlines


class SystemClock:
    def now_ms(self) -> int:
        return time.time_ns() // 1_000_000

    def monotonic_ms(self) -> int:
        return time.monotonic_ns() // 1_000_000


class ControlledClock:
    """The broker's clock: the system's, unless a test paused it or moved it forward (virtual time,
    issue 20; the control endpoint's /clock).

    Paused, it stands still; `advance(ms)` moves it forward whether paused or not, so timeouts of
    minutes or days fall due at once (the broker then runs its timers: broker/app.py). Resumed, it
    goes on from where it stood, never back. Both the wall clock and the monotonic clock move
    together. The broker's own waits (a Fetch's max_wait, the timers' sleeps) stay in real time:
    clients keep theirs."""

    def __init__(self, base: Clock | None = None) -> None:
        self._base = base or SystemClock()
        self._wall_offset = 0
        self._mono_offset = 0
        self._paused: tuple[int, int] | None = None  # (wall, monotonic) of the base when paused

    def now_ms(self) -> int:
        if self._paused is not None:
            return self._paused[0] + self._wall_offset
        return self._base.now_ms() + self._wall_offset

    def monotonic_ms(self) -> int:
        if self._paused is not None:
            return self._paused[1] + self._mono_offset
        return self._base.monotonic_ms() + self._mono_offset

    @property
    def paused(self) -> bool:
        return self._paused is not None

    @property
    def offset_ms(self) -> int:
        """How far ahead of the system's wall clock this clock is now."""
        return self.now_ms() - self._base.now_ms()

    def pause(self) -> None:
        if self._paused is None:
            self._paused = (self._base.now_ms(), self._base.monotonic_ms())

    def resume(self) -> None:
        if self._paused is not None:
            wall, mono = self._paused
            self._wall_offset += wall - self._base.now_ms()
            self._mono_offset += mono - self._base.monotonic_ms()
            self._paused = None

    def advance(self, ms: int) -> None:
        if ms < 0:
            raise ValueError("time moves forward only")
        self._wall_offset += ms
        self._mono_offset += ms
