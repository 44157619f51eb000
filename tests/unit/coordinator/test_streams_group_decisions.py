"""KIP-1071 streams groups without sockets: request validation, the topology against the topics
(topology.py), the heartbeat decisions, leaving and fencing (decisions.py) and one reconciliation
step (reconcile.py). Time and topics are passed in; the reference is Kafka 4.3.1."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import pytest

from minikafka.coordinator.streams_group import records as rec
from minikafka.coordinator.streams_group import topology as topo
from minikafka.coordinator.streams_group.decisions import (
    HeartbeatRequest,
    Outcome,
    StreamsGroupConfig,
    assignment_configs,
    decide_heartbeat,
    delayed_target_assignment,
    expired_members,
    fence,
    initial_delay_over,
    metadata_hash,
    next_deadline,
)
from minikafka.coordinator.streams_group.reconcile import UnknownMemberState, reconcile
from minikafka.coordinator.streams_group.state import (
    EMPTY_TASKS,
    CopartitionGroup,
    MemberState,
    StreamsGroup,
    StreamsGroupMember,
    StreamsGroupState,
    Subtopology,
    TaskId,
    TasksTuple,
    TopicInfo,
    Topology,
)
from minikafka.protocol.errors import ErrorCode

pytestmark = pytest.mark.unit

NONE: frozenset[TaskId] = frozenset()
IN, CHANGELOG_ID = uuid.UUID(int=1), uuid.UUID(int=2)
CHANGELOG = "app-store-changelog"
STATELESS = Topology(1, (Subtopology("0", source_topics=("in",)),))
STATEFUL = Topology(1, (Subtopology("0", source_topics=("in",), state_changelog_topics=(
    TopicInfo(CHANGELOG, configs=(("cleanup.policy", "compact"),)),)),))
TOPICS = {"in": (IN, 4)}
STATEFUL_TOPICS = {"in": (IN, 4), CHANGELOG: (CHANGELOG_ID, 4)}
# No initial delay and no assignment interval unless a test is about them.
CFG = StreamsGroupConfig(initial_rebalance_delay_ms=0, assignment_interval_ms=0)
FENCED_SMALLER = ("The streams group member has a smaller member epoch ({}) than the one known by the group "
                  "coordinator ({}). The member must abandon all its partitions and rejoin.")
FENCED_GREATER = ("The streams group member has a greater member epoch ({}) than the one known by the group "
                  "coordinator ({}). The member must abandon all its partitions and rejoin.")
INITIAL_DELAY = "Assignment delayed due to the configured initial rebalance delay."
INTERVAL_DELAY = "Assignment delayed due to the configured assignment interval."


def tasks(*partitions: int, sub: str = "0") -> frozenset[TaskId]:
    return frozenset((sub, p) for p in partitions)


def hb(member_id: str, epoch: int, **kw: Any) -> HeartbeatRequest:
    """A heartbeat; a join (epoch 0) carries what a Kafka Streams client sends on joining."""
    if epoch == 0:
        kw.setdefault("rebalance_timeout_ms", 30_000)
        kw.setdefault("topology", STATELESS)
        for name in ("active", "standby", "warmup"):
            kw.setdefault(name, NONE)
        kw.setdefault("process_id", f"p-{member_id}")
    return HeartbeatRequest(group_id="g", member_id=member_id, member_epoch=epoch, **kw)


def owning(m: StreamsGroupMember, tt: TasksTuple | None = None) -> dict[str, frozenset[TaskId]]:
    """The owned-task fields of a heartbeat from `m`, reporting `tt` (default: what it was assigned)."""
    tt = m.assigned if tt is None else tt
    return {"active": tt.active, "standby": tt.standby, "warmup": tt.warmup}


def parsed(records: tuple[rec.Record, ...] | list[rec.Record]) -> list[rec.ParsedStreamsRecord]:
    return [rec.parse(k, v) for k, v in records]


def shape(records: tuple[rec.Record, ...] | list[rec.Record]) -> list[tuple[int, str | None, bool]]:
    """(record type, member id, tombstone?) of each record, in order."""
    return [(p.record_type, p.member_id, p.value is None) for p in parsed(records)]


class Sim:
    """A group driven by the decisions alone."""

    def __init__(self, topics: Mapping[str, tuple[uuid.UUID, int]] | None = None,
                 cfg: StreamsGroupConfig = CFG) -> None:
        self.group: StreamsGroup | None = None
        self.topics = dict(TOPICS if topics is None else topics)
        self.cfg = cfg
        self.now = 1_000

    def beat(self, req: HeartbeatRequest) -> Outcome:
        out = decide_heartbeat(self.group, req, self.cfg, self.topics, self.now)
        if out.group is not None:
            self.group = out.group
        else:
            assert out.records == () and out.topics_to_create == ()
        self.check()
        return out

    @property
    def g(self) -> StreamsGroup:
        assert self.group is not None
        return self.group

    def m(self, mid: str) -> StreamsGroupMember:
        return self.g.members[mid]

    def check(self) -> None:
        """An active task is never owned by two members; a process never holds a task twice."""
        if self.group is None:
            return
        owners: dict[TaskId, str] = {}
        copies: dict[tuple[str, TaskId], str] = {}
        for m in self.group.members.values():
            owned = m.owned()
            for t in owned.active:
                assert t not in owners, f"{t} active on {owners[t]} and {m.member_id}"
                owners[t] = m.member_id
            for t in owned.active | owned.standby | owned.warmup:
                key = (m.process_id, t)
                assert key not in copies, f"{t} twice on process {m.process_id}"
                copies[key] = m.member_id

    def converge(self, mids: list[str], rounds: int = 10) -> None:
        """Heartbeats of every member, each reporting what it was assigned (it revokes at once),
        until the group is Stable."""
        for _ in range(rounds):
            for mid in mids:
                m = self.m(mid)
                r = self.beat(hb(mid, m.member_epoch, **owning(m))).reply
                assert r.error is ErrorCode.none, r
            if self.g.state is StreamsGroupState.STABLE:
                return
        raise AssertionError(f"not stable: {self.group}")


def stable_pair(topics: Mapping[str, tuple[uuid.UUID, int]] | None = None, cfg: StreamsGroupConfig = CFG,
                topology: Topology = STATELESS) -> Sim:
    s = Sim(topics, cfg)
    s.beat(hb("a", 0, topology=topology))
    s.beat(hb("b", 0, topology=topology))
    s.converge(["a", "b"])
    return s


# ------------------------------------------------------------------------------------- validation
def _join(**kw: Any) -> HeartbeatRequest:
    return hb("m", 0, **kw)


def _beat(**kw: Any) -> HeartbeatRequest:
    return hb("a", 2, **kw)


_REGEX = Topology(1, (Subtopology("0", source_topics=("in",), source_topic_regex=("in.*",)),))
_FIXED_CHANGELOG = Topology(1, (Subtopology("0", source_topics=("in",),
                                            state_changelog_topics=(TopicInfo("c", partitions=3),)),))
INVALID = ErrorCode.invalid_request


@pytest.mark.parametrize(("req", "code", "message"), [
    (_join(instance_id="i-1"), INVALID, "Static membership is not yet supported."),
    (_beat(instance_id="i-1"), INVALID, "Static membership is not yet supported."),
    # the unsupported features are checked before anything else
    (hb(" ", 0, instance_id="i-1"), INVALID, "Static membership is not yet supported."),
    (_beat(task_offsets_set=True), INVALID, "TaskOffsets are not supported yet."),
    (_beat(active=NONE, standby=NONE, warmup=tasks(0)), INVALID, "WarmupTasks are not supported yet."),
    (_join(warmup=tasks(0)), INVALID, "WarmupTasks are not supported yet."),
    (_join(topology=_REGEX), INVALID, "Regular expressions for source topics are not supported yet."),
    (hb(" ", 0), INVALID, "MemberId can't be empty."),
    (hb("", 3), INVALID, "MemberId can't be empty."),
    (replace(_beat(), group_id=""), INVALID, "GroupId can't be empty."),
    (replace(_beat(), group_id="  "), INVALID, "GroupId can't be empty."),
    (_beat(rack_id=" "), INVALID, "RackId can't be empty."),
    (_join(rebalance_timeout_ms=-1), INVALID, "RebalanceTimeoutMs must be provided in first request."),
    (_join(active=tasks(0)), INVALID, "ActiveTasks must be empty when (re-)joining."),
    (_join(standby=tasks(1)), INVALID, "StandbyTasks must be empty when (re-)joining."),
    (_join(topology=None), INVALID, "Topology must be non-null when (re-)joining."),
    (_join(topology=_FIXED_CHANGELOG), ErrorCode.streams_invalid_topology,
     "Changelog topic c must have an undefined partition count, but it is set to 3."),
    (hb("a", -2), INVALID, "InstanceId can't be null."),
    (hb("a", -3), INVALID, "MemberEpoch is -3, but must be greater than or equal to -2."),
    (hb("a", -100), INVALID, "MemberEpoch is -100, but must be greater than or equal to -2."),
    (_beat(active=tasks(0)), INVALID, "If one task-type is non-null, all must be non-null."),
    (_beat(active=tasks(0), standby=NONE), INVALID, "If one task-type is non-null, all must be non-null."),
    (_beat(standby=NONE, warmup=NONE), INVALID, "If one task-type is non-null, all must be non-null."),
    (_beat(topology=STATELESS), INVALID, "Topology can only be provided when (re-)joining."),
    (hb("a", -1, topology=STATELESS), INVALID, "Topology can only be provided when (re-)joining."),
])
def test_invalid_requests_are_refused_and_change_nothing(req: HeartbeatRequest, code: ErrorCode, message: str) -> None:
    s = stable_pair()
    before = s.g
    out = decide_heartbeat(before, req, CFG, s.topics, s.now)
    assert (out.reply.error, out.reply.message) == (code, message)
    assert (out.group, out.records, out.topics_to_create) == (None, (), ())
    assert out.reply.tasks is None and out.reply.status == ()
    # nor on a coordinator that never saw the group
    out = decide_heartbeat(None, req, CFG, s.topics, s.now)
    assert (out.reply.error, out.reply.message, out.group) == (code, message, None)


def test_a_valid_join_passes_validation() -> None:
    out = decide_heartbeat(None, _join(), CFG, TOPICS, 1_000)
    assert out.reply.error is ErrorCode.none and out.group is not None


@pytest.mark.parametrize(("absent", "message"), [
    ({"active": None, "standby": None, "warmup": None}, "ActiveTasks must be empty when (re-)joining."),
    ({"standby": None}, "StandbyTasks must be empty when (re-)joining."),
    ({"warmup": None}, "WarmupTasks must be empty when (re-)joining."),
])
def test_a_join_without_owned_task_lists_is_refused(absent: dict[str, None], message: str) -> None:
    """Kafka's throwIfNotEmptyCollection: a null list is not an empty one."""
    out = decide_heartbeat(None, _join(**absent), CFG, TOPICS, 1_000)
    assert (out.reply.error, out.reply.message, out.group) == (INVALID, message, None)


