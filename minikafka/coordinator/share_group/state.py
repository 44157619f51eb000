"""A share group and its members as frozen values (KIP-932; Kafka 4.3's ShareGroup and
ShareGroupMember).

A share group is simpler than a consumer group: a partition may be given to several members at
once (its records are shared record by record, under acquisition locks), so there is nothing to
revoke before another member may have it. A member's epoch jumps straight to the target
assignment's epoch with its whole target; the group is Empty without members, Stable otherwise.

What the group also remembers is which of its subscribed partitions have share-partition state
(`__share_group_state`): the assignor hands out only those (Kafka's initialized topics, the
ShareGroupStatePartitionMetadata record).
"""

from __future__ import annotations

import enum
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Final

# (topic id, partition): how share groups name partitions in their records and on the wire.
TopicIdPartition = tuple[uuid.UUID, int]
Partitions = frozenset[TopicIdPartition]
NO_PARTITIONS: Final[Partitions] = frozenset()

JOIN_GROUP_MEMBER_EPOCH: Final = 0
LEAVE_GROUP_MEMBER_EPOCH: Final = -1
MEMBER_STATE_STABLE: Final = 0  # ShareGroupCurrentMemberAssignmentValue.State: share members are always stable
ASSIGNOR_NAME: Final = "simple"


class ShareGroupState(enum.Enum):
    """The wire names (ListGroups, ShareGroupDescribe, kafka-share-groups.sh)."""

    EMPTY = "Empty"
    STABLE = "Stable"
    DEAD = "Dead"


def by_topic(partitions: Iterable[TopicIdPartition]) -> dict[uuid.UUID, list[int]]:
    """{topic id: sorted partitions}, topics in id order: the record and wire shape."""
    out: dict[uuid.UUID, list[int]] = {}
    for tid, p in sorted(partitions):
        out.setdefault(tid, []).append(p)
    return out


def from_topics(entries: Iterable[tuple[uuid.UUID, Iterable[int]]]) -> Partitions:
    return frozenset((tid, int(p)) for tid, parts in entries for p in parts)


@dataclass(frozen=True, slots=True, kw_only=True)
class ShareGroupMember:
    """What the member told (ShareGroupMemberMetadata), its assignment
    (ShareGroupCurrentMemberAssignment) and its session deadline (memory only)."""

    member_id: str
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    subscribed_topic_names: tuple[str, ...] = ()
    member_epoch: int = 0
    previous_member_epoch: int = 0
    assigned: Partitions = NO_PARTITIONS
    session_deadline_ms: int | None = None

    def metadata_key(self) -> tuple[object, ...]:
        return (self.rack_id, self.client_id, self.client_host, self.subscribed_topic_names)

    def assignment_key(self) -> tuple[object, ...]:
        return (self.member_epoch, self.previous_member_epoch, self.assigned)


@dataclass(frozen=True, slots=True)
class InitializedTopic:
    """A topic of ShareGroupStatePartitionMetadata: its name and the partitions with state."""

    name: str
    partitions: frozenset[int]


@dataclass(frozen=True, slots=True, kw_only=True)
class ShareGroup:
    """One share group. Never mutated: every change builds a new value. Kafka 4.3 starts it at
    epoch 1 with an empty target of epoch 1, so the first member's join makes epoch 2."""

    group_id: str
    group_epoch: int = 1
    members: Mapping[str, ShareGroupMember] = field(default_factory=dict)
    target_assignment_epoch: int = 1
    target_assignment: Mapping[str, Partitions] = field(default_factory=dict)
    assignment_timestamp_ms: int = 0
    metadata_hash: int = 0
    initialized: Mapping[uuid.UUID, InitializedTopic] = field(default_factory=dict)

    @property
    def state(self) -> ShareGroupState:
        return ShareGroupState.STABLE if self.members else ShareGroupState.EMPTY

    def target_of(self, member_id: str) -> Partitions:
        return self.target_assignment.get(member_id, NO_PARTITIONS)

    def subscribed_topic_names(self) -> frozenset[str]:
        return frozenset(t for m in self.members.values() for t in m.subscribed_topic_names)

    def is_initialized(self, tp: TopicIdPartition) -> bool:
        topic = self.initialized.get(tp[0])
        return topic is not None and tp[1] in topic.partitions
