"""The control endpoint's routes without HTTP (broker/control_server.py): /faults and /clock."""

from __future__ import annotations

import asyncio
import json

import pytest

from minikafka.broker.control_server import ControlError, ControlServer, check_loopback
from minikafka.clock import ControlledClock
from minikafka.control.rules import FaultRules

pytestmark = pytest.mark.unit


class Base:
    def __init__(self) -> None:
        self.t = 1_000_000

    def now_ms(self) -> int:
        return self.t

    def monotonic_ms(self) -> int:
        return self.t


def server(runs: list[int]) -> ControlServer:
    clock = ControlledClock(Base())

    async def run_timers() -> None:
        runs.append(clock.now_ms())  # the timers see the clock already moved

    return ControlServer(FaultRules(), clock=clock, run_timers=run_timers)


def test_advancing_the_clock_runs_the_timers_before_answering():
    runs: list[int] = []
    s = server(runs)
    status, answer = asyncio.run(s.clock_route("POST", json.dumps({"pause": True, "advance_ms": 61_000}).encode()))
    assert status == 200 and answer == {"now_ms": 1_061_000, "paused": True, "offset_ms": 61_000}
    assert runs == [1_061_000]
    assert asyncio.run(s.clock_route("POST", b'{"pause": true}'))[1]["now_ms"] == 1_061_000
    assert runs == [1_061_000]  # nothing moved, nothing run


@pytest.mark.parametrize("body, message", [
    (b'{"advance_ms": -5}', "forward only"),
    (b'{"advance_ms": 1.5}', "whole number"),
    (b'{"rewind": true}', "JSON object of"),
    (b"[]", "JSON object of"),
    (b"{", "Expecting"),
])
def test_bad_clock_requests_are_refused(body, message):
    status, answer = asyncio.run(server([]).clock_route("POST", body))
    assert status == 400 and message in answer["error"]


def test_fault_routes():
    s = server([])
    status, answer = s.route("POST", "/faults", json.dumps({"scenario": "lost_produce_ack", "topic": "t"}).encode())
    assert status == 201 and answer["rules"][0]["name"] == "lost_produce_ack"
    assert s.route("GET", "/faults", b"")[1]["rules"][0]["topic"] == "t"
    assert s.route("PUT", "/faults", b"")[0] == 405
    assert s.route("DELETE", "/faults/x", b"")[0] == 404
    assert s.route("GET", "/nothing", b"")[0] == 404
    assert s.route("DELETE", "/faults", b"") == (200, {"cleared": 1})


def test_only_loopback_addresses():
    for ok in ("127.0.0.1", "::1", "localhost", "127.0.0.2"):
        check_loopback(ok)
    for bad in ("0.0.0.0", "10.1.2.3", "::", "example.com"):
        with pytest.raises(ControlError):
            check_loopback(bad)
