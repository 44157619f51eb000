"""The config changes of IncrementalAlterConfigs (API 44) and AlterConfigs (API 33), as a pure
function of the current overrides: what the handlers apply, or the Kafka error that refuses them.

Kafka: ConfigAdminManager / ControllerConfigurationValidator / ConfigurationControlManager.
- Incremental: SET a value, DELETE an override (deleting one that is not set is fine), APPEND to /
  SUBTRACT from a LIST config (starting from its effective value when not overridden; anything
  else: "Can't APPEND to key X because its type is not LIST."). A name twice in one resource is
  INVALID_REQUEST. Every change of a resource is validated before any is applied.
- Legacy AlterConfigs replaces the resource's whole set of overrides with the ones sent.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import NamedTuple

from minikafka.protocol.errors import ErrorCode

SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
_OP_NAMES = {SET: "SET", DELETE: "DELETE", APPEND: "APPEND", SUBTRACT: "SUBTRACT"}


class ConfigChangeError(Exception):
    def __init__(self, error_code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.error_code = error_code


class Rules(NamedTuple):
    """What a change needs to know about a resource's configs."""

    type_of: Callable[[str], str]  # Kafka's config type ("LIST", "LONG", ...)
    effective: Callable[[str], str | None]  # the value in force without an override
    validate: Callable[[str, str | None], None]  # raises ConfigChangeError; None: the name only


def _no_duplicates(names: Iterable[str]) -> None:
    seen: set[str] = set()
    for n in names:
        if n in seen:
            raise ConfigChangeError(ErrorCode.invalid_request, "Error due to duplicate config keys")
        seen.add(n)


def _items(value: str | None) -> list[str]:
    return [x.strip() for x in (value or "").split(",") if x.strip()]


def incremental(current: Mapping[str, str], ops: Iterable[tuple[str, int, str | None]],
                rules: Rules) -> dict[str, str]:
    """The overrides after `ops` (name, operation, value)."""
    ops = list(ops)
    _no_duplicates(name for name, _, _ in ops)
    out = dict(current)
    for name, op, value in ops:
        if op == SET:
            if value is None:
                raise ConfigChangeError(ErrorCode.invalid_request, f"Null value not supported for : {name}")
            rules.validate(name, value)
            out[name] = value
        elif op == DELETE:
            rules.validate(name, None)  # the name must be known even to delete it
            out.pop(name, None)
        elif op in (APPEND, SUBTRACT):
            if rules.type_of(name) != "LIST":
                raise ConfigChangeError(ErrorCode.invalid_config,
                                        f"Can't {_OP_NAMES[op]} to key {name} because its type is not LIST.")
            base = _items(out[name] if name in out else rules.effective(name))
            given = _items(value)
            items = base + [x for x in given if x not in base] if op == APPEND else [x for x in base if x not in given]
            joined = ",".join(items)
            rules.validate(name, joined)
            out[name] = joined
        else:
            raise ConfigChangeError(ErrorCode.invalid_request, f"Unknown operation type {op}")
    return out


def replace(configs: Iterable[tuple[str, str | None]], rules: Rules) -> dict[str, str]:
    """AlterConfigs: the new overrides are exactly the ones sent (a null value is left out)."""
    configs = list(configs)
    _no_duplicates(name for name, _ in configs)
    out: dict[str, str] = {}
    for name, value in configs:
        if value is None:
            continue
        rules.validate(name, value)
        out[name] = value
    return out
