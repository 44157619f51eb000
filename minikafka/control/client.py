"""A Python client of the control endpoint (broker/control_server.py): what `kafka_broker.faults`
is in a test, and what any tool can use against `minikafka serve --control-port PORT`.

    faults = FaultsClient("127.0.0.1", control_port)
    faults.add("drop_response", api="EndTxn", transactional_id="copier-1", count=1)
    faults.scenario("coordinator_loading", count=2)
    faults.list()   # every rule, with "fired" and "exhausted"
    faults.clear()

    clock = ClockClient("127.0.0.1", control_port)
    clock.pause()
    clock.advance(61)  # seconds; returns once every timeout that fell due has fired
"""

from __future__ import annotations

import http.client
import json
from typing import Any


class FaultsClient:
    def __init__(self, host: str, port: int, timeout: float = 10.0) -> None:
        self.host = host
        self.port = port
        self.timeout = timeout

    def add(self, action: str, **fields: Any) -> dict[str, Any]:
        """Add one rule; returns it as the broker lists it (with its id). ValueError: refused."""
        return self._call("POST", "/faults", {"action": action, **fields})["rules"][0]

    def scenario(self, name: str, **params: Any) -> list[dict[str, Any]]:
        return self._call("POST", "/faults", {"scenario": name, **params})["rules"]

    def list(self) -> list[dict[str, Any]]:
        return self._call("GET", "/faults")["rules"]

    def get(self, rule_id: int) -> dict[str, Any]:
        for rule in self.list():
            if rule["id"] == rule_id:
                return rule
        raise KeyError(rule_id)

    def remove(self, rule_id: int) -> None:
        self._call("DELETE", f"/faults/{rule_id}")

    def clear(self) -> int:
        return self._call("DELETE", "/faults")["cleared"]

    def invariants(self) -> dict[str, Any]:
        """The invariant monitor's report: {"violations": {kind: n}, "checked", "recent"} (a broker
        started with --check-invariants)."""
        return self._call("GET", "/invariants")

    def _call(self, method: str, path: str, body: Any = None) -> Any:
        return call(self.host, self.port, method, path, body, self.timeout)


class ClockClient:
    """The broker's clock (virtual time): paused, it stands still; advanced, every timeout that
    fell due (transaction.timeout.ms, transactional.id.expiration.ms, producer.id.expiration.ms,
    session and rebalance timeouts, retention) has fired when the call returns. Clients keep their
    own clocks: a client-side timeout still takes real time."""

    def __init__(self, host: str, port: int, timeout: float = 60.0) -> None:
        self.host = host
        self.port = port
        self.timeout = timeout

    def pause(self) -> dict[str, Any]:
        return self._post({"pause": True})

    def resume(self) -> dict[str, Any]:
        return self._post({"resume": True})

    def advance(self, seconds: float) -> dict[str, Any]:
        return self._post({"advance_ms": round(seconds * 1000)})

    def _post(self, body: dict[str, Any]) -> dict[str, Any]:
        return call(self.host, self.port, "POST", "/clock", body, self.timeout)


def call(host: str, port: int, method: str, path: str, body: Any, timeout: float) -> Any:
    """One request to the control endpoint: its JSON answer; ValueError for a refusal (400),
    KeyError for something that is not there (404)."""
    # http.client, not urllib: no proxy from the environment is ever asked to reach loopback
    conn = http.client.HTTPConnection(host, port, timeout=timeout)
    try:
        data = None if body is None else json.dumps(body).encode()
        conn.request(method, path, body=data, headers={"Content-Type": "application/json"})
        response = conn.getresponse()
        answer = json.loads(response.read() or b"null")
    finally:
        conn.close()
    if response.status >= 400:
        error = answer.get("error") if isinstance(answer, dict) else answer
        if response.status == 404:
            raise KeyError(error)
        raise ValueError(error)
    return answer
