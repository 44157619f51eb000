"""versions: the canonical aliases match SUPPORTED; upgrade/downgrade between kio's per-version
classes and the one shape handlers use."""

from __future__ import annotations

import dataclasses
import datetime
import inspect
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kio.static.primitive import Records, i64Timedelta
from rawclient import default_entity

from minikafka.protocol import codec, messages, versions

pytestmark = pytest.mark.unit

st.register_type_strategy(Records, st.binary(max_size=64).map(Records))
st.register_type_strategy(i64Timedelta, st.integers(-(2**40), 2**40).map(
    lambda n: i64Timedelta.parse(datetime.timedelta(milliseconds=n))))


def _handler_served() -> dict[int, versions.VersionRange]:
    from minikafka.broker.dispatch import HandlerRegistry
    from minikafka.broker.handlers import default_handlers

    return HandlerRegistry(default_handlers(None)).served  # type: ignore[arg-type]


SERVED = _handler_served()
PAIRS = [(k, v) for k, rng in SERVED.items() for v in range(rng.min, rng.max + 1)]


# ---------------------------------------------------------------------------------------------
# Aliases and ranges


@pytest.mark.parametrize("api_key", sorted(messages.CANONICAL_NAMES))
def test_canonical_alias_is_the_highest_served_version(api_key: int) -> None:
    """... or, for an API whose newer versions name topics by id only, the last that names them."""
    cls = messages.canonical()[api_key]
    assert cls.__api_key__ == api_key
    assert cls.__version__ == versions.canonical_version(api_key)
    assert cls.__version__ == versions.BY_NAME_UNTIL.get(api_key, versions.SUPPORTED[api_key].max)
    assert cls is versions.canonical_response(api_key)


def test_every_kio_alias_in_messages_is_at_the_canonical_version() -> None:
    """Nested aliases too (ApiVersion, PartitionData, ...): one kio version per API."""
    checked = 0
    for name in messages._CLASSES:
        obj = getattr(messages, name)
        if not inspect.isclass(obj):
            continue
        m = re.fullmatch(r"kio\.schema\.\w+\.v(\d+)\.response", obj.__module__)
        if m is None:
            continue
        assert int(m.group(1)) == versions.canonical_version(obj.__api_key__), name
        checked += 1
    assert checked == len(messages._CLASSES)


def test_every_handler_api_has_a_canonical_alias() -> None:
    assert set(SERVED) <= set(messages.CANONICAL_NAMES) | {18}


def test_supported_versions_all_have_kio_classes() -> None:
    for api_key, rng in versions.SUPPORTED.items():
        for v in range(rng.min, rng.max + 1):
            assert versions.request_class(api_key, v).__version__ == v
            assert versions.response_class(api_key, v).__version__ == v


def test_version_range_membership() -> None:
    r = versions.VersionRange(2, 5)
    assert 2 in r and 5 in r and 3 in r
    assert 1 not in r and 6 not in r
    assert "3" not in r and None not in r


# ---------------------------------------------------------------------------------------------
# upgrade / downgrade


@pytest.mark.parametrize("api_key, api_version", PAIRS)
def test_default_request_upgrades_and_converts_back(api_key: int, api_version: int) -> None:
    cls = versions.request_class(api_key, api_version)
    req = default_entity(cls)
    up = versions.upgrade(req)
    canonical = versions.canonical_request(api_key)
    if versions.same_shape(cls, canonical) or versions.by_topic_id(api_key, api_version):
        assert up is req  # handed on unconverted: the same fields read the same, or topic ids
    else:
        assert type(up) is canonical
    back = versions.convert(up, cls)
    assert back == req
    codec.encode_request(api_version, 1, "c", back)  # still encodable at its version


@pytest.mark.parametrize("api_key, api_version", PAIRS)
def test_random_request_upgrade_keeps_shared_fields(api_key: int, api_version: int) -> None:
    if versions.by_topic_id(api_key, api_version):
        return  # handed on as it is (test above); the topic-id door's own tests cover it
    cls = versions.request_class(api_key, api_version)
    canonical = versions.canonical_request(api_key)
    shared = {f.name for f in dataclasses.fields(cls)} & {f.name for f in dataclasses.fields(canonical)}

    @settings(max_examples=10, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(st.from_type(cls))
    def check(req) -> None:
        up = versions.upgrade(req)
        assert type(up) is canonical or (up is req and versions.same_shape(cls, canonical))
        for name in shared:
            a, b = getattr(req, name), getattr(up, name)
            if dataclasses.is_dataclass(a) or (isinstance(a, tuple) and a and dataclasses.is_dataclass(a[0])):
                continue  # nested entities are converted, compared below by round trip
            assert a == b, name
        if api_version == versions.SUPPORTED[api_key].max:
            assert up is req or up == req

    check()


def test_same_shape_tells_apart_what_a_handler_would_read_differently() -> None:
    produce = [versions.request_class(0, v) for v in range(3, 12)]
    assert all(versions.same_shape(c, produce[-1]) for c in produce)  # Produce v3-v11: one shape
    fetch = versions.canonical_request(1)
    assert not versions.same_shape(versions.request_class(1, 4), fetch)  # v4 lacks fields v12 has
    metadata = versions.canonical_request(3)
    assert not versions.same_shape(versions.request_class(3, 0), metadata)  # topics: nullable only from v1


@pytest.mark.parametrize("api_key, api_version", PAIRS)
def test_default_response_downgrades_to_every_served_version(api_key: int, api_version: int) -> None:
    """By-id versions from the by-id answer (the topic-id door's), the rest from the handler's."""
    by_id = versions.by_topic_id(api_key, api_version)
    resp = default_entity(versions.response_class(api_key, versions.SUPPORTED[api_key].max) if by_id
                          else versions.canonical_response(api_key), nulls=False)
    down = versions.downgrade(resp, api_version)
    assert type(down) is versions.response_class(api_key, api_version)
    codec.encode_response(api_key, api_version, 1, down)


def test_delete_topics_v1_names_move_to_topics() -> None:
    cls = versions.request_class(20, 1)
    req = dataclasses.replace(default_entity(cls), topic_names=("a", "b"))
    up = versions.upgrade(req)
    assert [t.name for t in up.topics] == ["a", "b"]


def test_convert_fills_fields_missing_in_the_source() -> None:
    # Metadata v0 has no allow_auto_topic_creation; the v12 default (True) applies, like Kafka.
    v0 = versions.request_class(3, 0)
    up = versions.upgrade(default_entity(v0))
    assert up.allow_auto_topic_creation is True
    assert up.topics == ()


def test_downgrade_drops_fields_the_target_lacks() -> None:
    resp = default_entity(versions.canonical_response(3))
    resp = dataclasses.replace(resp, cluster_id="abc", throttle_time=resp.throttle_time)
    v0 = versions.downgrade(resp, 0)
    assert not hasattr(v0, "cluster_id")
    v2 = versions.downgrade(resp, 2)
    assert v2.cluster_id == "abc"
