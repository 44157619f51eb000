"""The fault rule book (minikafka/control/rules.py): parsing, matching, after/count/probability."""

from __future__ import annotations

import pytest

from minikafka.control.rules import FaultRules, RequestView, RuleError, parse_rule
from minikafka.protocol.errors import ErrorCode

pytestmark = pytest.mark.unit

END_TXN, PRODUCE = 26, 0


def view(api_key: int = END_TXN, version: int = 4, **kw) -> RequestView:
    return RequestView(api_key, version, **kw)


def test_an_error_rule_by_names_matches_its_api_and_transactional_id():
    fired = []
    book = FaultRules(on_fire=lambda rule, where: fired.append((rule.id, where)))
    rule = book.add({"action": "error", "api": "EndTxn", "error_code": "NOT_COORDINATOR", "transactional_id": "t1"})
    assert rule.api_key == END_TXN and rule.error_code is ErrorCode.not_coordinator
    assert book.request_rules
    assert book.on_request(view(transactional_id="t2")) is None
    assert book.on_request(view(PRODUCE, 9, transactional_id="t1")) is None
    assert book.on_request(view(transactional_id="t1")) == rule
    assert fired == [(rule.id, "EndTxn")]
    assert book.describe()[0] == {"id": rule.id, "action": "error", "api": "EndTxn", "transactional_id": "t1",
                                  "error_code": "NOT_COORDINATOR", "fired": 1, "exhausted": False}


def test_after_lets_matches_through_and_count_bounds_the_firings():
    book = FaultRules()
    book.add({"action": "drop_response", "api": 0, "after": 2, "count": 2})
    got = [book.on_request(view(PRODUCE, 9)) is not None for _ in range(6)]
    assert got == [False, False, True, True, False, False]
    assert book.describe()[0]["exhausted"] is True


def test_version_range_client_group_and_partition_matching():
    book = FaultRules()
    book.add({"action": "delay", "delay_ms": 50, "api": "Fetch", "min_version": 12, "max_version": 13,
              "client_id": "c", "topic": "t", "partition": 1})
    hit = view(1, 12, client_id="c", partitions=frozenset({("t", 1)}), topics=frozenset({"t"}))
    assert book.on_request(hit) is not None
    assert book.on_request(view(1, 11, client_id="c", partitions=frozenset({("t", 1)}), topics=frozenset({"t"}))) is None
    assert book.on_request(view(1, 13, client_id="d", partitions=frozenset({("t", 1)}), topics=frozenset({"t"}))) is None
    assert book.on_request(view(1, 13, client_id="c", partitions=frozenset({("t", 0)}), topics=frozenset({"t"}))) is None
    book.clear()
    book.add({"action": "close_connection_before", "group_id": "g"})
    assert book.on_request(view(8, 9, group_id="g")) is not None
    assert book.on_request(view(8, 9, group_id="h")) is None


def test_probability_is_seeded_and_repeatable():
    def run() -> list[bool]:
        book = FaultRules(seed=7)
        book.add({"action": "drop_response", "probability": 0.5})
        return [book.on_request(view()) is not None for _ in range(200)]

    first = run()
    assert first == run()
    assert 60 < sum(first) < 140


def test_step_rules_fire_at_their_steps_only():
    book = FaultRules()
    crash = book.add({"action": "crash_at", "point": "txn.after_prepare_commit", "after": 1})
    assert not book.request_rules  # a step rule costs the request path nothing
    assert book.at_point("txn.after_prepare_commit") is None  # the first is let through
    assert book.at_point("txn.after_first_marker") is None
    assert book.at_point("txn.after_prepare_commit") == crash
    stall = book.add({"action": "stall_markers", "topic": "out", "count": 1})
    assert book.at_step("stall_markers", "in", 0) is None
    assert book.at_step("stall_markers", "out", 3) == stall
    assert book.at_step("stall_markers", "out", 3) is None  # count 1
    drop = book.add({"action": "drop_markers", "topic": "out", "partition": 1, "count": 1})
    assert book.at_step("drop_markers", "out", 0) is None
    assert book.at_step("stall_markers", "out", 1) is None  # stall's one firing is spent
    assert book.at_step("drop_markers", "out", 1) == drop
    fail = book.add({"action": "fail_txn_log_append"})
    assert book.at_step("fail_txn_log_append") == fail
    assert book.remove(fail.id) and not book.remove(fail.id)
    assert book.at_step("fail_txn_log_append") is None


@pytest.mark.parametrize("spec, message", [
    ({"action": "explode"}, "action must be one of"),
    ({"action": "error"}, "needs error_code"),
    ({"action": "error", "error_code": "NO_SUCH_ERROR"}, "no Kafka error"),
    ({"action": "drop_response", "error_code": 16}, "error rules only"),
    ({"action": "delay"}, "delay_ms > 0"),
    ({"action": "crash_at", "point": "nowhere"}, "crash_at needs point"),
    ({"action": "crash_at", "point": "txn.after_produce", "api": "Produce"}, "acts inside the broker"),
    ({"action": "drop_response", "api": "Frobnicate"}, "no API named"),
    ({"action": "drop_response", "api": 999}, "not served"),
    ({"action": "drop_response", "partition": 1}, "partition needs topic"),
    ({"action": "drop_response", "count": 0}, "count must be at least 1"),
    ({"action": "drop_response", "probability": 1.5}, "probability must be"),
    ({"action": "drop_response", "after": "2"}, "after must be an integer"),
    ({"action": "drop_response", "colour": "red"}, "unknown field"),
    (["not", "an", "object"], "JSON object"),
])
def test_bad_rules_are_refused_with_the_reason(spec, message):
    with pytest.raises(RuleError, match=message):
        parse_rule(1, spec)


def test_add_all_adds_nothing_when_one_rule_is_bad():
    book = FaultRules()
    with pytest.raises(RuleError):
        book.add_all([{"action": "drop_response"}, {"action": "delay"}])
    assert book.describe() == []
