"""Fault rules: what a test asks the running broker to get wrong, and when (issue 20).

A rule names an action and what it matches. Request actions act on one request, matched by API,
version range, client id, transactional id, group and topic/partition:

| action                    | what the broker does                                                  |
|---------------------------|-----------------------------------------------------------------------|
| `error`                   | answers with `error_code` and does nothing                            |
| `drop_response`           | does the work and never answers it (the classic lost acknowledgement) |
| `delay`                   | waits `delay_ms`, then handles the request                            |
| `close_connection_before` | closes the connection without doing the work                          |
| `close_connection_after`  | does the work, then closes the connection without answering           |

Step actions act at a step inside the broker: `crash_at` (the process exits with status 137 at a
named crash point, as if killed), `stall_markers` (transaction markers are not written; the
coordinator retries them), `drop_markers` (a marker is reported written and never is: the
partition keeps a hanging transaction, KIP-664), `fail_txn_log_append` (appends to
`__transaction_state` fail).

`after` lets that many matches through first ("the third EndTxn"), `count` bounds how often the
rule fires (none: until it is removed), `probability` fires a match only so often (seeded, so a run
can be repeated). A rule that has fired `count` times stays listed, exhausted, until cleared.

Pure: no I/O and no asyncio. The broker consults the book at its doors (broker/fault_door.py for
requests, the crash points, the marker writer and the transaction log) and logs every firing.
"""

from __future__ import annotations

import dataclasses
import functools
import random
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from minikafka.protocol import versions
from minikafka.protocol.errors import ErrorCode

REQUEST_ACTIONS = frozenset({"error", "drop_response", "delay", "close_connection_before", "close_connection_after"})
STEP_ACTIONS = frozenset({"crash_at", "stall_markers", "drop_markers", "fail_txn_log_append"})
ACTIONS = REQUEST_ACTIONS | STEP_ACTIONS

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

# What a rule may name besides its action, and of which type (the control endpoint's JSON).
_FIELDS: dict[str, type | tuple[type, ...]] = {
    "api": (int, str), "min_version": int, "max_version": int, "client_id": str, "transactional_id": str,
    "group_id": str, "topic": str, "partition": int, "point": str, "error_code": (int, str),
    "delay_ms": int, "after": int, "count": int, "probability": (int, float), "name": str,
}


class RuleError(ValueError):
    """A rule that cannot be added, with the reason (the control endpoint answers it as 400)."""


@dataclass(frozen=True, slots=True)
class RequestView:
    """What rules can match in one request: its header and the names it carries."""

    api_key: int
    api_version: int
    client_id: str | None = None
    transactional_id: str | None = None
    group_id: str | None = None
    partitions: frozenset[tuple[str, int]] = frozenset()  # (topic, partition) pairs it names
    topics: frozenset[str] = frozenset()  # topics it names, with or without partitions


@dataclass(frozen=True, slots=True)
class Rule:
    id: int
    action: str
    api_key: int | None = None
    min_version: int | None = None
    max_version: int | None = None
    client_id: str | None = None
    transactional_id: str | None = None
    group_id: str | None = None
    topic: str | None = None
    partition: int | None = None
    point: str | None = None
    error_code: ErrorCode | None = None
    delay_ms: int = 0
    after: int = 0
    count: int | None = None
    probability: float = 1.0
    name: str | None = None  # the scenario that added it, for listings and log lines

    def matches(self, view: RequestView) -> bool:
        if self.api_key is not None and view.api_key != self.api_key:
            return False
        if self.min_version is not None and view.api_version < self.min_version:
            return False
        if self.max_version is not None and view.api_version > self.max_version:
            return False
        if self.client_id is not None and view.client_id != self.client_id:
            return False
        if self.transactional_id is not None and view.transactional_id != self.transactional_id:
            return False
        if self.group_id is not None and view.group_id != self.group_id:
            return False
        if self.topic is not None:
            if self.partition is not None:
                return (self.topic, self.partition) in view.partitions
            return self.topic in view.topics
        if self.partition is not None:
            return any(p == self.partition for _, p in view.partitions)
        return True

    def describe(self) -> dict[str, Any]:
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)
               if getattr(self, f.name) != f.default or f.name in ("id", "action")}
        if self.api_key is not None:
            out["api"] = versions.api_name(self.api_key)
            del out["api_key"]
        if self.error_code is not None:
            out["error_code"] = self.error_code.name.upper()
        return out


