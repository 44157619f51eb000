"""Client quotas, pure: Kafka's rate and token-bucket arithmetic, which quota applies, and the
AlterClientQuotas / DescribeClientQuotas rules with Kafka's messages."""

from __future__ import annotations

import pytest

from minikafka.quota.entity import (
    CLIENT_ID,
    IP,
    MATCH_DEFAULT,
    MATCH_EXACT,
    MATCH_SPECIFIED,
    USER,
    Component,
    Op,
    QuotaError,
    filter_of,
)
from minikafka.java_order import hashmap_order, string_hash
from minikafka.quota.manager import ClientQuotas, QuotaWindows
from minikafka.quota.rate import SampledRate, TokenBucket, throttle_ms

T0 = 1_700_000_000_000


def test_rate_is_measured_over_at_least_samples_minus_one_windows() -> None:
    r = SampledRate(samples=11, window_ms=1000)
    r.record(10_000, T0)
    # A first burst is spread over 10 s, not over the 0 ms it took.
    assert r.window_size_ms(T0) == 10_000
    assert r.rate(T0) == pytest.approx(1000.0)
    # 2.5 s elapsed: two full windows seen, eight more assumed (Kafka adds whole windows only).
    assert r.window_size_ms(T0 + 2500) == 10_500


def test_rate_forgets_samples_older_than_the_whole_window() -> None:
    r = SampledRate(samples=3, window_ms=1000)
    r.record(300, T0)
    assert r.rate(T0 + 500) == pytest.approx(300 / 2.5)
    assert r.rate(T0 + 3000) == 0.0  # every sample expired


def test_throttle_time_is_kafkas_formula() -> None:
    # (rate - bound) / bound * window: 2000 B/s against 1000 B/s over 10 s -> 10 s.
    r = SampledRate(samples=11, window_ms=1000)
    r.record(20_000, T0)
    assert throttle_ms(r, 1000.0, T0) == 10_000
    assert throttle_ms(r, 2000.0, T0) == 0


def test_token_bucket_starts_full_and_refills_at_the_quota() -> None:
    b = TokenBucket(samples=11, window_ms=1000)
    b.record(10, quota=2.0, now_ms=T0)  # burst 22 -> 12 left
    assert b.throttle_ms(2.0, T0) == 0
    b.record(20, quota=2.0, now_ms=T0)  # -8: four seconds at 2/s
    assert b.throttle_ms(2.0, T0) == 4000
    assert b.throttle_ms(2.0, T0 + 1000) == 3000


def _quotas() -> ClientQuotas:
    return ClientQuotas(QuotaWindows(), {})


def _set(q: ClientQuotas, pairs: list[tuple[str, str | None]], **ops: float) -> None:
    (outcome,) = q.alter([(pairs, [Op(k, v) for k, v in ops.items()])])
    assert outcome.error is None, outcome.error
    q.apply(outcome.entity, outcome.quotas)


@pytest.mark.parametrize(("configured", "expected_bound", "expected_tags"), [
    ([([(USER, "u"), (CLIENT_ID, "c")], 1.0), ([(CLIENT_ID, "c")], 7.0)], 1.0, ("u", "c")),
    ([([(USER, "u"), (CLIENT_ID, None)], 2.0), ([(USER, "u")], 3.0)], 2.0, ("u", "c")),
    ([([(USER, "u")], 3.0), ([(USER, None), (CLIENT_ID, "c")], 4.0)], 3.0, ("u", "")),
    ([([(USER, None), (CLIENT_ID, "c")], 4.0), ([(USER, None)], 6.0)], 4.0, ("u", "c")),
    ([([(USER, None), (CLIENT_ID, None)], 5.0), ([(CLIENT_ID, "c")], 7.0)], 5.0, ("u", "c")),
    ([([(USER, None)], 6.0), ([(CLIENT_ID, "c")], 7.0)], 6.0, ("u", "")),
    ([([(CLIENT_ID, "c")], 7.0), ([(CLIENT_ID, None)], 8.0)], 7.0, ("", "c")),
    ([([(CLIENT_ID, None)], 8.0)], 8.0, ("", "c")),
])
def test_the_most_specific_entity_setting_the_key_applies(configured, expected_bound, expected_tags) -> None:
    q = _quotas()
    for pairs, value in configured:
        _set(q, pairs, producer_byte_rate=value)
    assert q.quota_for("producer_byte_rate", "u", "c") == (expected_bound, expected_tags)


def test_a_more_specific_entity_without_the_key_does_not_hide_the_default() -> None:
    q = _quotas()
    _set(q, [(CLIENT_ID, "c")], consumer_byte_rate=5)
    _set(q, [(CLIENT_ID, None)], producer_byte_rate=9)
    assert q.quota_for("producer_byte_rate", "ANONYMOUS", "c") == (9.0, ("", "c"))
    assert q.quota_for("request_percentage", "ANONYMOUS", "c") is None