# --------------------------------------------------------------------------------- topology.configure
def sub(sid: str, *sources: str, sinks: tuple[str, ...] = (), reps: tuple[TopicInfo, ...] = (),
        changelogs: tuple[str, ...] = (), copartition: tuple[CopartitionGroup, ...] = ()) -> Subtopology:
    return Subtopology(sid, source_topics=sources, repartition_sink_topics=sinks, repartition_source_topics=reps,
                       state_changelog_topics=tuple(TopicInfo(c) for c in changelogs), copartition_groups=copartition)


def test_missing_source_topics_are_summarized_past_three() -> None:
    t = Topology(4, (sub("0", "e", "a"), sub("1", "c", "b", "d"), sub("2", "present")))
    got = topo.configure(t, {"present": 3})
    assert got.error == (topo.MISSING_SOURCE_TOPICS, "Source topics a, b, c and 2 additional topics are missing.")
    assert (got.topology_epoch, dict(got.task_counts), got.internal_topics_to_create, got.is_ready) == (
        4, {}, (), False)
    got = topo.configure(t, {"present": 3, "a": 1, "c": 1, "d": 1})
    assert got.error == (topo.MISSING_SOURCE_TOPICS, "Source topics b, e are missing.")
    got = topo.configure(t, {"present": 3, "a": 1, "c": 1, "d": 1, "b": 1})
    assert got.error == (topo.MISSING_SOURCE_TOPICS, "Source topics e are missing.")


def test_a_stateless_topology_on_existing_topics_is_ready() -> None:
    got = topo.configure(Topology(1, (sub("0", "a", "b"),)), {"a": 2, "b": 5})
    assert got.is_ready and got.error is None and got.internal_topics_to_create == ()
    assert dict(got.task_counts) == {"0": 5}   # the largest source


def test_repartition_and_changelog_counts_follow_the_upstream_sources() -> None:
    t = Topology(1, (
        sub("0", "small", "big", sinks=("app-rep",)),
        sub("1", reps=(TopicInfo("app-rep", replication_factor=3, configs=(("retention.ms", "-1"),)),),
            changelogs=("app-agg-changelog",)),
    ))
    got = topo.configure(t, {"small": 2, "big": 6})
    assert dict(got.task_counts) == {"0": 6, "1": 6}
    assert dict(got.internal_partitions) == {"app-rep": 6, "app-agg-changelog": 6}
    assert sorted(got.internal_topics_to_create, key=lambda t: t.name) == [
        TopicInfo("app-agg-changelog", 6),
        TopicInfo("app-rep", 6, 3, (("retention.ms", "-1"),)),
    ]
    # named in the order of Kafka's HashMap (topology.java_hash_order)
    names = [t.name for t in got.internal_topics_to_create]
    assert names == topo.java_hash_order(["app-rep", "app-agg-changelog"])
    assert got.error == (topo.MISSING_INTERNAL_TOPICS, "Internal topics are missing: " + ", ".join(names))
    assert not got.is_ready
    # once created with those counts the topology is ready
    done = topo.configure(t, {"small": 2, "big": 6, "app-rep": 6, "app-agg-changelog": 6})
    assert done.is_ready and done.internal_topics_to_create == () and done.error is None
    assert dict(done.task_counts) == {"0": 6, "1": 6}


def test_a_chain_of_repartition_topics_is_resolved_over_several_passes() -> None:
    # listed downstream first: r2's count is only known once r1's is
    t = Topology(1, (
        sub("2", reps=(TopicInfo("r2"),)),
        sub("1", reps=(TopicInfo("r1"),), sinks=("r2",)),
        sub("0", "in", sinks=("r1",)),
    ))
    got = topo.configure(t, {"in": 3})
    assert dict(got.internal_partitions) == {"r1": 3, "r2": 3}
    assert dict(got.task_counts) == {"0": 3, "1": 3, "2": 3}
    assert sorted(i.name for i in got.internal_topics_to_create) == ["r1", "r2"]
    # in Kafka's HashMap order: "r2".hashCode() lands in bucket 0, "r1".hashCode() in bucket 15
    assert got.error == (topo.MISSING_INTERNAL_TOPICS, "Internal topics are missing: r2, r1")


def test_a_declared_repartition_count_wins_and_propagates_downstream() -> None:
    t = Topology(1, (
        sub("0", "in", sinks=("r1",)),
        sub("1", reps=(TopicInfo("r1", partitions=7),), sinks=("r2",)),
        sub("2", reps=(TopicInfo("r2"),)),
    ))
    got = topo.configure(t, {"in": 3})
    assert dict(got.internal_partitions) == {"r1": 7, "r2": 7}
    assert dict(got.task_counts) == {"0": 3, "1": 7, "2": 7}


def test_copartitioned_external_topics_must_agree() -> None:
    t = Topology(1, (sub("0", "right", "left", "other",
                         copartition=(CopartitionGroup(source_topics=(0, 1)),)),))
    got = topo.configure(t, {"left": 3, "right": 5, "other": 9})
    # Kafka prints a TreeMap: sorted, `key=value`
    assert got.error == (topo.INCORRECTLY_PARTITIONED_TOPICS,
                         "Following topics do not have the same number of partitions: [{left=3, right=5}]")
    assert (dict(got.task_counts), got.internal_topics_to_create) == ({}, ())
    ok = topo.configure(t, {"left": 5, "right": 5, "other": 9})
    assert ok.is_ready and dict(ok.task_counts) == {"0": 9}


