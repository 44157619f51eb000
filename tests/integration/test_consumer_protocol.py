"""KIP-848 consumer groups (group.protocol=consumer) driven by confluent-kafka (librdkafka), the
group watched through ConsumerGroupDescribe, and the protocol's error answers over the raw
protocol. Issue 18, item 2. The same tests pass against Apache Kafka 4.3.1 in conformance mode:
every broker here is started by `configured_broker` with the same settings for both.

The invariant checked while members come and go: at every ConsumerGroupDescribe, no partition
is owned (assigned or still being revoked) by two members, and once the group is Stable every
partition has exactly one owner and every member is at the assignment epoch.

The heartbeat interval is 500 ms and the session timeout 6 s (Kafka's minimums lowered the same
way for both brokers), so a rebalance takes a few heartbeats, not a few times 5 s.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from clients import create_topic, produce_all, producer, uniq, wait_until
from confluent_kafka import Consumer
from kio.schema.consumer_group_describe.v1.request import ConsumerGroupDescribeRequest
from kio.schema.consumer_group_heartbeat.v1.request import ConsumerGroupHeartbeatRequest
from kio.schema.describe_groups.v6.request import DescribeGroupsRequest
from kio.schema.list_groups.v5.request import ListGroupsRequest
from kio.schema.offset_commit.v9.request import (
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
)
from kio.schema.offset_fetch.v9.request import OffsetFetchRequest, OffsetFetchRequestGroup, OffsetFetchRequestTopics
from kio.static.primitive import i32, i64
from rawclient import RawClient, ms, retry_while

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]

FAST = {
    "group.consumer.heartbeat.interval.ms": "500",
    "group.consumer.min.heartbeat.interval.ms": "500",
    "group.consumer.session.timeout.ms": "6000",
    "group.consumer.min.session.timeout.ms": "6000",
}
NONE, UNKNOWN_MEMBER_ID, INVALID_REQUEST, GROUP_ID_NOT_FOUND = 0, 25, 42, 69
FENCED_MEMBER_EPOCH, UNRELEASED_INSTANCE_ID, UNSUPPORTED_ASSIGNOR, STALE_MEMBER_EPOCH = 110, 111, 112, 113
INVALID_REGULAR_EXPRESSION, FENCED_INSTANCE_ID, UNSUPPORTED_VERSION = 128, 82, 35
RETRIABLE = {14, 15, 16}  # COORDINATOR_LOAD_IN_PROGRESS / NOT_AVAILABLE, NOT_COORDINATOR


def member(bootstrap: str, group: str, **conf: Any) -> Consumer:
    return Consumer({"bootstrap.servers": bootstrap, "group.id": group, "group.protocol": "consumer",
                     "auto.offset.reset": "earliest", "log_level": 3, **conf})


# ------------------------------------------------------------------------------ describe
@dataclass(frozen=True)
class Described:
    state: str
    group_epoch: int
    assignment_epoch: int
    members: dict[str, Any]   # member id -> the described member

    def owners(self) -> dict[tuple[str, int], list[str]]:
        out: dict[tuple[str, int], list[str]] = {}
        for mid, m in self.members.items():
            for tp in m.assignment.topic_partitions:
                for p in tp.partitions:
                    out.setdefault((tp.topic_name, int(p)), []).append(mid)
        return out

    def owned_by(self, member_id: str) -> set[tuple[str, int]]:
        return {tp for tp, owners in self.owners().items() if member_id in owners}


def describe(c: RawClient, group: str, *, missing_ok: bool = False) -> Described:
    def call() -> tuple[Any, int]:
        g = c.request(ConsumerGroupDescribeRequest(group_ids=(group,), include_authorized_operations=False), 1).groups[0]
        return g, int(g.error_code)

    g, code = retry_while(call, "ConsumerGroupDescribe", RETRIABLE, timeout=30.0)
    if code == GROUP_ID_NOT_FOUND and missing_ok:  # not created yet: no member's heartbeat got there
        return Described("Dead", 0, 0, {})
    assert code == NONE, g
    return Described(g.group_state, int(g.group_epoch), int(g.assignment_epoch), {m.member_id: m for m in g.members})


def check_single_owner(d: Described) -> None:
    shared = {tp: owners for tp, owners in d.owners().items() if len(owners) > 1}
    assert not shared, f"partitions owned by two members at group epoch {d.group_epoch}: {shared}"


class Group:
    """Members polled in turn from the test thread, the group described after every round."""

    def __init__(self, bootstrap: str, group: str, raw: RawClient) -> None:
        self.bootstrap, self.group, self.raw = bootstrap, group, raw
        self.members: list[Consumer] = []
        self.seen: dict[bytes, int] = {}
        self.describes = 0

    def add(self, **conf: Any) -> Consumer:
        c = member(self.bootstrap, self.group, **conf)
        self.members.append(c)
        return c

    def poll_until(self, cond: Any, what: str, timeout: float = 60.0) -> Described:
        deadline = time.monotonic() + timeout
        while True:
            for i, c in enumerate(self.members):
                m = c.poll(0.05)
                if m is not None and m.error() is None:
                    self.seen[m.value()] = i
            d = describe(self.raw, self.group, missing_ok=True)
            self.describes += 1
            check_single_owner(d)
            if cond(d):
                return d
            if time.monotonic() > deadline:
                raise AssertionError(f"{what}: not reached in {timeout}s; last {d}")

    def close(self) -> None:
        for c in self.members:
            c.close()
        self.members.clear()


def stable_with(n: int, partitions: int) -> Any:
    def cond(d: Described) -> bool:
        return (d.state == "Stable" and len(d.members) == n and len(d.owners()) == partitions
                and all(int(m.member_epoch) == d.assignment_epoch for m in d.members.values()))
    return cond


@pytest.fixture
def broker(configured_broker: Any) -> Any:
    return configured_broker(overrides=FAST)


@pytest.fixture
def raw(broker: Any) -> Iterator[RawClient]:
    c = RawClient.connect(broker.bootstrap)
    try:
        yield c
    finally:
        c.close()


# ------------------------------------------------------------------------------ client-driven
def test_three_members_join_and_leave_each_partition_has_one_owner(broker: Any, raw: RawClient) -> None:
    topic, group = uniq("cg848"), uniq("g848")
    create_topic(broker.bootstrap, topic, 6)
    produce_all(producer(broker.bootstrap), topic, [{"value": str(i).encode(), "partition": i % 6} for i in range(600)])
    g = Group(broker.bootstrap, group, raw)
    try:
        for n in (1, 2, 3):
            g.add().subscribe([topic])
            d = g.poll_until(stable_with(n, 6), f"{n} members stable")
            assert sorted(len(d.owned_by(mid)) for mid in d.members) == sorted([6 // n + (i < 6 % n) for i in range(n)])
        g.poll_until(lambda d: len(g.seen) == 600, "every record consumed")
        epoch_before = d.group_epoch
        assert epoch_before >= 4  # a new group is at epoch 1; each join bumps it
        leaving = g.members.pop(0)
        leaving.close()  # a leave heartbeat (epoch -1): the group epoch moves on
        d = g.poll_until(stable_with(2, 6), "2 members after a leave")
        assert d.group_epoch > epoch_before
        assert sorted(len(d.owned_by(mid)) for mid in d.members) == [3, 3]
        assert set(g.seen.values()) == {0, 1, 2}  # every member consumed something
    finally:
        g.close()
    # After everyone left: Empty, kept with its offsets.
    d = describe(raw, group)
    assert d.state == "Empty" and not d.members


CRASHING_MEMBER = textwrap.dedent("""
    import sys, time
    from confluent_kafka import Consumer
    c = Consumer({"bootstrap.servers": sys.argv[1], "group.id": sys.argv[2], "group.protocol": "consumer",
                  "auto.offset.reset": "earliest", "log_level": 3})
    c.subscribe([sys.argv[3]])
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        c.poll(0.1)
""")


def test_a_crashed_member_is_fenced_after_the_session_timeout(broker: Any, raw: RawClient) -> None:
    topic, group = uniq("cg848"), uniq("g848")
    create_topic(broker.bootstrap, topic, 4)
    g = Group(broker.bootstrap, group, raw)
    proc = subprocess.Popen([sys.executable, "-c", CRASHING_MEMBER, broker.bootstrap, group, topic])
    try:
        g.add().subscribe([topic])
        d = g.poll_until(stable_with(2, 4), "2 members stable")
        epoch = d.group_epoch
        os.kill(proc.pid, signal.SIGKILL)  # no leave heartbeat: only the session timeout removes it
        proc.wait(10)
        d = g.poll_until(stable_with(1, 4), "the crashed member fenced", timeout=60)
        assert d.group_epoch > epoch
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        g.close()


def test_static_member_restart_keeps_its_partitions_without_a_rebalance(broker: Any, raw: RawClient) -> None:
    topic, group = uniq("cg848"), uniq("g848")
    create_topic(broker.bootstrap, topic, 4)
    g = Group(broker.bootstrap, group, raw)
    try:
        static = g.add(**{"group.instance.id": "static-1"})
        static.subscribe([topic])
        g.add().subscribe([topic])
        d = g.poll_until(stable_with(2, 4), "2 members stable")
        static_id = next(mid for mid, m in d.members.items() if m.instance_id == "static-1")
        mine, epoch = d.owned_by(static_id), d.group_epoch
        g.members.remove(static)
        static.close()  # a static member leaves with epoch -2: its partitions wait for it
        d = g.poll_until(lambda d: int(d.members[static_id].member_epoch) == -2, "the static member left for now")
        assert d.owned_by(static_id) == mine and d.group_epoch == epoch
        g.add(**{"group.instance.id": "static-1"}).subscribe([topic])
        d = g.poll_until(stable_with(2, 4), "the static member back")
        back = next(mid for mid, m in d.members.items() if m.instance_id == "static-1")
        assert d.owned_by(back) == mine
        assert d.group_epoch == epoch  # no rebalance: the same target, the same group epoch
    finally:
        g.close()


def test_regex_subscription_is_resolved_by_the_coordinator(broker: Any, raw: RawClient) -> None:
    prefix, group = uniq("rx848"), uniq("g848")
    for suffix, n in (("a", 2), ("b", 1)):
        create_topic(broker.bootstrap, f"{prefix}-{suffix}", n)
    create_topic(broker.bootstrap, f"other-{prefix}", 1)
    g = Group(broker.bootstrap, group, raw)
    try:
        g.add().subscribe([f"^{prefix}-.*"])
        d = g.poll_until(stable_with(1, 3), "the regex resolved")
        (only,) = d.members.values()
        assert only.subscribed_topic_regex == f"(^{prefix}-.*)"  # as librdkafka sends it
        assert set(d.owners()) == {(f"{prefix}-a", 0), (f"{prefix}-a", 1), (f"{prefix}-b", 0)}
    finally:
        g.close()


def test_the_group_survives_a_broker_restart(broker: Any, raw: RawClient) -> None:
    if getattr(broker, "external", False):
        pytest.skip("restarts the broker process (minikafka's BrokerProcess)")
    topic, group = uniq("cg848"), uniq("g848")
    create_topic(broker.bootstrap, topic, 2)
    produce_all(producer(broker.bootstrap), topic, [{"value": b"x", "partition": p} for p in (0, 1)])
    g = Group(broker.bootstrap, group, raw)
    try:
        g.add(**{"enable.auto.commit": False}).subscribe([topic])
        d = g.poll_until(stable_with(1, 2), "1 member stable")
        g.poll_until(lambda _d: len(g.seen) == 1, "a record consumed")
        g.members[0].commit(asynchronous=False)
        before = d
    finally:
        g.close()
    broker.process.restart()
    with RawClient.connect(broker.bootstrap) as again:
        after = describe(again, group)
    assert (after.state, after.group_epoch, after.assignment_epoch) == ("Empty", before.group_epoch + 1,
                                                                        before.assignment_epoch)


# ------------------------------------------------------------------------------ raw protocol
def heartbeat(c: RawClient, group: str, member_id: str, epoch: int, *, version: int = 1, **fields: Any) -> Any:
    body = ConsumerGroupHeartbeatRequest(
        group_id=group, member_id=member_id, member_epoch=i32(epoch), instance_id=fields.get("instance_id"),
        rack_id=fields.get("rack_id"), rebalance_timeout=ms(fields.get("rebalance_timeout_ms", 30_000)),
        subscribed_topic_names=fields.get("topics"), subscribed_topic_regex=fields.get("regex"),
        server_assignor=fields.get("assignor"), topic_partitions=fields.get("owned", ()))

    def call() -> tuple[Any, int]:
        resp = c.request(body, version)
        return resp, int(resp.error_code)

    return retry_while(call, "ConsumerGroupHeartbeat", RETRIABLE, timeout=30.0)[0]


def new_id() -> str:
    return str(uuid.uuid4())


def test_heartbeat_errors_as_kafka_answers_them(broker: Any, raw: RawClient) -> None:
    topic, group = uniq("cg848"), uniq("g848")
    create_topic(broker.bootstrap, topic, 2)
    checks = [
        (dict(member_id="", epoch=0, topics=(topic,)), INVALID_REQUEST, "MemberId can't be empty."),
        (dict(member_id=new_id(), epoch=0, topics=(topic,), rebalance_timeout_ms=-1), INVALID_REQUEST,
         "RebalanceTimeoutMs must be provided in first request."),
        (dict(member_id=new_id(), epoch=0), INVALID_REQUEST,
         "Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when (re-)joining."),
        (dict(member_id=new_id(), epoch=0, topics=(topic,), owned=None), INVALID_REQUEST,
         "TopicPartitions must be empty when (re-)joining."),
        (dict(member_id=new_id(), epoch=-2, topics=(topic,)), INVALID_REQUEST, "InstanceId can't be null."),
        (dict(member_id=new_id(), epoch=-3), INVALID_REQUEST, "MemberEpoch is invalid."),
        (dict(member_id=new_id(), epoch=0, topics=(topic,), assignor="sticky"), UNSUPPORTED_ASSIGNOR,
         "ServerAssignor sticky is not supported. Supported assignors: uniform, range."),
        (dict(member_id=new_id(), epoch=0, regex="[unclosed"), INVALID_REGULAR_EXPRESSION, None),
        (dict(member_id="m-unknown", epoch=5), GROUP_ID_NOT_FOUND, f"Consumer group {group} not found."),
    ]
    for fields, code, message in checks:
        resp = heartbeat(raw, group, fields.pop("member_id"), fields.pop("epoch"), **fields)
        assert int(resp.error_code) == code, (fields, resp)
        if message is not None:
            assert resp.error_message == message
        else:
            assert resp.error_message.startswith("SubscribedTopicRegex `[unclosed` is not a valid regular expression")
        assert int(resp.member_epoch) == 0 and resp.assignment is None
    # Nothing above created the group.
    g = raw.request(ConsumerGroupDescribeRequest(group_ids=(group,), include_authorized_operations=False), 1).groups[0]
    assert (int(g.error_code), g.error_message) == (GROUP_ID_NOT_FOUND, f"Group {group} not found.")

    mid = new_id()
    joined = heartbeat(raw, group, mid, 0, topics=(topic,))
    assert int(joined.error_code) == NONE and joined.member_id == mid
    epoch = int(joined.member_epoch)
    assert epoch == 2  # Kafka 4.3: a new group starts at epoch 1, its first assignment is epoch 2
    assert sorted(joined.assignment.topic_partitions[0].partitions) == [0, 1]
    assert int(joined.heartbeat_interval.total_seconds() * 1000) == 500
    ahead = heartbeat(raw, group, mid, epoch + 1, owned=None)
    assert int(ahead.error_code) == FENCED_MEMBER_EPOCH
    assert ahead.error_message == (f"The consumer group member has a greater member epoch ({epoch + 1}) than the one "
                                   f"known by the group coordinator ({epoch}). The member must abandon all its "
                                   f"partitions and rejoin.")
    stranger = heartbeat(raw, group, "nobody", epoch, owned=None)
    assert (int(stranger.error_code), stranger.error_message) == (UNKNOWN_MEMBER_ID,
                                                                  f"Member nobody is not a member of group {group}.")
    # The errors changed nothing: the member is still at its epoch and owns its partitions.
    d = describe(raw, group)
    assert int(d.members[mid].member_epoch) == epoch and len(d.owned_by(mid)) == 2
    left = heartbeat(raw, group, mid, -1, owned=None)
    assert (int(left.error_code), int(left.member_epoch), left.assignment) == (NONE, -1, None)
    assert describe(raw, group).state == "Empty"


def test_static_member_id_rules(broker: Any, raw: RawClient) -> None:
    topic, group = uniq("cg848"), uniq("g848")
    create_topic(broker.bootstrap, topic, 1)
    first, second = new_id(), new_id()
    joined = heartbeat(raw, group, first, 0, topics=(topic,), instance_id="i-1")
    assert int(joined.error_code) == NONE
    # Kafka's coordinator learns of a new topic from its metadata log a moment later (minikafka at
    # once): heartbeat until the partition is the first incarnation's.
    deadline, got = time.monotonic() + 30, joined
    while not (got.assignment and got.assignment.topic_partitions):
        assert time.monotonic() < deadline, got
        time.sleep(0.2)
        got = heartbeat(raw, group, first, int(got.member_epoch), instance_id="i-1")
    taken = heartbeat(raw, group, second, 0, topics=(topic,), instance_id="i-1")
    assert int(taken.error_code) == UNRELEASED_INSTANCE_ID
    assert taken.error_message == (f"Static member {second} with instance id i-1 cannot join the group because the "
                                   f"instance id is owned by {first} member.")
    wrong = heartbeat(raw, group, second, 2, owned=None, instance_id="i-1")
    assert (int(wrong.error_code), wrong.error_message) == (
        FENCED_INSTANCE_ID, f"Static member {second} with instance id i-1 was fenced by member {first}.")
    released = heartbeat(raw, group, first, -2, owned=None, instance_id="i-1")
    assert (int(released.error_code), int(released.member_epoch)) == (NONE, -2)
    back = heartbeat(raw, group, second, 0, topics=(topic,), instance_id="i-1")
    assert int(back.error_code) == NONE and back.member_id == second
    assert [list(tp.partitions) for tp in back.assignment.topic_partitions] == [[0]]
    assert list(describe(raw, group).members) == [second]


def offset_commit(raw: RawClient, group: str, member_id: str, epoch: int, topic: str, version: int = 9) -> int:
    req = OffsetCommitRequest(group_id=group, generation_id_or_member_epoch=i32(epoch), member_id=member_id,
                              group_instance_id=None, topics=(OffsetCommitRequestTopic(name=topic, partitions=(
                                  OffsetCommitRequestPartition(partition_index=i32(0), committed_offset=i64(1),
                                                               committed_leader_epoch=i32(-1),
                                                               committed_metadata=""),)),))
    return int(raw.request(req, version).topics[0].partitions[0].error_code)


def test_offsets_are_committed_and_fetched_with_the_member_epoch(broker: Any, raw: RawClient) -> None:
    topic, group = uniq("cg848"), uniq("g848")
    create_topic(broker.bootstrap, topic, 1)
    mid = new_id()
    epoch = int(heartbeat(raw, group, mid, 0, topics=(topic,)).member_epoch)
    assert offset_commit(raw, group, mid, epoch + 1, topic) == STALE_MEMBER_EPOCH
    assert offset_commit(raw, group, "nobody", epoch, topic) == UNKNOWN_MEMBER_ID
    assert offset_commit(raw, group, "", -1, topic) == UNKNOWN_MEMBER_ID  # the group has members
    assert offset_commit(raw, group, mid, epoch, topic, version=8) == UNSUPPORTED_VERSION
    assert offset_commit(raw, group, mid, epoch, topic) == NONE

    def fetch(member_id: str | None, member_epoch: int) -> Any:
        return raw.request(OffsetFetchRequest(groups=(OffsetFetchRequestGroup(
            group_id=group, member_id=member_id, member_epoch=i32(member_epoch),
            topics=(OffsetFetchRequestTopics(name=topic, partition_indexes=(i32(0),)),)),),
            require_stable=False), 9).groups[0]

    ok = fetch(mid, epoch)
    assert int(ok.error_code) == NONE and int(ok.topics[0].partitions[0].committed_offset) == 1
    assert int(fetch(mid, epoch - 1).error_code) == STALE_MEMBER_EPOCH
    assert int(fetch("nobody", epoch).error_code) == UNKNOWN_MEMBER_ID
    assert int(fetch(None, -1).error_code) == NONE  # an admin client's fetch


def test_classic_apis_see_a_consumer_group_as_kafka_shows_it(broker: Any, raw: RawClient) -> None:
    topic, group = uniq("cg848"), uniq("g848")
    create_topic(broker.bootstrap, topic, 1)
    assert int(heartbeat(raw, group, new_id(), 0, topics=(topic,)).error_code) == NONE
    described = raw.request(DescribeGroupsRequest(groups=(group,), include_authorized_operations=False), 6).groups[0]
    assert (int(described.error_code), described.error_message, described.group_state) == (
        GROUP_ID_NOT_FOUND, f"Group {group} is not a classic group.", "Dead")
    listed = raw.request(ListGroupsRequest(states_filter=(), types_filter=("consumer",)), 5).groups
    mine = [g for g in listed if g.group_id == group]
    assert [(g.protocol_type, g.group_state, g.group_type) for g in mine] == [("consumer", "Stable", "consumer")]
    classic_only = raw.request(ListGroupsRequest(states_filter=(), types_filter=("classic",)), 5).groups
    assert group not in {g.group_id for g in classic_only}


def features(bootstrap: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """ApiVersions' (supported, finalized) features: name -> (min, max)."""
    from kio.schema.api_versions.v4.request import ApiVersionsRequest

    with RawClient.connect(bootstrap) as c:
        resp = c.request(ApiVersionsRequest(client_software_name="rawclient", client_software_version="1"), 4)
    return ({f.name: (f.min_version, f.max_version) for f in resp.supported_features},
            {f.name: (f.min_version_level, f.max_version_level) for f in resp.finalized_features})


