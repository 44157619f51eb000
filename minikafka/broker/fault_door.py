"""The fault door: where the request path asks the fault rules (control/rules.py) about a request.

dispatch() asks `for_request` only while a request rule is listed (`active`, one attribute read
otherwise); the door turns the decoded request into the names rules match (transactional id,
group, topics and partitions, by name or by topic id) and returns the rule that fires, whose
action dispatch then carries out. Every firing is logged (`fault_fired`), as are the crash
points, marker stalls and transaction-log failures the other doors report.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable
from typing import Any

import structlog

from minikafka.control.rules import FaultRules, RequestView, Rule

log = structlog.get_logger("minikafka.faults")

# Where a request body lists its topics, and where a topic lists its partitions (field names of
# the newest versions, which dispatch's bodies have): Produce topic_data/partition_data, Fetch and
# ListOffsets topics/partitions, WriteTxnMarkers markers/topics/partition_indexes, ...
_TOPIC_LISTS = ("topic_data", "topics", "v3_and_below_topics")  # the last: AddPartitionsToTxn up to v3
_PARTITION_LISTS = ("partition_data", "partitions", "partition_indexes")
_PARTITION_INDEX = ("index", "partition", "partition_index")


def logged(rule: Rule, where: str) -> None:
    log.warning("fault_fired", rule=rule.id, action=rule.action, at=where, name=rule.name,
                error_code=rule.error_code.name.upper() if rule.error_code is not None else None,
                delay_ms=rule.delay_ms or None)


class FaultDoor:
    def __init__(self, rules: FaultRules, topic_name: Callable[[uuid.UUID], str | None]) -> None:
        self.rules = rules
        self._topic_name = topic_name  # a topic id's name (Fetch v13+, Produce v13 name topics by id)

    @property
    def active(self) -> bool:
        return self.rules.request_rules

    def for_request(self, api_key: int, api_version: int, client_id: str | None, body: Any) -> Rule | None:
        return self.rules.on_request(self.view(api_key, api_version, client_id, body))

    def view(self, api_key: int, api_version: int, client_id: str | None, body: Any) -> RequestView:
        topics: set[str] = set()
        partitions: set[tuple[str, int]] = set()
        transactional_id = getattr(body, "transactional_id", None) or getattr(body, "v3_and_below_transactional_id", None)
        group_id = getattr(body, "group_id", None)
        for holder in _holders(body):
            for t in _first_list(holder, _TOPIC_LISTS):
                name = self._name_of(t)
                if name is None:
                    continue
                topics.add(name)
                for p in _first_list(t, _PARTITION_LISTS):
                    index = p if isinstance(p, int) else _first_attr(p, _PARTITION_INDEX)
                    if isinstance(index, int):
                        partitions.add((name, index))
            if transactional_id is None:
                transactional_id = getattr(holder, "transactional_id", None)
            if group_id is None:
                group_id = getattr(holder, "group_id", None)
        return RequestView(api_key, api_version, client_id,
                           transactional_id if isinstance(transactional_id, str) else None,
                           group_id if isinstance(group_id, str) else None,
                           frozenset(partitions), frozenset(topics))

    def _name_of(self, topic: Any) -> str | None:
        if isinstance(topic, str):  # Metadata v0's topic names... and lists of plain names
            return topic
        name = getattr(topic, "name", None) or getattr(topic, "topic", None)
        if isinstance(name, str) and name:
            return name
        topic_id = getattr(topic, "topic_id", None)
        return self._topic_name(topic_id) if isinstance(topic_id, uuid.UUID) else None


def _holders(body: Any) -> Iterable[Any]:
    """The body, and the entries of lists that hold topic lists themselves (AddPartitionsToTxn v4+
    transactions, WriteTxnMarkers markers, OffsetFetch v8+ groups)."""
    yield body
    for field in ("transactions", "markers", "groups"):
        for entry in getattr(body, field, None) or ():
            yield entry


def _first_list(obj: Any, names: tuple[str, ...]) -> tuple[Any, ...]:
    for name in names:
        value = getattr(obj, name, None)
        if isinstance(value, tuple):
            return value
    return ()


def _first_attr(obj: Any, names: tuple[str, ...]) -> Any:
    for name in names:
        value = getattr(obj, name, None)
        if value is not None:
            return value
    return None