def test_a_flexible_repartition_topic_takes_the_count_of_its_copartitioned_sources() -> None:
    t = Topology(1, (
        sub("0", "wide", sinks=("app-rep",)),
        sub("1", "narrow", reps=(TopicInfo("app-rep"),),
            copartition=(CopartitionGroup(source_topics=(0,), repartition_source_topics=(0,)),)),
    ))
    got = topo.configure(t, {"wide": 5, "narrow": 3})
    assert dict(got.internal_partitions) == {"app-rep": 3}      # not 5: coerced to the join partner
    assert dict(got.task_counts) == {"0": 5, "1": 3}
    assert got.internal_topics_to_create == (TopicInfo("app-rep", 3),)


def test_only_flexible_repartition_topics_in_a_copartition_group_take_the_largest_count() -> None:
    t = Topology(1, (
        sub("0", "x", sinks=("ra",)),
        sub("1", "y", sinks=("rb",)),
        sub("2", reps=(TopicInfo("ra"), TopicInfo("rb")),
            copartition=(CopartitionGroup(repartition_source_topics=(0, 1)),)),
    ))
    got = topo.configure(t, {"x": 2, "y": 4})
    assert dict(got.internal_partitions) == {"ra": 4, "rb": 4}
    assert dict(got.task_counts)["2"] == 4


def test_a_fixed_repartition_topic_that_disagrees_with_its_copartitioned_sources() -> None:
    t = Topology(1, (
        sub("0", "wide", sinks=("app-rep",)),
        sub("1", "narrow", reps=(TopicInfo("app-rep", partitions=7),),
            copartition=(CopartitionGroup(source_topics=(0,), repartition_source_topics=(0,)),)),
    ))
    got = topo.configure(t, {"wide": 5, "narrow": 3})
    assert got.error == (topo.INCORRECTLY_PARTITIONED_TOPICS,
                         "Number of partitions [7] of repartition topic [app-rep] doesn't match number of partitions "
                         "[3] of the source topic.")


def test_fixed_repartition_topics_in_one_copartition_group_must_agree() -> None:
    t = Topology(1, (
        sub("0", "x", sinks=("r2", "r1")),
        sub("1", reps=(TopicInfo("r2", partitions=3), TopicInfo("r1", partitions=2)),
            copartition=(CopartitionGroup(repartition_source_topics=(0, 1)),)),
    ))
    got = topo.configure(t, {"x": 4})
    assert got.error == (topo.INCORRECTLY_PARTITIONED_TOPICS,
                         "Following topics do not have the same number of partitions: [{r1=2, r2=3}]")


def test_an_existing_internal_topic_with_another_count_is_incorrectly_partitioned() -> None:
    got = topo.configure(STATEFUL, {"in": 4, CHANGELOG: 2})
    assert got.error == (topo.INCORRECTLY_PARTITIONED_TOPICS,
                         f"Existing topic {CHANGELOG} has different number of partitions: expected 4, found 2")
    assert (dict(got.task_counts), got.internal_topics_to_create, got.is_ready) == ({}, (), False)
    # a flexible repartition topic that exists is checked against the count decided from upstream
    t = Topology(1, (sub("0", "in", sinks=("r",)), sub("1", reps=(TopicInfo("r"),))))
    got = topo.configure(t, {"in": 4, "r": 6})
    assert got.error == (topo.INCORRECTLY_PARTITIONED_TOPICS,
                         "Existing topic r has different number of partitions: expected 4, found 6")


def test_only_the_internal_topics_still_missing_are_listed() -> None:
    t = Topology(1, (sub("0", "in", changelogs=("c1", "c2", "c3", "c4", "c5")),))
    got = topo.configure(t, {"in": 2, "c3": 2})
    assert sorted(i.name for i in got.internal_topics_to_create) == ["c1", "c2", "c4", "c5"]
    assert {i.partitions for i in got.internal_topics_to_create} == {2}
    names = [i.name for i in got.internal_topics_to_create]
    assert got.error == (topo.MISSING_INTERNAL_TOPICS,
                         f"Internal topics are missing: {', '.join(names[:3])} and 1 additional topics")
    assert dict(got.task_counts) == {"0": 2}


def test_missing_internal_topics_are_listed_in_kafkas_order() -> None:
    t = Topology(1, (sub("0", "in", changelogs=("app-agg-changelog",)),
                     sub("1", "in", changelogs=("app-count-changelog",))))
    got = topo.configure(t, {"in": 2})
    # java: new HashMap<>() with both names -> keySet() == [app-count-changelog, app-agg-changelog]
    assert got.error == (topo.MISSING_INTERNAL_TOPICS,
                         "Internal topics are missing: app-count-changelog, app-agg-changelog")


def test_a_repartition_source_nobody_writes_is_an_invalid_topology() -> None:
    t = Topology(1, (sub("0", "in"), sub("1", reps=(TopicInfo("orphan"),))))
    with pytest.raises(topo.InvalidTopology) as e:
        topo.configure(t, {"in": 2})
    assert str(e.value) == ("Failed to compute number of partitions for all repartition topics, because a "
                            "repartition source topic is never used as a sink topic.")


def test_a_repartition_loop_is_an_invalid_topology() -> None:
    t = Topology(1, (sub("0", reps=(TopicInfo("r1"),), sinks=("r2",)),
                     sub("1", reps=(TopicInfo("r2"),), sinks=("r1",))))
    with pytest.raises(topo.InvalidTopology) as e:
        topo.configure(t, {})
    assert str(e.value) == ("Failed to compute number of partitions for all repartition topics. There may be loops "
                            "in the topology that cannot be resolved.")


def test_a_subtopology_without_sources_is_an_invalid_topology() -> None:
    with pytest.raises(topo.InvalidTopology) as e:
        topo.configure(Topology(1, (sub("0", "in"), sub("7"))), {"in": 1})
    assert str(e.value) == "No source topics found for subtopology 7"


def test_an_invalid_topology_fails_the_join_with_streams_invalid_topology() -> None:
    t = Topology(1, (sub("0", "in"), sub("1", reps=(TopicInfo("orphan"),))))
    out = decide_heartbeat(None, hb("a", 0, topology=t), CFG, TOPICS, 1_000)
    assert out.reply.error is ErrorCode.streams_invalid_topology
    assert out.reply.message is not None and out.reply.message.endswith("is never used as a sink topic.")
    assert (out.group, out.records) == (None, ())


def test_required_topics_and_source_subtopologies() -> None:
    t = Topology(1, (sub("0", "in", sinks=("r",), changelogs=("c0",)), sub("1", reps=(TopicInfo("r"),))))
    assert topo.required_topics(t) == {"in", "r", "c0"}
    assert topo.source_topic_subtopologies(t) == {"in": "0", "r": "1"}
    assert topo.summarize([]) == "<none>"


# ------------------------------------------------------------------------------------ heartbeat flow
def test_the_first_join_creates_the_group_with_its_topology() -> None:
    s = Sim()
    out = s.beat(hb("a", 0, client_id="cli", client_host="/10.0.0.1", user_endpoint=("h", 8080)))
    r = out.reply
    # a new group is at epoch 1 (Kafka's StreamsGroup constructor): the first member bumps it to 2
    assert (r.error, r.member_id, r.member_epoch, r.heartbeat_interval_ms, r.status) == (
        ErrorCode.none, "a", 2, 5_000, ())
    assert r.tasks == TasksTuple(active=tasks(0, 1, 2, 3))
    assert r.endpoint_information_epoch == 0   # a new group: Kafka answers 0
    assert shape(out.records) == [(rec.MEMBER_METADATA, "a", False), (rec.TOPOLOGY, None, False),
                                  (rec.GROUP_METADATA, None, False), (rec.TARGET_ASSIGNMENT_MEMBER, "a", False),
                                  (rec.TARGET_ASSIGNMENT_METADATA, None, False),
                                  (rec.CURRENT_MEMBER_ASSIGNMENT, "a", False)]
    member, topology, meta, target, target_meta, current = (p.value for p in parsed(out.records))
    assert isinstance(member, StreamsGroupMember)
    assert (member.client_id, member.client_host, member.rebalance_timeout_ms, member.topology_epoch,
            member.process_id, member.user_endpoint) == ("cli", "/10.0.0.1", 30_000, 1, "p-a", ("h", 8080))
    assert topology == STATELESS
    assert meta == rec.GroupMetadataValue(2, metadata_hash(STATELESS, TOPICS), 1, (("num.standby.replicas", "0"),))
    assert target == TasksTuple(active=tasks(0, 1, 2, 3))
    assert target_meta == rec.TargetAssignmentMetadataValue(2, 1_000)
    assert isinstance(current, StreamsGroupMember)
    assert (current.member_epoch, current.previous_member_epoch, current.state) == (2, 0, MemberState.STABLE)
    assert dict(current.active_epochs) == {t: 2 for t in tasks(0, 1, 2, 3)}
    g = s.g
    assert (g.state, g.group_epoch, g.target_assignment_epoch, g.validated_topology_epoch) == (
        StreamsGroupState.STABLE, 2, 2, 1)
    assert g.members["a"].session_deadline_ms == 1_000 + 45_000