def test_group_version_feature_turns_the_protocol_on_and_off(broker: Any, broker_factory: Any) -> None:
    """group.version is finalized at 1 (Kafka 4.x's default) and advertised; at 0 (minikafka's
    broker property, as `kafka-storage format --feature group.version=0` sets Kafka's) it is not
    finalized and the protocol's APIs answer UNSUPPORTED_VERSION, as Kafka's do."""
    supported, finalized = features(broker.bootstrap)
    assert supported["group.version"] == (0, 1) and finalized["group.version"] == (1, 1)
    off = broker_factory(overrides={"group.version": "0"})
    supported, finalized = features(off.bootstrap)
    assert supported["group.version"] == (0, 1) and "group.version" not in finalized
    with RawClient.connect(off.bootstrap) as c:
        assert int(heartbeat(c, "g", new_id(), 0, topics=("t",)).error_code) == UNSUPPORTED_VERSION


def test_transactional_offsets_of_a_consumer_group_keep_it_a_consumer_group(broker: Any, raw: RawClient) -> None:
    """Consume-transform-produce with a KIP-848 member: TxnOffsetCommit with the member's epoch,
    the COMMIT marker completes the offsets, and the group stays a consumer group (the marker once
    made a classic placeholder of it, and the member's next heartbeat was refused; found by
    franz-go's TestTxnEtl)."""
    from confluent_kafka import Producer, TopicPartition

    source, sink, group = uniq("cg848"), uniq("cg848"), uniq("g848")
    create_topic(broker.bootstrap, source, 1)
    create_topic(broker.bootstrap, sink, 1)
    produce_all(producer(broker.bootstrap), source, [{"value": str(i).encode()} for i in range(6)])
    consumer = member(broker.bootstrap, group, **{"enable.auto.commit": False, "isolation.level": "read_committed"})
    consumer.subscribe([source])
    txn = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": uniq("t848"), "log_level": 3})
    txn.init_transactions(30)
    copied = 0
    try:
        deadline = time.monotonic() + 60
        while copied < 6:
            assert time.monotonic() < deadline, f"copied {copied} of 6"
            m = consumer.poll(0.2)
            if m is None or m.error() is not None:
                continue
            txn.begin_transaction()
            txn.produce(sink, m.value())
            txn.send_offsets_to_transaction([TopicPartition(source, 0, m.offset() + 1)],
                                            consumer.consumer_group_metadata(), 30)
            txn.commit_transaction(30)
            copied += 1
        wait_until(lambda: consumer.committed([TopicPartition(source, 0)], 10)[0].offset == 6, 30,
                   "the transactional offsets committed")
        listed = raw.request(ListGroupsRequest(states_filter=(), types_filter=()), 5).groups
        assert [g.group_type for g in listed if g.group_id == group] == ["consumer"]
        d = describe(raw, group)
        assert d.state == "Stable" and len(d.members) == 1
    finally:
        consumer.close()
