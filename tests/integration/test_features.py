"""Finalized features (KIP-584) changed at run time: UpdateFeatures as `kafka-features.sh` sends it
(v2) and as older clients do (v0-1), Kafka's answers to each refusal, and the effect of a change:
ApiVersions advertises the new level, group.version=0 turns the consumer protocol off,
transaction.version follows. Each test gets a broker of its own (a change is cluster-wide), Apache
Kafka 4.3.1 in the conformance run: the answers and messages are Kafka's.
"""

from __future__ import annotations

import time
import uuid
from typing import Any

import pytest
from kio.schema.api_versions.v4.request import ApiVersionsRequest
from kio.schema.consumer_group_heartbeat.v1.request import ConsumerGroupHeartbeatRequest
from kio.schema.update_features.v0.request import FeatureUpdateKey as KeyV0
from kio.schema.update_features.v0.request import UpdateFeaturesRequest as UpdateV0
from kio.schema.update_features.v1.request import FeatureUpdateKey as KeyV1
from kio.schema.update_features.v1.request import UpdateFeaturesRequest as UpdateV1
from kio.schema.update_features.v2.request import FeatureUpdateKey as KeyV2
from kio.schema.update_features.v2.request import UpdateFeaturesRequest as UpdateV2
from kio.static.primitive import i8, i16, i32
from rawclient import RawClient, ms

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

NONE, UNSUPPORTED_VERSION, INVALID_UPDATE_VERSION = 0, 35, 95
UPGRADE, SAFE_DOWNGRADE, UNSAFE_DOWNGRADE = 1, 2, 3
PREFIX = "The update failed for all features since the following feature had an error: "


def update(c: RawClient, version: int, *items: tuple[str, int, int], validate_only: bool = False) -> Any:
    if version == 0:
        return c.request(UpdateV0(timeout=ms(60_000), feature_updates=tuple(
            KeyV0(feature=f, max_version_level=i16(level), allow_downgrade=kind != UPGRADE)
            for f, level, kind in items)), 0)
    key, req = (KeyV1, UpdateV1) if version == 1 else (KeyV2, UpdateV2)
    return c.request(req(timeout=ms(60_000), validate_only=validate_only, feature_updates=tuple(
        key(feature=f, max_version_level=i16(level), upgrade_type=i8(kind)) for f, level, kind in items)), version)


def finalized(c: RawClient) -> tuple[dict[str, int], int]:
    r = c.request(ApiVersionsRequest(client_software_name="rawclient", client_software_version="1"), 4)
    return {f.name: int(f.max_version_level) for f in r.finalized_features}, int(r.finalized_features_epoch)


def level_shown(c: RawClient, feature: str, level: int | None, timeout: float = 15.0) -> bool:
    """ApiVersions finalizes `feature` at `level` (None: not listed). minikafka shows a change at
    once; Kafka's broker learns it from its metadata log a moment after its controller answered,
    so the check waits (bounded) for it."""
    deadline = time.monotonic() + timeout
    while True:
        if finalized(c)[0].get(feature) == level:
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)


@pytest.fixture
def raw(configured_broker: Any) -> Any:
    broker = configured_broker()
    with RawClient.connect(broker.bootstrap) as c:
        yield c


def test_refusals_are_kafkas(raw: RawClient) -> None:
    levels, epoch = finalized(raw)
    assert (levels["group.version"], levels["transaction.version"]) == (1, 2)
    refused = [
        (("foo.version", 1, UPGRADE), "Invalid update version 1 for feature foo.version. Local controller 1 does not "
                                      "support this feature."),
        (("group.version", 2, UPGRADE), "Invalid update version 2 for feature group.version. Local controller 1 only "
                                        "supports versions 0-1"),
        (("transaction.version", 3, SAFE_DOWNGRADE), "Invalid update version 3 for feature transaction.version. "
                                                     "Local controller 1 only supports versions 0-2"),
        (("group.version", -1, UPGRADE), "Invalid update version -1 for feature group.version. A feature version "
                                         "cannot be less than 0."),
        (("group.version", 0, UPGRADE), "Invalid update version 0 for feature group.version. Can't downgrade the "
                                        "version of this feature without setting the upgrade type to either safe or "
                                        "unsafe downgrade."),
        (("group.version", 1, 0), "Invalid update version 1 for feature group.version. The controller does not "
                                  "support the given upgrade type."),
        (("group.version", 1, 4), "Invalid update version 1 for feature group.version. The controller does not "
                                  "support the given upgrade type."),
    ]
    for item, message in refused:
        for version in (1, 2):
            r = update(raw, version, item)
            assert (int(r.error_code), r.error_message) == (INVALID_UPDATE_VERSION, PREFIX + message), (version, item)
            if version == 1:
                assert r.results == ()
    # All or nothing: a valid downgrade next to a refused one changes nothing.
    r = update(raw, 2, ("group.version", 0, SAFE_DOWNGRADE), ("transaction.version", 1, UPGRADE))
    assert int(r.error_code) == INVALID_UPDATE_VERSION
    assert finalized(raw)[0] == levels


