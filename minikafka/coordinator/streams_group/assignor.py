"""The server-side task assignor of streams groups: `sticky` (Kafka 4.3.1's StickyTaskAssignor, the
only one Kafka ships for `group.protocol=streams`).

A pure function from the members (process, previous target assignment) and the topology's task
counts to the next target assignment. Kafka's coordinator calls it with the previous *target*
assignment of every member (a static member that rejoins under a new member id inherits the
target of the id it replaces) and with one config, `num.standby.replicas` (the group's
`streams.num.standby.replicas`, else the broker's `group.streams.num.standby.replicas`, default 0).
Rack ids, client tags, instance ids and task offsets reach the assignor but the sticky assignor
ignores them. It never produces warm-up tasks: every member's `warmup` is empty.

Load is counted per *process* (one Kafka Streams instance, possibly several members, one per
stream thread): a process's load is its task count (active and standby) over its member count, and
a task given to a process goes to its member with the fewest tasks.

Active tasks, in three passes:
1. in (partition, subtopology) order, a task stays with the member that had it active, while that
   member is under the active quota (ceil(tasks / members), recomputed each time a member reaches
   it: the quota only ever shrinks, which keeps early sticky members from hoarding);
2. in the same order, a task not yet placed goes to a member that had it as standby (the first
   listed, unless a later one has both a strictly lighter process and strictly fewer tasks), under
   the same quota;
3. the rest, in (subtopology, partition) order, each to the least loaded process.
   With no member at all and tasks to place this fails (TaskAssignorError; Kafka's coordinator
   turns it into UNKNOWN_SERVER_ERROR).

Standby tasks (when num_standby_replicas > 0, only for *stateful* subtopologies: those with
changelog topics), never on a process that already holds a copy of the task (active or standby):
1. in descending (partition, subtopology) order, each replica goes first to the task's previous
   active owner, then to one of its previous standby owners, while under the total quota
   (ceil((active + standby tasks) / members), recomputed like the active one); at the first
   replica that cannot stay sticky, that replica and the remaining ones of the task are deferred;
2. the deferred replicas, in descending (subtopology, partition) order, each to the least loaded
   process without a copy. When every process already has one the replica is dropped (Kafka logs a
   warning), so a task gets min(num_standby_replicas, processes - 1) standbys.

Determinism. Kafka walks Java HashMaps where we walk sorted keys, so on ties the chosen member can
differ from Kafka's (balance and stickiness do not):
- members are read in member-id order: when two members claim the same previous active task, the
  smallest member id keeps the claim (Kafka: whichever its HashMap iterates last); the previous
  standby owners of a task are listed in member-id order (Kafka: HashMap order), which decides
  the "first listed" above;
- among processes of equal load the smallest process id wins (Kafka: PriorityQueue order, which
  is arbitrary on ties); among a process's members of equal task count the smallest member id
  wins (same);
- loads are compared as exact fractions (Kafka: doubles, which give the same order for the
  small ratios involved).
One Kafka quirk is kept on purpose: when choosing among a task's previous standby owners for a
standby, nobody is chosen if the first listed owner's process already holds the task, even if a
later owner would qualify (the replica then goes to the least loaded process).
"""

from __future__ import annotations

import heapq
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from fractions import Fraction

from minikafka.coordinator.streams_group.state import TaskId, TasksTuple


class TaskAssignorError(Exception):
    """The assignment cannot be computed (Kafka: TaskAssignorException)."""


@dataclass(frozen=True, slots=True)
class AssignorMember:
    process_id: str
    instance_id: str | None
    rack_id: str | None
    client_tags: tuple[tuple[str, str], ...]
    current: TasksTuple  # the member's tasks in the previous target assignment (what it sticks to)


