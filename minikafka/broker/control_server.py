"""The control endpoint: fault rules set on the running broker from any language, over HTTP.

Off unless `minikafka serve --control-port PORT` (or the test fixture) asks for it, and on a
loopback address only: it has no authentication (minikafka serves PLAINTEXT only, issue 21), so
anything else is refused at start. JSON in and out, one request per connection:

    GET    /faults            {"rules": [...]}: every rule, with how often it fired
    POST   /faults            a rule ({"action": "drop_response", "api": "EndTxn"}), a list of rules,
                              or {"scenario": NAME, ...}: 201 {"rules": [...]} as added; 400 and
                              {"error": why} for a rule that cannot be added (none of a list is)
    DELETE /faults            {"cleared": N}
    DELETE /faults/ID         {"removed": ID}, or 404
    GET    /scenarios         the named scenarios and what each takes
    GET    /invariants        the invariant monitor's counts and latest violations (--check-invariants)
    GET    /clock             {"now_ms", "paused", "offset_ms"}: the broker's clock (virtual time)
    POST   /clock             {"pause": true}, {"resume": true} and/or {"advance_ms": N}: paused, it
                              stands still; advanced, every timeout that fell due (transaction and
                              session timeouts, id and producer expiry, retention) has happened
                              when the answer comes

The rules are control/rules.py's; control/scenarios.py builds the named ones.
"""

from __future__ import annotations

import asyncio
import ipaddress
import json
from collections.abc import Awaitable, Callable
from typing import Any

import structlog

from minikafka.clock import ControlledClock
from minikafka.control import scenarios
from minikafka.control.invariants import InvariantMonitor
from minikafka.control.rules import FaultRules, RuleError

log = structlog.get_logger("minikafka.control")

MAX_BODY = 1 << 20
REQUEST_TIMEOUT_S = 60
_REASONS = {200: "OK", 201: "Created", 400: "Bad Request", 404: "Not Found", 405: "Method Not Allowed",
            413: "Payload Too Large"}


