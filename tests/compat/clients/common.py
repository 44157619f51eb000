"""Shared by the Python client programs: the checks every scenario ends with, and the entry point."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterable


class ScenarioFailed(Exception):
    pass


def check(ok: bool, what: str) -> None:
    if not ok:
        raise ScenarioFailed(what)


def check_ordered(records: Iterable[tuple[int, bytes, bytes]], n: int) -> None:
    """records: (partition, key, value) as read; values v0..v{n-1}, key k<i> for v<i>."""
    records = list(records)
    values = sorted(int(v[1:]) for _p, _k, v in records)
    check(values == list(range(n)), f"read {len(records)} records, expected v0..v{n - 1} once each")
    by_key: dict[bytes, int] = {}
    last: dict[int, int] = {}
    for p, k, v in records:
        check(by_key.setdefault(k, p) == p, f"key {k!r} on two partitions")
        i = int(v[1:])
        check(last.get(p, -1) < i, f"partition {p} out of order at {v!r}")
        last[p] = i


def until(deadline_s: float, done: Callable[[], bool], step: Callable[[], None]) -> None:
    end = time.monotonic() + deadline_s
    while not done():
        check(time.monotonic() < end, "timed out")
        step()


def verdict(fn: Callable[..., None], *args: str) -> None:
    """Run one scenario and end the process as run.py reads it: `ok` and 0, or one line and 1."""
    try:
        fn(*args)
    except ScenarioFailed as exc:
        print(f"FAILED: {exc}")
        sys.exit(1)
    except Exception as exc:  # noqa: BLE001 - a client error is a failed cell, said in one line
        print(f"FAILED: {type(exc).__name__}: {exc}")
        sys.exit(1)
    print("ok")


def main(scenarios: dict[str, Callable[[str, str], None]]) -> None:
    scenario, bootstrap, prefix = sys.argv[1:4]
    if scenario not in scenarios:
        print(f"n/a: {scenario} is not supported by this client")
        sys.exit(3)
    verdict(scenarios[scenario], bootstrap, prefix)