def _ceil_div(n: int, d: int) -> int:
    return -(-n // d) if d > 0 else 0


class _Quota:
    """A per-member share of the tasks that shrinks as members fill up: whenever a member reaches
    the share exactly, it leaves the pool with its tasks and the share is recomputed."""

    __slots__ = ("remaining_tasks", "remaining_members", "share")

    def __init__(self, tasks: int, members: int) -> None:
        self.remaining_tasks = tasks
        self.remaining_members = members
        self.share = _ceil_div(tasks, members)

    def note(self, count: int) -> None:
        if count == self.share:
            self.remaining_members -= 1
            self.remaining_tasks -= count
            self.share = _ceil_div(self.remaining_tasks, self.remaining_members)


class _Process:
    __slots__ = ("process_id", "counts", "held", "total")

    def __init__(self, process_id: str) -> None:
        self.process_id = process_id
        self.counts: dict[str, int] = {}  # member id -> tasks (active and standby)
        self.held: set[TaskId] = set()  # tasks with a copy (active or standby) on this process
        self.total = 0

    def load(self) -> Fraction:
        return Fraction(self.total, len(self.counts))

    def key(self) -> tuple[Fraction, str]:
        return self.load(), self.process_id

    def lightest_member(self) -> str:
        return min(self.counts, key=lambda m: (self.counts[m], m))


class _State:
    def __init__(self, members: Mapping[str, AssignorMember], total_active: int, total_tasks: int) -> None:
        self.processes: dict[str, _Process] = {}
        self.process_of: dict[str, _Process] = {}
        self.prev_active: dict[TaskId, str] = {}
        self.prev_standby: dict[TaskId, list[str]] = {}
        self.active: dict[str, set[TaskId]] = {m: set() for m in members}
        self.standby: dict[str, set[TaskId]] = {m: set() for m in members}
        self.active_quota = _Quota(total_active, len(members))
        self.total_quota = _Quota(total_tasks, len(members))
        for member_id in sorted(members):
            spec = members[member_id]
            proc = self.processes.get(spec.process_id)
            if proc is None:
                proc = self.processes[spec.process_id] = _Process(spec.process_id)
            proc.counts[member_id] = 0
            self.process_of[member_id] = proc
            for task in spec.current.active:
                self.prev_active.setdefault(task, member_id)
            for task in spec.current.standby:
                self.prev_standby.setdefault(task, []).append(member_id)

    def count(self, member_id: str) -> int:
        return self.process_of[member_id].counts[member_id]

    def give(self, member_id: str, task: TaskId, active: bool) -> None:
        proc = self.process_of[member_id]
        proc.counts[member_id] += 1
        proc.total += 1
        proc.held.add(task)
        (self.active if active else self.standby)[member_id].add(task)
        count = proc.counts[member_id]
        if active:
            self.active_quota.note(count)
        self.total_quota.note(count)

    def sticky_standby_owner(self, task: TaskId, holder_check: bool) -> str | None:
        """The previous standby owner to keep `task`: the first listed, replaced by a later one only
        when both its process load and its own task count are strictly lower (and, for a standby
        replica, its process has no copy yet). Kafka parity: for a standby replica the answer is
        None whenever the first listed owner's process already holds a copy."""
        owners = self.prev_standby.get(task)
        if not owners:
            return None
        first_proc = self.process_of[owners[0]]
        best, best_load, best_count = owners[0], first_proc.load(), first_proc.counts[owners[0]]
        for member_id in owners[1:]:
            proc = self.process_of[member_id]
            load = proc.load()
            if load < best_load and not (holder_check and task in proc.held) and proc.counts[member_id] < best_count:
                best, best_load, best_count = member_id, load, proc.counts[member_id]
        if holder_check and task in first_proc.held:
            return None
        return best


def assign(members: Mapping[str, AssignorMember], task_counts: Mapping[str, int], num_standby_replicas: int = 0,
           *, stateful: Collection[str] | None = None) -> dict[str, TasksTuple]:
    """task_counts: subtopology id -> number of tasks (partitions 0..n-1). Returns every member's new
    target (all members present, possibly empty).

    `stateful`: the subtopologies with changelog topics, the only ones given standbys (Kafka:
    TopologyDescriber.isStateful); None counts every subtopology as stateful."""
    if num_standby_replicas < 0:
        raise ValueError(f"num.standby.replicas must be >= 0, got {num_standby_replicas}")
    subtopologies = sorted(task_counts)
    with_standbys = set(subtopologies) if stateful is None else set(stateful)
    tasks = [(sub, p) for sub in subtopologies for p in range(task_counts[sub])]
    standby_tasks = [t for t in tasks if t[0] in with_standbys] if num_standby_replicas > 0 else []
    state = _State(members, len(tasks), len(tasks) + len(standby_tasks) * num_standby_replicas)

    _assign_active(state, tasks)
    if num_standby_replicas > 0:
        _assign_standby(state, standby_tasks, num_standby_replicas)
    return {m: TasksTuple(frozenset(state.active[m]), frozenset(state.standby[m])) for m in members}


def _assign_active(state: _State, tasks: list[TaskId]) -> None:
    # Sticky passes by partition first (a range-like previous assignment keeps its shape).
    unplaced = sorted(tasks, key=lambda t: (t[1], t[0]))
    rest: list[TaskId] = []
    for task in unplaced:
        owner = state.prev_active.get(task)
        if owner is not None and state.count(owner) < state.active_quota.share:
            state.give(owner, task, active=True)
        else:
            rest.append(task)
    unplaced, rest = rest, []
    for task in unplaced:
        owner = state.sticky_standby_owner(task, holder_check=False)
        if owner is not None and state.count(owner) < state.active_quota.share:
            state.give(owner, task, active=True)
        else:
            rest.append(task)
    # The rest by subtopology first (a fresh assignment comes out range-like).
    rest.sort()
    if rest and not state.processes:
        sub, p = rest[0]
        raise TaskAssignorError(f"No process available to assign active task {sub}_{p}.")
    heap = [proc.key() for proc in state.processes.values()]
    heapq.heapify(heap)
    for task in rest:
        _, process_id = heapq.heappop(heap)
        proc = state.processes[process_id]
        state.give(proc.lightest_member(), task, active=True)
        heapq.heappush(heap, proc.key())


def _assign_standby(state: _State, tasks: list[TaskId], replicas: int) -> None:
    deferred: list[tuple[TaskId, int]] = []
    for task in sorted(tasks, key=lambda t: (t[1], t[0]), reverse=True):
        for i in range(replicas):
            owner = state.prev_active.get(task)
            if (owner is not None and task not in state.process_of[owner].held
                    and state.count(owner) < state.total_quota.share):
                state.give(owner, task, active=False)
                continue
            owner = state.sticky_standby_owner(task, holder_check=True)
            if owner is not None and state.count(owner) < state.total_quota.share:
                state.give(owner, task, active=False)
                continue
            deferred.append((task, replicas - i))
            break
    deferred.sort(reverse=True)
    heap = [proc.key() for proc in state.processes.values()]
    heapq.heapify(heap)
    for task, missing in deferred:
        for _ in range(missing):
            if not _give_to_lightest_without(state, heap, task):
                break  # every process has a copy: the replica is dropped


def _give_to_lightest_without(state: _State, heap: list[tuple[Fraction, str]], task: TaskId) -> bool:
    """A standby of `task` to the least loaded process holding no copy of it; False if none."""
    skipped: list[tuple[Fraction, str]] = []
    placed = False
    while heap:
        entry = heapq.heappop(heap)
        proc = state.processes[entry[1]]
        if task in proc.held:
            skipped.append(entry)
            continue
        state.give(proc.lightest_member(), task, active=False)
        skipped.append(proc.key())
        placed = True
        break
    for entry in skipped:
        heapq.heappush(heap, entry)
    return placed
