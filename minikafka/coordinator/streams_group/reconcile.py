"""One step of a streams member toward its target assignment (Kafka: streams
CurrentAssignmentBuilder), as a table of member states:

  STABLE            at the target epoch: nothing to do; behind it: compute the next step
  UNREVOKED_TASKS   wait until the member's owned tasks no longer hold any task pending
                    revocation, then move to epoch + 1 and compute the next step
  UNRELEASED_TASKS  compute the next step (tasks released since may now be given)
  UNKNOWN           fenced (a state from a newer coordinator): the member rejoins

The next step keeps current ∩ target, asks to revoke current - target, and gives target - current
minus the *unreleased* tasks: an active task still owned by another member, or one this member's
process still holds as a standby or warm-up; a standby or warm-up task this process holds in any
role already. Revocation comes first: while anything must be revoked the member stays at its
epoch (UNREVOKED_TASKS); otherwise it moves to the target epoch, STABLE or UNRELEASED_TASKS.
An active task carries the epoch at which the member got it (for offset commit fencing).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace

from minikafka.coordinator.streams_group.state import (
    EMPTY_TASKS,
    MemberState,
    StreamsGroupMember,
    TaskId,
    Tasks,
    TasksTuple,
)


class UnknownMemberState(Exception):
    pass


def _step(current: Tasks, target: Tasks, unreleased: Callable[[TaskId], bool]) -> tuple[Tasks, Tasks, Tasks, bool]:
    kept = current & target
    revoke = current - kept
    wanted = target - kept
    blocked = frozenset(t for t in wanted if unreleased(t))
    return kept, revoke, wanted - blocked, bool(blocked)


def reconcile(member: StreamsGroupMember, target_epoch: int, target: TasksTuple,
              active_owner_process: Mapping[TaskId, str], standby_processes: Mapping[TaskId, set[str]],
              owned: TasksTuple | None) -> StreamsGroupMember:
    """`active_owner_process`: task -> the process of the member that owns it actively (assigned or
    pending revocation); `standby_processes`: task -> processes holding it as standby or warm-up;
    every member's recorded tasks, this member's included (Kafka's task -> process maps). `owned`:
    what the heartbeat reported (None: unchanged)."""
    state = member.state
    if state is MemberState.STABLE:
        if member.member_epoch == target_epoch:
            return member
        return _next(member, member.member_epoch, target_epoch, target, active_owner_process, standby_processes, owned)
    if state is MemberState.UNREVOKED_TASKS:
        if owned is None or _overlaps(owned, member.pending_revocation):
            return member
        return _next(member, member.member_epoch + 1, target_epoch, target, active_owner_process, standby_processes,
                     owned)
    if state is MemberState.UNRELEASED_TASKS:
        return _next(member, member.member_epoch, target_epoch, target, active_owner_process, standby_processes, owned)
    if owned is None or not owned.is_empty():
        raise UnknownMemberState("The streams group member is in a unknown state. The member must abandon all its "
                                 "tasks and rejoin.")
    return _next(member, target_epoch, target_epoch, target, active_owner_process, standby_processes, owned)


def _overlaps(a: TasksTuple, b: TasksTuple) -> bool:
    return bool(a.active & b.active or a.standby & b.standby or a.warmup & b.warmup)


def _next(member: StreamsGroupMember, epoch: int, target_epoch: int, target: TasksTuple,
          active_owner_process: Mapping[TaskId, str], standby_processes: Mapping[TaskId, set[str]],
          owned: TasksTuple | None) -> StreamsGroupMember:
    process = member.process_id

    def held_here(t: TaskId) -> bool:
        return active_owner_process.get(t) == process or process in standby_processes.get(t, ())

    a_kept, a_revoke, a_give, a_blocked = _step(
        member.assigned.active, target.active,
        lambda t: t in active_owner_process or process in standby_processes.get(t, ()))
    s_kept, s_revoke, s_give, s_blocked = _step(member.assigned.standby, target.standby, held_here)
    w_kept, w_revoke, w_give, w_blocked = _step(member.assigned.warmup, target.warmup, held_here)
    revoke = TasksTuple(a_revoke, s_revoke, w_revoke)
    kept = TasksTuple(a_kept, s_kept, w_kept)
    give = TasksTuple(a_give, s_give, w_give)
    unreleased = a_blocked or s_blocked or w_blocked
    epochs = member.active_epochs
    if not revoke.is_empty() and (owned is None or _overlaps(owned, revoke)):
        return replace(member, state=MemberState.UNREVOKED_TASKS, **_epoch(member, epoch), assigned=kept,
                       pending_revocation=revoke, active_epochs={t: epochs.get(t, member.member_epoch)
                                                                 for t in a_kept | a_revoke})
    new_epochs = {t: epochs.get(t, member.member_epoch) for t in a_kept}
    new_epochs.update({t: target_epoch for t in a_give})
    state = MemberState.UNRELEASED_TASKS if unreleased else MemberState.STABLE
    return replace(member, state=state, **_epoch(member, target_epoch), assigned=kept.union(give),
                   pending_revocation=EMPTY_TASKS, active_epochs=new_epochs)


def _epoch(member: StreamsGroupMember, epoch: int) -> dict[str, int]:
    """Kafka's updateMemberEpoch: the previous epoch is the one the member had before the step."""
    return {"member_epoch": epoch, "previous_member_epoch": member.member_epoch}