@dataclass(slots=True)
class _Counters:
    seen: int = 0  # matches so far (the first `after` are let through)
    fired: int = 0


class FaultRules:
    """The broker's book of rules: add, list, remove, clear; asked at each door.

    `on_fire(rule, where)` is called for every firing (the broker logs it). `request_rules` is
    False while no request rule is listed, so the request path pays one attribute read."""

    def __init__(self, *, seed: int | None = None,
                 on_fire: Callable[[Rule, str], None] | None = None) -> None:
        self._rules: dict[int, Rule] = {}
        self._counters: dict[int, _Counters] = {}
        self._next_id = 1
        self._random = random.Random(seed)
        self.on_fire = on_fire
        self.request_rules = False

    # -------------------------------------------------------------------------------- the book
    def add(self, spec: Mapping[str, Any]) -> Rule:
        """Parse and add one rule (`spec` as the control endpoint's JSON). Raises RuleError."""
        return self.add_all([spec])[0]

    def add_all(self, specs: Iterable[Mapping[str, Any]]) -> list[Rule]:
        """Several rules, all or none (a scenario's). Raises RuleError."""
        parsed = [parse_rule(0, spec) for spec in specs]  # every one checked before any is added
        added = []
        for rule in parsed:
            rule = dataclasses.replace(rule, id=self._next_id)
            self._next_id += 1
            self._rules[rule.id] = rule
            self._counters[rule.id] = _Counters()
            added.append(rule)
        self._refresh()
        return added

    def remove(self, rule_id: int) -> bool:
        found = self._rules.pop(rule_id, None) is not None
        self._counters.pop(rule_id, None)
        self._refresh()
        return found

    def clear(self) -> int:
        n = len(self._rules)
        self._rules.clear()
        self._counters.clear()
        self._refresh()
        return n

    def describe(self) -> list[dict[str, Any]]:
        out = []
        for rule in self._rules.values():
            c = self._counters[rule.id]
            d = rule.describe()
            d["fired"] = c.fired
            d["exhausted"] = rule.count is not None and c.fired >= rule.count
            out.append(d)
        return out

    def _refresh(self) -> None:
        self.request_rules = any(r.action in REQUEST_ACTIONS for r in self._rules.values())

    # -------------------------------------------------------------------------------- doors
    def on_request(self, view: RequestView) -> Rule | None:
        """The first request rule that fires for this request, if any."""
        for rule in list(self._rules.values()):
            if rule.action in REQUEST_ACTIONS and rule.matches(view) and self._fire(rule):
                self._fired(rule, versions.api_name(view.api_key))
                return rule
        return None

    def at_point(self, point: str) -> Rule | None:
        """The crash_at rule that fires at this crash point, if any."""
        for rule in list(self._rules.values()):
            if rule.action == "crash_at" and rule.point == point and self._fire(rule):
                self._fired(rule, point)
                return rule
        return None

    def at_step(self, action: str, topic: str | None = None, partition: int | None = None,
                transactional_id: str | None = None) -> Rule | None:
        """The stall_markers / drop_markers / fail_txn_log_append rule that fires for this step, if
        any. A rule aimed at a topic, partition or transactional id matches only steps naming it."""
        for rule in list(self._rules.values()):
            if rule.action != action:
                continue
            if rule.topic is not None and rule.topic != topic:
                continue
            if rule.partition is not None and rule.partition != partition:
                continue
            if rule.transactional_id is not None and rule.transactional_id != transactional_id:
                continue
            if self._fire(rule):
                self._fired(rule, action if topic is None else f"{action} {topic}-{partition}")
                return rule
        return None

    def _fire(self, rule: Rule) -> bool:
        c = self._counters[rule.id]
        if rule.count is not None and c.fired >= rule.count:
            return False
        c.seen += 1
        if c.seen <= rule.after:
            return False
        if rule.probability < 1.0 and self._random.random() >= rule.probability:
            return False
        c.fired += 1
        return True

    def _fired(self, rule: Rule, where: str) -> None:
        if self.on_fire is not None:
            self.on_fire(rule, where)


