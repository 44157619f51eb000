"""What a handler knows about the request besides its body."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class RequestContext:
    conn_id: int
    peer: str
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    received_at_ms: int
