"""Classic consumer group state: the state machine as a table, and the immutable group value.

Theory of operation (Kafka: `ClassicGroupState.java`, `ClassicGroup.java`, the classic part of
`GroupMetadataManager.java`)

A group moves through five states:

- EMPTY: no members. Offsets may still be committed by simple consumers and admin clients.
- PREPARING_REBALANCE: a join phase is open. Every member must (re)send JoinGroup; the requests
  are parked until all known members have joined (or the rebalance timeout, the largest
  `rebalance_timeout_ms` among members, passes; dynamic members that did not rejoin are removed).
  When the group was EMPTY, the phase is held open for `group.initial.rebalance.delay.ms`, extended
  while new members keep arriving, up to the rebalance timeout.
- COMPLETING_REBALANCE: the join phase ended, the generation was bumped, every joined member got its
  JoinGroup answer (the leader with everyone's metadata). SyncGroup requests are parked until the
  leader's SyncGroup brings the assignment, which is persisted (GroupMetadata record) first.
- STABLE: assignment persisted and handed out; members heartbeat.
- DEAD: the group was deleted (DeleteGroups or offset expiry); it leaves the cache.

Invariants: `generation_id` grows by one per completed join phase; the leader is a member (or
None when there are no members); members awaiting join are only in PREPARING_REBALANCE;
`pending_sync` is empty outside COMPLETING_REBALANCE and STABLE. A member whose JoinGroup or
SyncGroup is parked is never expired by its session timeout (`hasSatisfiedHeartbeat`), the
phase deadlines cover it instead.

Everything here is a frozen value; `decisions.py` computes the next value, `coordinator.py`
persists what must be persisted and then swaps it in.
"""

from __future__ import annotations

import enum
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Final


class GroupState(enum.Enum):
    """The wire names are the `value`s (DescribeGroups, ListGroups)."""

    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"


class GroupEvent(enum.Enum):
    MEMBER_JOINED = enum.auto()        # a new member, changed metadata, or a leader rejoin
    MEMBER_REMOVED = enum.auto()       # LeaveGroup, session expiry, missed sync, static replacement
    JOIN_COMPLETED = enum.auto()       # join phase over, members remain: new generation
    JOIN_COMPLETED_EMPTY = enum.auto()  # join phase over, nobody left: new generation, Empty
    ASSIGNMENT_STORED = enum.auto()    # the leader's SyncGroup assignment was persisted
    DELETED = enum.auto()              # DeleteGroups, or the last offsets of an Empty group expired


class IllegalTransition(Exception):
    """A (state, event) pair the table does not have: a bug in the coordinator, never a client error."""

    def __init__(self, state: GroupState, event: GroupEvent) -> None:
        super().__init__(f"no transition from {state.name} on {event.name}")
        self.state = state
        self.event = event


_S, _E = GroupState, GroupEvent
TRANSITIONS: Final[Mapping[tuple[GroupState, GroupEvent], GroupState]] = MappingProxyType({
    # a join opens (or keeps open) a join phase
    (_S.EMPTY, _E.MEMBER_JOINED): _S.PREPARING_REBALANCE,
    (_S.PREPARING_REBALANCE, _E.MEMBER_JOINED): _S.PREPARING_REBALANCE,
    (_S.COMPLETING_REBALANCE, _E.MEMBER_JOINED): _S.PREPARING_REBALANCE,
    (_S.STABLE, _E.MEMBER_JOINED): _S.PREPARING_REBALANCE,
    # losing a member forces a rebalance of the others
    (_S.PREPARING_REBALANCE, _E.MEMBER_REMOVED): _S.PREPARING_REBALANCE,
    (_S.COMPLETING_REBALANCE, _E.MEMBER_REMOVED): _S.PREPARING_REBALANCE,
    (_S.STABLE, _E.MEMBER_REMOVED): _S.PREPARING_REBALANCE,
    # end of the join phase
    (_S.PREPARING_REBALANCE, _E.JOIN_COMPLETED): _S.COMPLETING_REBALANCE,
    (_S.PREPARING_REBALANCE, _E.JOIN_COMPLETED_EMPTY): _S.EMPTY,
    # end of the sync phase
    (_S.COMPLETING_REBALANCE, _E.ASSIGNMENT_STORED): _S.STABLE,
    # deletion: only an Empty group can go (DeleteGroups answers NON_EMPTY_GROUP otherwise)
    (_S.EMPTY, _E.DELETED): _S.DEAD,
    (_S.DEAD, _E.DELETED): _S.DEAD,
})

