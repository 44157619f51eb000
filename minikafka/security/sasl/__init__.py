"""SASL mechanisms as pure server-side state machines.

Each mechanism takes the client's tokens one at a time (`evaluate`: bytes in, the bytes to answer
out) until `complete`, then names the authenticated user (`authorization_id`). A bad exchange
raises SaslFailure. Kafka tells the client the mechanism's own message for some failures
(SaslAuthenticationException) and only a generic one for the rest, so as not to reveal, say, that
a user exists: `shown` says which.
"""

from __future__ import annotations

from typing import Protocol


class SaslFailure(Exception):
    def __init__(self, message: str, *, shown: bool) -> None:
        super().__init__(message)
        self.message = message
        self.shown = shown


class SaslMechanism(Protocol):
    mechanism: str
    complete: bool
    authorization_id: str

    def evaluate(self, token: bytes) -> bytes: ...


def generic_failure_message(mechanism: str, reauthenticating: bool = False) -> str:
    """What Kafka answers for a failure whose detail it keeps to itself."""
    during = "re-authentication" if reauthenticating else "authentication"
    return f"Authentication failed during {during} due to invalid credentials with SASL mechanism {mechanism}"
