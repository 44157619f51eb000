"""structlog setup (called once, from __main__) and the fixed field vocabulary."""

from __future__ import annotations

import logging
import sys

import structlog

# Field names used across the code base (Kafka's vocabulary).
CONN_ID = "conn_id"
PEER = "peer"
CLIENT_ID = "client_id"
API = "api"
API_VERSION = "api_version"
CORRELATION_ID = "correlation_id"


def configure_logging(*, json: bool = False, level: str = "INFO") -> None:
    lvl = getattr(logging, level.upper(), logging.INFO)
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
        wrapper_class=structlog.make_filtering_bound_logger(lvl),
        logger_factory=structlog.PrintLoggerFactory(file=sys.stderr),
        cache_logger_on_first_use=True,
    )
