"""structlog setup (called once, from __main__), the fixed field vocabulary, and the levels of the
named loggers, which a client may change at run time (BROKER_LOGGER config resources, as Kafka's
log4j loggers; broker/broker_loggers.py is the door)."""

from __future__ import annotations

import logging
import sys
from typing import Any

import structlog

# Field names used across the code base (Kafka's vocabulary).
CONN_ID = "conn_id"
PEER = "peer"
CLIENT_ID = "client_id"
API = "api"
API_VERSION = "api_version"
CORRELATION_ID = "correlation_id"


ROOT = "root"
# The loggers minikafka creates (structlog.get_logger(name) across the package), and their parents.
LOGGERS = ("minikafka", "minikafka.broker", "minikafka.coordinator", "minikafka.coordinator.consumer_group",
           "minikafka.coordinator.group", "minikafka.coordinator.streams_group", "minikafka.coordinator.transaction",
           "minikafka.storage")
# Kafka's level names (log4j) -> Python's numeric levels.
KAFKA_LEVELS = {"TRACE": 5, "DEBUG": logging.DEBUG, "INFO": logging.INFO, "WARN": logging.WARNING,
                "ERROR": logging.ERROR, "FATAL": logging.CRITICAL}
_METHOD_LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "warning": logging.WARNING, "warn": logging.WARNING,
                  "error": logging.ERROR, "exception": logging.ERROR, "critical": logging.CRITICAL,
                  "fatal": logging.CRITICAL, "msg": logging.INFO}


class LoggerLevels:
    """The level of each named logger: its own where set, else its nearest parent's, else root's."""

    def __init__(self, root: str = "INFO") -> None:
        self._root = root
        self._set: dict[str, str] = {}
        self._numeric: dict[str, int] = {}  # effective levels as numbers, replaced on every change

    @property
    def root(self) -> str:
        return self._root

    @root.setter
    def root(self, level: str) -> None:
        self._root = level
        self._numeric = {}

    def effective(self, name: str) -> str:
        while name:
            if name in self._set:
                return self._set[name]
            name = name.rpartition(".")[0]
        return self.root

    def numeric(self, name: str) -> int:
        """effective() as Python's number, from a cache (asked on every log call)."""
        cache = self._numeric  # a change meanwhile (another thread) replaces it: nothing stale stays
        level = cache.get(name)
        if level is None:
            level = cache[name] = KAFKA_LEVELS[self.effective(name)]
        return level

    def set(self, name: str, level: str) -> None:
        if name == ROOT:
            self.root = level
        else:
            self._set[name] = level
            self._numeric = {}

    def unset(self, name: str) -> None:
        self._set.pop(name, None)
        self._numeric = {}


LEVELS = LoggerLevels()


class _NamedPrintLoggerFactory:
    """structlog.PrintLoggerFactory that remembers the name given to get_logger (for the levels)."""

    def __init__(self, file: Any) -> None:
        self._file = file

    def __call__(self, *args: Any) -> structlog.PrintLogger:
        logger = structlog.PrintLogger(self._file)
        logger.minikafka_name = str(args[0]) if args else ""  # type: ignore[attr-defined]
        return logger


_EveryLevel = structlog.make_filtering_bound_logger(logging.DEBUG)


class _LevelledLogger(_EveryLevel):  # type: ignore[misc,valid-type]
    """Every call (debug, info, log(level), exception, their async forms) passes here first: one
    below its logger's level returns before structlog builds the event or runs a processor. The
    transaction coordinator logs three to four transitions per transaction at debug, and dropping
    them in a processor instead cost ~3.5 % of the loop with 1,000 transactional producers (py-spy,
    issue 17)."""

    def _proxy_to_logger(self, method_name: str, event: str | None = None, **event_kw: Any) -> Any:
        if _METHOD_LEVELS.get(method_name, logging.INFO) < LEVELS.numeric(getattr(self._logger, "minikafka_name", "")):
            return None
        return super()._proxy_to_logger(method_name, event, **event_kw)


def configure_logging(*, json: bool = False, level: str = "INFO") -> None:
    lvl = getattr(logging, level.upper(), logging.INFO)
    LEVELS.root = {v: k for k, v in KAFKA_LEVELS.items()}.get(lvl, "INFO")
    renderer: structlog.typing.Processor = (
        structlog.processors.JSONRenderer() if json else structlog.dev.ConsoleRenderer(colors=False)
    )
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.format_exc_info,
            renderer,
        ],
        # Every level's methods exist; LEVELS filters per logger before the processors (levels
        # change at run time).
        wrapper_class=_LevelledLogger,
        logger_factory=_NamedPrintLoggerFactory(sys.stderr),
        cache_logger_on_first_use=True,
    )
