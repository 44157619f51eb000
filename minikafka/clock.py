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