def test_default_client_quota_is_had_by_each_client_id_separately() -> None:
    q = _quotas()
    _set(q, [(CLIENT_ID, None)], producer_byte_rate=1000)
    assert q.record("producer_byte_rate", "ANONYMOUS", "a", 20_000, T0) == 10_000
    assert q.record("producer_byte_rate", "ANONYMOUS", "b", 5_000, T0) == 0  # b has its own


def test_a_user_quota_is_shared_by_the_users_client_ids() -> None:
    q = _quotas()
    _set(q, [(USER, "ANONYMOUS")], producer_byte_rate=1000)
    assert q.record("producer_byte_rate", "ANONYMOUS", "a", 8_000, T0) == 0
    assert q.record("producer_byte_rate", "ANONYMOUS", "b", 4_000, T0) == 2_000


def test_unrecord_takes_a_throttled_fetch_back() -> None:
    q = _quotas()
    _set(q, [(CLIENT_ID, "c")], consumer_byte_rate=1000)
    assert q.record("consumer_byte_rate", "ANONYMOUS", "c", 20_000, T0) > 0
    q.unrecord("consumer_byte_rate", "ANONYMOUS", "c", 20_000, T0)
    assert q.record("consumer_byte_rate", "ANONYMOUS", "c", 1_000, T0) == 0
    assert q.max_in_window("consumer_byte_rate", "ANONYMOUS", "c") == 10_000


def test_removing_the_last_key_forgets_the_entity() -> None:
    q = _quotas()
    _set(q, [(CLIENT_ID, "c")], producer_byte_rate=10)
    (o,) = q.alter([([(CLIENT_ID, "c")], [Op("producer_byte_rate", None)])])
    q.apply(o.entity, o.quotas)
    assert q.configured == {}
    assert not q.enabled("producer_byte_rate")


def test_connection_rate_per_ip_refuses_and_does_not_count_the_refused() -> None:
    q = _quotas()
    _set(q, [(IP, None)], connection_creation_rate=1)
    waits = [q.connection_throttle_ms("10.0.0.1", T0) for _ in range(12)]
    assert waits[:10] == [0] * 10  # 10 connections in the first 10 s window
    assert all(w > 0 for w in waits[10:])
    assert q.connection_throttle_ms("10.0.0.2", T0) == 0  # per IP


@pytest.mark.parametrize(("pairs", "ops", "message"), [
    ([], [("producer_byte_rate", 1.0)], "Invalid empty client quota entity"),
    ([("group", "g")], [("producer_byte_rate", 1.0)], "Unhandled client quota entity type: group"),
    ([(USER, "")], [("producer_byte_rate", 1.0)], "Empty user not supported"),
    ([(IP, "1.2.3.4"), (USER, "u")], [("connection_creation_rate", 1.0)],
     "Invalid quota entity combination, IP entity shouldnot be combined with User or ClientId"),
    ([(IP, "not an ip")], [("connection_creation_rate", 1.0)], "not an ip is not a valid IP or resolvable host."),
    ([(USER, "u")], [("connection_creation_rate", 1.0)], "Invalid configuration key connection_creation_rate"),
    ([(IP, "1.2.3.4")], [("producer_byte_rate", 1.0)], "Invalid configuration key producer_byte_rate"),
    ([(USER, "u")], [("producer_byte_rate", 0.0)], "Quota producer_byte_rate must be greater than 0"),
    ([(USER, "u")], [("producer_byte_rate", 1.5)], "producer_byte_rate cannot be a fractional value."),
    ([(USER, "u")], [("producer_byte_rate", 1e19)], "Proposed value for producer_byte_rate is too large for a LONG."),
    ([(IP, None)], [("connection_creation_rate", 3e9)],
     "Proposed value for connection_creation_rate is too large for an INT."),
    ([(USER, "u")], [("request_percentage", 1.0), ("request_percentage", 2.0)],
     "Duplicate quota key request_percentage not updating quota for this entity ClientQuotaEntity(entries={user=u})"),
])
def test_alterations_are_refused_with_kafkas_messages(pairs, ops, message) -> None:
    q = _quotas()
    (o,) = q.alter([(pairs, [Op(k, v) for k, v in ops])])
    assert isinstance(o.error, QuotaError)
    assert str(o.error) == message


def test_fractional_double_quotas_are_accepted() -> None:
    q = _quotas()
    _set(q, [(USER, "u"), (CLIENT_ID, "c")], request_percentage=12.5, controller_mutation_rate=0.5)
    assert q.configured[((USER, "u"), (CLIENT_ID, "c"))] == {"request_percentage": 12.5,
                                                            "controller_mutation_rate": 0.5}


