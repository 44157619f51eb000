"""ControlledClock (minikafka/clock.py): the broker's clock that a test pauses and moves forward."""

from __future__ import annotations

import pytest

from minikafka.clock import ControlledClock

pytestmark = pytest.mark.unit


class Base:
    """A system clock that moves only when told (wall and monotonic apart, as they are)."""

    def __init__(self) -> None:
        self.wall, self.mono = 1_700_000_000_000, 5_000

    def now_ms(self) -> int:
        return self.wall

    def monotonic_ms(self) -> int:
        return self.mono

    def tick(self, ms: int) -> None:
        self.wall += ms
        self.mono += ms


def test_it_follows_the_system_clock_until_told_otherwise():
    base = Base()
    clock = ControlledClock(base)
    base.tick(250)
    assert (clock.now_ms(), clock.monotonic_ms()) == (base.wall, base.mono)
    assert clock.offset_ms == 0 and not clock.paused


def test_paused_it_stands_still_and_advance_moves_both_clocks():
    base = Base()
    clock = ControlledClock(base)
    clock.pause()
    wall, mono = clock.now_ms(), clock.monotonic_ms()
    base.tick(10_000)
    assert (clock.now_ms(), clock.monotonic_ms()) == (wall, mono)
    clock.advance(61_000)
    assert (clock.now_ms(), clock.monotonic_ms()) == (wall + 61_000, mono + 61_000)
    assert clock.offset_ms == 61_000 - 10_000


def test_resumed_it_goes_on_from_where_it_stood_never_back():
    base = Base()
    clock = ControlledClock(base)
    clock.pause()
    clock.advance(5_000)
    stood = clock.now_ms()
    base.tick(3_000)  # real time passed while paused
    clock.resume()
    assert clock.now_ms() == stood
    base.tick(1_000)
    assert clock.now_ms() == stood + 1_000
    clock.advance(2_000)  # running and advanced
    assert clock.now_ms() == stood + 3_000


def test_time_moves_forward_only():
    clock = ControlledClock(Base())
    with pytest.raises(ValueError):
        clock.advance(-1)
