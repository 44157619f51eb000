"""Each listener's security, from the broker's Kafka-named configs.

A listener reads `listener.name.<name>.<config>` first and `<config>` after, as Kafka does; the
JAAS config of a mechanism only from `listener.name.<name>.<mechanism>.sasl.jaas.config` (Kafka's
broker requires the prefix too). Errors are raised as ValueError and stop the broker at start.
"""

from __future__ import annotations

import dataclasses
import ssl
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from minikafka.security.listeners import Listener, parse_listeners
from minikafka.security.principal import ANONYMOUS, KafkaPrincipal, NoMatchingRule, SslPrincipalMapper
from minikafka.security.session import SCRAM_MECHANISMS, SUPPORTED_MECHANISMS, SaslSettings, Session

if TYPE_CHECKING:  # imported by the listeners that use them (TLS, SASL): a PLAINTEXT broker never loads them
    from minikafka.scram.credentials import ScramCredential
    from minikafka.security.jwks import JwksValidator
    from minikafka.security.sasl.oauthbearer import UnsecuredValidator

# The configs this room reads (the broker no longer calls them ignored).
USED_PREFIXES = ("ssl.", "sasl.", "listener.name.", "listener.security.protocol.map",
                 "connections.max.reauth.ms", "connection.failed.authentication.delay.ms",
                 "authorizer.class.name", "super.users", "allow.everyone.if.no.acl.found")
# sasl.oauthbearer.* are read from there too (USED_PREFIXES holds "sasl.")


@dataclasses.dataclass(frozen=True)
class ListenerSecurity:
    listener: Listener
    ssl_context: ssl.SSLContext | None = None
    principal_mapper: SslPrincipalMapper = dataclasses.field(default_factory=SslPrincipalMapper)
    sasl: SaslSettings | None = None

    @property
    def jwks(self) -> JwksValidator | None:
        """The listener's JWKS-checked OAUTHBEARER validator (its key set needs refreshing)."""
        if self.sasl is None or "OAUTHBEARER" not in self.sasl.mechanisms:
            return None
        from minikafka.security.jwks import JwksValidator
        v = self.sasl.oauth_validator
        return v if isinstance(v, JwksValidator) else None

    def bound(self, port: int) -> ListenerSecurity:
        return dataclasses.replace(self, listener=self.listener.bound(port))

    def new_session(self, peer_certificate: bytes | None = None) -> Session:
        """A connection's session; `peer_certificate`: the client's certificate (DER) on a TLS
        listener that asked for one. Raises NoMatchingRule when no mapping rule names it."""
        principal = ANONYMOUS
        if peer_certificate and self.sasl is None:
            from minikafka.security import tls
            principal = KafkaPrincipal("User", self.principal_mapper.name(tls.subject_dn(peer_certificate)))
        return Session(self.listener, principal, self.sasl)


def _getter(raw: Mapping[str, str], listener: Listener) -> Callable[[str], str | None]:
    prefix = listener.config_prefix

    def get(name: str) -> str | None:
        value = raw.get(prefix + name)
        return value if value is not None else raw.get(name)
    return get


def _int(get: Callable[[str], str | None], name: str, default: int) -> int:
    value = get(name)
    try:
        return default if value in (None, "") else int(value)  # type: ignore[arg-type]
    except ValueError:
        raise ValueError(f"Invalid value {value} for configuration {name}: Not a number of type INT") from None


def listener_securities(listeners: str, advertised: str, raw: Mapping[str, str],
                        scram_credential: Callable[[str, int], ScramCredential | None],
                        now_ms: Callable[[], int] = lambda: 0) -> tuple[ListenerSecurity, ...]:
    """Every listener with what it needs to accept connections."""
    out = []
    for listener in parse_listeners(listeners, advertised, raw.get("listener.security.protocol.map")):
        get = _getter(raw, listener)
        context = None
        if listener.tls:
            from minikafka.security import tls
            try:
                context = tls.server_context(get)
            except tls.TlsConfigError as exc:
                raise ValueError(f"listener {listener.name}: {exc}") from None
        try:
            mapper = SslPrincipalMapper(get("ssl.principal.mapping.rules") or "DEFAULT")
        except ValueError as exc:
            raise ValueError(f"ssl.principal.mapping.rules: {exc}") from None
        sasl = _sasl_settings(listener, get, raw, scram_credential, now_ms) if listener.sasl else None
        out.append(ListenerSecurity(listener, context, mapper, sasl))
    return tuple(out)


