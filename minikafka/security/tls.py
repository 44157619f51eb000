"""TLS for SSL and SASL_SSL listeners: an ssl.SSLContext from Kafka's ssl.* configs, and the
client certificate's subject as Kafka names it.

Key stores: PEM (`ssl.keystore.type=PEM`, the key and chain inline in `ssl.keystore.key` and
`ssl.keystore.certificate.chain`, or both in the file at `ssl.keystore.location`; `ssl.key.password`
for an encrypted key) and PKCS12 (`ssl.keystore.location`, `ssl.keystore.password`). Trust stores
the same (`ssl.truststore.certificates` inline, or `ssl.truststore.location`). Java's JKS format is
refused with a clear message (keytool converts a JKS store to PKCS12). `ssl.client.auth`:
none, requested (a certificate is asked for, and checked if given) or required.
"""

from __future__ import annotations

import os
import ssl
import tempfile
from collections.abc import Callable
from pathlib import Path


class TlsConfigError(ValueError):
    pass


Get = Callable[[str], "str | None"]
_PROTOCOLS = {"TLSv1.2": ssl.TLSVersion.TLSv1_2, "TLSv1.3": ssl.TLSVersion.TLSv1_3}


def _read(path: str, what: str) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError as exc:
        raise TlsConfigError(f"Failed to load SSL keystore {path} of type {what}: {exc.strerror}") from None


def _keystore_pem(get: Get) -> tuple[bytes, bytes, bytes | None]:
    """(certificate chain PEM, key PEM, key password) of the key store."""
    kind = (get("ssl.keystore.type") or "JKS").upper()
    password = get("ssl.key.password")
    if kind == "PEM":
        chain, key, location = get("ssl.keystore.certificate.chain"), get("ssl.keystore.key"), get("ssl.keystore.location")
        if chain and key:
            return chain.encode(), key.encode(), password.encode() if password else None
        if location:
            data = _read(location, "PEM")
            return data, data, password.encode() if password else None
        raise TlsConfigError("ssl.keystore.type=PEM needs ssl.keystore.certificate.chain and ssl.keystore.key, "
                             "or ssl.keystore.location")
    if kind == "PKCS12":
        location = get("ssl.keystore.location")
        if not location:
            raise TlsConfigError("ssl.keystore.type=PKCS12 needs ssl.keystore.location")
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.serialization import pkcs12
        store_password = get("ssl.keystore.password")
        try:
            key, cert, extra = pkcs12.load_key_and_certificates(
                _read(location, "PKCS12"), store_password.encode() if store_password else None)
        except ValueError as exc:
            raise TlsConfigError(f"Failed to load SSL keystore {location} of type PKCS12: {exc}") from None
        if key is None or cert is None:
            raise TlsConfigError(f"SSL keystore {location} holds no private key and certificate")
        chain = b"".join(c.public_bytes(serialization.Encoding.PEM) for c in [cert, *extra])
        key_pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                    serialization.NoEncryption())
        return chain, key_pem, None
    raise TlsConfigError(f"ssl.keystore.type {kind} is not supported by minikafka: use PEM or PKCS12 "
                         "(keytool -importkeystore -deststoretype PKCS12 converts a JKS store)")


def _truststore_pem(get: Get) -> str | None:
    inline, location = get("ssl.truststore.certificates"), get("ssl.truststore.location")
    if not inline and not location:
        return None
    kind = (get("ssl.truststore.type") or "JKS").upper()
    if inline:
        return inline
    assert location is not None
    if kind == "PEM":
        return _read(location, "PEM").decode()
    if kind == "PKCS12":
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.serialization import pkcs12
        password = get("ssl.truststore.password")
        try:
            _, cert, extra = pkcs12.load_key_and_certificates(_read(location, "PKCS12"),
                                                              password.encode() if password else None)
        except ValueError as exc:
            raise TlsConfigError(f"Failed to load SSL truststore {location} of type PKCS12: {exc}") from None
        certs = [c for c in [cert, *extra] if c is not None]
        return "".join(c.public_bytes(serialization.Encoding.PEM).decode() for c in certs)
    raise TlsConfigError(f"ssl.truststore.type {kind} is not supported by minikafka: use PEM or PKCS12")


def server_context(get: Get) -> ssl.SSLContext:
    """The listener's TLS context; raises TlsConfigError naming the config at fault."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    protocols = [p.strip() for p in (get("ssl.enabled.protocols") or "TLSv1.2,TLSv1.3").split(",") if p.strip()]
    unknown = [p for p in protocols if p not in _PROTOCOLS]
    if unknown or not protocols:
        raise TlsConfigError(f"ssl.enabled.protocols: {','.join(unknown) or 'none'} not supported (TLSv1.2, TLSv1.3)")
    ctx.minimum_version = min(_PROTOCOLS[p] for p in protocols)
    ctx.maximum_version = max(_PROTOCOLS[p] for p in protocols)
    chain, key, password = _keystore_pem(get)
    # load_cert_chain reads files only: the PEM goes through a private temporary directory.
    with tempfile.TemporaryDirectory(prefix="minikafka-tls-") as tmp:
        cert_path, key_path = os.path.join(tmp, "chain.pem"), os.path.join(tmp, "key.pem")
        for path, data in ((cert_path, chain), (key_path, key)):
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as f:
                f.write(data)
        try:
            ctx.load_cert_chain(cert_path, key_path, password=password)
        except ssl.SSLError as exc:
            raise TlsConfigError(f"Invalid SSL key store (certificate chain and key do not load): {exc.reason}") from None
    client_auth = (get("ssl.client.auth") or "none").lower()
    if client_auth not in ("none", "requested", "required"):
        raise TlsConfigError(f"Invalid value {client_auth} for configuration ssl.client.auth")
    trust = _truststore_pem(get)
    if client_auth != "none":
        if trust is None:
            raise TlsConfigError(f"ssl.client.auth={client_auth} needs a trust store (ssl.truststore.location "
                                 "or ssl.truststore.certificates)")
        try:
            ctx.load_verify_locations(cadata=trust)
        except ssl.SSLError as exc:
            raise TlsConfigError(f"Invalid SSL trust store: {exc.reason}") from None
        ctx.verify_mode = ssl.CERT_REQUIRED if client_auth == "required" else ssl.CERT_OPTIONAL
    return ctx


def subject_dn(der: bytes) -> str:
    """The certificate's subject in RFC 2253 form, most specific attribute first, as Java's
    X500Principal.getName() writes it (CN=client,OU=dev,O=example)."""
    from cryptography import x509
    return x509.load_der_x509_certificate(der).subject.rfc4514_string()