def parse_rule(rule_id: int, spec: Mapping[str, Any]) -> Rule:
    """A Rule from its JSON form; RuleError says what is wrong with it."""
    if not isinstance(spec, Mapping):
        raise RuleError("a rule is a JSON object")
    action = spec.get("action")
    if action not in ACTIONS:
        raise RuleError(f"action must be one of {', '.join(sorted(ACTIONS))}, not {action!r}")
    unknown = set(spec) - set(_FIELDS) - {"action"}
    if unknown:
        raise RuleError(f"unknown field(s) {', '.join(sorted(unknown))}; a rule takes {', '.join(sorted(_FIELDS))}")
    for key, value in spec.items():
        if key == "action" or value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, _FIELDS[key]):
            raise RuleError(f"{key} must be {_type_names(_FIELDS[key])}, not {value!r}")
    fields: dict[str, Any] = {k: v for k, v in spec.items() if k not in ("api", "error_code") and v is not None}
    if spec.get("api") is not None:
        fields["api_key"] = api_key_of(spec["api"])
    if action == "error":
        if spec.get("error_code") is None:
            raise RuleError("an error rule needs error_code (a Kafka error name such as NOT_COORDINATOR, or its number)")
        fields["error_code"] = error_code_of(spec["error_code"])
    elif spec.get("error_code") is not None:
        raise RuleError("error_code belongs to error rules only")
    if action == "delay" and int(spec.get("delay_ms") or 0) <= 0:
        raise RuleError("a delay rule needs delay_ms > 0")
    if action == "crash_at":
        if spec.get("point") not in CRASH_POINTS:
            raise RuleError(f"crash_at needs point, one of {', '.join(sorted(CRASH_POINTS))}")
    elif spec.get("point") is not None:
        raise RuleError("point belongs to crash_at rules only")
    if action in STEP_ACTIONS and any(spec.get(k) is not None for k in ("api", "min_version", "max_version",
                                                                        "client_id", "group_id")):
        raise RuleError(f"{action} acts inside the broker, not on a request: it matches no api, version, "
                        "client or group")
    if spec.get("partition") is not None and spec.get("topic") is None:
        raise RuleError("partition needs topic")
    for key in ("after", "delay_ms", "min_version", "max_version", "partition"):
        if int(spec.get(key) or 0) < 0:
            raise RuleError(f"{key} must not be negative")
    if spec.get("count") is not None and spec["count"] < 1:
        raise RuleError("count must be at least 1 (leave it out for a rule that fires until removed)")
    probability = float(spec.get("probability", 1.0))
    if not 0.0 < probability <= 1.0:
        raise RuleError("probability must be in (0, 1]")
    fields["probability"] = probability
    return Rule(id=rule_id, **fields)


def api_key_of(api: int | str) -> int:
    if isinstance(api, int):
        if api not in versions.SUPPORTED:
            raise RuleError(f"api key {api} is not served by this broker")
        return api
    key = _api_keys_by_name().get(api.replace("_", "").lower())
    if key is None:
        raise RuleError(f"no API named {api!r} (Kafka's names: Produce, Fetch, EndTxn, ...)")
    return key


@functools.cache
def _api_keys_by_name() -> dict[str, int]:
    return {versions.api_name(k).lower(): k for k in versions.SUPPORTED}


def error_code_of(code: int | str) -> ErrorCode:
    try:
        return ErrorCode(code) if isinstance(code, int) else ErrorCode[code.lower()]
    except (KeyError, ValueError):
        raise RuleError(f"no Kafka error {code!r} (names as Kafka's Errors: NOT_COORDINATOR, ...)") from None


def _type_names(t: type | tuple[type, ...]) -> str:
    types = t if isinstance(t, tuple) else (t,)
    return " or ".join({int: "an integer", str: "a string", float: "a number"}[x] for x in types)
