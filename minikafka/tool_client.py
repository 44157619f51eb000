"""A small blocking client of the Kafka protocol for minikafka's own tools (`minikafka inspect
--bootstrap`, `minikafka check-eos`), on minikafka's codec: one connection, one request at a time
(Kafka answers in order). It works against any Kafka broker."""

from __future__ import annotations

import itertools
import socket
import struct
from typing import Any

from minikafka.protocol import codec


class ToolClient:
    def __init__(self, bootstrap: str, timeout: float, *, client_id: str,
                 error: type[Exception] = ConnectionError) -> None:
        """`error`: the exception the tool reports its failures with (a message, no traceback)."""
        self.error = error
        self.client_id = client_id
        host, sep, port = bootstrap.split(",")[0].strip().rpartition(":")
        if not sep or not port.isdigit():
            raise error(f"--bootstrap {bootstrap!r} is not HOST:PORT")
        try:
            self.sock = socket.create_connection((host.strip("[]") or "127.0.0.1", int(port)), timeout=timeout)
        except OSError as exc:
            raise error(f"cannot connect to {bootstrap}: {exc}") from exc
        self._corr = itertools.count(1)

    def close(self) -> None:
        self.sock.close()

    def _recv_exactly(self, n: int) -> bytes:
        buf = bytearray()
        while len(buf) < n:
            chunk = self.sock.recv(n - len(buf))
            if not chunk:
                raise self.error("the broker closed the connection (request not supported?)")
            buf += chunk
        return bytes(buf)

    def request(self, body: Any, api_version: int) -> Any:
        corr = next(self._corr)
        try:
            self.sock.sendall(codec.encode_request(api_version, corr, self.client_id, body))
            (size,) = struct.unpack(">i", self._recv_exactly(4))
            got, resp = codec.decode_response(type(body).__api_key__, api_version, self._recv_exactly(size))
        except OSError as exc:
            raise self.error(f"{type(body).__name__}: {exc}") from exc
        if got != corr:
            raise self.error(f"{type(body).__name__}: correlation id {got} in the answer, {corr} expected")
        return resp
