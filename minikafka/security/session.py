"""One connection's authentication state, as Kafka's SaslServerAuthenticator and KafkaChannel keep
it (pure: the time is passed in).

On a PLAINTEXT or SSL listener the session is open from the start (User:ANONYMOUS, or the client
certificate's principal). On a SASL listener a request passes only in the order Kafka allows:

    initial --ApiVersions--> handshake --SaslHandshake--> authenticate --SaslAuthenticate...--> open
       \\--SaslHandshake------------------------------^

Anything else before `open` closes the connection (Kafka: "Unexpected Kafka request of type X
during SASL handshake"). A failed exchange answers SASL_AUTHENTICATION_FAILED (or
UNSUPPORTED_SASL_MECHANISM), held back `connection.failed.authentication.delay.ms`, then closes.

Re-authentication (KIP-368): with `connections.max.reauth.ms` > 0 a client that authenticated with
SaslAuthenticate v1+ is told the session's lifetime; once it has passed, any request but a new
SaslHandshake closes the connection. A re-authentication must keep the mechanism and principal.

SaslHandshake v0 (before KIP-152): the tokens that follow come as bare size-prefixed frames with
no request header (`raw_tokens`; the connection hands them to `raw_token`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from minikafka.protocol.errors import ErrorCode
from minikafka.security.listeners import Listener
from minikafka.security.principal import ANONYMOUS, KafkaPrincipal
from minikafka.security.sasl import SaslFailure, SaslMechanism, generic_failure_message

if TYPE_CHECKING:
    from minikafka.scram.credentials import ScramCredential

API_VERSIONS, SASL_HANDSHAKE, SASL_AUTHENTICATE = 18, 17, 36
# The mechanisms' modules (with the SCRAM credentials and hashlib, ~4 ms) are imported by the
# settings of a SASL listener that enables them (security/settings.py), not with every session: a
# PLAINTEXT or SSL listener never needs them. The SCRAM names are written out for that reason; a
# unit test holds them equal to scram.credentials'.
SCRAM_MECHANISMS = ("SCRAM-SHA-256", "SCRAM-SHA-512")
SUPPORTED_MECHANISMS = ("PLAIN", *SCRAM_MECHANISMS, "OAUTHBEARER")


def _unsecured_validator() -> Any:
    from minikafka.security.sasl.oauthbearer import UnsecuredValidator
    return UnsecuredValidator()


@dataclasses.dataclass(frozen=True)
class SaslSettings:
    """A SASL listener's settings (Kafka's names in security/settings.py)."""

    mechanisms: tuple[str, ...]  # sasl.enabled.mechanisms, in the order given
    plain_users: Mapping[str, str]  # from the listener's PlainLoginModule JAAS config
    scram_credential: Callable[[str, int], ScramCredential | None]
    reauth_ms: int = 0  # connections.max.reauth.ms
    failed_delay_ms: int = 100  # connection.failed.authentication.delay.ms
    max_receive_size: int = 524288  # sasl.server.max.receive.size
    oauth_validator: Any = dataclasses.field(default_factory=_unsecured_validator)  # or jwks.JwksValidator
    now_ms: Callable[[], int] = lambda: 0  # the broker's clock (token expiry; virtual time in tests)

    def mechanism(self, name: str) -> SaslMechanism:
        if name == "PLAIN":
            from minikafka.security.sasl.plain import PlainServer
            return PlainServer(self.plain_users)
        if name == "OAUTHBEARER":
            from minikafka.security.sasl.oauthbearer import OAuthBearerServer
            return OAuthBearerServer(self.oauth_validator, self.now_ms)
        from minikafka.security.sasl.scram import ScramServer
        return ScramServer(name, self.scram_credential)


@dataclasses.dataclass(frozen=True)
class AuthOutcome:
    """What SaslAuthenticate answers."""

    error: ErrorCode
    message: str | None = None
    auth_bytes: bytes = b""
    session_lifetime_ms: int = 0


class Session:
    def __init__(self, listener: Listener, principal: KafkaPrincipal = ANONYMOUS,
                 sasl: SaslSettings | None = None) -> None:
        self.listener = listener
        self.principal = principal
        self.sasl = sasl
        self.state = "initial" if sasl is not None else "open"
        self.failed = False  # the exchange failed: answer after the delay, then close
        self.raw_tokens = False  # SaslHandshake v0: bare tokens follow
        self.mechanism_name: str | None = None
        self._mechanism: SaslMechanism | None = None
        self._reauth_capable = False  # the client used SaslAuthenticate v1+
        self._reauthenticating = False
        self._reauth_bad_mechanism: str | None = None
        self.expires_at_ms: int | None = None
        self._credential_expiry: int | None = None
        self._changed_principal = ""  # the failure message of a re-authentication as someone else
        # Every request passes without a look at it: the common case costs one attribute read.
        self.passes_all = self.state == "open"

    @property
    def authenticated(self) -> bool:
        return self.state == "open"

    @property
    def failed_delay_ms(self) -> int:
        return self.sasl.failed_delay_ms if self.sasl is not None else 0

    @property
    def max_frame_size(self) -> int | None:
        """Before authentication a SASL listener reads no frame above sasl.server.max.receive.size."""
        return None if self.sasl is None or self.state == "open" else self.sasl.max_receive_size

    def _set_state(self, state: str) -> None:
        self.state = state
        self.passes_all = state == "open" and self.expires_at_ms is None

    def admit(self, api_key: int, now_ms: int) -> bool:
        """May a request of this API be handled? False: close the connection."""
        state = self.state
        if state == "open":
            if self.expires_at_ms is not None and now_ms >= self.expires_at_ms:
                return api_key == SASL_HANDSHAKE and self._reauth_capable
            return True
        if state == "initial":
            return api_key in (API_VERSIONS, SASL_HANDSHAKE)
        if state == "handshake":
            return api_key == SASL_HANDSHAKE
        if state in ("authenticate", "reauthenticate"):
            return api_key == SASL_AUTHENTICATE
        return False

    def refusal(self, api_key: int) -> bool:
        """A request other than SaslAuthenticate after the handshake: Kafka answers it with its
        API's ILLEGAL_SASL_STATE error (after the failure delay) and closes, where a request before
        the handshake only closes the connection. The session fails."""
        if self.state in ("authenticate", "reauthenticate") and api_key != SASL_AUTHENTICATE:
            self._fail()
            return True
        return False

    def saw_api_versions(self) -> None:
        if self.state == "initial":
            self._set_state("handshake")

    def handshake(self, mechanism: str, version: int) -> tuple[ErrorCode, tuple[str, ...]]:
        """SaslHandshake: (error code, the enabled mechanisms)."""
        if self.sasl is None:
            return ErrorCode.illegal_sasl_state, ()
        enabled = self.sasl.mechanisms
        if self.state == "open":
            if not self._reauth_capable or version < 1:
                return ErrorCode.illegal_sasl_state, ()
            if mechanism not in enabled:
                return self._fail_handshake(enabled)
            # KIP-368: a new exchange on an authenticated connection; a changed mechanism fails
            # at the first SaslAuthenticate, as in Kafka.
            self._reauthenticating = True
            if mechanism != self.mechanism_name:
                self._reauth_bad_mechanism = (
                    f"SASL mechanism '{mechanism}' requested by client is not supported for re-authentication of "
                    f"mechanism '{self.mechanism_name}' and principal '{self.principal}'")
            self._mechanism = self.sasl.mechanism(mechanism) if mechanism == self.mechanism_name else None
            self._set_state("reauthenticate")
            return ErrorCode.none, enabled
        if self.state not in ("initial", "handshake"):
            self._fail()
            return ErrorCode.illegal_sasl_state, enabled
        if mechanism not in enabled:
            return self._fail_handshake(enabled)
        self.mechanism_name = mechanism
        self._mechanism = self.sasl.mechanism(mechanism)
        self.raw_tokens = version == 0
        self._set_state("authenticate")
        return ErrorCode.none, enabled

    def _fail_handshake(self, enabled: tuple[str, ...]) -> tuple[ErrorCode, tuple[str, ...]]:
        self._fail()
        return ErrorCode.unsupported_sasl_mechanism, enabled

    def _fail(self) -> None:
        self.failed = True
        self._mechanism = None
        self._set_state("failed")

    def authenticate(self, token: bytes, version: int, now_ms: int) -> AuthOutcome:
        """SaslAuthenticate: one token of the exchange."""
        if self.state == "open" or self.sasl is None:
            return AuthOutcome(ErrorCode.illegal_sasl_state,
                               "SaslAuthenticate request received after successful authentication")
        if self.state not in ("authenticate", "reauthenticate"):
            self._fail()
            return AuthOutcome(ErrorCode.illegal_sasl_state, f"Unexpected SaslAuthenticate in state {self.state}")
        self._reauth_capable = self._reauth_capable or version > 0
        if self._reauth_bad_mechanism is not None:
            message = self._reauth_bad_mechanism
            self._fail()
            return AuthOutcome(ErrorCode.sasl_authentication_failed, message)
        try:
            answer = self._step(token)
        except SaslFailure as failure:
            self._fail()
            message = failure.message if failure.shown else generic_failure_message(
                self.mechanism_name or "", self._reauthenticating)
            return AuthOutcome(ErrorCode.sasl_authentication_failed, message)
        if self.state == "failed":  # a re-authentication that changed the principal
            return AuthOutcome(ErrorCode.sasl_authentication_failed, self._changed_principal)
        lifetime = 0
        if self.state == "open" and self._reauth_capable:
            # Kafka's ReauthInfo: connections.max.reauth.ms, and no later than the credential
            # (an OAUTHBEARER token) expires.
            bounds = [b for b in (self.sasl.reauth_ms or None,
                                  None if self._credential_expiry is None else max(1, self._credential_expiry - now_ms))
                      if b is not None]
            if bounds:
                lifetime = min(bounds)
                self.expires_at_ms = now_ms + lifetime
                self._set_state("open")
        return AuthOutcome(ErrorCode.none, None, answer, lifetime)

    def raw_token(self, token: bytes) -> bytes:
        """SaslHandshake v0: one bare token; raises SaslFailure (the connection closes)."""
        if self.state != "authenticate":
            raise SaslFailure(f"Unexpected SASL token in state {self.state}", shown=False)
        if self.sasl is not None and len(token) > self.sasl.max_receive_size:
            raise SaslFailure("Failing SASL authentication due to invalid receive size", shown=True)
        try:
            answer = self._step(token)
        except SaslFailure:
            self._fail()
            raise
        if self.state == "open":
            self.raw_tokens = False
        return answer

    def _step(self, token: bytes) -> bytes:
        mechanism = self._mechanism
        assert mechanism is not None
        answer = mechanism.evaluate(token)
        if mechanism.complete:
            self._credential_expiry = getattr(mechanism, "credential_expires_at_ms", None)
            principal = KafkaPrincipal("User", mechanism.authorization_id)
            self._mechanism = None
            if self._reauthenticating and principal != self.principal:
                self._changed_principal = (f"Cannot change principals during re-authentication from "
                                           f"{self.principal}: {principal}")
                self._fail()
                return answer
            self.principal = principal
            self._reauthenticating = False
            self.expires_at_ms = None
            self._set_state("open")
        return answer
