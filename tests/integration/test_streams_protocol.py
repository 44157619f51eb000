"""KIP-1071 streams groups over the raw protocol: StreamsGroupHeartbeat as Kafka Streams sends it
(a topology with a repartition and a changelog topic), the statuses that hold a group NOT_READY,
the internal topics the broker creates, the task assignment and its reconciliation between two
members, StreamsGroupDescribe, and the protocol's error answers. Issue 18, item 4. The same tests
pass against Apache Kafka 4.3.1 in conformance mode (`configured_broker` starts both alike).

The heartbeat interval is 500 ms, the initial rebalance delay and the assignment interval 0, for
both brokers, so the group moves one heartbeat at a time without waiting for timers.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from clients import create_topic, uniq
from confluent_kafka.admin import AdminClient
from kio.schema.describe_groups.v6.request import DescribeGroupsRequest
from kio.schema.list_groups.v5.request import ListGroupsRequest
from kio.schema.streams_group_describe.v0.request import StreamsGroupDescribeRequest
from kio.schema.streams_group_heartbeat.v0.request import (
    CopartitionGroup,
    KeyValue,
    StreamsGroupHeartbeatRequest,
    Subtopology,
    TaskIds,
    TopicInfo,
    Topology,
)
from kio.static.primitive import i16, i32
from rawclient import RawClient, ms, retry_while
from test_consumer_protocol import (
    FENCED_MEMBER_EPOCH,
    GROUP_ID_NOT_FOUND,
    INVALID_REQUEST,
    NONE,
    RETRIABLE,
    STALE_MEMBER_EPOCH,
    UNKNOWN_MEMBER_ID,
    UNSUPPORTED_VERSION,
    offset_commit,
)

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]

FAST = {
    "group.streams.heartbeat.interval.ms": "500",
    "group.streams.min.heartbeat.interval.ms": "500",
    "group.streams.session.timeout.ms": "6000",
    "group.streams.min.session.timeout.ms": "6000",
    "group.streams.initial.rebalance.delay.ms": "0",
    "group.streams.assignment.interval.ms": "0",
}
STREAMS_INVALID_TOPOLOGY = 130
MISSING_SOURCE_TOPICS, INCORRECTLY_PARTITIONED_TOPICS, MISSING_INTERNAL_TOPICS = 1, 2, 3  # heartbeat statuses


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


def word_count_topology(app: str, source: str, epoch: int = 0) -> Topology:
    """Kafka Streams' word count: subtopology 0 reads the input and writes a repartition topic,
    subtopology 1 reads it and keeps a count store (its changelog)."""
    repartition = f"{app}-KSTREAM-AGGREGATE-STATE-STORE-0000000003-repartition"
    changelog = f"{app}-KSTREAM-AGGREGATE-STATE-STORE-0000000003-changelog"
    return Topology(epoch=i32(epoch), subtopologies=(
        Subtopology(subtopology_id="0", source_topics=(source,), state_changelog_topics=(),
                    repartition_sink_topics=(repartition,), repartition_source_topics=(), copartition_groups=()),
        Subtopology(subtopology_id="1", source_topics=(),
                    state_changelog_topics=(TopicInfo(name=changelog, partitions=i32(0), replication_factor=i16(0),
                                                      topic_configs=(KeyValue(key="cleanup.policy", value="compact"),)),),
                    repartition_sink_topics=(),
                    repartition_source_topics=(TopicInfo(name=repartition, partitions=i32(0), replication_factor=i16(0),
                                                         topic_configs=(KeyValue(key="cleanup.policy",
                                                                                 value="delete"),)),),
                    copartition_groups=())))


def tasks(owned: dict[str, list[int]] | None) -> tuple[TaskIds, ...] | None:
    if owned is None:
        return None
    return tuple(TaskIds(subtopology_id=s, partitions=tuple(i32(p) for p in ps)) for s, ps in sorted(owned.items()))


def heartbeat(c: RawClient, group: str, member_id: str, epoch: int, *, topology: Topology | None = None,
              active: dict[str, list[int]] | None = None, standby: dict[str, list[int]] | None = None,
              warmup: dict[str, list[int]] | None = None, process_id: str | None = None,
              rebalance_timeout_ms: int = 30_000, **fields: Any) -> Any:
    if epoch == 0 and active is None and standby is None and warmup is None and not fields.get("null_tasks"):
        active, standby, warmup = {}, {}, {}   # a (re)joining member owns nothing, and says so
    body = StreamsGroupHeartbeatRequest(
        group_id=group, member_id=member_id, member_epoch=i32(epoch), endpoint_information_epoch=i32(0),
        instance_id=fields.get("instance_id"), rack_id=fields.get("rack_id"),
        rebalance_timeout=ms(rebalance_timeout_ms), topology=topology,
        active_tasks=tasks(active), standby_tasks=tasks(standby), warmup_tasks=tasks(warmup),
        process_id=process_id, user_endpoint=None, client_tags=None if epoch != 0 else (),
        task_offsets=fields.get("task_offsets"), task_end_offsets=None, shutdown_application=False)

    def call() -> tuple[Any, int]:
        resp = c.request(body, 0)
        return resp, int(resp.error_code)

    return retry_while(call, "StreamsGroupHeartbeat", RETRIABLE, timeout=30.0)[0]


def new_id() -> str:
    return str(uuid.uuid4())


def owned_of(resp: Any) -> dict[str, list[int]]:
    return {t.subtopology_id: [int(p) for p in t.partitions] for t in (resp.active_tasks or ())}


@dataclass
class Member:
    """A simulated Streams client: it heartbeats with what it owns and takes what it is given."""

    c: RawClient
    group: str
    member_id: str
    process_id: str
    epoch: int = 0
    active: dict[str, list[int]] | None = None

    def beat(self, topology: Topology | None = None) -> Any:
        owned = {} if self.epoch == 0 else (self.active or {})
        resp = heartbeat(self.c, self.group, self.member_id, self.epoch, topology=topology if self.epoch == 0 else None,
                         active=owned, standby={}, warmup={}, process_id=self.process_id)
        assert int(resp.error_code) == NONE, resp
        self.epoch = int(resp.member_epoch)
        if resp.active_tasks is not None:
            self.active = owned_of(resp)
        return resp


@dataclass(frozen=True)
class Described:
    state: str
    group_epoch: int
    assignment_epoch: int
    members: dict[str, Any]
    topology: Any

    def active_owners(self) -> dict[tuple[str, int], list[str]]:
        out: dict[tuple[str, int], list[str]] = {}
        for mid, m in self.members.items():
            for t in m.assignment.active_tasks:
                for p in t.partitions:
                    out.setdefault((t.subtopology_id, int(p)), []).append(mid)
        return out


def describe(c: RawClient, group: str) -> Described:
    def call() -> tuple[Any, int]:
        g = c.request(StreamsGroupDescribeRequest(group_ids=(group,), include_authorized_operations=False), 0).groups[0]
        return g, int(g.error_code)

    g, code = retry_while(call, "StreamsGroupDescribe", RETRIABLE, timeout=30.0)
    assert code == NONE, g
    return Described(g.group_state, int(g.group_epoch), int(g.assignment_epoch),
                     {m.member_id: m for m in g.members}, g.topology)


def statuses(resp: Any) -> dict[int, str]:
    return {int(s.status_code): s.status_detail for s in (resp.status or ())}


def until(what: str, step: Any, cond: Any, timeout: float = 60.0) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        got = step()
        if cond(got):
            return got
        assert time.monotonic() < deadline, f"{what}: not reached in {timeout}s; last {got}"
        time.sleep(0.2)


# ------------------------------------------------------------------------------ the flow
def test_a_group_waits_for_its_topics_then_two_members_share_the_tasks(broker: Any, raw: RawClient) -> None:
    app, source = uniq("sapp"), uniq("stext")
    topology = word_count_topology(app, source)
    a = Member(raw, app, new_id(), "process-a")
    first = a.beat(topology)
    assert statuses(first) == {MISSING_SOURCE_TOPICS: f"Source topics {source} are missing."}
    assert owned_of(first) == {}
    d = describe(raw, app)
    assert d.state == "NotReady" and int(d.topology.epoch) == 0
    assert [s.subtopology_id for s in d.topology.subtopologies] == ["0", "1"]

    create_topic(broker.bootstrap, source, 4)
    # The next heartbeats find the source topic, ask for the internal topics (the broker creates
    # them) and, once they exist, assign the four tasks of each subtopology to the only member.
    seen: set[int] = set()

    def beat() -> Any:
        r = a.beat()
        seen.update(statuses(r))
        return r

    until("all tasks assigned to one member", beat,
          lambda r: a.active == {"0": [0, 1, 2, 3], "1": [0, 1, 2, 3]} and not statuses(r))
    assert MISSING_INTERNAL_TOPICS in seen
    md = AdminClient({"bootstrap.servers": broker.bootstrap}).list_topics(timeout=10).topics
    internal = {t: len(md[t].partitions) for t in md if t.startswith(app)}
    assert internal == {f"{app}-KSTREAM-AGGREGATE-STATE-STORE-0000000003-repartition": 4,
                        f"{app}-KSTREAM-AGGREGATE-STATE-STORE-0000000003-changelog": 4}
    d = describe(raw, app)
    assert d.state == "Stable" and int(d.members[a.member_id].member_epoch) == d.assignment_epoch
    changelog = d.topology.subtopologies[1].state_changelog_topics[0]
    assert int(changelog.partitions) == 4   # the configured topology: the decided partition count

    # A second member of another process: a revokes what b gets before b may take it; no task
    # is ever active on two members.
    b = Member(raw, app, new_id(), "process-b")
    b.beat(topology)

    def round_() -> Described:
        a.beat()
        b.beat()
        got = describe(raw, app)
        shared = {t: o for t, o in got.active_owners().items() if len(o) > 1}
        assert not shared, f"tasks active on two members: {shared}"
        return got

    d = until("two members stable", round_,
              lambda got: got.state == "Stable" and len(got.active_owners()) == 8
              and all(int(m.member_epoch) == got.assignment_epoch for m in got.members.values()))
    counts = sorted(sum(len(t.partitions) for t in m.assignment.active_tasks) for m in d.members.values())
    assert counts == [4, 4]

    # a leaves; b ends with every task.
    left = heartbeat(raw, app, a.member_id, -1)
    assert (int(left.error_code), int(left.member_epoch)) == (NONE, -1)
    d = until("b alone owns every task", lambda: (b.beat(), describe(raw, app))[1],
              lambda got: got.state == "Stable" and list(got.members) == [b.member_id]
              and len(got.active_owners()) == 8)


def test_copartitioned_sources_must_agree(broker: Any, raw: RawClient) -> None:
    app, left, right = uniq("sjoin"), uniq("sleft"), uniq("sright")
    create_topic(broker.bootstrap, left, 2)
    create_topic(broker.bootstrap, right, 3)
    topology = Topology(epoch=i32(0), subtopologies=(
        Subtopology(subtopology_id="0", source_topics=(left, right), state_changelog_topics=(),
                    repartition_sink_topics=(), repartition_source_topics=(),
                    # indexes into this subtopology's source topics
                    copartition_groups=(CopartitionGroup(source_topics=(i16(0), i16(1))),)),))
    # Kafka's coordinator learns of new topics from its metadata log a moment later: beat until it has.
    a = Member(raw, app, new_id(), "p")
    resp = until("both sources seen", lambda: a.beat(topology),
                 lambda r: MISSING_SOURCE_TOPICS not in statuses(r), timeout=30)
    counts = ", ".join(f"{t}={n}" for t, n in sorted({left: 2, right: 3}.items()))   # a Java TreeMap
    expected = f"Following topics do not have the same number of partitions: [{{{counts}}}]"
    assert statuses(resp) == {INCORRECTLY_PARTITIONED_TOPICS: expected}
    assert describe(raw, app).state == "NotReady"


def test_heartbeat_errors_as_kafka_answers_them(broker: Any, raw: RawClient) -> None:
    app, source = uniq("serr"), uniq("stext")
    create_topic(broker.bootstrap, source, 2)
    topology = word_count_topology(app, source)
    bad_changelog = Topology(epoch=i32(0), subtopologies=(
        Subtopology(subtopology_id="0", source_topics=(source,),
                    state_changelog_topics=(TopicInfo(name=f"{app}-store-changelog", partitions=i32(3),
                                                      replication_factor=i16(0), topic_configs=()),),
                    repartition_sink_topics=(), repartition_source_topics=(), copartition_groups=()),))
    internal = Topology(epoch=i32(0), subtopologies=(
        Subtopology(subtopology_id="0", source_topics=("__consumer_offsets",), state_changelog_topics=(),
                    repartition_sink_topics=(), repartition_source_topics=(), copartition_groups=()),))
    checks = [
        (dict(member_id="", epoch=0, topology=topology), INVALID_REQUEST, "MemberId can't be empty."),
        (dict(member_id=new_id(), epoch=0, topology=topology, rebalance_timeout_ms=-1), INVALID_REQUEST,
         "RebalanceTimeoutMs must be provided in first request."),
        (dict(member_id=new_id(), epoch=0), INVALID_REQUEST, "Topology must be non-null when (re-)joining."),
        (dict(member_id=new_id(), epoch=0, topology=topology, active={"0": [0]}, standby={}, warmup={}),
         INVALID_REQUEST, "ActiveTasks must be empty when (re-)joining."),
        (dict(member_id=new_id(), epoch=0, topology=topology, null_tasks=True), INVALID_REQUEST,
         "ActiveTasks must be empty when (re-)joining."),
        (dict(member_id=new_id(), epoch=0, topology=topology, instance_id="i"), INVALID_REQUEST,
         "Static membership is not yet supported."),
        (dict(member_id=new_id(), epoch=3, active={}, standby=None, warmup={}), INVALID_REQUEST,
         "If one task-type is non-null, all must be non-null."),
        (dict(member_id=new_id(), epoch=3, topology=topology), INVALID_REQUEST,
         "Topology can only be provided when (re-)joining."),
        (dict(member_id=new_id(), epoch=-3), INVALID_REQUEST, "MemberEpoch is -3, but must be greater than or equal "
                                                             "to -2."),
        (dict(member_id=new_id(), epoch=0, topology=bad_changelog), STREAMS_INVALID_TOPOLOGY,
         f"Changelog topic {app}-store-changelog must have an undefined partition count, but it is set to 3."),
        (dict(member_id=new_id(), epoch=0, topology=internal), STREAMS_INVALID_TOPOLOGY,
         "Use of Kafka internal topics __consumer_offsets in a Kafka Streams topology is prohibited."),
        (dict(member_id="m-unknown", epoch=5), GROUP_ID_NOT_FOUND, f"Streams group {app} not found."),
    ]
    for fields, code, message in checks:
        resp = heartbeat(raw, app, fields.pop("member_id"), fields.pop("epoch"), **fields)
        assert (int(resp.error_code), resp.error_message) == (code, message), fields
        assert int(resp.member_epoch) == 0 and resp.active_tasks is None
    g = raw.request(StreamsGroupDescribeRequest(group_ids=(app,), include_authorized_operations=False), 0).groups[0]
    assert (int(g.error_code), g.error_message) == (GROUP_ID_NOT_FOUND, f"Group {app} not found.")

    a = Member(raw, app, new_id(), "p")
    until("tasks", lambda: a.beat(topology), lambda r: bool(a.active and len(a.active) == 2))
    ahead = heartbeat(raw, app, a.member_id, a.epoch + 1, active=a.active, standby={}, warmup={})
    assert int(ahead.error_code) == FENCED_MEMBER_EPOCH
    assert ahead.error_message == (f"The streams group member has a greater member epoch ({a.epoch + 1}) than the "
                                   f"one known by the group coordinator ({a.epoch}). The member must abandon all its "
                                   f"partitions and rejoin.")
    stranger = heartbeat(raw, app, "nobody", a.epoch)
    assert (int(stranger.error_code), stranger.error_message) == (UNKNOWN_MEMBER_ID,
                                                                  f"Member nobody is not a member of group {app}.")
    bad_task = heartbeat(raw, app, a.member_id, a.epoch, active={"0": [7]}, standby={}, warmup={})
    assert (int(bad_task.error_code), bad_task.error_message) == (
        INVALID_REQUEST, "Task 7 for subtopology 0 is invalid. Number of tasks for this subtopology: 2")
    different = Topology(epoch=i32(0), subtopologies=(
        Subtopology(subtopology_id="0", source_topics=(source,), state_changelog_topics=(), repartition_sink_topics=(),
                    repartition_source_topics=(), copartition_groups=()),))
    other = heartbeat(raw, app, new_id(), 0, topology=different, process_id="q")
    assert (int(other.error_code), other.error_message) == (INVALID_REQUEST, "Topology updates are not supported yet.")
    # Other group types see it as Kafka shows them a streams group.
    dg = raw.request(DescribeGroupsRequest(groups=(app,), include_authorized_operations=False), 6).groups[0]
    assert (int(dg.error_code), dg.error_message) == (GROUP_ID_NOT_FOUND, f"Group {app} is not a classic group.")
    listed = raw.request(ListGroupsRequest(states_filter=(), types_filter=("streams",)), 5).groups
    assert [(g.group_id, g.protocol_type, g.group_type) for g in listed if g.group_id == app] == \
        [(app, "streams", "streams")]


def test_offsets_are_committed_with_the_member_epoch(broker: Any, raw: RawClient) -> None:
    app, source = uniq("soff"), uniq("stext")
    create_topic(broker.bootstrap, source, 2)
    a = Member(raw, app, new_id(), "p")
    until("tasks", lambda: a.beat(word_count_topology(app, source)),
          lambda r: bool(a.active and len(a.active) == 2))

    def commit(epoch: int, version: int = 9, member_id: str | None = None) -> int:
        return offset_commit(raw, app, member_id or a.member_id, epoch, source, version=version)

    assert commit(a.epoch + 1) == STALE_MEMBER_EPOCH
    assert commit(a.epoch, member_id="nobody") == UNKNOWN_MEMBER_ID
    assert commit(a.epoch, version=8) == UNSUPPORTED_VERSION   # v9+ for members of the streams protocol
    assert commit(a.epoch) == NONE


def test_the_group_survives_a_broker_restart(broker: Any, raw: RawClient) -> None:
    if getattr(broker, "external", False) or not hasattr(broker, "process") or not hasattr(broker.process, "restart"):
        pytest.skip("restarts the broker process (minikafka's BrokerProcess)")
    app, source = uniq("srst"), uniq("stext")
    create_topic(broker.bootstrap, source, 2)
    a = Member(raw, app, new_id(), "p")
    until("tasks", lambda: a.beat(word_count_topology(app, source)),
          lambda r: bool(a.active and len(a.active) == 2))
    before = describe(raw, app)
    raw.close()
    broker.process.restart()
    with RawClient.connect(broker.bootstrap) as again:
        after = describe(again, app)
        assert (after.state, after.group_epoch, after.assignment_epoch) == (
            before.state, before.group_epoch, before.assignment_epoch)
        m = after.members[a.member_id]
        assert sorted((t.subtopology_id, tuple(t.partitions)) for t in m.assignment.active_tasks) == \
            sorted((t.subtopology_id, tuple(t.partitions)) for t in before.members[a.member_id].assignment.active_tasks)
        # The member carries on at its epoch after the restart.
        a.c = again
        assert int(a.beat().member_epoch) == before.assignment_epoch


def test_streams_version_feature_turns_the_protocol_on_and_off(broker: Any, broker_factory: Any) -> None:
    """streams.version is finalized at 1 (Kafka 4.3's default) and advertised; at 0 (the broker
    property, as `kafka-storage format --feature streams.version=0` sets Kafka's) the protocol's
    APIs answer UNSUPPORTED_VERSION, as Kafka's do."""
    from test_consumer_protocol import features

    supported, finalized = features(broker.bootstrap)
    assert supported["streams.version"] == (0, 1) and finalized["streams.version"] == (1, 1)
    off = broker_factory(overrides={"streams.version": "0"})
    supported, finalized = features(off.bootstrap)
    assert supported["streams.version"] == (0, 1) and "streams.version" not in finalized
    with RawClient.connect(off.bootstrap) as c:
        joined = heartbeat(c, "g", new_id(), 0, topology=word_count_topology("g", "t"))
        assert int(joined.error_code) == UNSUPPORTED_VERSION
        g = c.request(StreamsGroupDescribeRequest(group_ids=("g",), include_authorized_operations=False), 0).groups[0]
        assert int(g.error_code) == UNSUPPORTED_VERSION


def test_other_protocols_cannot_join_a_streams_group(broker: Any, raw: RawClient) -> None:
    """A streams group id is not a consumer group's (ConsumerGroupHeartbeat: GROUP_ID_NOT_FOUND)
    nor a classic group's (JoinGroup: INCONSISTENT_GROUP_PROTOCOL); a consumer group's id is not a streams group's. Once the streams group is empty and
    deleted, the id is free again."""
    from kio.schema.delete_groups.v2.request import DeleteGroupsRequest
    from kio.schema.join_group.v9.request import JoinGroupRequest, JoinGroupRequestProtocol
    from test_consumer_protocol import heartbeat as consumer_heartbeat

    app, source = uniq("sx"), uniq("stext")
    create_topic(broker.bootstrap, source, 1)
    a = Member(raw, app, new_id(), "p")
    a.beat(word_count_topology(app, source))
    consumer = consumer_heartbeat(raw, app, new_id(), 0, topics=(source,))
    assert (int(consumer.error_code), consumer.error_message) == (GROUP_ID_NOT_FOUND,
                                                                  f"Group {app} is not a consumer group.")
    join = raw.request(JoinGroupRequest(group_id=app, session_timeout=ms(10_000), rebalance_timeout=ms(10_000),
                                        member_id="", group_instance_id=None, protocol_type="consumer",
                                        protocols=(JoinGroupRequestProtocol(name="range", metadata=b""),),
                                        reason=None), 9)
    assert (int(join.error_code), join.member_id) == (23, "")   # INCONSISTENT_GROUP_PROTOCOL
    deleted = raw.request(DeleteGroupsRequest(groups_names=(app,)), 2).results[0]
    assert int(deleted.error_code) == 68   # NON_EMPTY_GROUP
    assert int(heartbeat(raw, app, a.member_id, -1).error_code) == NONE
    deleted = raw.request(DeleteGroupsRequest(groups_names=(app,)), 2).results[0]
    assert int(deleted.error_code) == NONE
    g = raw.request(StreamsGroupDescribeRequest(group_ids=(app,), include_authorized_operations=False), 0).groups[0]
    assert int(g.error_code) == GROUP_ID_NOT_FOUND

    cg = uniq("scg")
    assert int(consumer_heartbeat(raw, cg, new_id(), 0, topics=(source,)).error_code) == NONE
    resp = heartbeat(raw, cg, new_id(), 0, topology=word_count_topology(cg, source), process_id="p")
    assert (int(resp.error_code), resp.error_message) == (GROUP_ID_NOT_FOUND, f"Group {cg} is not a streams group.")


def test_the_first_member_waits_out_the_initial_rebalance_delay(configured_broker: Any) -> None:
    """A new group waits `group.streams.initial.rebalance.delay.ms` for more members: the first
    member is at epoch 1 (the new group's empty target) with ASSIGNMENT_DELAYED, its next
    heartbeats are not joins (no rebalance timeout needed), and after the delay it gets its tasks."""
    broker = configured_broker(overrides={**FAST, "group.streams.initial.rebalance.delay.ms": "3000"})
    app, source = uniq("sdelay"), uniq("stext")
    create_topic(broker.bootstrap, source, 2)
    with RawClient.connect(broker.bootstrap) as c:
        a = Member(c, app, new_id(), "p")
        first = a.beat(word_count_topology(app, source))
        assert int(first.member_epoch) == 1 and owned_of(first) == {}
        assert statuses(first)[5] == "Assignment delayed due to the configured initial rebalance delay."
        again = a.beat()   # epoch 1, RebalanceTimeoutMs left out: a heartbeat, not a join
        assert int(again.error_code) == NONE and int(again.member_epoch) == 1
        until("tasks after the delay", a.beat, lambda r: bool(a.active and len(a.active) == 2))
        d = describe(c, app)
        assert d.state == "Stable" and d.assignment_epoch > 1


def test_standby_tasks_from_the_group_config(broker: Any, raw: RawClient) -> None:
    """streams.num.standby.replicas set on the group (IncrementalAlterConfigs, GROUP resource):
    the next heartbeat bumps the group epoch (the assignment configs changed), and each member of
    two processes gets, as standby, the stateful tasks the other runs actively (never a task it
    runs itself); the stateless subtopology has none."""
    from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType

    app, source = uniq("sstby"), uniq("stext")
    create_topic(broker.bootstrap, source, 2)
    a, b = Member(raw, app, new_id(), "process-a"), Member(raw, app, new_id(), "process-b")
    until("a has tasks", lambda: a.beat(word_count_topology(app, source)), lambda r: bool(a.active))
    b.beat(word_count_topology(app, source))
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    resource = ConfigResource(ResourceType.GROUP, app, incremental_configs=[
        ConfigEntry("streams.num.standby.replicas", "1", incremental_operation=AlterConfigOpType.SET)])
    next(iter(admin.incremental_alter_configs([resource]).values())).result(30)

    def settled() -> Described:
        a.beat()
        b.beat()
        return describe(raw, app)

    def with_standbys(d: Described) -> bool:
        return (d.state == "Stable" and len(d.active_owners()) == 4
                and all(m.assignment.standby_tasks for m in d.members.values()))

    d = until("standby tasks assigned", settled, with_standbys)
    for mid, m in d.members.items():
        active = {(t.subtopology_id, int(p)) for t in m.assignment.active_tasks for p in t.partitions}
        standby = {(t.subtopology_id, int(p)) for t in m.assignment.standby_tasks for p in t.partitions}
        other = {(t.subtopology_id, int(p)) for o, om in d.members.items() if o != mid
                 for t in om.assignment.active_tasks for p in t.partitions}
        assert standby and not standby & active, (mid, active, standby)
        # subtopology 1 keeps the count store (its changelog); subtopology 0 is stateless
        assert standby == {t for t in other if t[0] == "1"}, (mid, standby, other)
