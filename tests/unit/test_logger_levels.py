"""Per-logger levels (minikafka/logging.py): what a debug call below its logger's level costs
nothing for, and what a level change at run time lets through."""

from __future__ import annotations

import io
from collections.abc import Iterator

import pytest
import structlog

from minikafka import logging as mk_logging

pytestmark = pytest.mark.unit


@pytest.fixture
def captured() -> Iterator[io.StringIO]:
    """The broker's structlog set-up, writing to a buffer; the levels restored afterwards."""
    buf = io.StringIO()
    saved_root, saved_set = mk_logging.LEVELS.root, dict(mk_logging.LEVELS._set)
    saved_config = structlog.get_config()
    mk_logging.configure_logging()
    structlog.configure(logger_factory=mk_logging._NamedPrintLoggerFactory(buf))
    try:
        yield buf
    finally:
        structlog.configure(**saved_config)
        mk_logging.LEVELS._set = saved_set
        mk_logging.LEVELS.root = saved_root


def test_debug_lines_follow_the_level_set_at_run_time(captured: io.StringIO) -> None:
    log = structlog.get_logger("minikafka.coordinator.transaction")
    log.debug("hidden_at_info")
    log.info("shown_at_info")
    mk_logging.LEVELS.set("minikafka.coordinator", "DEBUG")  # a parent's level reaches the child
    log.debug("shown_at_debug")
    mk_logging.LEVELS.set("minikafka.coordinator.transaction", "WARN")  # the child's own wins
    log.debug("hidden_at_warn")
    log.info("hidden_info_at_warn")
    mk_logging.LEVELS.unset("minikafka.coordinator.transaction")
    log.debug("shown_after_unset")
    mk_logging.LEVELS.unset("minikafka.coordinator")
    mk_logging.LEVELS.root = "DEBUG"
    log.debug("shown_at_root_debug")
    text = captured.getvalue()
    assert [e for e in ("shown_at_info", "shown_at_debug", "shown_after_unset", "shown_at_root_debug")
            if e not in text] == []
    assert [e for e in ("hidden_at_info", "hidden_at_warn", "hidden_info_at_warn") if e in text] == []


def test_a_call_below_its_loggers_level_never_reaches_the_processors(captured: io.StringIO) -> None:
    seen: list[str] = []

    def spy(logger: object, method_name: str, event_dict: dict) -> dict:
        seen.append(event_dict["event"])
        return event_dict

    structlog.configure(processors=[spy, *structlog.get_config()["processors"]])
    log = structlog.get_logger("minikafka.storage")
    log.debug("below_level")
    log.info("at_level")
    mk_logging.LEVELS.set("minikafka.storage", "WARN")
    log.info("info_below_warn")
    log.log(20, "log_info_below_warn")
    log.warning("warning_at_warn")
    log.exception("exception_above_warn")
    assert seen == ["at_level", "warning_at_warn", "exception_above_warn"]
