"""The floor under a start-up (O1) on minikafka's required stack: `python -m bench.harness.start_floor`.

O1 times a spawn to the first ApiVersions answer, and to a CreateTopics that succeeds (bench
launcher, brokers.py). Part of that time is no broker's own: the interpreter, and the stack every
minikafka must import (asyncio, uvloop, structlog configured, argparse, kio's codec). This measures
that part. The floor server (`serve`, its own process, spawned by path so that no package of this
repository is imported) loads that stack, listens, and answers the O1 client's requests and nothing
else: ApiVersions, Metadata and CreateTopics, each request decoded and each answer encoded with kio,
with no storage, no checks, no handlers. It advertises the API versions minikafka does (handed over
on its command line), so the client speaks the same versions to both.

The same launcher and client time it and minikafka, alternated start by start in one run:

    python -m bench.harness.start_floor --starts 7 --rounds 2

What minikafka takes beyond the floor is what its own code costs a start (imports of its rooms,
the data dir, its listener); the floor itself is what no broker on this stack can go below here.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

API_VERSIONS, METADATA, CREATE_TOPICS = 18, 3, 19


def serve(port: int, ranges: dict[int, tuple[int, int]]) -> None:
    """The floor server: the required stack, and answers to the three O1 APIs."""
    # What minikafka's process also keeps out (see minikafka/__main__.py _serve).
    sys.modules.setdefault("hypothesis", None)  # type: ignore[arg-type]
    sys.modules.setdefault("greenlet", None)  # type: ignore[arg-type]
    import asyncio
    import datetime
    import io
    import struct
    import uuid

    import structlog
    import uvloop
    from kio.index import load_request_schema, load_response_schema
    from kio.schema.errors import ErrorCode
    from kio.serial import entity_reader, entity_writer

    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(30))
    log = structlog.get_logger("floor")
    size_of = struct.Struct(">i")
    head = struct.Struct(">hhi")

    def entity(cls: type[Any], **values: Any) -> Any:
        """`cls` with the values its version has (kio's classes differ by version)."""
        return cls(**{k: v for k, v in values.items() if k in cls.__dataclass_fields__})

    def nested(cls: type[Any], name: str) -> type[Any]:
        return getattr(sys.modules[cls.__module__], name)  # type: ignore[no-any-return]

    def answer(api_key: int, version: int, request: Any) -> Any:
        cls = load_response_schema(api_key, version)
        zero = datetime.timedelta(0)
        if api_key == API_VERSIONS:
            key = nested(cls, "ApiVersion")
            return entity(cls, error_code=ErrorCode.none, throttle_time=zero,
                          api_keys=tuple(key(api_key=k, min_version=lo, max_version=hi)
                                         for k, (lo, hi) in sorted(ranges.items())))
        if api_key == METADATA:
            broker = nested(cls, "MetadataResponseBroker")(node_id=1, host="127.0.0.1", port=port, rack=None)
            return entity(cls, throttle_time=zero, brokers=(broker,), cluster_id="floor", controller_id=1,
                          topics=(), error_code=ErrorCode.none, cluster_authorized_operations=-2147483648)
        result = nested(cls, "CreatableTopicResult")
        return entity(cls, throttle_time=zero, topics=tuple(
            entity(result, name=t.name, topic_id=uuid.uuid4(), error_code=ErrorCode.none,
                   error_message=None, topic_config_error_code=0, num_partitions=1, replication_factor=1,
                   configs=()) for t in request.topics))

    def respond(frame: bytes) -> bytes:
        api_key, version, correlation_id = head.unpack_from(frame, 0)
        cls = load_request_schema(api_key, version)
        _header, used = entity_reader(cls.__header_schema__)(frame, 0)  # read, as a broker must
        request, _ = entity_reader(cls)(frame, used)
        body = answer(api_key, version, request)
        buf = io.BytesIO()
        buf.write(b"\0\0\0\0" + size_of.pack(correlation_id))
        if body.__flexible__ and api_key != API_VERSIONS:
            buf.write(b"\0")  # response header v1's empty tagged fields
        entity_writer(type(body))(buf, body)
        data = buf.getbuffer()
        size_of.pack_into(data, 0, len(data) - 4)
        return bytes(data)

    class Answering(asyncio.Protocol):
        def connection_made(self, transport: Any) -> None:
            self.transport = transport
            self.buffer = b""

        def data_received(self, data: bytes) -> None:
            buf = self.buffer + data
            while len(buf) >= 4:
                (size,) = size_of.unpack_from(buf, 0)
                if len(buf) - 4 < size:
                    break
                self.transport.write(respond(buf[4:4 + size]))
                buf = buf[4 + size:]
            self.buffer = buf

    async def main() -> None:
        server = await asyncio.get_running_loop().create_server(Answering, "127.0.0.1", port)
        log.info("listening", port=port)
        async with server:
            await server.serve_forever()

    uvloop.run(main())


def _launcher(kind: str, workdir: Path) -> Any:
    """minikafka, or the floor server, as the bench launcher's Broker (the same spawn and probes)."""
    from minikafka.protocol.versions import SUPPORTED

    from .brokers import MiniKafka

    broker = MiniKafka(workdir)
    if kind == "floor":
        ranges = json.dumps({k: [r.min, r.max] for k, r in SUPPORTED.items()})
        # -P: the script's directory (bench/harness) is not put on sys.path
        broker.command = lambda: [sys.executable, "-P", str(Path(__file__).resolve()), "--serve", str(broker.port),
                                  "--ranges", ranges]
    broker.prepare = lambda: {}  # minikafka's bytecode is compiled once, before the first start
    return broker


def measure(starts: int, rounds: int, workdir: Path) -> dict[str, dict[str, list[float]]]:
    out: dict[str, dict[str, list[float]]] = {k: {"api": [], "ready": []} for k in ("floor", "minikafka")}
    from .brokers import MiniKafka

    with tempfile.TemporaryDirectory(dir=workdir) as d:
        MiniKafka(Path(d)).prepare()  # bytecode as `pip install` leaves it (see MiniKafka.prepare)
    for r in range(rounds):
        for kind in ("floor", "minikafka"):
            for _ in range(starts):
                with tempfile.TemporaryDirectory(dir=workdir) as d:
                    b = _launcher(kind, Path(d))
                    info = b.start()
                    out[kind]["api"].append(info["spawn_to_api_s"])
                    out[kind]["ready"].append(info["spawn_to_ready_s"])
                    b.stop()
            s = out[kind]
            print(f"round {r + 1} {kind:9s} api {statistics.median(s['api'][-starts:]):.3f} s  "
                  f"ready {statistics.median(s['ready'][-starts:]):.3f} s", flush=True)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.harness.start_floor", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--starts", type=int, default=7, help="starts of each per round")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--workdir", type=Path, default=Path(tempfile.gettempdir()))
    ap.add_argument("--out", type=Path, help="write the medians and every start as JSON here")
    ap.add_argument("--serve", type=int, help=argparse.SUPPRESS)  # the floor server's own process
    ap.add_argument("--ranges", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.serve:
        serve(args.serve, {int(k): (lo, hi) for k, (lo, hi) in json.loads(args.ranges).items()})
        return 0
    out = measure(args.starts, args.rounds, args.workdir)
    summary = {kind: {m: statistics.median(v) for m, v in s.items()} for kind, s in out.items()}
    for m in ("api", "ready"):
        floor, mk = summary["floor"][m], summary["minikafka"][m]
        print(f"{m:5s}: floor {floor:.3f} s, minikafka {mk:.3f} s, minikafka's own {1000 * (mk - floor):.0f} ms")
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps({"medians_s": summary, "starts_s": out,
                                        "when": time.strftime("%Y-%m-%dT%H:%M:%S")}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
