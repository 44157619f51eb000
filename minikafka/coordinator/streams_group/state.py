"""KIP-1071 streams groups: the group, its topology and its members, as frozen values.

Theory of operation (Kafka: `StreamsGroup.java`, `StreamsGroupMember.java`, KIP-1071)

The streams protocol moves Kafka Streams' task assignment to the coordinator, on the same plan as
KIP-848 consumer groups (see ../consumer_group/state.py), with *tasks* where those have partitions:

- a member joins with the application's *topology*: subtopologies, each reading source topics and
  perhaps repartition topics (created by the broker) and keeping changelog topics (created by the
  broker). The first member's topology becomes the group's (StreamsGroupTopology record);
- a *task* is (subtopology id, partition): one per partition of the subtopology's source topics
  (copartitioned, so they all have the same count). The coordinator assigns *active* tasks, and
  *standby* tasks when `streams.num.standby.replicas` > 0, to members, never a standby to the
  process that runs the same task actively;
- epochs as in KIP-848: the group epoch grows with every change the assignment depends on; the
  target assignment is computed for a group epoch; each member converges to it one heartbeat at a
  time, giving up tasks first and getting tasks another member still owns only once released.

The group's state follows from the values (StreamsGroup.maybeUpdateGroupState): EMPTY without
members; NOT_READY until the topology's topics were found present and valid; ASSIGNING while the
group epoch is ahead of the target; RECONCILING while a member has not converged; STABLE otherwise.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Final

# A task: (subtopology id, partition).
TaskId = tuple[str, int]
Tasks = frozenset[TaskId]
NO_TASKS: Final[Tasks] = frozenset()

JOIN_GROUP_MEMBER_EPOCH: Final = 0
LEAVE_GROUP_MEMBER_EPOCH: Final = -1
LEAVE_GROUP_STATIC_MEMBER_EPOCH: Final = -2


class StreamsGroupState(enum.Enum):
    """The wire names (ListGroups, StreamsGroupDescribe)."""

    EMPTY = "Empty"
    NOT_READY = "NotReady"
    ASSIGNING = "Assigning"
    RECONCILING = "Reconciling"
    STABLE = "Stable"
    DEAD = "Dead"


class MemberState(enum.IntEnum):
    """StreamsGroupCurrentMemberAssignmentValue.State (Kafka's streams MemberState: from 1)."""

    STABLE = 1
    UNREVOKED_TASKS = 2
    UNRELEASED_TASKS = 3
    UNKNOWN = 127


def by_subtopology(tasks: Iterable[TaskId]) -> dict[str, list[int]]:
    """{subtopology id: sorted partitions}, subtopologies sorted (the wire and record shape)."""
    out: dict[str, list[int]] = {}
    for sub, p in sorted(tasks):
        out.setdefault(sub, []).append(p)
    return out


def from_subtopologies(entries: Iterable[tuple[str, Iterable[int]]]) -> Tasks:
    return frozenset((sub, int(p)) for sub, parts in entries for p in parts)


@dataclass(frozen=True, slots=True)
class TasksTuple:
    """Active, standby and warm-up tasks of one member (Kafka's TasksTuple)."""

    active: Tasks = NO_TASKS
    standby: Tasks = NO_TASKS
    warmup: Tasks = NO_TASKS

    def is_empty(self) -> bool:
        return not (self.active or self.standby or self.warmup)

    def union(self, other: TasksTuple) -> TasksTuple:
        return TasksTuple(self.active | other.active, self.standby | other.standby, self.warmup | other.warmup)



EMPTY_TASKS: Final = TasksTuple()


# ------------------------------------------------------------------------------------ topology
@dataclass(frozen=True, slots=True)
class TopicInfo:
    """An internal topic the topology needs: a changelog (partitions always 0: as many as the
    subtopology has tasks) or a repartition topic (partitions 0: decided by the coordinator)."""

    name: str
    partitions: int = 0
    replication_factor: int = 0
    configs: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True, slots=True)
class CopartitionGroup:
    """Indexes into the subtopology's source_topics / source_topic_regex / repartition_source_topics."""

    source_topics: tuple[int, ...] = ()
    source_topic_regex: tuple[int, ...] = ()
    repartition_source_topics: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class Subtopology:
    subtopology_id: str
    source_topics: tuple[str, ...] = ()
    source_topic_regex: tuple[str, ...] = ()
    state_changelog_topics: tuple[TopicInfo, ...] = ()
    repartition_sink_topics: tuple[str, ...] = ()
    repartition_source_topics: tuple[TopicInfo, ...] = ()
    copartition_groups: tuple[CopartitionGroup, ...] = ()


@dataclass(frozen=True, slots=True)
class Topology:
    """What the first member's heartbeat declared (StreamsGroupTopologyValue)."""

    epoch: int
    subtopologies: tuple[Subtopology, ...] = ()


@dataclass(frozen=True, slots=True)
class ConfiguredTopology:
    """The topology against the cluster's topics (Kafka: ConfiguredTopology), computed whenever the
    group epoch is bumped: the partition count of each subtopology (its number of tasks), the
    internal topics still to create, or why the topology cannot run (then `error` holds Kafka's
    status detail and the group is NOT_READY)."""

    topology_epoch: int
    task_counts: Mapping[str, int] = field(default_factory=dict)
    internal_topics_to_create: tuple[TopicInfo, ...] = ()
    internal_partitions: Mapping[str, int] = field(default_factory=dict)   # decided counts of internal topics
    # (StreamsGroupHeartbeatResponse.Status code, detail) when the topology cannot be assigned.
    error: tuple[int, str] | None = None

    @property
    def is_ready(self) -> bool:
        return self.error is None and not self.internal_topics_to_create


