"""What the rooms of the modern group protocols share (consumer groups of KIP-848, streams groups
of KIP-1071): a cache of frozen group values, one lock per group, and the decide -> persist ->
apply step.

A heartbeat decides on the cached group under the group's lock; the records the decision made
are appended to the group's `__consumer_offsets` partition as one batch; only then is the new
value swapped in. The only await between a decision and its application is that append, taken
under the lock, so two heartbeats of one group never decide on the same value.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Generic, Protocol, TypeVar

import structlog

from minikafka.coordinator.group.offsets_log import partition_for
from minikafka.coordinator.ports import RecordLog


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
Record = tuple[bytes, bytes | None]


class GroupRoom(Generic[G]):
    """The shell both rooms build on; `kind` names the log events ("consumer_group", ...)."""

    kind = "group"

    def __init__(self, records: RecordLog) -> None:
        self._log = records
        self.groups: dict[str, G] = {}
        self._locks: dict[str, asyncio.Lock] = {}
        self.on_deadlines_changed: Callable[[], None] | None = None
        # A group's own configs (IncrementalAlterConfigs on a GROUP resource), read per heartbeat.
        self.group_overrides: Callable[[str], Mapping[str, str]] | None = None
        self._events = structlog.get_logger(f"minikafka.coordinator.{self.kind}")

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

    def forget(self, group_id: str) -> None:
        """After the group's tombstones were written (DeleteGroups, offsets expiry, a classic join)."""
        self._apply(group_id, None)

    def is_empty(self, group_id: str) -> bool:
        return not self.groups[group_id].members

    def owns(self, group_id: str) -> bool:
        return group_id in self.groups

    def describe(self, group_id: str) -> G | None:
        return self.groups.get(group_id)


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