def test_a_steady_heartbeat_writes_nothing_and_sends_no_tasks() -> None:
    s = Sim()
    s.beat(hb("a", 0))
    s.now += 2_000
    out = s.beat(hb("a", 2, **owning(s.m("a"))))
    assert (out.reply.member_epoch, out.reply.tasks, out.records) == (2, None, ())
    assert s.m("a").session_deadline_ms == s.now + 45_000


def test_missing_source_topics_keep_the_group_not_ready_until_they_are_created() -> None:
    s = Sim(topics={})
    out = s.beat(hb("a", 0))
    r = out.reply
    assert r.status == ((topo.MISSING_SOURCE_TOPICS, "Source topics in are missing."),)
    assert (r.error, r.member_epoch, r.tasks) == (ErrorCode.none, 2, EMPTY_TASKS)
    assert out.topics_to_create == ()
    meta = next(p.value for p in parsed(out.records) if p.record_type == rec.GROUP_METADATA)
    assert meta == rec.GroupMetadataValue(2, 0, -1, (("num.standby.replicas", "0"),))
    # every member gets an empty target while the topology is not ready
    assert [p.value for p in parsed(out.records) if p.record_type == rec.TARGET_ASSIGNMENT_MEMBER] == [EMPTY_TASKS]
    assert (s.g.state, s.g.group_epoch, s.g.validated_topology_epoch) == (StreamsGroupState.NOT_READY, 2, -1)
    # nothing changed: still not ready, no bump
    out = s.beat(hb("a", 2, **owning(s.m("a"))))
    assert out.reply.status == ((topo.MISSING_SOURCE_TOPICS, "Source topics in are missing."),)
    assert out.records == () and s.g.group_epoch == 2
    # the topic appears: new metadata hash, topology validated, epoch bump, target, tasks
    s.topics = dict(TOPICS)
    out = s.beat(hb("a", 2, **owning(s.m("a"))))
    r = out.reply
    assert (r.status, r.member_epoch, r.tasks) == ((), 3, TasksTuple(active=tasks(0, 1, 2, 3)))
    assert shape(out.records) == [(rec.GROUP_METADATA, None, False), (rec.TARGET_ASSIGNMENT_MEMBER, "a", False),
                                  (rec.TARGET_ASSIGNMENT_METADATA, None, False),
                                  (rec.CURRENT_MEMBER_ASSIGNMENT, "a", False)]
    meta = parsed(out.records)[0].value
    assert meta == rec.GroupMetadataValue(3, metadata_hash(STATELESS, TOPICS), 1, (("num.standby.replicas", "0"),))
    assert metadata_hash(STATELESS, TOPICS) != 0
    assert (s.g.state, s.g.group_epoch, s.g.target_assignment_epoch, s.g.validated_topology_epoch) == (
        StreamsGroupState.STABLE, 3, 3, 1)


def test_missing_internal_topics_are_handed_to_the_broker_to_create() -> None:
    s = Sim(topics=TOPICS)
    out = s.beat(hb("a", 0, topology=STATEFUL))
    assert out.reply.status == ((topo.MISSING_INTERNAL_TOPICS, f"Internal topics are missing: {CHANGELOG}"),)
    assert out.topics_to_create == (TopicInfo(CHANGELOG, 4, 0, (("cleanup.policy", "compact"),)),)
    assert s.g.state is StreamsGroupState.NOT_READY and out.reply.tasks == EMPTY_TASKS
    assert out.reply.member_epoch == 2
    # asked again on every heartbeat until they exist
    out = s.beat(hb("a", 2, **owning(s.m("a"))))
    assert out.reply.error is ErrorCode.none
    assert out.topics_to_create == (TopicInfo(CHANGELOG, 4, 0, (("cleanup.policy", "compact"),)),)
    s.topics[CHANGELOG] = (CHANGELOG_ID, 4)
    out = s.beat(hb("a", 2, **owning(s.m("a"))))
    assert (out.reply.status, out.topics_to_create, out.reply.member_epoch) == ((), (), 3)
    assert out.reply.tasks == TasksTuple(active=tasks(0, 1, 2, 3))
    assert s.g.state is StreamsGroupState.STABLE


def test_the_initial_rebalance_delay_holds_the_first_assignment() -> None:
    cfg = replace(CFG, initial_rebalance_delay_ms=3_000)
    s = Sim(cfg=cfg)
    out = s.beat(hb("a", 0))
    r = out.reply
    assert r.status == ((topo.ASSIGNMENT_DELAYED, INITIAL_DELAY),)
    # the member is reconciled to the new group's initial (empty) target of epoch 1, as on Kafka 4.3.1
    # (member epoch 1; StreamsGroupDescribe: group epoch 2, assignment epoch 1)
    assert (r.member_epoch, r.tasks) == (1, EMPTY_TASKS)
    assert shape(out.records) == [(rec.MEMBER_METADATA, "a", False), (rec.TOPOLOGY, None, False),
                                  (rec.GROUP_METADATA, None, False), (rec.CURRENT_MEMBER_ASSIGNMENT, "a", False)]
    current = parsed(out.records)[3].value
    assert isinstance(current, StreamsGroupMember)
    assert (current.member_epoch, current.previous_member_epoch, current.assigned) == (1, 0, EMPTY_TASKS)
    assert rec.TARGET_ASSIGNMENT_METADATA not in [p.record_type for p in parsed(out.records)]
    assert (s.g.group_epoch, s.g.target_assignment_epoch, s.g.state) == (2, 1, StreamsGroupState.ASSIGNING)
    assert s.g.initial_delay_until_ms == 4_000 and next_deadline(s.g) == 4_000
    # another member joins within the delay: also held
    s.now = 2_000
    r = s.beat(hb("b", 0)).reply
    assert (r.status, r.member_epoch, r.tasks) == (((topo.ASSIGNMENT_DELAYED, INITIAL_DELAY),), 1, EMPTY_TASKS)
    # a heartbeats at epoch 1 (not a join): still held, nothing written
    out = s.beat(hb("a", 1, **owning(s.m("a"))))
    r = out.reply
    assert (r.error, r.status, r.member_epoch, r.tasks, out.records) == (
        ErrorCode.none, ((topo.ASSIGNMENT_DELAYED, INITIAL_DELAY),), 1, None, ())
    assert (s.g.group_epoch, s.g.target_assignment_epoch) == (3, 1) and not initial_delay_over(s.g, 3_999)
    # the timer fires: one target for both members at the group epoch
    s.now = 4_000
    assert initial_delay_over(s.g, s.now)
    group, records = delayed_target_assignment(s.g, cfg, s.now)
    assert shape(records) == [(rec.TARGET_ASSIGNMENT_MEMBER, "a", False), (rec.TARGET_ASSIGNMENT_MEMBER, "b", False),
                              (rec.TARGET_ASSIGNMENT_METADATA, None, False)]
    assert parsed(records)[2].value == rec.TargetAssignmentMetadataValue(3, 4_000)
    assert (group.target_assignment_epoch, group.initial_delay_until_ms) == (3, None)
    s.group = group
    ra = s.beat(hb("a", 1, **owning(s.m("a")))).reply
    rb = s.beat(hb("b", 1, **owning(s.m("b")))).reply
    assert (ra.status, ra.member_epoch, rb.status, rb.member_epoch) == ((), 3, (), 3)
    assert ra.tasks is not None and rb.tasks is not None
    assert ra.tasks.active | rb.tasks.active == tasks(0, 1, 2, 3) and len(ra.tasks.active) == 2
    assert s.g.state is StreamsGroupState.STABLE


