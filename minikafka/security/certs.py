"""Throw-away certificates for tests and local TLS: a CA, a broker certificate for the given host
names and addresses, and client certificates (for mTLS), as PEM files. Made with the
`cryptography` package (no openssl command needed). Not for production: the keys are written
unencrypted and the CA key sits beside them.

    minikafka certs --out ./certs --client alice
"""

from __future__ import annotations

import dataclasses
import datetime
import ipaddress
import os
from collections.abc import Sequence
from pathlib import Path


@dataclasses.dataclass(frozen=True)
class CertFiles:
    ca: Path  # the CA certificate: the clients' ssl.ca.location, the broker's trust store
    ca_key: Path
    broker_cert: Path  # the broker's certificate chain (its certificate, then the CA's)
    broker_key: Path
    clients: dict[str, tuple[Path, Path]]  # client name -> (certificate, key)

    def broker_properties(self, listener: str | None = None, client_auth: str = "none") -> dict[str, str]:
        """The broker settings that serve TLS with these files (for one listener, or every one)."""
        prefix = f"listener.name.{listener.lower()}." if listener else ""
        props = {f"{prefix}ssl.keystore.type": "PEM",
                 f"{prefix}ssl.keystore.location": str(self.broker_pem)}
        if client_auth != "none":
            props.update({f"{prefix}ssl.client.auth": client_auth, f"{prefix}ssl.truststore.type": "PEM",
                          f"{prefix}ssl.truststore.location": str(self.ca)})
        return props

    @property
    def broker_pem(self) -> Path:
        """Key and chain in one file (ssl.keystore.type=PEM with ssl.keystore.location)."""
        return self.broker_cert.with_name("broker-keystore.pem")


def _write(path: Path, data: bytes, private: bool = False) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600 if private else 0o644)
    with os.fdopen(fd, "wb") as f:
        f.write(data)


def make_certs(out: str | Path, hosts: Sequence[str] = ("localhost", "127.0.0.1"),
               clients: Sequence[str] = ("client",), days: int = 30, organization: str = "minikafka") -> CertFiles:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    now = datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(minutes=5)
    until = now + datetime.timedelta(days=days)

    def name(cn: str) -> x509.Name:
        return x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, organization),
                          x509.NameAttribute(NameOID.COMMON_NAME, cn)])

    def key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
        return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                 serialization.NoEncryption())

    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_cert = (x509.CertificateBuilder().subject_name(name(f"{organization} test CA")).issuer_name(name(f"{organization} test CA"))
               .public_key(ca_key.public_key()).serial_number(x509.random_serial_number())
               .not_valid_before(now).not_valid_after(until)
               .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
               .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                            content_commitment=False, key_encipherment=False, data_encipherment=False,
                                            key_agreement=False, encipher_only=False, decipher_only=False), critical=True)
               .sign(ca_key, hashes.SHA256()))
    ca_pem = ca_cert.public_bytes(serialization.Encoding.PEM)

    def leaf(cn: str, usage: x509.ObjectIdentifier, sans: Sequence[str] = ()) -> tuple[bytes, bytes]:
        key = ec.generate_private_key(ec.SECP256R1())
        builder = (x509.CertificateBuilder().subject_name(name(cn)).issuer_name(ca_cert.subject)
                   .public_key(key.public_key()).serial_number(x509.random_serial_number())
                   .not_valid_before(now).not_valid_after(until)
                   .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
                   .add_extension(x509.ExtendedKeyUsage([usage]), critical=False))
        if sans:
            entries: list[x509.GeneralName] = []
            for h in sans:
                try:
                    entries.append(x509.IPAddress(ipaddress.ip_address(h)))
                except ValueError:
                    entries.append(x509.DNSName(h))
            builder = builder.add_extension(x509.SubjectAlternativeName(entries), critical=False)
        cert = builder.sign(ca_key, hashes.SHA256())
        return cert.public_bytes(serialization.Encoding.PEM), key_pem(key)

    _write(out / "ca.pem", ca_pem)
    _write(out / "ca-key.pem", key_pem(ca_key), private=True)
    broker_cert, broker_key = leaf(hosts[0] if hosts else "localhost", ExtendedKeyUsageOID.SERVER_AUTH, hosts)
    _write(out / "broker.pem", broker_cert + ca_pem)
    _write(out / "broker-key.pem", broker_key, private=True)
    _write(out / "broker-keystore.pem", broker_key + broker_cert + ca_pem, private=True)
    client_files = {}
    for client in clients:
        cert, key = leaf(client, ExtendedKeyUsageOID.CLIENT_AUTH)
        _write(out / f"{client}.pem", cert)
        _write(out / f"{client}-key.pem", key, private=True)
        client_files[client] = (out / f"{client}.pem", out / f"{client}-key.pem")
    return CertFiles(out / "ca.pem", out / "ca-key.pem", out / "broker.pem", out / "broker-key.pem", client_files)
