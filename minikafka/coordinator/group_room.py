"""What the rooms of the modern group protocols share (consumer groups of KIP-848, streams groups
of KIP-1071): a cache of frozen group values, one lock per group, the decide -> persist -> apply
step, the draft a decision changes, the group-config overrides, and the checks of an offset commit
or fetch that Kafka's ConsumerGroup and StreamsGroup share.

A heartbeat decides on the cached group under the group's lock; the records the decision made
are appended to the group's `__consumer_offsets` partition as one batch; only then is the new
value swapped in. The only await between a decision and its application is that append, taken
under the lock, so two heartbeats of one group never decide on the same value.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, ClassVar, Generic, Protocol, TypeVar

import structlog

from minikafka.coordinator.group.offsets_log import partition_for
from minikafka.coordinator.ports import RecordLog
from minikafka.protocol.errors import ErrorCode

UNKNOWN_GENERATION_ID = -1


class _Group(Protocol):
    @property
    def group_epoch(self) -> int: ...
    @property
    def target_assignment_epoch(self) -> int: ...
    @property
    def members(self) -> Mapping[str, Any]: ...
    @property
    def state(self) -> Any: ...


G = TypeVar("G", bound=_Group)
C = TypeVar("C")
Record = tuple[bytes, bytes | None]


@dataclass(frozen=True, slots=True)
class CommitCheck:
    """The answer to an offset commit of a modern group: an error for every partition, or a
    per-partition check against the assignment epochs (KIP-1251) when the member's epoch is older
    than its current one."""

    error: ErrorCode = ErrorCode.none
    message: str | None = None
    partition_error: Callable[[str, int], ErrorCode] | None = None   # (topic, partition)


class DecisionError(Exception):
    """A heartbeat refused by a pure decision: Kafka's error code and message for the reply."""

    def __init__(self, code: ErrorCode, message: str | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def blank(value: str | None) -> bool:
    """A string given but empty or only spaces (Kafka refuses those ids as INVALID_REQUEST)."""
    return value is not None and not value.strip()


class GroupDraft(Generic[G]):
    """The group being changed by one decision, and the records the change needs, in order."""

    def __init__(self, group: G) -> None:
        self.group = group
        self.records: list[Record] = []

    def member_tombstones(self, group_id: str, member_id: str) -> list[Record]:
        """The member's records, in the order Kafka's removeMember writes them."""
        raise NotImplementedError

    def put_member(self, member: Any) -> None:
        self.group = replace(self.group, members={**self.group.members, member.member_id: member})  # type: ignore[type-var]

    def remove_member(self, member_id: str) -> None:
        self.records += self.member_tombstones(self.group.group_id, member_id)  # type: ignore[attr-defined]
        members = dict(self.group.members)
        members.pop(member_id, None)
        target = dict(self.group.target_assignment)  # type: ignore[attr-defined]
        target.pop(member_id, None)
        self.group = replace(self.group, members=members, target_assignment=target)  # type: ignore[type-var]


class GroupRoom(Generic[G, C]):
    """The shell both rooms build on; `kind` names the log events ("consumer_group", ...);
    `group_configs` maps a GROUP resource config to the field of the room's config it overrides."""

    kind = "group"
    group_configs: ClassVar[Mapping[str, str]] = {}

    def __init__(self, records: RecordLog, config: C) -> None:
        self._log = records
        self.config = config
        self.groups: dict[str, G] = {}
        self._locks: dict[str, asyncio.Lock] = {}
        self.on_deadlines_changed: Callable[[], None] | None = None
        # A group's own configs (IncrementalAlterConfigs on a GROUP resource), read per heartbeat.
        self.group_overrides: Callable[[str], Mapping[str, str]] | None = None
        self._events = structlog.get_logger(f"minikafka.coordinator.{self.kind}")

    def config_of(self, group_id: str) -> C:
        """The broker's config with the group's own overrides (IncrementalAlterConfigs)."""
        overrides = self.group_overrides(group_id) if self.group_overrides is not None else {}
        changes = {f: int(overrides[name]) for name, f in self.group_configs.items() if name in overrides}
        return replace(self.config, **changes) if changes else self.config  # type: ignore[type-var]

    def lock(self, group_id: str) -> asyncio.Lock:
        return self._locks.setdefault(group_id, asyncio.Lock())

    def _partition_for(self, group_id: str) -> int:
        return partition_for(group_id, self._log.partition_count)

    async def _write(self, group_id: str, records: Sequence[Record], group: G | None, now_ms: int) -> bool:
        """Append the records (one batch), then apply the group. False when the disk refused them
        and nothing changed: as Kafka's coordinator does with a storage error, the caller answers
        NOT_COORDINATOR and the client finds the coordinator again."""
        if records:
            try:
                await self._log.append(self._partition_for(group_id), records, now_ms)
            except OSError as exc:
                self._events.warning(f"{self.kind}_append_failed", group_id=group_id, reason=str(exc))
                return False
        self._apply(group_id, group)
        return True

    def _apply(self, group_id: str, group: G | None) -> None:
        before = self.groups.get(group_id)
        if group is None:
            self.groups.pop(group_id, None)
            self._locks.pop(group_id, None)
        else:
            self.groups[group_id] = group
            if before is None or before.state is not group.state or before.group_epoch != group.group_epoch:
                self._events.info(f"{self.kind}_changed", group_id=group_id, state=group.state.value,
                                  group_epoch=group.group_epoch, assignment_epoch=group.target_assignment_epoch,
                                  members=len(group.members))
        if self.on_deadlines_changed is not None:
            self.on_deadlines_changed()

    def loaded(self, now_ms: int) -> None:
        """After replay: every member's session starts now (Kafka schedules them on load)."""
        for gid, group in list(self.groups.items()):
            timeout = self.config_of(gid).session_timeout_ms  # type: ignore[attr-defined]
            self.groups[gid] = replace(group, members={  # type: ignore[type-var]
                mid: replace(m, session_deadline_ms=now_ms + timeout) for mid, m in group.members.items()})

    def forget(self, group_id: str) -> None:
        """After the group's tombstones were written (DeleteGroups, offsets expiry, a classic join)."""
        self._apply(group_id, None)

    def is_empty(self, group_id: str) -> bool:
        return not self.groups[group_id].members

    def owns(self, group_id: str) -> bool:
        return group_id in self.groups

    def describe(self, group_id: str) -> G | None:
        return self.groups.get(group_id)

    def list_groups(self, states: Iterable[str] = ()) -> list[G]:
        wanted = {s.strip().lower() for s in states}
        return [g for _gid, g in sorted(self.groups.items()) if not wanted or g.state.value.lower() in wanted]

    def deletable(self, group_id: str) -> ErrorCode:
        """DeleteGroups: only an Empty group (one without members) goes."""
        return ErrorCode.none if self.is_empty(group_id) else ErrorCode.non_empty_group

    # ------------------------------------------------------------------------------ offsets
    def validate_offset_commit(self, group_id: str, member_id: str, instance_id: str | None, member_epoch: int,
                               *, transactional: bool, api_version: int) -> CommitCheck:
        """Kafka's ConsumerGroup / StreamsGroup.validateOffsetCommit: an admin client or simple
        consumer may commit for a group without members, a TxnOffsetCommit may leave the member out;
        otherwise the member must exist, and the room checks its epoch (`_check_member_commit`)."""
        group = self.groups[group_id]
        if member_epoch < 0 and not group.members:
            return CommitCheck()
        if transactional and member_epoch == UNKNOWN_GENERATION_ID and member_id == "" and instance_id is None:
            return CommitCheck()
        member = group.members.get(member_id)
        if member is None:
            return CommitCheck(ErrorCode.unknown_member_id, f"Member {member_id} is not a member of group {group_id}.")
        return self._check_member_commit(group, member, member_epoch, transactional, api_version)

    def _check_member_commit(self, group: G, member: Any, member_epoch: int, transactional: bool,
                             api_version: int) -> CommitCheck:
        raise NotImplementedError

    def stale_epoch_code(self, member: Any) -> ErrorCode:
        """The error of an epoch that is not the member's current one."""
        return ErrorCode.stale_member_epoch

    def validate_offset_fetch(self, group_id: str, member_id: str | None, member_epoch: int) -> ErrorCode:
        """Kafka's validateOffsetFetch (OffsetFetch v9+ names the member; an admin client does not)."""
        if member_id is None and member_epoch < 0:
            return ErrorCode.none
        member = self.groups[group_id].members.get(member_id or "")
        if member is None:
            return ErrorCode.unknown_member_id
        return ErrorCode.none if member_epoch == member.member_epoch else self.stale_epoch_code(member)


def with_entry(mapping: Mapping[str, Any], key: str | None, value: Any | None) -> dict[str, Any]:
    """A copy with `key` set to `value`, or removed when `value` is None (a tombstone)."""
    out = dict(mapping)
    if key is None:
        return out
    if value is None:
        out.pop(key, None)
    else:
        out[key] = value
    return out
