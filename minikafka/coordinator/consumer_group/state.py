"""KIP-848 consumer groups: the group and member values, and the group's state derived from them.

Theory of operation (Kafka: `ConsumerGroup.java`, `ConsumerGroupMember.java`, KIP-848)

The consumer protocol moves the assignment to the coordinator. A group has three epochs:

- the *group epoch* grows whenever what the assignment depends on changes: a member joins or
  leaves, a subscription or the server assignor changes, or the partitions of a subscribed topic
  change;
- the *target assignment epoch* is the group epoch the current target assignment was computed for
  (a target assignment maps every member to the partitions it should own);
- every member has a *member epoch*: the target assignment epoch it has converged to. It moves
  there one heartbeat at a time (see reconcile.py): first it gives up the partitions the target
  takes away, then it gets the partitions the target gives it once their previous owner released
  them. A partition is owned by at most one member at every moment; a member whose epoch is
  behind is never given a partition another member still owns.

The group's state is not stored but follows from the epochs (ConsumerGroup.maybeUpdateGroupState):
EMPTY without members; ASSIGNING while the group epoch is ahead of the target assignment;
RECONCILING while a member has not converged; STABLE otherwise. DEAD is only a wire name: a deleted
group leaves the cache (Kafka never sets it for consumer groups either).

Everything here is a frozen value; decisions.py computes the next value and the records that make
it durable; coordinator.py writes the records and then swaps the value in.
"""

from __future__ import annotations

import enum
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Final

# A topic partition in the consumer protocol is named by topic id.
TopicIdPartition = tuple[uuid.UUID, int]
Assignment = frozenset[TopicIdPartition]
EMPTY_ASSIGNMENT: Final[Assignment] = frozenset()

JOIN_GROUP_MEMBER_EPOCH: Final = 0
LEAVE_GROUP_MEMBER_EPOCH: Final = -1
LEAVE_GROUP_STATIC_MEMBER_EPOCH: Final = -2


class ConsumerGroupState(enum.Enum):
    """The wire names are the `value`s (ListGroups, ConsumerGroupDescribe)."""

    EMPTY = "Empty"
    ASSIGNING = "Assigning"
    RECONCILING = "Reconciling"
    STABLE = "Stable"
    DEAD = "Dead"


class MemberState(enum.IntEnum):
    """A member's reconciliation state; the values are the int8 written in
    ConsumerGroupCurrentMemberAssignmentValue.State (Kafka's MemberState)."""

    STABLE = 0                  # owns exactly its target assignment
    UNREVOKED_PARTITIONS = 1    # must give up `pending_revocation` before it may move on
    UNRELEASED_PARTITIONS = 2   # at the target epoch, waiting for partitions others still own
    UNKNOWN = 127


def partition_order(tp: TopicIdPartition) -> tuple[str, int]:
    """A stable order of partitions named by topic id (sort key)."""
    return str(tp[0]), tp[1]


def by_topic(assignment: Iterable[TopicIdPartition]) -> dict[uuid.UUID, list[int]]:
    """{topic id: sorted partitions}, topics in a stable order (the wire and record shape)."""
    out: dict[uuid.UUID, list[int]] = {}
    for tid, p in sorted(assignment, key=partition_order):
        out.setdefault(tid, []).append(p)
    return out


def from_topics(topics: Iterable[tuple[uuid.UUID, Iterable[int]]]) -> Assignment:
    return frozenset((tid, int(p)) for tid, parts in topics for p in parts)


@dataclass(frozen=True, slots=True)
class ClassicMemberMetadata:
    """A member that joined with the classic protocol (JoinGroup) into a consumer group: its session
    timeout and the protocols it offered (name, embedded ConsumerProtocolSubscription)."""

    session_timeout_ms: int
    protocols: tuple[tuple[str, bytes], ...]

    def protocol_name(self) -> str:
        return self.protocols[0][0]

    def metadata(self) -> bytes:
        return self.protocols[0][1]


# What a member told the coordinator: the fields of its ConsumerGroupMemberMetadata record.
METADATA_FIELDS: Final = ("instance_id", "rack_id", "client_id", "client_host", "subscribed_topic_names",
                          "subscribed_topic_regex", "server_assignor", "rebalance_timeout_ms", "classic")


