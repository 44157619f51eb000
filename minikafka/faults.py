"""Test-only fault injection, off unless the environment asks for it.

- `MINIKAFKA_CRASH_AT=<point>:<n>`: the n-th time execution reaches the named point the process
  exits at once with status 137 (as if killed), so crash tests can stop the broker at an exact
  step of the commit path (test-plan.md C-3). The points are the constants below.
- `MINIKAFKA_FAIL_TXNLOG_APPEND=<file>`: while that file exists, appends to __transaction_state
  fail (test-plan.md T-INT-14); removing the file heals the broker without a restart.
- `MINIKAFKA_FAIL_MARKERS=<file>`: while that file exists, transaction markers are not written
  (the coordinator keeps retrying), so a test can hold transactions in PREPARE_* (C-8).

One FaultInjector is built by broker/app.py and handed to whoever has a point; there is no global.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

# Crash points in the transaction commit path.
AFTER_ADD_PARTITIONS = "txn.after_add_partitions"        # AddPartitionsToTxn persisted
AFTER_TXN_PRODUCE = "txn.after_produce"                  # a transactional batch appended
AFTER_PREPARE_COMMIT = "txn.after_prepare_commit"        # PrepareCommit in the log, no marker yet
AFTER_PREPARE_ABORT = "txn.after_prepare_abort"
AFTER_FIRST_MARKER = "txn.after_first_marker"            # the marker on the first of the partitions
AFTER_ALL_MARKERS = "txn.after_all_markers"              # every marker written, Complete* not yet
AFTER_TXN_OFFSET_COMMIT = "txn.after_txn_offset_commit"  # TxnOffsetCommit appended, no marker yet

# Crash points of a log cleaner pass (storage/cleaner/swap.py names the same steps).
CLEANER_STEPS = ("cleaner.after_cleaned", "cleaner.mid_swap_rename", "cleaner.after_swap",
                 "cleaner.after_old_deleted", "cleaner.mid_final_rename")

CRASH_POINTS = frozenset({AFTER_ADD_PARTITIONS, AFTER_TXN_PRODUCE, AFTER_PREPARE_COMMIT, AFTER_PREPARE_ABORT,
                          AFTER_FIRST_MARKER, AFTER_ALL_MARKERS, AFTER_TXN_OFFSET_COMMIT, *CLEANER_STEPS})


class FaultInjector:
    def __init__(self, env: Mapping[str, str]) -> None:
        self._crash_point: str | None = None
        self._crash_count = 0
        spec = env.get("MINIKAFKA_CRASH_AT")
        if spec:
            point, _, n = spec.partition(":")
            if point not in CRASH_POINTS:
                raise ValueError(f"MINIKAFKA_CRASH_AT names no crash point: {point!r}")
            self._crash_point, self._crash_count = point, int(n or 1)
        self._fail_file = env.get("MINIKAFKA_FAIL_TXNLOG_APPEND") or None
        self._fail_markers_file = env.get("MINIKAFKA_FAIL_MARKERS") or None

    def reach(self, point: str) -> None:
        if point != self._crash_point:
            return
        self._crash_count -= 1
        if self._crash_count == 0:
            os._exit(137)

    def markers_blocked(self) -> bool:
        return self._fail_markers_file is not None and os.path.exists(self._fail_markers_file)

    def check_txn_log_append(self) -> None:
        if self._fail_file is not None and os.path.exists(self._fail_file):
            raise OSError("transaction log append failed (MINIKAFKA_FAIL_TXNLOG_APPEND)")


NO_FAULTS = FaultInjector({})