def test_the_assignment_interval_delays_a_new_target() -> None:
    cfg = replace(CFG, assignment_interval_ms=1_000)
    s = Sim(cfg=cfg)
    s.beat(hb("a", 0))
    assert s.g.assignment_timestamp_ms == 1_000
    s.now = 1_500
    out = s.beat(hb("b", 0))
    r = out.reply
    assert r.status == ((topo.ASSIGNMENT_DELAYED, INTERVAL_DELAY),)
    # b reconciles to the existing target epoch, where it has nothing
    assert (r.member_epoch, r.tasks) == (2, EMPTY_TASKS)
    assert (s.g.group_epoch, s.g.target_assignment_epoch, s.g.state) == (3, 2, StreamsGroupState.ASSIGNING)
    assert rec.TARGET_ASSIGNMENT_METADATA not in [p.record_type for p in parsed(out.records)]
    s.now = 1_999
    r = s.beat(hb("a", 2, **owning(s.m("a")))).reply
    assert r.status == ((topo.ASSIGNMENT_DELAYED, INTERVAL_DELAY),) and r.tasks is None
    s.now = 2_000
    r = s.beat(hb("a", 2, **owning(s.m("a")))).reply
    assert r.status == () and s.g.target_assignment_epoch == 3
    assert r.tasks == TasksTuple(active=tasks(0, 1)) and s.m("a").state is MemberState.UNREVOKED_TASKS


def test_only_the_required_topics_bump_the_group_epoch() -> None:
    s = Sim()
    s.beat(hb("a", 0))
    epoch, hash_ = s.g.group_epoch, s.g.metadata_hash
    assert s.m("a").member_epoch == epoch == 2
    s.topics["unrelated"] = (uuid.UUID(int=9), 3)
    out = s.beat(hb("a", epoch, **owning(s.m("a"))))
    assert (out.records, s.g.group_epoch) == ((), epoch)
    s.topics["in"] = (IN, 6)
    out = s.beat(hb("a", epoch, **owning(s.m("a"))))
    meta = parsed(out.records)[0].value
    assert isinstance(meta, rec.GroupMetadataValue) and (meta.epoch, meta.validated_topology_epoch) == (epoch + 1, 1)
    assert meta.metadata_hash == s.g.metadata_hash == metadata_hash(STATELESS, s.topics) != hash_
    assert s.g.configured is not None and dict(s.g.configured.task_counts) == {"0": 6}
    assert (out.reply.member_epoch, out.reply.tasks) == (epoch + 1, TasksTuple(active=tasks(*range(6))))
    # the new tasks carry the epoch they were given at, the old ones keep theirs
    assert dict(s.m("a").active_epochs) == {**{t: 2 for t in tasks(0, 1, 2, 3)}, ("0", 4): 3, ("0", 5): 3}


def test_a_second_member_waits_for_the_first_to_revoke() -> None:
    s = Sim()
    s.beat(hb("a", 0))
    out = s.beat(hb("b", 0))
    # b is at the new epoch, but its tasks are still a's
    assert (out.reply.member_epoch, out.reply.tasks) == (3, EMPTY_TASKS)
    assert s.m("b").state is MemberState.UNRELEASED_TASKS
    assert s.g.target_of("a") == TasksTuple(active=tasks(0, 1)) and s.g.target_of("b") == TasksTuple(active=tasks(2, 3))
    assert s.g.state is StreamsGroupState.RECONCILING
    # a still owns all four: it keeps 0, 1 and must revoke 2, 3, staying at epoch 2
    s.now = 2_000
    out = s.beat(hb("a", 2, **owning(s.m("a"))))
    assert (out.reply.member_epoch, out.reply.tasks) == (2, TasksTuple(active=tasks(0, 1)))
    a = s.m("a")
    assert (a.state, a.member_epoch, a.previous_member_epoch) == (MemberState.UNREVOKED_TASKS, 2, 2)
    assert a.pending_revocation == TasksTuple(active=tasks(2, 3))
    assert a.rebalance_deadline_ms == 2_000 + 30_000 and next_deadline(s.g) == 32_000
    assert shape(out.records) == [(rec.CURRENT_MEMBER_ASSIGNMENT, "a", False)]
    current = parsed(out.records)[0].value
    assert isinstance(current, StreamsGroupMember) and current.pending_revocation == a.pending_revocation
    # b asks again: 2, 3 are still a's
    out = s.beat(hb("b", 3, **owning(s.m("b"))))
    assert (out.reply.tasks, s.m("b").state) == (None, MemberState.UNRELEASED_TASKS)
    # a reports them revoked: it moves to epoch 3
    out = s.beat(hb("a", 2, active=tasks(0, 1), standby=NONE, warmup=NONE))
    a = s.m("a")
    assert (out.reply.member_epoch, a.state, a.previous_member_epoch, a.rebalance_deadline_ms) == (
        3, MemberState.STABLE, 2, None)
    assert dict(a.active_epochs) == {("0", 0): 2, ("0", 1): 2}
    # now b gets them, at epoch 3
    out = s.beat(hb("b", 3, **owning(s.m("b"))))
    assert out.reply.tasks == TasksTuple(active=tasks(2, 3))
    assert dict(s.m("b").active_epochs) == {("0", 2): 3, ("0", 3): 3}
    assert s.g.state is StreamsGroupState.STABLE


def test_a_member_that_does_not_report_its_tasks_keeps_them_pending_revocation() -> None:
    s = Sim()
    s.beat(hb("a", 0))
    s.beat(hb("b", 0))
    out = s.beat(hb("a", 2))   # no owned tasks: nothing can be assumed revoked
    assert out.reply.error is ErrorCode.none and s.m("a").state is MemberState.UNREVOKED_TASKS
    out = s.beat(hb("a", 2))
    assert (out.reply.error, out.records, s.m("a").state) == (ErrorCode.none, (), MemberState.UNREVOKED_TASKS)
    out = s.beat(hb("a", 2, active=tasks(0, 1, 3), standby=NONE, warmup=NONE))   # 3 still owned
    assert (out.reply.error, out.records, s.m("a").state) == (ErrorCode.none, (), MemberState.UNREVOKED_TASKS)


def test_completing_a_revocation_resends_no_unchanged_tasks() -> None:
    s = Sim()
    s.beat(hb("a", 0, user_endpoint=("a-host", 1)))
    s.beat(hb("b", 0))
    s.beat(hb("a", 2, **owning(s.m("a"))))
    assert s.m("a").state is MemberState.UNREVOKED_TASKS
    endpoint_epoch = s.g.endpoint_information_epoch
    out = s.beat(hb("a", 2, active=tasks(0, 1), standby=NONE, warmup=NONE))
    assert out.reply.member_epoch == 3 and s.m("a").assigned == TasksTuple(active=tasks(0, 1))
    assert out.reply.tasks is None
    assert s.g.endpoint_information_epoch == endpoint_epoch


def test_convergence_never_gives_an_active_task_to_two_members() -> None:
    s = Sim(topics={"in": (IN, 12)})
    for mid in "abc":
        s.beat(hb(mid, 0))
    s.converge(list("abc"))
    assert sorted(len(s.m(mid).assigned.active) for mid in "abc") == [4, 4, 4]
    for mid in "de":
        s.beat(hb(mid, 0))
        s.converge(list("abcde"[: "abcde".index(mid) + 1]))
    assert sorted(len(s.m(mid).assigned.active) for mid in "abcde") == [2, 2, 2, 3, 3]
    assert set().union(*(s.m(mid).assigned.active for mid in "abcde")) == tasks(*range(12))


def test_standby_tasks_go_to_the_other_process() -> None:
    cfg = replace(CFG, num_standby_replicas=1)
    s = stable_pair(STATEFUL_TOPICS, cfg, STATEFUL)
    a, b = s.m("a"), s.m("b")
    assert len(a.assigned.active) == len(b.assigned.active) == 2
    assert a.assigned.standby == b.assigned.active and b.assigned.standby == a.assigned.active
    assert s.g.last_assignment_configs == (("num.standby.replicas", "1"),)
    # a stateless subtopology gets no standby
    s = stable_pair(TOPICS, cfg)
    assert s.m("a").assigned.standby == s.m("b").assigned.standby == frozenset()


