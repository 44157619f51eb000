"""Moving one member toward its target assignment, one heartbeat at a time.

Kafka: `CurrentAssignmentBuilder.java`. What a heartbeat does, by member state:

  STABLE                 behind the target epoch: the next step. At it, with a changed
                         subscription: drop the partitions of topics it no longer subscribes to.
  UNREVOKED_PARTITIONS   the member still owns partitions the target took away. While its
                         heartbeat does not show them released, nothing moves (except a changed
                         subscription, as above); once it does, the next step.
  UNRELEASED_PARTITIONS  the next step (a newer target, or partitions released meanwhile).
  UNKNOWN                only a member that owns nothing may go on; the next step.

The next step, from the partitions the member has:
  keep     = assigned & target          (a topic it no longer subscribes to has an empty target)
  revoke   = assigned - target
  assign   = target - assigned, of which only those no other member owns
  something to revoke that the member may still hold -> UNREVOKED_PARTITIONS at its old epoch,
      assigned = keep, pending_revocation = revoke
  otherwise -> the target epoch, assigned = keep + the free partitions (given at the target
      epoch), UNRELEASED_PARTITIONS while some target partition is not free yet, else STABLE.

The epoch moves only once nothing is left to revoke, and a partition is handed over only after its
previous owner said it let go: no partition ever has two owners.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from dataclasses import replace

from minikafka.coordinator.consumer_group.state import (
    EMPTY_ASSIGNMENT,
    Assignment,
    ConsumerGroupMember,
    MemberState,
    TopicIdPartition,
)

# Is the partition owned (assigned or pending revocation) by a member other than this one?
OwnedByOther = Callable[[TopicIdPartition], bool]


class UnknownMemberState(Exception):
    """A member in state UNKNOWN that still claims partitions: Kafka fences it."""


def reconcile(member: ConsumerGroupMember, target_epoch: int, target: Assignment, owned_by_other: OwnedByOther,
              reported_owned: Assignment | None, subscribed_topic_ids: frozenset[uuid.UUID],
              subscription_changed: bool = False) -> ConsumerGroupMember:
    """The member after this heartbeat. `reported_owned` is the request's TopicPartitions (None
    when the member did not send them); `subscribed_topic_ids` the ids of the existing topics it
    subscribes to."""
    state = member.state
    if state is MemberState.STABLE:
        if member.member_epoch != target_epoch:
            return _next_step(member, member.member_epoch, target_epoch, target, owned_by_other, reported_owned,
                              subscribed_topic_ids)
        if subscription_changed:
            return _drop_unsubscribed(member, reported_owned, subscribed_topic_ids)
        return member
    if state is MemberState.UNREVOKED_PARTITIONS:
        if _may_own(reported_owned, member.pending_revocation):
            if subscription_changed:
                return _drop_unsubscribed(member, reported_owned, subscribed_topic_ids)
            return member
        return _next_step(member, member.member_epoch, target_epoch, target, owned_by_other, reported_owned,
                          subscribed_topic_ids)
    if state is MemberState.UNRELEASED_PARTITIONS:
        return _next_step(member, member.member_epoch, target_epoch, target, owned_by_other, reported_owned,
                          subscribed_topic_ids)
    if reported_owned is None or reported_owned:
        raise UnknownMemberState("The consumer group member is in a unknown state. "
                                 "The member must abandon all its partitions and rejoin.")
    return _next_step(member, target_epoch, target_epoch, target, owned_by_other, reported_owned,
                      subscribed_topic_ids)


def _may_own(reported_owned: Assignment | None, partitions: Assignment) -> bool:
    """Kafka's ownsRevokedPartitions: unknown (not reported) counts as owning."""
    return reported_owned is None or bool(reported_owned & partitions)


def _next_step(member: ConsumerGroupMember, epoch: int, target_epoch: int, target: Assignment,
               owned_by_other: OwnedByOther, reported_owned: Assignment | None,
               subscribed_topic_ids: frozenset[uuid.UUID]) -> ConsumerGroupMember:
    target = frozenset(tp for tp in target if tp[0] in subscribed_topic_ids)
    keep = member.assigned & target
    revoke = member.assigned - target
    wanted = target - keep
    free = frozenset(tp for tp in wanted if not owned_by_other(tp))
    unreleased = len(free) != len(wanted)
    if revoke and _may_own(reported_owned, revoke):
        return _set(member, epoch, MemberState.UNREVOKED_PARTITIONS, keep, revoke, member.assignment_epochs)
    epochs = {tp: e for tp, e in member.assignment_epochs.items() if tp in keep}
    epochs.update((tp, target_epoch) for tp in free)
    state = MemberState.UNRELEASED_PARTITIONS if unreleased else MemberState.STABLE
    return _set(member, target_epoch, state, keep | free, EMPTY_ASSIGNMENT, epochs)


def _drop_unsubscribed(member: ConsumerGroupMember, reported_owned: Assignment | None,
                       subscribed_topic_ids: frozenset[uuid.UUID]) -> ConsumerGroupMember:
    """Kafka's updateCurrentAssignment: partitions of topics the member no longer subscribes to
    are revoked at once, without waiting for a new target assignment."""
    if not subscribed_topic_ids and not member.pending_revocation:
        assigned, pending = EMPTY_ASSIGNMENT, member.assigned
    else:
        dropped = frozenset(tp for tp in member.assigned if tp[0] not in subscribed_topic_ids)
        if not dropped:
            return member
        assigned, pending = member.assigned - dropped, member.pending_revocation | dropped
    if assigned == member.assigned:
        return member
    if pending and _may_own(reported_owned, pending):
        return _set(member, member.member_epoch, MemberState.UNREVOKED_PARTITIONS, assigned, pending,
                    member.assignment_epochs)
    epochs = {tp: e for tp, e in member.assignment_epochs.items() if tp in assigned}
    return replace(member, assigned=assigned, assignment_epochs=epochs)


def _set(member: ConsumerGroupMember, epoch: int, state: MemberState, assigned: Assignment,
         pending_revocation: Assignment, epochs: Mapping[TopicIdPartition, int]) -> ConsumerGroupMember:
    # Kafka's updateMemberEpoch: the previous epoch is the one the member had before this change.
    return replace(member, member_epoch=epoch, previous_member_epoch=member.member_epoch, state=state,
                   assigned=assigned, pending_revocation=pending_revocation,
                   assignment_epochs={tp: e for tp, e in epochs.items() if tp in assigned or tp in pending_revocation})
