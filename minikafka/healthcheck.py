"""`python -m minikafka.healthcheck [host:port]`: exit 0 when a Kafka broker answers ApiVersions.

For container HEALTHCHECKs: sends an ApiVersions v0 request over a plain socket and checks that the
response carries the same correlation id and error code 0 (NONE). Works against minikafka and any
Kafka broker. The address comes from the argument, else $KAFKA_HEALTHCHECK_ADDRESS, else
127.0.0.1:9092. Exit codes: 0 healthy, 1 not answering or answering with an error.
"""

from __future__ import annotations

import os
import socket
import struct
import sys

API_VERSIONS = 18
CORRELATION_ID = 0x4D4B  # "MK"
CLIENT_ID = b"minikafka-healthcheck"
MAX_RESPONSE_BYTES = 1 << 20


def _recv_exactly(sock: socket.socket, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("connection closed by the broker")
        buf += chunk
    return bytes(buf)


def check(host: str, port: int, timeout: float = 3.0) -> tuple[bool, str]:
    """(healthy, description)."""
    # request header v1: api_key, api_version, correlation_id, client_id (nullable string); v0 body is empty
    request = struct.pack(">hhih", API_VERSIONS, 0, CORRELATION_ID, len(CLIENT_ID)) + CLIENT_ID
    try:
        with socket.create_connection((host, port), timeout=timeout) as sock:
            sock.settimeout(timeout)
            sock.sendall(struct.pack(">i", len(request)) + request)
            (size,) = struct.unpack(">i", _recv_exactly(sock, 4))
            if not 6 <= size <= MAX_RESPONSE_BYTES:
                return False, f"implausible response size {size}"
            body = _recv_exactly(sock, size)
    except (OSError, ConnectionError) as exc:
        return False, f"{host}:{port}: {exc}"
    correlation_id, error_code = struct.unpack_from(">ih", body, 0)
    if correlation_id != CORRELATION_ID:
        return False, f"correlation id {correlation_id}, expected {CORRELATION_ID}"
    if error_code != 0:
        return False, f"ApiVersions error code {error_code}"
    (n_apis,) = struct.unpack_from(">i", body, 6)
    return True, f"{host}:{port}: ApiVersions ok, {n_apis} APIs"


def parse_address(address: str) -> tuple[str, int]:
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit():
        raise ValueError(f"expected host:port, got {address!r}")
    return host.strip("[]") or "127.0.0.1", int(port)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    address = args[0] if args else os.environ.get("KAFKA_HEALTHCHECK_ADDRESS", "127.0.0.1:9092")
    try:
        host, port = parse_address(address)
    except ValueError as exc:
        print(f"healthcheck: {exc}", file=sys.stderr)
        return 1
    ok, what = check(host, port)
    print(f"healthcheck: {'healthy' if ok else 'unhealthy'}: {what}", file=sys.stdout if ok else sys.stderr)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