def test_a_change_of_num_standby_replicas_bumps_the_group_epoch() -> None:
    s = stable_pair(STATEFUL_TOPICS, CFG, STATEFUL)
    epoch = s.g.group_epoch
    s.cfg = replace(CFG, num_standby_replicas=1)
    out = s.beat(hb("a", s.m("a").member_epoch, **owning(s.m("a"))))
    meta = parsed(out.records)[0].value
    assert meta == rec.GroupMetadataValue(epoch + 1, s.g.metadata_hash, 1, (("num.standby.replicas", "1"),))
    s.converge(["a", "b"])
    assert s.m("a").assigned.standby == s.m("b").assigned.active


def test_a_lost_answer_is_accepted_with_the_previous_epoch_and_owned_tasks_it_was_given() -> None:
    s = stable_pair()
    a = s.m("a")
    assert (a.member_epoch, a.previous_member_epoch) == (3, 2)
    out = s.beat(hb("a", 2, **owning(a)))
    assert (out.reply.error, out.reply.member_epoch) == (ErrorCode.none, 3)
    # a subset is fine too
    sub_ = TasksTuple(active=frozenset(list(a.assigned.active)[:1]))
    assert s.beat(hb("a", 2, **owning(a, sub_))).reply.error is ErrorCode.none
    # a task it was never given: fenced
    out = s.beat(hb("a", 2, **owning(a, TasksTuple(active=s.m("b").assigned.active))))
    assert (out.reply.error, out.reply.message) == (ErrorCode.fenced_member_epoch, FENCED_SMALLER.format(2, 3))
    # nothing of that changed the group
    assert s.m("a") == a


def test_an_epoch_ahead_or_far_behind_is_fenced() -> None:
    s = Sim()
    s.beat(hb("a", 0))
    s.beat(hb("b", 0))
    s.converge(["a", "b"])
    s.beat(hb("c", 0))
    s.converge(["a", "b", "c"])
    a = s.m("a")
    assert (a.member_epoch, a.previous_member_epoch) == (4, 3)
    out = s.beat(hb("a", 5, **owning(a)))
    assert (out.reply.error, out.reply.message) == (ErrorCode.fenced_member_epoch, FENCED_GREATER.format(5, 4))
    out = s.beat(hb("a", 2, **owning(a)))
    assert (out.reply.error, out.reply.message) == (ErrorCode.fenced_member_epoch, FENCED_SMALLER.format(2, 4))
    # rejoining with epoch 0 is always allowed
    assert s.beat(hb("a", 0)).reply.error is ErrorCode.none


def test_the_previous_epoch_without_owned_tasks_is_fenced() -> None:
    s = stable_pair()
    assert (s.m("a").member_epoch, s.m("a").previous_member_epoch) == (3, 2)
    out = s.beat(hb("a", 2))
    assert (out.reply.error, out.reply.message) == (ErrorCode.fenced_member_epoch, FENCED_SMALLER.format(2, 3))


def test_a_member_with_an_older_topology_epoch_is_told_its_topology_is_stale() -> None:
    newer = replace(STATELESS, epoch=2)
    older = Topology(1, (Subtopology("0", source_topics=("in",)), Subtopology("1", source_topics=("in",))))
    s = Sim()
    s.beat(hb("a", 0, topology=newer))
    out = s.beat(hb("b", 0, topology=older))
    stale = (topo.STALE_TOPOLOGY, "The member's topology epoch 1 is behind the group's topology epoch 2.")
    assert (out.reply.error, out.reply.status) == (ErrorCode.none, (stale,))
    assert s.g.topology == newer and s.m("b").topology_epoch == 1
    assert rec.TOPOLOGY not in [p.record_type for p in parsed(out.records)]
    out = s.beat(hb("b", s.m("b").member_epoch, **owning(s.m("b"))))
    assert out.reply.status == (stale,)
    assert s.beat(hb("a", s.m("a").member_epoch, **owning(s.m("a")))).reply.status == ()


@pytest.mark.parametrize("other", [
    Topology(1, (Subtopology("0", source_topics=("in", "more")),)),
    Topology(2, (Subtopology("0", source_topics=("in",)),)),
])
def test_a_different_topology_is_refused(other: Topology) -> None:
    s = Sim()
    s.beat(hb("a", 0))
    out = decide_heartbeat(s.g, hb("b", 0, topology=other), CFG, s.topics, s.now)
    assert (out.reply.error, out.reply.message) == (INVALID, "Topology updates are not supported yet.")
    assert (out.group, out.records) == (None, ())


def test_the_same_subtopologies_in_another_order_are_the_same_topology() -> None:
    one = Topology(1, (Subtopology("0", source_topics=("in",)), Subtopology("1", source_topics=("in",))))
    other = Topology(1, tuple(reversed(one.subtopologies)))
    s = Sim()
    s.beat(hb("a", 0, topology=one))
    assert s.beat(hb("b", 0, topology=other)).reply.error is ErrorCode.none


def test_leaving_writes_the_member_tombstones_and_bumps_the_epoch() -> None:
    s = stable_pair()
    epoch, hash_ = s.g.group_epoch, s.g.metadata_hash
    out = s.beat(hb("b", -1))
    assert (out.reply.error, out.reply.member_id, out.reply.member_epoch, out.reply.tasks) == (
        ErrorCode.none, "b", -1, None)
    assert shape(out.records) == [(rec.CURRENT_MEMBER_ASSIGNMENT, "b", True), (rec.TARGET_ASSIGNMENT_MEMBER, "b", True),
                                  (rec.MEMBER_METADATA, "b", True), (rec.GROUP_METADATA, None, False)]
    assert parsed(out.records)[3].value == rec.GroupMetadataValue(epoch + 1, hash_, 1, (("num.standby.replicas", "0"),))
    assert "b" not in s.g.members and "b" not in s.g.target_assignment
    assert (s.g.group_epoch, s.g.state) == (epoch + 1, StreamsGroupState.ASSIGNING)
    # the next heartbeat computes the new target: a gets everything
    s.converge(["a"])
    assert s.m("a").assigned.active == tasks(0, 1, 2, 3)
    # the last member leaves: the group is empty
    s.beat(hb("a", -1))
    assert (s.g.members, s.g.state) == ({}, StreamsGroupState.EMPTY)


def test_session_expiry_fences_the_silent_member() -> None:
    s = stable_pair()
    s.now += 40_000
    s.beat(hb("a", s.m("a").member_epoch, **owning(s.m("a"))))
    assert expired_members(s.g, s.now) == []
    s.now += 6_000   # b's last heartbeat was 46 s ago
    assert expired_members(s.g, s.now) == ["b"]
    epoch = s.g.group_epoch
    group, records = fence(s.g, ["b"])
    assert shape(records) == [(rec.CURRENT_MEMBER_ASSIGNMENT, "b", True), (rec.TARGET_ASSIGNMENT_MEMBER, "b", True),
                              (rec.MEMBER_METADATA, "b", True), (rec.GROUP_METADATA, None, False)]
    assert parsed(records)[3].value == rec.GroupMetadataValue(epoch + 1, s.g.metadata_hash, 1,
                                                              (("num.standby.replicas", "0"),))
    s.group = group
    s.converge(["a"])
    assert s.m("a").assigned.active == tasks(0, 1, 2, 3)


def test_fencing_two_expired_members_bumps_the_epoch_for_each() -> None:
    s = Sim()
    for mid in "abc":
        s.beat(hb(mid, 0))
    s.converge(list("abc"))
    epoch = s.g.group_epoch
    group, records = fence(s.g, ["b", "c"])
    assert group.group_epoch == epoch + 2
    assert [p.value.epoch for p in parsed(records) if isinstance(p.value, rec.GroupMetadataValue)] == [
        epoch + 1, epoch + 2]


def test_a_member_that_does_not_revoke_in_time_expires() -> None:
    s = Sim()
    s.beat(hb("a", 0, rebalance_timeout_ms=10_000))
    s.beat(hb("b", 0))
    s.beat(hb("a", 2, **owning(s.m("a"))))
    assert s.m("a").state is MemberState.UNREVOKED_TASKS
    assert s.m("a").rebalance_deadline_ms == s.now + 10_000
    s.now += 5_000
    out = s.beat(hb("a", 2, active=tasks(0, 1, 2, 3), standby=NONE, warmup=NONE))   # still not revoked
    assert out.reply.error is ErrorCode.none
    assert s.m("a").rebalance_deadline_ms == 11_000   # the deadline does not move
    assert expired_members(s.g, 10_999) == [] and expired_members(s.g, 11_000) == ["a"]
    group, _ = fence(s.g, ["a"])
    s.group = group
    s.converge(["b"])
    assert s.m("b").assigned.active == tasks(0, 1, 2, 3)