def test_the_same_entity_twice_in_one_request_is_refused() -> None:
    q = _quotas()
    first, second = q.alter([([(USER, "u")], [Op("producer_byte_rate", 1)]),
                             ([(USER, "u")], [Op("consumer_byte_rate", 1)])])
    assert first.error is None
    assert str(second.error) == "Ignoring duplicate entity ClientQuotaEntity(entries={user=u})"


def test_describe_filters() -> None:
    q = _quotas()
    _set(q, [(USER, "u")], producer_byte_rate=1)
    _set(q, [(USER, "u"), (CLIENT_ID, "c")], producer_byte_rate=2)
    _set(q, [(USER, None)], producer_byte_rate=3)
    _set(q, [(CLIENT_ID, "c")], producer_byte_rate=4)

    def names(components, strict=False):
        f = filter_of([Component(*c) for c in components], strict)
        return sorted(repr(e) for e, _ in q.describe(f))

    assert len(names([])) == 4
    assert names([(USER, MATCH_EXACT, "u")]) == sorted([repr(((USER, "u"),)), repr(((USER, "u"), (CLIENT_ID, "c")))])
    assert names([(USER, MATCH_EXACT, "u")], strict=True) == [repr(((USER, "u"),))]
    assert names([(USER, MATCH_DEFAULT, None)]) == [repr(((USER, None),))]
    assert names([(CLIENT_ID, MATCH_SPECIFIED, None)]) == sorted([repr(((USER, "u"), (CLIENT_ID, "c"))),
                                                                  repr(((CLIENT_ID, "c"),))])


@pytest.mark.parametrize(("components", "message", "unsupported"), [
    ([("", MATCH_SPECIFIED, None)], "Invalid empty entity type.", False),
    ([("topic", MATCH_SPECIFIED, None)], "Unsupported entity type topic", True),
    ([(USER, MATCH_EXACT, None)], "Request specified MATCH_TYPE_EXACT, but set match string to null.", False),
    ([(USER, MATCH_DEFAULT, "u")], "Request specified MATCH_TYPE_DEFAULT, but also specified a match string.", False),
    ([(USER, MATCH_SPECIFIED, "u")],
     "Request specified MATCH_TYPE_SPECIFIED, but also specified a match string.", False),
    ([(USER, 7, None)], "Unknown match type 7", False),
    ([(USER, MATCH_SPECIFIED, None), (USER, MATCH_DEFAULT, None)],
     "Entity type user cannot appear more than once in the filter.", False),
    ([(IP, MATCH_SPECIFIED, None), (CLIENT_ID, MATCH_SPECIFIED, None)],
     "Invalid entity filter component combination. IP filter component should not be used with user or "
     "clientId filter component.", False),
])
def test_bad_filters_are_refused_with_kafkas_messages(components, message, unsupported) -> None:
    with pytest.raises(QuotaError) as info:
        filter_of([Component(*c) for c in components], strict=False)
    assert str(info.value) == message
    assert info.value.unsupported is unsupported


def test_values_and_entities_come_in_javas_hashmap_order() -> None:
    # "hello".hashCode() is 99162322 in Java; Kafka 4.3.1's broker lists these three keys in this
    # order (kafka-configs.sh then prints consumer, request, producer: see the integration test).
    assert string_hash("hello") == 99162322
    assert string_hash(None) == 0
    q = _quotas()
    _set(q, [(CLIENT_ID, "c")], producer_byte_rate=1, consumer_byte_rate=2, request_percentage=3)
    ((_, values),) = q.describe(filter_of([], strict=False))
    assert [k for k, _ in values] == ["request_percentage", "producer_byte_rate", "consumer_byte_rate"]
    assert hashmap_order(["a", "b", "q"], string_hash) == ["a", "q", "b"]  # 97, 98, 113 in 16 buckets


def test_a_full_sensor_table_drops_idle_records_never_one_in_use(monkeypatch) -> None:
    import minikafka.quota.manager as manager

    monkeypatch.setattr(manager, "MAX_SENSORS", 3)
    q = _quotas()
    _set(q, [(CLIENT_ID, None)], controller_mutation_rate=1)
    q.record_mutation("ANONYMOUS", "busy", 30, T0)  # 11 of credit: 19 in debt
    for i in range(5):  # more clients than the table holds, each one idle at once
        q.record_mutation("ANONYMOUS", f"c{i}", 0, T0)
    assert q.mutation_throttle_ms("ANONYMOUS", "busy", T0) == 19_000  # not reset to a full bucket
    _set(q, [(IP, None)], connection_creation_rate=1)
    for _ in range(10):
        assert q.connection_throttle_ms("10.0.0.9", T0) == 0
    for i in range(5):
        q.connection_throttle_ms(f"10.1.0.{i}", T0)
    assert q.connection_throttle_ms("10.0.0.9", T0) > 0  # its ten connections still count