def test_dry_run_and_no_op_updates(raw: RawClient) -> None:
    levels, _epoch = finalized(raw)
    r = update(raw, 1, ("group.version", 0, SAFE_DOWNGRADE), validate_only=True)
    assert (int(r.error_code), r.error_message) == (NONE, None)
    assert [(x.feature, int(x.error_code), x.error_message) for x in r.results] == [("group.version", NONE, "NONE")]
    assert int(update(raw, 2, ("transaction.version", 1, UNSAFE_DOWNGRADE), validate_only=True).error_code) == NONE
    assert finalized(raw)[0] == levels  # validated, not applied
    r = update(raw, 0, ("group.version", 1, UPGRADE))  # the level it has: fine
    assert (int(r.error_code), [x.feature for x in r.results]) == (NONE, ["group.version"])
    assert int(update(raw, 1).error_code) == NONE and update(raw, 1).results == ()


def test_group_version_zero_turns_the_consumer_protocol_off_and_back_on(raw: RawClient) -> None:
    def join() -> int:
        r = raw.request(ConsumerGroupHeartbeatRequest(
            group_id=f"g-{uuid.uuid4().hex[:8]}", member_id=str(uuid.uuid4()), member_epoch=i32(0),
            rebalance_timeout=ms(30_000), subscribed_topic_names=(), topic_partitions=()), 1)
        return int(r.error_code)

    assert join() == NONE
    _levels, epoch = finalized(raw)
    assert int(update(raw, 2, ("group.version", 0, SAFE_DOWNGRADE)).error_code) == NONE
    assert level_shown(raw, "group.version", None)   # a level-0 feature is not listed
    assert finalized(raw)[1] > epoch
    assert join() == UNSUPPORTED_VERSION
    assert int(update(raw, 2, ("group.version", 1, UPGRADE)).error_code) == NONE
    assert level_shown(raw, "group.version", 1) and join() == NONE


def test_transaction_version_downgrade_is_advertised(raw: RawClient) -> None:
    assert int(update(raw, 2, ("transaction.version", 1, SAFE_DOWNGRADE)).error_code) == NONE
    assert level_shown(raw, "transaction.version", 1)
    assert int(update(raw, 2, ("transaction.version", 0, UNSAFE_DOWNGRADE)).error_code) == NONE
    assert level_shown(raw, "transaction.version", None)
    assert int(update(raw, 2, ("transaction.version", 2, UPGRADE)).error_code) == NONE
    assert level_shown(raw, "transaction.version", 2)


def test_a_changed_level_outlives_a_restart(configured_broker: Any) -> None:
    broker = configured_broker()
    if broker.external:
        pytest.skip("restarts the broker process (minikafka's BrokerProcess)")
    with RawClient.connect(broker.bootstrap) as c:
        assert int(update(c, 2, ("group.version", 0, SAFE_DOWNGRADE)).error_code) == NONE
        _levels, epoch = finalized(c)
    broker.process.restart()
    with RawClient.connect(broker.bootstrap) as c:
        levels, after = finalized(c)
    assert "group.version" not in levels and levels["transaction.version"] == 2 and after >= epoch


def test_kafka_features_tool(configured_broker: Any) -> None:
    import kafka_ref

    kafka_ref.jars_or_skip("kafka-features.sh")
    broker = configured_broker()
    tool = "org.apache.kafka.tools.FeatureCommand"

    def run(*args: str) -> Any:
        return kafka_ref.kafka_tool(tool, "--bootstrap-server", broker.bootstrap, *args)

    described = run("describe")
    assert described.returncode == 0, described.stderr[-2000:]
    rows = {line.split()[1]: line.split() for line in described.stdout.splitlines() if line.startswith("Feature:")}
    assert rows["group.version"][3:8:2] == ["0", "1", "1"]        # supported min, max, finalized
    assert rows["transaction.version"][3:8:2] == ["0", "2", "2"]
    dry = run("downgrade", "--feature", "transaction.version=1", "--dry-run")
    assert dry.returncode == 0 and "transaction.version can be downgraded to 1." in dry.stdout, dry.stdout
    bad = run("upgrade", "--feature", "transaction.version=5")
    assert bad.returncode == 1
    assert ("Could not upgrade transaction.version to 5. " + PREFIX + "Invalid update version 5 for feature "
            "transaction.version. Local controller 1 only supports versions 0-2") in bad.stdout + bad.stderr
    done = run("downgrade", "--feature", "transaction.version=1")
    assert done.returncode == 0 and "transaction.version was downgraded to 1." in done.stdout, done.stdout
    rows = {line.split()[1]: line.split() for line in run("describe").stdout.splitlines() if line.startswith("Feature:")}
    assert rows["transaction.version"][7] == "1"