def test_shutdown_application_is_told_to_every_member_until_the_group_empties() -> None:
    s = stable_pair()
    detail = "Streams group member a encountered a fatal error and requested a shutdown for the entire application."
    out = s.beat(hb("a", s.m("a").member_epoch, shutdown_application=True, **owning(s.m("a"))))
    assert out.reply.status == ((topo.SHUTDOWN_APPLICATION, detail),)
    out = s.beat(hb("b", s.m("b").member_epoch, **owning(s.m("b"))))
    assert out.reply.status == ((topo.SHUTDOWN_APPLICATION, detail),)
    s.beat(hb("a", -1))
    assert s.beat(hb("b", s.m("b").member_epoch, **owning(s.m("b")))).reply.status == (
        (topo.SHUTDOWN_APPLICATION, detail),)
    s.beat(hb("b", -1))
    assert s.g.shutdown_request_member_id is None
    assert s.beat(hb("c", 0)).reply.status == ()


def test_a_leave_can_ask_for_the_shutdown() -> None:
    s = stable_pair()
    s.beat(hb("a", -1, shutdown_application=True))
    assert s.beat(hb("b", s.m("b").member_epoch, **owning(s.m("b")))).reply.status == ((
        topo.SHUTDOWN_APPLICATION,
        "Streams group member a encountered a fatal error and requested a shutdown for the entire application."),)


def test_unknown_groups_and_members() -> None:
    out = decide_heartbeat(None, hb("a", 1), CFG, TOPICS, 1_000)
    assert (out.reply.error, out.reply.message, out.group) == (
        ErrorCode.group_id_not_found, "Streams group g not found.", None)
    s = stable_pair()
    out = s.beat(hb("x", 1))
    assert (out.reply.error, out.reply.message, out.group) == (
        ErrorCode.unknown_member_id, "Member x is not a member of group g.", None)
    out = s.beat(hb("x", -1))
    assert (out.reply.error, out.reply.message, out.group) == (
        ErrorCode.unknown_member_id, "Member x is not a member of group g.", None)


def test_a_leave_of_an_unknown_group_is_group_id_not_found() -> None:
    out = decide_heartbeat(None, hb("a", -1), CFG, TOPICS, 1_000)
    assert (out.reply.error, out.group, out.records) == (ErrorCode.group_id_not_found, None, ())


def test_a_leave_of_an_unknown_group_has_kafkas_message() -> None:
    out = decide_heartbeat(None, hb("a", -1), CFG, TOPICS, 1_000)
    assert out.reply.message == "Group g not found."


def test_a_full_group_refuses_a_new_member() -> None:
    s = Sim(cfg=replace(CFG, max_size=1))
    s.beat(hb("a", 0))
    out = s.beat(hb("b", 0))
    assert (out.reply.error, out.reply.message) == (
        ErrorCode.group_max_size_reached, "The streams group has reached its maximum capacity of 1 members.")


@pytest.mark.parametrize(("owned", "message"), [
    (TasksTuple(active=tasks(0, sub="9")), "Subtopology 9 does not exist in the topology."),
    (TasksTuple(standby=tasks(0, sub="9")), "Subtopology 9 does not exist in the topology."),
    (TasksTuple(active=tasks(4)), "Task 4 for subtopology 0 is invalid. Number of tasks for this subtopology: 4"),
    (TasksTuple(standby=tasks(-1)), "Task -1 for subtopology 0 is invalid. Number of tasks for this subtopology: 4"),
])
def test_owned_tasks_outside_the_topology_are_invalid(owned: TasksTuple, message: str) -> None:
    s = Sim()
    s.beat(hb("a", 0))
    out = s.beat(hb("a", 2, **owning(s.m("a"), owned)))
    assert (out.reply.error, out.reply.message, out.group) == (INVALID, message, None)


def test_owned_tasks_are_not_checked_while_the_topology_is_not_ready() -> None:
    s = Sim(topics={})
    s.beat(hb("a", 0))
    out = s.beat(hb("a", 2, active=tasks(0, sub="9"), standby=NONE, warmup=NONE))
    assert (out.reply.error, out.reply.member_epoch) == (ErrorCode.none, 2)


def test_an_unknown_member_state_fences_the_member() -> None:
    s = Sim()
    s.beat(hb("a", 0))
    s.beat(hb("b", 0))
    s.group = replace(s.g, members={**s.g.members, "a": replace(s.m("a"), state=MemberState.UNKNOWN)})
    out = s.beat(hb("a", 2, **owning(s.m("a"))))
    assert (out.reply.error, out.reply.message) == (
        ErrorCode.fenced_member_epoch,
        "The streams group member is in a unknown state. The member must abandon all its tasks and rejoin.")


def test_a_task_the_member_still_holds_in_its_record_is_not_given_in_another_role() -> None:
    x = ("0", 0)
    topics = {"in": (IN, 2), CHANGELOG: (CHANGELOG_ID, 2)}
    cfg = replace(CFG, num_standby_replicas=1)
    a = StreamsGroupMember(member_id="a", process_id="p1", member_epoch=2, previous_member_epoch=1,
                           rebalance_timeout_ms=30_000, topology_epoch=1,
                           assigned=TasksTuple(active=frozenset({x})), active_epochs={x: 2})
    b = StreamsGroupMember(member_id="b", process_id="p2", member_epoch=3, previous_member_epoch=2,
                           rebalance_timeout_ms=30_000, topology_epoch=1, state=MemberState.UNRELEASED_TASKS)
    group = StreamsGroup(group_id="g", group_epoch=3, members={"a": a, "b": b}, target_assignment_epoch=3,
                         target_assignment={"a": TasksTuple(standby=frozenset({x})),
                                            "b": TasksTuple(active=frozenset({x}))},
                         assignment_timestamp_ms=1, metadata_hash=metadata_hash(STATEFUL, topics),
                         validated_topology_epoch=1, last_assignment_configs=assignment_configs(cfg),
                         topology=STATEFUL, configured=topo.configure(STATEFUL, {"in": 2, CHANGELOG: 2}))
    # a already dropped its active task and says so
    out = decide_heartbeat(group, hb("a", 2, active=NONE, standby=NONE, warmup=NONE), cfg, topics, 1_000)
    assert out.group is not None
    got = out.group.members["a"]
    assert (got.state, got.member_epoch, got.assigned) == (MemberState.UNRELEASED_TASKS, 3, EMPTY_TASKS)


# ------------------------------------------------------------------------------------ reconcile
X0, X1, X2, X3 = ("0", 0), ("0", 1), ("0", 2), ("0", 3)
S0 = ("1", 0)


def member(epoch: int = 2, previous: int = 1, state: MemberState = MemberState.STABLE,
           active: frozenset[TaskId] = NONE, standby: frozenset[TaskId] = NONE,
           pending: TasksTuple = EMPTY_TASKS, epochs: Mapping[TaskId, int] | None = None) -> StreamsGroupMember:
    return StreamsGroupMember(member_id="m", process_id="p1", member_epoch=epoch, previous_member_epoch=previous,
                              state=state, assigned=TasksTuple(active, standby), pending_revocation=pending,
                              active_epochs=dict(epochs) if epochs is not None else {t: epoch for t in active})


def tt(active: frozenset[TaskId] = NONE, standby: frozenset[TaskId] = NONE) -> TasksTuple:
    return TasksTuple(active, standby)


