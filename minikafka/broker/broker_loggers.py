"""BROKER_LOGGER config resources: the levels of the broker's named loggers, described and changed
at run time (`kafka-configs.sh --entity-type broker-loggers`), as Kafka does for its log4j loggers.

Kafka's rules, checked against Apache Kafka 4.3.1 (tests/integration/test_broker_loggers.py):
- The resource name is the node id; an empty or other id is INVALID_REQUEST.
- Every logger is described with its effective level, source DYNAMIC_BROKER_LOGGER_CONFIG (6),
  type UNKNOWN and no synonyms. Only loggers that exist can be set (INVALID_CONFIG "Logger X does
  not exist!"), to one of Kafka's level names; DELETE returns a logger to its parent's level, and
  root cannot be deleted. APPEND / SUBTRACT are INVALID_REQUEST. Changes last until the broker
  stops (Kafka does not persist them either).
"""

from __future__ import annotations

from collections.abc import Iterable

from minikafka.broker.config_changes import APPEND, DELETE, SET, SUBTRACT, ConfigChangeError
from minikafka.logging import KAFKA_LEVELS, LEVELS, LOGGERS, ROOT, LoggerLevels
from minikafka.protocol.errors import ErrorCode

_LEVEL_NAMES = ", ".join(sorted(KAFKA_LEVELS))


def loggers(levels: LoggerLevels = LEVELS) -> list[tuple[str, str]]:
    """(logger, effective level) of every logger, root included."""
    return sorted([(name, levels.effective(name)) for name in LOGGERS] + [(ROOT, levels.root)])


def check_describe_name(resource_name: str, node_id: int) -> None:
    if resource_name == "":
        raise ConfigChangeError(ErrorCode.invalid_request, "Broker id must not be empty")
    if resource_name != str(node_id):
        raise ConfigChangeError(ErrorCode.invalid_request,
                                f"Unexpected broker id, expected {node_id} but received {resource_name}")


def changes(resource_name: str, node_id: int, ops: Iterable[tuple[str, int, str | None]]
            ) -> list[tuple[str, str | None]]:
    """The (logger, level or None to unset) changes of one IncrementalAlterConfigs resource, or the
    ConfigChangeError that refuses them all (Kafka's ConfigAdminManager.validateLogLevelConfigs)."""
    if not resource_name.lstrip("-").isdigit():
        raise ConfigChangeError(ErrorCode.invalid_request, f"Node id must be an integer, but it is: {resource_name}")
    if int(resource_name) != node_id:
        raise ConfigChangeError(ErrorCode.invalid_request,
                                f"Unexpected node id. Expected {node_id}, but received {resource_name}")
    ops = list(ops)
    if len({name for name, _, _ in ops}) != len(ops):
        raise ConfigChangeError(ErrorCode.invalid_request, "Error due to duplicate config keys")
    known = set(LOGGERS) | {ROOT}
    out: list[tuple[str, str | None]] = []
    for name, op, value in ops:
        if op in (APPEND, SUBTRACT):
            verb = "APPEND" if op == APPEND else "SUBTRACT"
            raise ConfigChangeError(ErrorCode.invalid_request,
                                    f"{verb} operation is not allowed for the BROKER_LOGGER resource")
        if op == SET and value is None:
            raise ConfigChangeError(ErrorCode.invalid_request, f"Null value not supported for : {name}")
        if name not in known:
            raise ConfigChangeError(ErrorCode.invalid_config, f"Logger {name} does not exist!")
        if op == DELETE:
            if name == ROOT:
                raise ConfigChangeError(ErrorCode.invalid_request,
                                        "Removing the log level of the root logger is not allowed")
            out.append((name, None))
        elif op == SET:
            if value not in KAFKA_LEVELS:
                raise ConfigChangeError(ErrorCode.invalid_config,
                                        f"Cannot set the log level of {name} to {value} as it is not a supported "
                                        f"log level. Valid log levels are {_LEVEL_NAMES}")
            out.append((name, value))
        else:
            raise ConfigChangeError(ErrorCode.invalid_request, f"Unknown operation {op}")
    return out


def apply(changed: Iterable[tuple[str, str | None]], levels: LoggerLevels = LEVELS) -> None:
    for name, level in changed:
        if level is None:
            levels.unset(name)
        else:
            levels.set(name, level)
