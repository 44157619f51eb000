"""The floor under a Python request path: `python -m bench.harness.floor`.

The connections curve (scale.py, `active_connections`) drives closed loops of small Produce
requests. This runs the same client against a server that does nothing but answer: an asyncio
Protocol on uvloop that replies to every frame with the same Produce v9 answer (its correlation id
patched in). Its CPU per request is the least any request path written in Python on asyncio can
cost on this machine (socket reads and writes, framing, the loop); minikafka and Apache Kafka are
measured in the same run, one after the other, with the same client.

    python -m bench.harness.floor --connections 1,10,100 --seconds 5 --brokers floor,minikafka,kafka
"""

from __future__ import annotations

import argparse
import asyncio
import socket
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from . import procstat
from .brokers import BROKERS, free_port

_SIZE = struct.Struct(">i")


def serve(port: int) -> None:
    """The canned server (run in its own process)."""
    import uvloop

    from minikafka.protocol import codec, messages
    from minikafka.protocol.types import ZERO_MS

    body = messages.ProduceResponse(responses=(), throttle_time=ZERO_MS)
    canned = bytearray(codec.encode_response(0, 9, 0, body))  # size, correlation id, body

    class Answering(asyncio.Protocol):
        def connection_made(self, transport: Any) -> None:
            self.transport = transport
            self.buffer = b""

        def data_received(self, data: bytes) -> None:
            buf = self.buffer + data if self.buffer else data
            pos = 0
            while len(buf) - pos >= 4:
                (size,) = _SIZE.unpack_from(buf, pos)
                if len(buf) - pos - 4 < size:
                    break
                canned[4:8] = buf[pos + 8:pos + 12]  # the request's correlation id
                self.transport.write(bytes(canned))
                pos += 4 + size
            self.buffer = buf[pos:]

    async def main() -> None:
        server = await asyncio.get_running_loop().create_server(Answering, "127.0.0.1", port)
        async with server:
            await server.serve_forever()

    uvloop.run(main())


class _Floor:
    """The canned server as the curve's `Broker` (port, cpu_seconds, memory, stop)."""

    def __init__(self) -> None:
        self.port = free_port()
        self.bootstrap = f"127.0.0.1:{self.port}"
        self.proc = subprocess.Popen([sys.executable, "-m", "bench.harness.floor", "--serve", str(self.port)],
                                     cwd=Path(__file__).resolve().parents[2])
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline or self.proc.poll() is not None:
                    raise RuntimeError("the canned server did not start") from None
                time.sleep(0.05)

    def cpu_seconds(self) -> float:
        return procstat.cpu_seconds(self.proc.pid)

    def memory(self) -> dict[str, float]:
        return procstat.memory_mb(self.proc.pid)

    def stop(self) -> None:
        self.proc.kill()
        self.proc.wait()


def measure(kind: str, connections: list[int], seconds: float, workdir: Path) -> list[dict[str, Any]]:
    from .scale import active_connections, create_topics

    rows = []
    with tempfile.TemporaryDirectory(dir=workdir) as d:
        if kind == "floor":
            b: Any = _Floor()
        else:
            b = BROKERS[kind](Path(d))
            b.start()  # prepares (Kafka: formats the storage) first
        try:
            if kind != "floor":
                create_topics(b.bootstrap, {"conns": 1})
            asyncio.run(active_connections(b, 10, 3.0))  # warm: connections, JIT, page cache
            for n in connections:
                r = asyncio.run(active_connections(b, n, seconds))
                rows.append({"server": kind, "connections": n, **r})
                print(f"{kind:10s} {n:5d} conns {r['value']:9,.0f} req/s  server {r['broker_cpu_us_per_request']:6.1f} us"
                      f"/request ({r['broker_cpu_pct']:.0f} % CPU)  client {r['client_cpu_pct']:.0f} % CPU", flush=True)
        finally:
            b.stop()
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.harness.floor", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--connections", default="1,10,100")
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--brokers", default="floor,minikafka,kafka", help="comma-separated: floor,minikafka,kafka")
    ap.add_argument("--workdir", type=Path, default=Path(tempfile.gettempdir()))
    ap.add_argument("--serve", type=int, help=argparse.SUPPRESS)  # the canned server's own process
    args = ap.parse_args(argv)
    if args.serve:
        serve(args.serve)
        return 0
    if "kafka" in args.brokers.split(","):
        BROKERS["kafka"].ensure_jars()  # type: ignore[attr-defined]
    connections = [int(x) for x in args.connections.split(",")]
    for kind in args.brokers.split(","):
        measure(kind, connections, args.seconds, args.workdir)
    return 0


if __name__ == "__main__":
    sys.exit(main())