# (name, member, target epoch, target, other active owners' processes, other standby processes, owned,
#  expected state, epoch, previous epoch, assigned, pending revocation)
RECONCILE_CASES = [
    ("stable, newer target, only gains", member(active=frozenset({X0})), 3, tt(frozenset({X0, X1})), {}, {}, None,
     MemberState.STABLE, 3, 2, tt(frozenset({X0, X1})), EMPTY_TASKS),
    ("stable, must revoke, owned unknown", member(active=frozenset({X0, X1})), 3, tt(frozenset({X0})), {}, {}, None,
     MemberState.UNREVOKED_TASKS, 2, 2, tt(frozenset({X0})), tt(frozenset({X1}))),
    ("stable, must revoke, still owned", member(active=frozenset({X0, X1})), 3, tt(frozenset({X0})), {}, {},
     tt(frozenset({X0, X1})), MemberState.UNREVOKED_TASKS, 2, 2, tt(frozenset({X0})), tt(frozenset({X1}))),
    ("stable, revocation already done", member(active=frozenset({X0, X1})), 3, tt(frozenset({X0})), {}, {},
     tt(frozenset({X0})), MemberState.STABLE, 3, 2, tt(frozenset({X0})), EMPTY_TASKS),
    ("revocation comes before gains", member(active=frozenset({X0})), 3, tt(frozenset({X1})), {}, {}, None,
     MemberState.UNREVOKED_TASKS, 2, 2, EMPTY_TASKS, tt(frozenset({X0}))),
    ("active held by another member", member(active=frozenset({X0})), 3, tt(frozenset({X0, X1})), {X1: "p2"}, {},
     None, MemberState.UNRELEASED_TASKS, 3, 2, tt(frozenset({X0})), EMPTY_TASKS),
    ("active held as standby on this process", member(), 3, tt(frozenset({X1})), {}, {X1: {"p1"}}, None,
     MemberState.UNRELEASED_TASKS, 3, 2, EMPTY_TASKS, EMPTY_TASKS),
    ("active held as standby elsewhere is free", member(), 3, tt(frozenset({X1})), {}, {X1: {"p2"}}, None,
     MemberState.STABLE, 3, 2, tt(frozenset({X1})), EMPTY_TASKS),
    ("standby held active on this process", member(), 3, tt(standby=frozenset({X1})), {X1: "p1"}, {}, None,
     MemberState.UNRELEASED_TASKS, 3, 2, EMPTY_TASKS, EMPTY_TASKS),
    ("standby held active elsewhere is free", member(), 3, tt(standby=frozenset({X1})), {X1: "p2"}, {}, None,
     MemberState.STABLE, 3, 2, tt(standby=frozenset({X1})), EMPTY_TASKS),
    ("standby held as standby on this process", member(), 3, tt(standby=frozenset({X1})), {}, {X1: {"p2", "p1"}},
     None, MemberState.UNRELEASED_TASKS, 3, 2, EMPTY_TASKS, EMPTY_TASKS),
    ("standby revoked like active", member(standby=frozenset({S0})), 3, tt(), {}, {}, tt(standby=frozenset({S0})),
     MemberState.UNREVOKED_TASKS, 2, 2, EMPTY_TASKS, tt(standby=frozenset({S0}))),
    ("unrevoked, owned unknown", member(state=MemberState.UNREVOKED_TASKS, active=frozenset({X0}),
                                        pending=tt(frozenset({X1}))), 3, tt(frozenset({X0})), {}, {}, None,
     MemberState.UNREVOKED_TASKS, 2, 1, tt(frozenset({X0})), tt(frozenset({X1}))),
    ("unrevoked, still owned", member(state=MemberState.UNREVOKED_TASKS, active=frozenset({X0}),
                                      pending=tt(frozenset({X1}))), 3, tt(frozenset({X0})), {}, {},
     tt(frozenset({X0, X1})), MemberState.UNREVOKED_TASKS, 2, 1, tt(frozenset({X0})), tt(frozenset({X1}))),
    ("unrevoked, released", member(state=MemberState.UNREVOKED_TASKS, active=frozenset({X0}),
                                   pending=tt(frozenset({X1}))), 3, tt(frozenset({X0})), {}, {},
     tt(frozenset({X0})), MemberState.STABLE, 3, 2, tt(frozenset({X0})), EMPTY_TASKS),
    # the target moved on meanwhile: epoch + 1, and a new revocation at once
    ("unrevoked, released, target moved on", member(state=MemberState.UNREVOKED_TASKS, active=frozenset({X0, X2}),
                                                    pending=tt(frozenset({X1}))), 5, tt(frozenset({X0})), {}, {},
     tt(frozenset({X0, X2})), MemberState.UNREVOKED_TASKS, 3, 2, tt(frozenset({X0})), tt(frozenset({X2}))),
    ("unreleased, still held", member(epoch=3, previous=2, state=MemberState.UNRELEASED_TASKS, active=frozenset({X0})),
     3, tt(frozenset({X0, X1})), {X1: "p2"}, {}, None,
     MemberState.UNRELEASED_TASKS, 3, 3, tt(frozenset({X0})), EMPTY_TASKS),
    ("unreleased, now free", member(epoch=3, previous=2, state=MemberState.UNRELEASED_TASKS, active=frozenset({X0})),
     3, tt(frozenset({X0, X1})), {}, {}, None, MemberState.STABLE, 3, 3, tt(frozenset({X0, X1})), EMPTY_TASKS),
    ("unknown, owned empty", member(state=MemberState.UNKNOWN, active=frozenset({X0})), 4, tt(frozenset({X0, X1})),
     {}, {}, EMPTY_TASKS, MemberState.STABLE, 4, 2, tt(frozenset({X0, X1})), EMPTY_TASKS),
]


@pytest.mark.parametrize(("name", "m", "target_epoch", "target", "active_owners", "standby_owners", "owned", "state",
                          "epoch", "previous", "assigned", "pending"), RECONCILE_CASES,
                         ids=[c[0] for c in RECONCILE_CASES])
def test_reconcile_state_machine(name: str, m: StreamsGroupMember, target_epoch: int, target: TasksTuple,
                                 active_owners: dict[TaskId, str], standby_owners: dict[TaskId, set[str]],
                                 owned: TasksTuple | None, state: MemberState, epoch: int, previous: int,
                                 assigned: TasksTuple, pending: TasksTuple) -> None:
    got = reconcile(m, target_epoch, target, active_owners, standby_owners, owned)
    assert (got.state, got.member_epoch, got.previous_member_epoch, got.assigned, got.pending_revocation) == (
        state, epoch, previous, assigned, pending)
    # the metadata is untouched
    assert got.metadata_key() == m.metadata_key()


def test_reconcile_returns_a_reconciled_member_unchanged() -> None:
    m = member(epoch=3, previous=2, active=frozenset({X0}))
    assert reconcile(m, 3, tt(frozenset({X1})), {}, {}, None) is m


@pytest.mark.parametrize("owned", [None, tt(frozenset({X0}))])
def test_reconcile_of_an_unknown_state_needs_an_empty_owned_assignment(owned: TasksTuple | None) -> None:
    with pytest.raises(UnknownMemberState, match=r"^The streams group member is in a unknown state\. The member "
                                                 r"must abandon all its tasks and rejoin\.$"):
        reconcile(member(state=MemberState.UNKNOWN, active=frozenset({X0})), 4, tt(frozenset({X0})), {}, {}, owned)


def test_reconcile_keeps_the_epoch_at_which_each_active_task_was_given() -> None:
    m = member(epoch=4, previous=3, active=frozenset({X0, X1, X2}), epochs={X0: 2, X1: 3, X2: 4})
    # X2 goes, X3 comes: while revoking, kept and pending tasks keep their epochs
    step = reconcile(m, 6, tt(frozenset({X0, X1, X3})), {}, {}, None)
    assert step.state is MemberState.UNREVOKED_TASKS
    assert dict(step.active_epochs) == {X0: 2, X1: 3, X2: 4}
    done = reconcile(step, 6, tt(frozenset({X0, X1, X3})), {}, {}, tt(frozenset({X0, X1})))
    # previous: the epoch the member had (4), not the intermediate epoch + 1 (Kafka's updateMemberEpoch)
    assert (done.state, done.member_epoch, done.previous_member_epoch) == (MemberState.STABLE, 6, 4)
    assert dict(done.active_epochs) == {X0: 2, X1: 3, X3: 6}
    # a task that was unreleased gets the target epoch when it is finally given
    waiting = reconcile(member(epoch=1, previous=0), 2, tt(frozenset({X0})), {X0: "p2"}, {}, None)
    assert (waiting.state, dict(waiting.active_epochs)) == (MemberState.UNRELEASED_TASKS, {})
    later = reconcile(waiting, 4, tt(frozenset({X0})), {}, {}, None)
    assert (later.member_epoch, dict(later.active_epochs)) == (4, {X0: 4})
    # standby tasks carry no epoch
    sb = reconcile(member(epoch=1, previous=0), 2, tt(standby=frozenset({X0})), {}, {}, None)
    assert (sb.assigned.standby, dict(sb.active_epochs)) == (frozenset({X0}), {})
