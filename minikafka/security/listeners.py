"""Kafka's listeners: `listeners`, `advertised.listeners` and `listener.security.protocol.map`
(pure).

A listener is NAME://host:port; its security protocol is the one the map gives its name (Kafka's
default map names PLAINTEXT, SSL, SASL_PLAINTEXT and SASL_SSL after themselves). A listener not in
`advertised.listeners` advertises its own address (0.0.0.0 or an empty host: 127.0.0.1 here, where
Kafka would use the machine's canonical host name). Errors are Kafka's words, raised as ValueError.
"""

from __future__ import annotations

import dataclasses

SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
# Kafka 4.3.1's default (SocketServerConfigs.LISTENER_SECURITY_PROTOCOL_MAP_DEFAULT)
DEFAULT_PROTOCOL_MAP = "SASL_SSL:SASL_SSL,PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT"


@dataclasses.dataclass(frozen=True)
class Listener:
    name: str  # upper case, as Kafka's ListenerName.normalised
    host: str
    port: int
    security_protocol: str
    advertised_host: str
    advertised_port: int  # 0: the port the listener was bound to, once it is (see bound())

    @property
    def tls(self) -> bool:
        return self.security_protocol in ("SSL", "SASL_SSL")

    @property
    def sasl(self) -> bool:
        return self.security_protocol in ("SASL_PLAINTEXT", "SASL_SSL")

    @property
    def config_prefix(self) -> str:
        """Kafka's per-listener override prefix: listener.name.<lower-case name>."""
        return f"listener.name.{self.name.lower()}."

    def bound(self, port: int) -> Listener:
        """This listener once its socket is bound (port 0 asked for any free port)."""
        advertised = self.advertised_port if self.advertised_port != 0 else port
        return dataclasses.replace(self, port=port, advertised_port=advertised)


def parse_endpoints(spec: str) -> list[tuple[str, str, int]]:
    """NAME://host:port,... as (NAME, host, port); IPv6 hosts in brackets."""
    out = []
    for part in filter(None, (p.strip() for p in spec.split(","))):
        if "://" not in part:
            raise ValueError(f"Unable to parse {part} to a broker endpoint")
        name, rest = part.split("://", 1)
        host, sep, port = rest.rpartition(":")
        if not sep or not port.isdigit() or not name:
            raise ValueError(f"Unable to parse {part} to a broker endpoint")
        if host.startswith("[") and host.endswith("]"):
            host = host[1:-1]
        out.append((name.upper(), host, int(port)))
    return out


def parse_protocol_map(spec: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for part in filter(None, (p.strip() for p in spec.split(","))):
        name, sep, protocol = part.partition(":")
        if not sep:
            raise ValueError(f"Invalid listener.security.protocol.map entry {part}: expected NAME:PROTOCOL")
        protocol = protocol.strip().upper()
        if protocol not in SECURITY_PROTOCOLS:
            raise ValueError(f"No enum constant org.apache.kafka.common.security.auth.SecurityProtocol.{protocol}")
        out[name.strip().upper()] = protocol
    return out


def parse_listeners(listeners: str, advertised: str = "", protocol_map: str | None = None) -> tuple[Listener, ...]:
    """The broker's listeners in the order given; raises ValueError as Kafka refuses to start."""
    protocols = parse_protocol_map(protocol_map or DEFAULT_PROTOCOL_MAP)
    endpoints = parse_endpoints(listeners)
    if not endpoints:
        raise ValueError("listeners must name at least one listener")
    names = [n for n, _, _ in endpoints]
    for name in names:
        if names.count(name) > 1:
            raise ValueError(f"Each listener must have a different name, listeners: {listeners}")
        if name not in protocols:
            raise ValueError(f"No security protocol defined for listener {name}")
    ports = [p for _, _, p in endpoints if p != 0]
    if len(ports) != len(set(ports)):
        raise ValueError(f"Each listener must have a different port, listeners: {listeners}")
    adv = {n: (h, p) for n, h, p in parse_endpoints(advertised)}
    unknown = sorted(set(adv) - set(names))
    if unknown:
        raise ValueError(f"advertised.listeners listener names must be equal to or a subset of the ones "
                         f"defined in listeners. Found {','.join(unknown)}.")
    out = []
    for name, host, port in endpoints:
        adv_host, adv_port = adv.get(name, (host, port))
        if adv_host in ("0.0.0.0", "::", ""):
            adv_host = "127.0.0.1"
        out.append(Listener(name, host, port, protocols[name], adv_host, adv_port))
    return tuple(out)