# Kafka's ClassicGroupState validPreviousStates, derived from the table (a test compares them).
ALLOWED_PREVIOUS: Final[Mapping[GroupState, frozenset[GroupState]]] = MappingProxyType({
    target: frozenset(s for (s, _e), t in TRANSITIONS.items() if t is target)
    for target in GroupState
})


def next_state(state: GroupState, event: GroupEvent) -> GroupState:
    """Raises IllegalTransition for a pair that is not in TRANSITIONS."""
    try:
        return TRANSITIONS[(state, event)]
    except KeyError:
        raise IllegalTransition(state, event) from None


@dataclass(frozen=True, slots=True, kw_only=True)
class Member:
    """A classic group member (Kafka: ClassicGroupMember)."""

    member_id: str
    group_instance_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    rebalance_timeout_ms: int
    session_timeout_ms: int
    protocol_type: str = "consumer"
    protocols: tuple[tuple[str, bytes], ...] = ()
    assignment: bytes = b""
    awaiting_join: bool = False   # its JoinGroup is parked until the join phase completes
    awaiting_sync: bool = False   # its SyncGroup is parked until the leader's assignment is stored
    is_new: bool = False          # joined in the current phase and never received a generation
    heartbeat_deadline_ms: int = 0

    def metadata_for(self, protocol: str | None) -> bytes:
        for name, meta in self.protocols:
            if name == protocol:
                return meta
        return b""

    def protocol_names(self) -> tuple[str, ...]:
        return tuple(name for name, _ in self.protocols)


@dataclass(frozen=True, slots=True, kw_only=True)
class Group:
    """One classic group. `members` is never mutated: every change builds a new Group."""

    group_id: str
    state: GroupState = GroupState.EMPTY
    generation_id: int = 0
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader_id: str | None = None
    members: Mapping[str, Member] = field(default_factory=dict)
    pending_members: Mapping[str, int] = field(default_factory=dict)  # member id -> deadline (MEMBER_ID_REQUIRED)
    pending_sync: frozenset[str] = frozenset()   # members that have not sent SyncGroup this generation
    state_timestamp_ms: int = -1                 # when the group entered its current state
    join_deadline_ms: int | None = None          # PREPARING_REBALANCE: the rebalance timeout
    initial_delay_deadline_ms: int | None = None  # PREPARING_REBALANCE from EMPTY: earliest completion
    new_member_added: bool = False               # a new member arrived during the initial delay
    sync_deadline_ms: int | None = None          # members in pending_sync are removed after it

    def static_member_id(self, group_instance_id: str) -> str | None:
        for m in self.members.values():
            if m.group_instance_id == group_instance_id:
                return m.member_id
        return None

    def max_rebalance_timeout_ms(self) -> int:
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0)

    def all_members_joined(self) -> bool:
        return all(m.awaiting_join for m in self.members.values()) and not self.pending_members

    def select_protocol(self) -> str | None:
        """Kafka's ClassicGroup.selectProtocol: among the protocols every member supports, the one
        most members list first (ties: the first one found)."""
        if not self.members:
            return None
        members = list(self.members.values())
        candidates = set(members[0].protocol_names())
        for m in members[1:]:
            candidates &= set(m.protocol_names())
        if not candidates:
            return None
        votes: dict[str, int] = {}
        for m in members:
            vote = next(name for name in m.protocol_names() if name in candidates)
            votes[vote] = votes.get(vote, 0) + 1
        return max(votes, key=lambda name: votes[name])

    def supports_protocols(self, protocol_type: str, names: tuple[str, ...]) -> bool:
        """Kafka's supportsProtocols: an empty group accepts any non-empty protocol list; otherwise
        the type must match and one protocol must be supported by every member."""
        if not protocol_type or not names:
            return False
        if not self.members:
            return True
        if protocol_type != self.protocol_type:
            return False
        common = set(names)
        for m in self.members.values():
            common &= set(m.protocol_names())
        return bool(common)


@dataclass(frozen=True, slots=True, kw_only=True)
class OffsetAndMetadata:
    """A committed offset (Kafka: OffsetAndMetadata)."""

    offset: int
    leader_epoch: int = -1
    metadata: str = ""
    commit_timestamp_ms: int
    expire_timestamp_ms: int | None = None
    topic_id: uuid.UUID | None = None  # OffsetCommitValue v4's tagged TopicId (Kafka 4.x), when known
    # Where in __consumer_offsets the record carrying it lies (Kafka's recordOffset; not part of the
    # record's value): a transaction's offsets replace a committed offset only if they were
    # written after it, so a plain OffsetCommit that came after the TxnOffsetCommit wins.
    record_offset: int = -1
