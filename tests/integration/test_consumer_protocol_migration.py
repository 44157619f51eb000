"""KIP-848's online migration with confluent-kafka: classic members (group.protocol=classic, eager
`range` and incremental `cooperative-sticky`) and members of the new protocol in one group. A live
classic group becomes a consumer group when a consumer-protocol member joins, classic members may
join a consumer group, and the group turns classic again when its last consumer-protocol member
leaves (group.consumer.migration.policy=bidirectional, Kafka's default). With the policy
`disabled`, both directions are refused as Kafka refuses them. The same tests pass against Apache
Kafka 4.3.1 in conformance mode.
"""

from __future__ import annotations

import time
from typing import Any

import pytest
from clients import admin, create_topic, uniq
from confluent_kafka import Consumer, ConsumerGroupType
from kio.schema.join_group.v9.request import JoinGroupRequest, JoinGroupRequestProtocol
from rawclient import RawClient, ms
from test_consumer_protocol import FAST, GROUP_ID_NOT_FOUND, Described, check_single_owner, describe, heartbeat, new_id

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]

INCONSISTENT_GROUP_PROTOCOL = 23
CLASSIC, CONSUMER = 0, 1  # ConsumerGroupDescribe's MemberType


def member(bootstrap: str, group: str, topic: str, protocol: str, strategy: str = "range") -> Consumer:
    conf: dict[str, Any] = {"bootstrap.servers": bootstrap, "group.id": group, "group.protocol": protocol,
                            "auto.offset.reset": "earliest", "log_level": 3}
    if protocol == "classic":
        conf.update({"partition.assignment.strategy": strategy, "session.timeout.ms": 10_000,
                     "heartbeat.interval.ms": 500})
    c = Consumer(conf)
    c.subscribe([topic])
    return c


def poll_until(members: list[Consumer], cond: Any, what: str, timeout: float = 90.0) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        for c in members:
            c.poll(0.05)
        assert time.monotonic() < deadline, f"{what}: not reached in {timeout}s"


def owned(members: list[Consumer]) -> list[set[int]]:
    return [{tp.partition for tp in c.assignment()} for c in members]


def shared_evenly(members: list[Consumer], partitions: int) -> bool:
    sets = owned(members)
    return (all(sets) and sum(map(len, sets)) == partitions and len(set().union(*sets)) == partitions
            and max(map(len, sets)) - min(map(len, sets)) <= 1)


def group_type(bootstrap: str, group: str) -> Any:
    a = admin(bootstrap)  # kept alive until the future resolves
    return a.describe_consumer_groups([group])[group].result(30).type


@pytest.fixture
def broker(configured_broker: Any) -> Any:
    return configured_broker(overrides=FAST)


def test_classic_group_upgraded_by_a_consumer_member_and_downgraded_when_it_leaves(broker: Any) -> None:
    topic, group = uniq("mig"), uniq("gmig")
    create_topic(broker.bootstrap, topic, 6)
    members = [member(broker.bootstrap, group, topic, "classic") for _ in range(2)]
    newer: Consumer | None = None
    try:
        poll_until(members, lambda: shared_evenly(members, 6), "2 classic members")
        assert group_type(broker.bootstrap, group) == ConsumerGroupType.CLASSIC
        newer = member(broker.bootstrap, group, topic, "consumer")
        everyone = [*members, newer]
        with RawClient.connect(broker.bootstrap) as raw:
            def described() -> Described:
                d = describe(raw, group, missing_ok=True)
                check_single_owner(d)
                return d
            poll_until(everyone, lambda: shared_evenly(everyone, 6) and described().state == "Stable",
                       "3 members after the upgrade")
            d = described()
            assert sorted(int(m.member_type) for m in d.members.values()) == [CLASSIC, CLASSIC, CONSUMER]
        newer.close()
        newer = None
        poll_until(members, lambda: shared_evenly(members, 6) and group_type(broker.bootstrap, group)
                   == ConsumerGroupType.CLASSIC, "a classic group again")
    finally:
        for c in [*members, *([newer] if newer else [])]:
            c.close()


@pytest.mark.parametrize("strategy", ["range", "cooperative-sticky"])
def test_classic_members_join_a_consumer_group(broker: Any, strategy: str) -> None:
    topic, group = uniq("mig"), uniq("gmig")
    create_topic(broker.bootstrap, topic, 6)
    first = member(broker.bootstrap, group, topic, "consumer")
    members = [first]
    try:
        poll_until(members, lambda: shared_evenly(members, 6), "the consumer member")
        with RawClient.connect(broker.bootstrap) as raw:
            for _ in range(2):
                members.append(member(broker.bootstrap, group, topic, "classic", strategy))

                def settled() -> bool:
                    d = describe(raw, group)
                    check_single_owner(d)
                    return d.state == "Stable" and shared_evenly(members, 6)
                poll_until(members, settled, f"{len(members)} members")
            d = describe(raw, group)
            assert sorted(int(m.member_type) for m in d.members.values()) == [CLASSIC, CLASSIC, CONSUMER]
            leaving = members.pop(1)
            leaving.close()  # a classic LeaveGroup to a consumer group
            poll_until(members, lambda: shared_evenly(members, 6) and describe(raw, group).state == "Stable",
                       "2 members after a classic leave")
        assert group_type(broker.bootstrap, group) == ConsumerGroupType.CONSUMER
    finally:
        for c in members:
            c.close()


def test_migration_disabled_refuses_both_ways(configured_broker: Any) -> None:
    broker = configured_broker(overrides={**FAST, "group.consumer.migration.policy": "disabled"})
    topic = uniq("mig")
    create_topic(broker.bootstrap, topic, 1)
    consumer_group, classic_group = uniq("gmig"), uniq("gmig")
    classic = member(broker.bootstrap, classic_group, topic, "classic")
    try:
        poll_until([classic], lambda: bool(owned([classic])[0]), "a classic member")
        with RawClient.connect(broker.bootstrap) as raw:
            refused = heartbeat(raw, classic_group, new_id(), 0, topics=(topic,))
            assert (int(refused.error_code), refused.error_message) == (
                GROUP_ID_NOT_FOUND, f"Cannot upgrade classic group {classic_group} to consumer group because online "
                                    f"upgrade is disabled.")
            assert int(heartbeat(raw, consumer_group, new_id(), 0, topics=(topic,)).error_code) == 0
            join = raw.request(JoinGroupRequest(
                group_id=consumer_group, session_timeout=ms(10_000), rebalance_timeout=ms(10_000), member_id="",
                group_instance_id=None, protocol_type="consumer", reason=None, protocols=(
                    JoinGroupRequestProtocol(name="range", metadata=b"\x00\x00\x00\x00\x00\x00\xff\xff\xff\xff"),)), 9)
            assert int(join.error_code) == INCONSISTENT_GROUP_PROTOCOL
    finally:
        classic.close()