@dataclass(frozen=True, slots=True, kw_only=True)
class ConsumerGroupMember:
    """A member of a consumer group (Kafka: ConsumerGroupMember). The first block is what the
    member told the coordinator (ConsumerGroupMemberMetadata record); the second its
    reconciliation (ConsumerGroupCurrentMemberAssignment record); the deadlines live only in
    memory, as Kafka's timers do."""

    member_id: str
    instance_id: str | None = None
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    subscribed_topic_names: tuple[str, ...] = ()
    subscribed_topic_regex: str | None = None
    server_assignor: str | None = None
    rebalance_timeout_ms: int = 300_000
    classic: ClassicMemberMetadata | None = None   # set for a member of the classic protocol

    member_epoch: int = 0
    previous_member_epoch: int = -1
    state: MemberState = MemberState.STABLE
    assigned: Assignment = EMPTY_ASSIGNMENT
    pending_revocation: Assignment = EMPTY_ASSIGNMENT
    # The epoch at which each owned partition was given to the member (KIP-1251): an offset commit
    # with an older member epoch is still accepted for a partition given at or before it.
    assignment_epochs: Mapping[TopicIdPartition, int] = field(default_factory=dict)

    session_deadline_ms: int | None = None
    rebalance_deadline_ms: int | None = None   # set while UNREVOKED_PARTITIONS: revoke by then
    # A classic member asked to rejoin must JoinGroup by the first, and SyncGroup after its join by
    # the second (its rebalance timeout each), or it is fenced.
    join_deadline_ms: int | None = None
    sync_deadline_ms: int | None = None

    @property
    def uses_classic_protocol(self) -> bool:
        return self.classic is not None

    def deadlines(self) -> tuple[int, ...]:
        """The member's running timers (each fences it when it passes)."""
        return tuple(t for t in (self.session_deadline_ms, self.rebalance_deadline_ms, self.join_deadline_ms,
                                 self.sync_deadline_ms) if t is not None)

    def owned(self) -> Assignment:
        """What the member may still be consuming: assigned plus not yet revoked."""
        return self.assigned | self.pending_revocation

    def metadata_key(self) -> tuple[object, ...]:
        """The fields of the MemberMetadata record (a change means a new record)."""
        return tuple(getattr(self, name) for name in METADATA_FIELDS)

    def assignment_key(self) -> tuple[object, ...]:
        """The fields of the CurrentMemberAssignment record."""
        return (self.member_epoch, self.previous_member_epoch, self.state, self.assigned, self.pending_revocation)


@dataclass(frozen=True, slots=True, kw_only=True)
class ConsumerGroup:
    """One consumer group. Never mutated: every change builds a new value."""

    group_id: str
    # Kafka 4.3 starts a group at epoch 1 with an (empty) target assignment of epoch 1, so its
    # first member gets epoch 2 (KAFKA-20268).
    group_epoch: int = 1
    members: Mapping[str, ConsumerGroupMember] = field(default_factory=dict)
    target_assignment_epoch: int = 1
    target_assignment: Mapping[str, Assignment] = field(default_factory=dict)
    # XXH3 of the subscribed topics' ids and partition counts when the group epoch was last
    # bumped (ConsumerGroupMetadataValue.MetadataHash): a different hash bumps it again.
    metadata_hash: int = 0
    assignment_timestamp_ms: int = 0     # when the target assignment was computed
    # Resolved regular expressions: regex -> the topic names it matched when last resolved.
    resolved_regexes: Mapping[str, frozenset[str]] = field(default_factory=dict)
    regex_refreshed_ms: int = 0

    @property
    def state(self) -> ConsumerGroupState:
        if not self.members:
            return ConsumerGroupState.EMPTY
        if self.group_epoch > self.target_assignment_epoch:
            return ConsumerGroupState.ASSIGNING
        for m in self.members.values():
            if m.state is not MemberState.STABLE or m.member_epoch != self.target_assignment_epoch:
                return ConsumerGroupState.RECONCILING
        return ConsumerGroupState.STABLE

    def static_member_id(self, instance_id: str) -> str | None:
        for m in self.members.values():
            if m.instance_id == instance_id:
                return m.member_id
        return None

    def partition_owners(self, excluding: str | None = None) -> dict[TopicIdPartition, str]:
        """Who owns each partition (assigned or pending revocation): Kafka's partition epochs."""
        return {tp: m.member_id for m in self.members.values() if m.member_id != excluding for tp in m.owned()}

    def member_topics(self, member: ConsumerGroupMember) -> frozenset[str]:
        """The topics a member subscribes to by name or through its resolved regex."""
        names = set(member.subscribed_topic_names)
        if member.subscribed_topic_regex is not None:
            names.update(self.resolved_regexes.get(member.subscribed_topic_regex, ()))
        return frozenset(names)

    def subscribed_topic_names(self) -> frozenset[str]:
        """Every topic some member subscribes to."""
        return frozenset().union(*(self.member_topics(m) for m in self.members.values()))

    def target_of(self, member_id: str) -> Assignment:
        return self.target_assignment.get(member_id, EMPTY_ASSIGNMENT)