class _Refused(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


class ControlError(ValueError):
    """A control endpoint that must not start (a non-loopback address)."""


def check_loopback(host: str) -> None:
    try:
        loopback = ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = host == "localhost"
    if not loopback:
        raise ControlError(f"the control endpoint listens on loopback addresses only, not {host!r}: it has no "
                           "authentication (minikafka serves PLAINTEXT without security)")


class ControlServer:
    def __init__(self, rules: FaultRules, *, host: str = "127.0.0.1", port: int = 0,
                 clock: ControlledClock | None = None,
                 run_timers: Callable[[], Awaitable[None]] | None = None,
                 invariants: InvariantMonitor | None = None) -> None:
        """`clock`: the broker's clock, for /clock (none: the broker runs on a clock of the test's);
        `run_timers`: the broker's timed jobs, run once after the clock moved."""
        check_loopback(host)
        self.rules = rules
        self.clock = clock
        self.run_timers = run_timers
        self.invariants = invariants
        self.host = host
        self.port = port
        self._server: asyncio.base_events.Server | None = None

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._serve, self.host, self.port, reuse_address=True)
        self.port = self._server.sockets[0].getsockname()[1]
        log.info("control_listening", host=self.host, port=self.port)

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            # a client that connects and says nothing is not kept for ever; what it asks for, once
            # read, is never cut short (an advance runs the broker's timers to their end)
            method, path, raw = await asyncio.wait_for(self._read(reader), REQUEST_TIMEOUT_S)
            status, answer = await self.clock_route(method, raw) if path == "/clock" else self.route(method, path, raw)
        except _Refused as exc:
            status, answer = exc.status, {"error": str(exc)}
        except (asyncio.IncompleteReadError, ConnectionError, ValueError, asyncio.LimitOverrunError) as exc:
            status, answer = 400, {"error": f"bad HTTP request: {exc}"}
        except TimeoutError:
            status, answer = 400, {"error": f"no complete request within {REQUEST_TIMEOUT_S} s"}
        body = json.dumps(answer).encode()
        head = (f"HTTP/1.1 {status} {_REASONS.get(status, '')}\r\nContent-Type: application/json\r\n"
                f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n")
        try:
            writer.write(head.encode() + body)
            await writer.drain()
        except ConnectionError:
            pass
        finally:
            writer.close()

    async def _read(self, reader: asyncio.StreamReader) -> tuple[str, str, bytes]:
        """(method, path, body) of one request."""
        request_line = (await reader.readuntil(b"\r\n")).decode("latin-1").split()
        if len(request_line) != 3:
            raise ValueError("no request line")
        method, path = request_line[0], request_line[1].split("?", 1)[0].rstrip("/")
        length = 0
        while True:
            line = (await reader.readuntil(b"\r\n")).decode("latin-1")
            if line == "\r\n":
                break
            name, _, value = line.partition(":")
            if name.strip().lower() == "content-length":
                length = int(value.strip())
        if length > MAX_BODY:
            raise _Refused(413, f"a body of at most {MAX_BODY} bytes")
        raw = await reader.readexactly(length) if length else b""
        return method, path, raw

    async def clock_route(self, method: str, raw: bytes) -> tuple[int, Any]:
        clock = self.clock
        if clock is None:
            return 404, {"error": "this broker runs on a clock of its owner's, not a controlled one"}
        if method == "POST":
            try:
                spec = json.loads(raw or b"{}")
                if not isinstance(spec, dict) or set(spec) - {"pause", "resume", "advance_ms"}:
                    raise ValueError('a JSON object of "pause": true, "resume": true, "advance_ms": N')
                advance = spec.get("advance_ms", 0)
                if isinstance(advance, bool) or not isinstance(advance, int) or advance < 0:
                    raise ValueError("advance_ms is a whole number of milliseconds, 0 or more: time moves forward only")
            except ValueError as exc:
                return 400, {"error": str(exc)}
            if spec.get("pause"):
                clock.pause()
            if advance:
                clock.advance(advance)
                log.info("clock_advanced", advance_ms=advance, now_ms=clock.now_ms())
                if self.run_timers is not None:
                    await self.run_timers()
            if spec.get("resume"):
                clock.resume()
        elif method != "GET":
            return 405, {"error": f"{method} /clock: GET or POST"}
        return 200, {"now_ms": clock.now_ms(), "paused": clock.paused, "offset_ms": clock.offset_ms}

    def route(self, method: str, path: str, raw: bytes) -> tuple[int, Any]:
        """(status, JSON answer) of one request to /faults or /scenarios: the endpoint without its HTTP."""
        if path == "/faults":
            if method == "GET":
                return 200, {"rules": self.rules.describe()}
            if method == "DELETE":
                return 200, {"cleared": self.rules.clear()}
            if method == "POST":
                try:
                    spec = json.loads(raw or b"null")
                    specs = scenarios.rules_for(spec) if isinstance(spec, dict) and "scenario" in spec else (
                        spec if isinstance(spec, list) else [spec])
                    added = self.rules.add_all(specs)
                except (ValueError, RuleError) as exc:  # json's errors are ValueErrors too
                    return 400, {"error": str(exc)}
                log.info("fault_rules_added", rules=[r.describe() for r in added])
                return 201, {"rules": [r.describe() for r in added]}
            return 405, {"error": f"{method} /faults: GET, POST or DELETE"}
        if path.startswith("/faults/"):
            if method != "DELETE":
                return 405, {"error": f"{method} {path}: DELETE only"}
            try:
                rule_id = int(path.removeprefix("/faults/"))
            except ValueError:
                return 404, {"error": f"no rule {path.removeprefix('/faults/')!r}"}
            if self.rules.remove(rule_id):
                return 200, {"removed": rule_id}
            return 404, {"error": f"no rule {rule_id}"}
        if path == "/scenarios" and method == "GET":
            return 200, {"scenarios": scenarios.describe()}
        if path == "/invariants" and method == "GET":
            if self.invariants is None:
                return 404, {"error": "the invariant monitor is off (minikafka serve --check-invariants)"}
            return 200, self.invariants.describe()
        return 404, {"error": f"no {path}: /faults, /faults/ID, /scenarios, /invariants, /clock"}
