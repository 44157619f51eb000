"""SASL/PLAIN (RFC 4616), as Kafka's PlainSaslServer checks it: one token
`authzid NUL username NUL password`, verified against the users of the listener's JAAS config
(`user_<name>="<password>"` options of PlainLoginModule), with Kafka's failure messages."""

from __future__ import annotations

import hmac
from collections.abc import Mapping

from minikafka.security.sasl import SaslFailure

MECHANISM = "PLAIN"


def users_of(options: Mapping[str, str]) -> dict[str, str]:
    """user name -> password from PlainLoginModule's `user_<name>` options."""
    return {k[len("user_"):]: v for k, v in options.items() if k.startswith("user_")}


class PlainServer:
    mechanism = MECHANISM

    def __init__(self, users: Mapping[str, str]) -> None:
        self._users = users
        self.complete = False
        self.authorization_id = ""

    def evaluate(self, token: bytes) -> bytes:
        if self.complete:
            raise SaslFailure("Unexpected challenge in Sasl server state COMPLETE", shown=True)
        text = token.decode("utf-8", errors="replace")
        tokens = text.split("\0", 3)
        if len(tokens) != 3:
            raise SaslFailure(f"Invalid SASL/PLAIN response: expected 3 tokens, got {min(len(tokens), 4)}", shown=True)
        authzid, username, password = tokens
        if not username:
            raise SaslFailure("Authentication failed: username not specified", shown=True)
        if not password:
            raise SaslFailure("Authentication failed: password not specified", shown=True)
        expected = self._users.get(username)
        # compare_digest even for an unknown user, so the time taken does not tell which users exist
        ok = hmac.compare_digest(password.encode(), (expected if expected is not None else "\0" + password).encode())
        if expected is None or not ok:
            raise SaslFailure("Authentication failed: Invalid username or password", shown=True)
        if authzid and authzid != username:
            raise SaslFailure("Authentication failed: Client requested an authorization id that is different "
                              "from username", shown=True)
        self.authorization_id = username
        self.complete = True
        return b""
