"""Times and durations as minikafka's tools show them to people (`minikafka inspect`, the web
console). Pure."""

from __future__ import annotations

import datetime


def format_duration(ms: int | None) -> str:
    if ms is None or ms < 0:
        return "-"
    if ms < 1000:
        return f"{ms}ms"
    s = ms / 1000
    if s < 60:
        return f"{s:.1f}s"
    m, s_int = divmod(int(s), 60)
    if m < 60:
        return f"{m}m{s_int:02d}s"
    h, m = divmod(m, 60)
    if h < 24:
        return f"{h}h{m:02d}m"
    d, h = divmod(h, 24)
    return f"{d}d{h:02d}h"


def format_time(ms: int) -> str:
    """UTC, to the millisecond; a timestamp past year 9999 (a record may carry one) as its number."""
    if ms < 0:
        return "-"
    try:
        t = datetime.datetime.fromtimestamp(ms / 1000, datetime.UTC)
    except (ValueError, OverflowError, OSError):
        return f"{ms} ms"
    return t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{t.microsecond // 1000:03d}Z"
