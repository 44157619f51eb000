"""Finalized feature levels (KIP-584): what `kafka-features.sh` describes, upgrades and downgrades.

Theory of operation
- SUPPORTED is what this broker can run: `transaction.version` 0-2 (transactions v2 at 2),
  `group.version` 0-1 (the KIP-848 consumer protocol at 1), `streams.version` 0-1 (the KIP-1071
  streams protocol at 1) and `share.version` 0-1 (KIP-932 share groups at 1), as Kafka 4.3.1. The
  KRaft ones (metadata.version, kraft.version) are not listed, so no client asks for them.
- The finalized levels start from the broker properties of the same names (what `kafka-storage
  format --feature` sets on Kafka) and, once an UpdateFeatures changed them, from the levels stored
  in the data dir: as in Kafka, a level set with kafka-features.sh outlives restarts.
- `decide_update` is Kafka's FeatureControlManager.updateFeatures for these features: all or
  nothing, checked in Kafka's order with Kafka's messages; a level 0 feature is not finalized
  (ApiVersions leaves it out). Every successful update moves the epoch, as every write to Kafka's
  metadata log does.
- Listeners hear of new levels (the transaction coordinator's transaction.version); the rest
  reads `level()` when it needs it.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from minikafka.protocol.errors import ErrorCode

TRANSACTION_VERSION: Final = "transaction.version"
GROUP_VERSION: Final = "group.version"
STREAMS_VERSION: Final = "streams.version"
SHARE_VERSION: Final = "share.version"
SUPPORTED: Final[Mapping[str, tuple[int, int]]] = {GROUP_VERSION: (0, 1), STREAMS_VERSION: (0, 1),
                                                   SHARE_VERSION: (0, 1), TRANSACTION_VERSION: (0, 2)}


class UpgradeType(enum.IntEnum):
    """UpdateFeatures' upgrade_type (v1+); v0's allow_downgrade maps to UPGRADE / SAFE_DOWNGRADE."""

    UPGRADE = 1
    SAFE_DOWNGRADE = 2
    UNSAFE_DOWNGRADE = 3


@dataclass(frozen=True, slots=True)
class FeatureUpdate:
    feature: str
    level: int
    upgrade_type: int   # an UpgradeType value, or anything else (refused)


@dataclass(frozen=True, slots=True)
class UpdateResult:
    error: ErrorCode
    message: str | None
    levels: Mapping[str, int] | None = None   # the levels after the update (None: nothing changes)


def decide_update(current: Mapping[str, int], updates: Sequence[FeatureUpdate], node_id: int) -> UpdateResult:
    """All or nothing: the first feature in error fails the whole request."""
    levels = dict(current)
    for u in updates:
        reason = _refusal(u, levels.get(u.feature, 0), node_id)
        if reason is not None:
            message = (f"The update failed for all features since the following feature had an error: "
                       f"Invalid update version {u.level} for feature {u.feature}. {reason}")
            return UpdateResult(ErrorCode.invalid_update_version, message)
        levels[u.feature] = u.level
    return UpdateResult(ErrorCode.none, None, levels)


def _refusal(u: FeatureUpdate, current: int, node_id: int) -> str | None:
    """Kafka's FeatureControlManager.updateFeature and QuorumFeatures.reasonNotSupported."""
    if u.upgrade_type not in tuple(UpgradeType):
        return "The controller does not support the given upgrade type."
    if u.level < 0:
        return "A feature version cannot be less than 0."
    low, high = SUPPORTED.get(u.feature, (0, 0))
    if not low <= u.level <= high:
        if high == 0:
            return f"Local controller {node_id} does not support this feature."
        return f"Local controller {node_id} only supports versions {low}-{high}"
    if u.level < current and u.upgrade_type == UpgradeType.UPGRADE:
        return ("Can't downgrade the version of this feature without setting the upgrade type to either safe or "
                "unsafe downgrade.")
    if u.level > current and u.upgrade_type != UpgradeType.UPGRADE:
        return "Can't downgrade to a newer version."
    return None


class Features:
    """The finalized levels of this node, their epoch, and who is told when they change."""

    def __init__(self, levels: Mapping[str, int], epoch: int = 1,
                 save: Callable[[Mapping[str, int], int], None] | None = None) -> None:
        self._levels = {name: int(levels.get(name, 0)) for name in SUPPORTED}
        self.epoch = epoch
        self._save = save
        self._listeners: list[Callable[[Mapping[str, int]], None]] = []

    def level(self, name: str) -> int:
        return self._levels.get(name, 0)

    def finalized(self) -> dict[str, int]:
        """The features finalized above 0 (a level-0 feature is not listed)."""
        return {name: level for name, level in self._levels.items() if level > 0}

    def subscribe(self, listener: Callable[[Mapping[str, int]], None]) -> None:
        self._listeners.append(listener)
        listener(dict(self._levels))

    def update(self, updates: Sequence[FeatureUpdate], node_id: int, validate_only: bool) -> UpdateResult:
        result = decide_update(self._levels, updates, node_id)
        if result.levels is None or validate_only:
            return result
        levels = dict(result.levels)  # the supported features only: anything else was refused
        if self._save is not None:
            self._save(levels, self.epoch + 1)   # durable first: a crash keeps the old levels or the new
        self._levels, self.epoch = levels, self.epoch + 1
        for listener in self._listeners:
            listener(dict(levels))
        return result
