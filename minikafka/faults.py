"""The doors inside the broker where fault rules act: crash points, transaction markers and the
transaction log (the request path has its own, broker/fault_door.py).

The rules themselves live in control/rules.py and are set on the running broker through the
control endpoint (broker/control_server.py) or, for a crash at start-up, one environment variable:

- `MINIKAFKA_CRASH_AT=<point>:<n>`: the n-th time execution reaches the named point the process
  exits at once with status 137 (as if killed), so crash tests can stop the broker at an exact
  step of the commit path (test-plan.md C-3). It is a `crash_at` rule like any other, added
  before the broker starts.

One FaultInjector is built by broker/app.py and handed to whoever has a point; there is no global.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from minikafka.control.rules import (  # noqa: F401 - the crash points' names, for the code that has them
    AFTER_ADD_PARTITIONS,
    AFTER_ALL_MARKERS,
    AFTER_FIRST_MARKER,
    AFTER_PREPARE_ABORT,
    AFTER_PREPARE_COMMIT,
    AFTER_TXN_OFFSET_COMMIT,
    AFTER_TXN_PRODUCE,
    CLEANER_STEPS,
    CRASH_POINTS,
    FaultRules,
    RuleError,
)


class FaultInjector:
    def __init__(self, env: Mapping[str, str], rules: FaultRules | None = None) -> None:
        self.rules = rules if rules is not None else FaultRules()
        spec = env.get("MINIKAFKA_CRASH_AT")
        if spec:
            point, _, n = spec.partition(":")
            try:
                self.rules.add({"action": "crash_at", "point": point, "after": int(n or 1) - 1, "count": 1,
                                "name": "MINIKAFKA_CRASH_AT"})
            except (RuleError, ValueError) as exc:
                raise ValueError(f"MINIKAFKA_CRASH_AT={spec!r}: {exc}") from None

    def reach(self, point: str) -> None:
        if self.rules.at_point(point) is not None:
            os._exit(137)

    def markers_blocked(self, topic: str | None = None, partition: int | None = None) -> bool:
        """A stall_markers rule holds this marker back (the coordinator keeps retrying it)."""
        return self.rules.at_step("stall_markers", topic, partition) is not None

    def marker_dropped(self, topic: str, partition: int) -> bool:
        """A drop_markers rule loses this marker: reported written, never appended (a hanging
        transaction on the partition, for KIP-664's find-hanging and abort to find and end)."""
        return self.rules.at_step("drop_markers", topic, partition) is not None

    def check_txn_log_append(self) -> None:
        if self.rules.at_step("fail_txn_log_append") is not None:
            raise OSError("transaction log append failed (fault rule fail_txn_log_append)")


NO_FAULTS = FaultInjector({})