def _jaas_options(listener: Listener, raw: Mapping[str, str], mechanism: str, example: str) -> dict[str, str]:
    """The options of a mechanism's JAAS entry on the listener, which Kafka's broker requires
    (listener.name.<l>.<mechanism>.sasl.jaas.config)."""
    from minikafka.security.jaas import parse_jaas_options
    name = f"{listener.config_prefix}{mechanism}.sasl.jaas.config"
    jaas = raw.get(name)
    if not jaas:
        raise ValueError(f"listener {listener.name}: SASL/{mechanism.upper()} needs {name} ({example})")
    try:
        return parse_jaas_options(jaas)
    except ValueError as exc:
        raise ValueError(f"{name}: {exc}") from None


def _sasl_settings(listener: Listener, get: Callable[[str], str | None], raw: Mapping[str, str],
                   scram_credential: Callable[[str, int], ScramCredential | None],
                   now_ms: Callable[[], int]) -> SaslSettings:
    # Each mechanism's module is imported here, with the listener, when the listener enables it:
    # not at the first client's handshake, on the event loop (the SCRAM room is ~2.3 ms).
    from minikafka.security.sasl.oauthbearer import UnsecuredValidator  # also the default validator
    enabled = tuple(m.strip() for m in (get("sasl.enabled.mechanisms") or "GSSAPI").split(",") if m.strip())
    unsupported = [m for m in enabled if m not in SUPPORTED_MECHANISMS]
    if unsupported:
        raise ValueError(f"listener {listener.name}: SASL mechanism {', '.join(unsupported)} is not supported by "
                         f"minikafka (sasl.enabled.mechanisms may name {', '.join(SUPPORTED_MECHANISMS)})")
    if not enabled:
        raise ValueError(f"listener {listener.name}: sasl.enabled.mechanisms is empty")
    users: dict[str, str] = {}
    if "PLAIN" in enabled:
        from minikafka.security.sasl.plain import users_of
        users = users_of(_jaas_options(listener, raw, "plain", 'PlainLoginModule required user_alice="alice-secret";'))
    validator: UnsecuredValidator | JwksValidator = UnsecuredValidator()
    if any(m in SCRAM_MECHANISMS for m in enabled):
        from minikafka.security.sasl import scram  # noqa: F401 - imported now, see above
    if "OAUTHBEARER" in enabled:
        from minikafka.security.jwks import VALIDATOR_CLASSES, JwksValidator
        options = _jaas_options(listener, raw, "oauthbearer",
                                "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required ;")
        prefix = f"{listener.config_prefix}oauthbearer."
        handler = raw.get(prefix + "sasl.server.callback.handler.class")
        if handler in VALIDATOR_CLASSES:  # tokens signed by an identity provider, checked with its JWKS
            try:
                validator = JwksValidator.from_configs(lambda n: raw.get(prefix + n) or get(n))
            except ValueError as exc:
                raise ValueError(f"listener {listener.name}: {exc}") from None
        elif handler:
            raise ValueError(f"listener {listener.name}: {prefix}sasl.server.callback.handler.class={handler} is not "
                             f"supported by minikafka (use {VALIDATOR_CLASSES[0]}, or none for unsecured tokens)")
        else:
            try:
                validator = UnsecuredValidator.from_options(options)
            except ValueError as exc:
                raise ValueError(f"{prefix}sasl.jaas.config: {exc}") from None
    return SaslSettings(mechanisms=enabled, plain_users=users, scram_credential=scram_credential,
                        oauth_validator=validator, now_ms=now_ms,
                        reauth_ms=_int(get, "connections.max.reauth.ms", 0),
                        failed_delay_ms=_int(get, "connection.failed.authentication.delay.ms", 100),
                        max_receive_size=_int(get, "sasl.server.max.receive.size", 524288))


__all__ = ["ListenerSecurity", "NoMatchingRule", "USED_PREFIXES", "listener_securities"]
