"""What a handler knows about the request besides its body."""

from __future__ import annotations

from typing import Any, NamedTuple


class RequestContext(NamedTuple):
    """One per request, so a NamedTuple: built in a third of a frozen dataclass's time (a
    dataclass's __init__ sets each field through object.__setattr__; ~1.5 us per request of
    the ~30 us a small Produce costs, issue 17)."""

    conn_id: int
    peer: str
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    received_at_ms: int
    # The body in the version the client sent, for the rare field the canonical (newest) shape
    # no longer has (Metadata v8-10's include_cluster_authorized_operations).
    sent: Any = None
    # The connection's security session (security/session.py): its listener and principal.
    session: Any = None
