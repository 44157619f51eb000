"""A connection's authentication sequence (security/session.py), pure: which requests pass in
which state, the handshake and authenticate answers, failures, re-authentication (KIP-368)."""

from __future__ import annotations

import pytest

from minikafka.protocol.errors import ErrorCode
from minikafka.security.listeners import parse_listeners
from minikafka.security.principal import ANONYMOUS, KafkaPrincipal
from minikafka.scram.credentials import MECHANISMS
from minikafka.security import session
from minikafka.security.session import SaslSettings, Session

pytestmark = pytest.mark.unit

PRODUCE, METADATA, HANDSHAKE, API_VERSIONS, AUTHENTICATE = 0, 3, 17, 18, 36
PLAIN_LISTENER, SASL_LISTENER = parse_listeners("PLAINTEXT://127.0.0.1:1,SASL_SSL://127.0.0.1:2")


def sasl_session(reauth_ms: int = 0, mechanisms: tuple[str, ...] = ("PLAIN",)) -> Session:
    settings = SaslSettings(mechanisms=mechanisms, plain_users={"alice": "a-pw", "bob": "b-pw"},
                            scram_credential=lambda user, mechanism: None, reauth_ms=reauth_ms)
    return Session(SASL_LISTENER, sasl=settings)


def test_the_scram_names_written_in_session_are_the_credentials_mechanisms() -> None:
    # session.py names them rather than importing the SCRAM room (kept out of a plain start).
    assert session.SCRAM_MECHANISMS == tuple(m.name for m in MECHANISMS.values())


def test_a_listener_without_sasl_is_open_from_the_start() -> None:
    s = Session(PLAIN_LISTENER)
    assert s.passes_all and s.authenticated and s.principal == ANONYMOUS and s.max_frame_size is None
    assert s.handshake("PLAIN", 1) == (ErrorCode.illegal_sasl_state, ())
    out = s.authenticate(b"\0alice\0a-pw", 2, 0)
    assert out.error == ErrorCode.illegal_sasl_state and not s.failed


def test_before_authentication_only_the_sasl_sequence_passes() -> None:
    s = sasl_session()
    assert not s.passes_all and s.max_frame_size == 524288
    assert [s.admit(k, 0) for k in (API_VERSIONS, HANDSHAKE, PRODUCE, METADATA, AUTHENTICATE)] == [
        True, True, False, False, False]
    s.saw_api_versions()
    assert [s.admit(k, 0) for k in (API_VERSIONS, HANDSHAKE, PRODUCE)] == [False, True, False]
    assert s.handshake("PLAIN", 1) == (ErrorCode.none, ("PLAIN",))
    assert [s.admit(k, 0) for k in (AUTHENTICATE, HANDSHAKE, PRODUCE)] == [True, False, False]
    out = s.authenticate(b"\0alice\0a-pw", 2, 0)
    assert (out.error, out.session_lifetime_ms) == (ErrorCode.none, 0)
    assert s.passes_all and s.principal == KafkaPrincipal("User", "alice") and s.max_frame_size is None


def test_a_request_out_of_sequence_after_the_handshake_is_refused_with_an_answer() -> None:
    s = sasl_session()
    assert not s.refusal(PRODUCE)  # before the handshake: closed without an answer
    s.handshake("PLAIN", 1)
    assert not s.refusal(AUTHENTICATE)
    assert s.refusal(PRODUCE) and s.failed and not s.admit(AUTHENTICATE, 0)


def test_an_unsupported_mechanism_fails_the_connection() -> None:
    s = sasl_session()
    assert s.handshake("SCRAM-SHA-256", 1) == (ErrorCode.unsupported_sasl_mechanism, ("PLAIN",))
    assert s.failed and not s.admit(AUTHENTICATE, 0)


def test_a_wrong_password_fails_with_the_mechanisms_message() -> None:
    s = sasl_session()
    s.handshake("PLAIN", 1)
    out = s.authenticate(b"\0alice\0nope", 1, 0)
    assert (out.error, out.message) == (ErrorCode.sasl_authentication_failed,
                                        "Authentication failed: Invalid username or password")
    assert s.failed and s.failed_delay_ms == 100 and not s.admit(PRODUCE, 0)


def test_scram_failures_are_told_only_generically() -> None:
    s = sasl_session(mechanisms=("SCRAM-SHA-512",))
    s.handshake("SCRAM-SHA-512", 1)
    out = s.authenticate(b"n,,n=nobody,r=abc", 1, 0)
    assert out.message == ("Authentication failed during authentication due to invalid credentials with SASL "
                           "mechanism SCRAM-SHA-512")


def test_handshake_v0_hands_the_tokens_over_bare() -> None:
    s = sasl_session()
    s.handshake("PLAIN", 0)
    assert s.raw_tokens and s.admit(PRODUCE, 0) is False
    assert s.raw_token(b"\0bob\0b-pw") == b"" and s.authenticated and not s.raw_tokens


def test_with_reauthentication_the_session_expires_and_only_a_new_handshake_passes() -> None:
    s = sasl_session(reauth_ms=1000)
    s.handshake("PLAIN", 1)
    out = s.authenticate(b"\0alice\0a-pw", 2, now_ms=5000)
    assert out.session_lifetime_ms == 1000 and s.expires_at_ms == 6000
    assert not s.passes_all  # the expiry is checked per request
    assert s.admit(PRODUCE, 5999) and not s.admit(PRODUCE, 6000) and s.admit(HANDSHAKE, 6000)
    assert s.handshake("PLAIN", 1) == (ErrorCode.none, ("PLAIN",))
    assert [s.admit(k, 6001) for k in (PRODUCE, AUTHENTICATE)] == [False, True]
    assert s.authenticate(b"\0alice\0a-pw", 2, now_ms=6001).session_lifetime_ms == 1000
    assert s.admit(PRODUCE, 6500) and s.expires_at_ms == 7001


def test_a_client_that_cannot_reauthenticate_is_not_given_a_lifetime() -> None:
    s = sasl_session(reauth_ms=1000)
    s.handshake("PLAIN", 1)
    assert s.authenticate(b"\0alice\0a-pw", 0, 0).session_lifetime_ms == 0  # SaslAuthenticate v0
    assert s.passes_all and s.handshake("PLAIN", 1) == (ErrorCode.illegal_sasl_state, ())


def test_reauthentication_keeps_the_principal_and_the_mechanism() -> None:
    s = sasl_session(reauth_ms=1000, mechanisms=("PLAIN", "SCRAM-SHA-256"))
    s.handshake("PLAIN", 1)
    s.authenticate(b"\0alice\0a-pw", 2, 0)
    s.handshake("PLAIN", 1)
    out = s.authenticate(b"\0bob\0b-pw", 2, 10)
    assert out.error == ErrorCode.sasl_authentication_failed
    assert out.message == "Cannot change principals during re-authentication from User:alice: User:bob"
    assert s.failed

    s = sasl_session(reauth_ms=1000, mechanisms=("PLAIN", "SCRAM-SHA-256"))
    s.handshake("PLAIN", 1)
    s.authenticate(b"\0alice\0a-pw", 2, 0)
    assert s.handshake("SCRAM-SHA-256", 1)[0] == ErrorCode.none
    out = s.authenticate(b"n,,n=alice,r=x", 2, 10)
    assert out.message is not None and "not supported for re-authentication of mechanism 'PLAIN'" in out.message