# ------------------------------------------------------------------------------------- members
METADATA_FIELDS: Final = ("instance_id", "rack_id", "client_id", "client_host", "rebalance_timeout_ms",
                          "topology_epoch", "process_id", "user_endpoint", "client_tags")


@dataclass(frozen=True, slots=True, kw_only=True)
class StreamsGroupMember:
    """A member (Kafka: StreamsGroupMember): first what it told the coordinator (the
    StreamsGroupMemberMetadata record), then its reconciliation (StreamsGroupCurrentMemberAssignment),
    then timers (memory only)."""

    member_id: str
    instance_id: str | None = None
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    rebalance_timeout_ms: int = -1
    topology_epoch: int = -1
    process_id: str = ""
    user_endpoint: tuple[str, int] | None = None
    client_tags: tuple[tuple[str, str], ...] = ()

    member_epoch: int = 0
    previous_member_epoch: int = 0
    state: MemberState = MemberState.STABLE
    assigned: TasksTuple = EMPTY_TASKS
    pending_revocation: TasksTuple = EMPTY_TASKS
    # The epoch at which each owned active task was given to the member (AssignmentEpochs): an
    # offset commit from an older member epoch is still accepted for a task it owned then.
    active_epochs: Mapping[TaskId, int] = field(default_factory=dict)

    session_deadline_ms: int | None = None
    rebalance_deadline_ms: int | None = None

    def deadlines(self) -> tuple[int, ...]:
        return tuple(t for t in (self.session_deadline_ms, self.rebalance_deadline_ms) if t is not None)

    def owned(self) -> TasksTuple:
        return self.assigned.union(self.pending_revocation)

    def metadata_key(self) -> tuple[object, ...]:
        return tuple(getattr(self, name) for name in METADATA_FIELDS)

    def assignment_key(self) -> tuple[object, ...]:
        return (self.member_epoch, self.previous_member_epoch, self.state, self.assigned,
                self.pending_revocation, tuple(sorted(self.active_epochs.items())))


@dataclass(frozen=True, slots=True, kw_only=True)
class StreamsGroup:
    """One streams group. Never mutated: every change builds a new value."""

    group_id: str
    # Kafka 4.3 starts a group at epoch 1 with an (empty) target assignment of epoch 1, as consumer
    # groups (KAFKA-20268): a first member is at epoch 1 even while the initial rebalance delay
    # holds the first real assignment back, so its next heartbeat is not a join.
    group_epoch: int = 1
    members: Mapping[str, StreamsGroupMember] = field(default_factory=dict)
    target_assignment_epoch: int = 1
    target_assignment: Mapping[str, TasksTuple] = field(default_factory=dict)
    assignment_timestamp_ms: int = 0
    metadata_hash: int = 0
    # The topology epoch whose topics were last found present and valid (-1: none yet).
    validated_topology_epoch: int = -1
    # Assignor parameters used for the last target assignment (e.g. num.standby.replicas).
    last_assignment_configs: tuple[tuple[str, str], ...] | None = None
    topology: Topology | None = None
    configured: ConfiguredTopology | None = None    # memory only, recomputed on every bump
    # Bumped whenever a member's endpoint or its active tasks change, so that clients learn the
    # partitions of every endpoint for Interactive Queries (memory only, as in Kafka).
    endpoint_information_epoch: int = 0
    # A new group waits `streams.initial.rebalance.delay.ms` for more members before its first
    # target assignment (memory only, Kafka's timer).
    initial_delay_until_ms: int | None = None
    # The member that asked the whole application to shut down (memory only, cleared when empty).
    shutdown_request_member_id: str | None = None

    @property
    def state(self) -> StreamsGroupState:
        if not self.members:
            return StreamsGroupState.EMPTY
        if self.topology is None or self.topology.epoch != self.validated_topology_epoch:
            return StreamsGroupState.NOT_READY
        if self.group_epoch > self.target_assignment_epoch:
            return StreamsGroupState.ASSIGNING
        for m in self.members.values():
            if m.state is not MemberState.STABLE or m.member_epoch != self.target_assignment_epoch:
                return StreamsGroupState.RECONCILING
        return StreamsGroupState.STABLE

    def target_of(self, member_id: str) -> TasksTuple:
        return self.target_assignment.get(member_id, EMPTY_TASKS)

    def task_processes(self) -> tuple[dict[TaskId, str], dict[TaskId, set[str]]]:
        """Kafka's task -> process maps, from every member's recorded tasks (assigned or pending
        revocation): the process running each active task, and the processes holding each as a
        standby or warm-up."""
        active: dict[TaskId, str] = {}
        others: dict[TaskId, set[str]] = {}
        for m in self.members.values():
            owned = m.owned()
            for t in owned.active:
                active[t] = m.process_id
            for t in owned.standby | owned.warmup:
                others.setdefault(t, set()).add(m.process_id)
        return active, others
