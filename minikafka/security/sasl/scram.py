"""SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802 / RFC 7677), as Kafka's ScramSaslServer runs them.

Two client messages: client-first (`n,[a=authzid],n=<user>,r=<client nonce>[,ext]`) answered with
the server-first (`r=<client nonce><server nonce>,s=<salt>,i=<iterations>`), then client-final
(`c=<channel binding>,r=<nonce>,p=<proof>`) answered with `v=<server signature>` once the proof
matches the stored key. The broker holds only StoredKey and ServerKey (minikafka/scram), kept
by AlterUserScramCredentials. Unknown user, wrong proof, a nonce that is not the server's,
malformed messages: a generic failure (Kafka does not say which); an authorization id other than
the user is told as is.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import re
import secrets
from collections.abc import Callable

from minikafka.scram.credentials import MECHANISMS, ScramCredential
from minikafka.security.sasl import SaslFailure

BY_NAME = {m.name: m for m in MECHANISMS.values()}

_CLIENT_FIRST = re.compile(r"n,(?:a=(?P<authzid>[^,]*))?,(?P<bare>(?:m=[^,]*,)?n=(?P<saslname>[^,]*),"
                           r"r=(?P<nonce>[\x21-\x2b\x2d-\x7e]+)(?P<ext>(?:,[A-Za-z]+=[^,]*)*))")
_CLIENT_FINAL = re.compile(r"(?P<without_proof>c=(?P<channel>[^,]*),r=(?P<nonce>[^,]*)(?:,[A-Za-z]+=[^,]*)*?)"
                           r",p=(?P<proof>[A-Za-z0-9+/=]+)")


def _username(saslname: str) -> str:
    """RFC 5802's saslname: ',' and '=' arrive as '=2C' and '=3D'; any other '=' is malformed."""
    if re.search(r"=(?!2C|3D)", saslname):
        raise SaslFailure(f"Invalid username: {saslname}", shown=False)
    return saslname.replace("=2C", ",").replace("=3D", "=")


class ScramServer:
    def __init__(self, mechanism: str, credential: Callable[[str, int], ScramCredential | None],
                 nonce: Callable[[], str] | None = None) -> None:
        self.mechanism = mechanism
        self._mech = BY_NAME[mechanism]
        self._credential = credential
        self._nonce = nonce or (lambda: secrets.token_urlsafe(24))
        self.complete = False
        self.authorization_id = ""
        self._state = "client_first"
        self._cred: ScramCredential | None = None
        self._client_first_bare = ""
        self._server_first = ""
        self._nonce_full = ""

    def evaluate(self, token: bytes) -> bytes:
        try:
            if self._state == "client_first":
                return self._client_first(token)
            if self._state == "client_final":
                return self._client_final(token)
            raise SaslFailure(f"Unexpected challenge in Sasl server state {self._state.upper()}", shown=True)
        except SaslFailure:
            self._state = "failed"
            self._cred = None
            raise

    def _client_first(self, token: bytes) -> bytes:
        text = token.decode("utf-8", errors="replace")
        m = _CLIENT_FIRST.fullmatch(text)
        if m is None:
            raise SaslFailure(f"Invalid SCRAM client first message format: {text}", shown=False)
        username = _username(m["saslname"])
        if "tokenauth=true" in m["ext"].split(","):
            raise SaslFailure(f"Token Authentication failed: Invalid tokenId : {username}", shown=False)
        cred = self._credential(username, self._mech.type)
        if cred is None:
            raise SaslFailure("Authentication failed: Invalid user credentials", shown=False)
        authzid = m["authzid"] or ""
        if authzid and authzid != username:
            raise SaslFailure("Authentication failed: Client requested an authorization id that is different "
                              "from username", shown=True)
        if cred.iterations < self._mech.min_iterations:
            raise SaslFailure(f"Iterations {cred.iterations} is less than the minimum "
                              f"{self._mech.min_iterations} for {self.mechanism}", shown=False)
        self._cred = cred
        self.authorization_id = username
        self._client_first_bare = m["bare"]
        self._nonce_full = m["nonce"] + self._nonce()
        self._server_first = (f"r={self._nonce_full},s={base64.b64encode(cred.salt).decode()},"
                              f"i={cred.iterations}")
        self._state = "client_final"
        return self._server_first.encode()

    def _client_final(self, token: bytes) -> bytes:
        text = token.decode("utf-8", errors="replace")
        m = _CLIENT_FINAL.fullmatch(text)
        if m is None:
            raise SaslFailure(f"Invalid SCRAM client final message format: {text}", shown=False)
        if not m["nonce"].endswith(self._nonce_full):
            raise SaslFailure("Invalid client nonce in the final client message.", shown=False)
        try:
            proof = base64.b64decode(m["proof"], validate=True)
        except binascii.Error:
            raise SaslFailure("Invalid client final message", shown=False) from None
        cred = self._cred
        assert cred is not None
        h = self._mech.hash_name
        auth_message = f"{self._client_first_bare},{self._server_first},{m['without_proof']}".encode()
        signature = hmac.new(cred.stored_key, auth_message, h).digest()
        if len(proof) != len(signature):
            raise SaslFailure("Invalid client credentials", shown=False)
        client_key = bytes(a ^ b for a, b in zip(proof, signature, strict=True))
        if not hmac.compare_digest(hashlib.new(h, client_key).digest(), cred.stored_key):
            raise SaslFailure("Invalid client credentials", shown=False)
        server_signature = hmac.new(cred.server_key, auth_message, h).digest()
        self._cred = None
        self._state = "complete"
        self.complete = True
        return b"v=" + base64.b64encode(server_signature)
