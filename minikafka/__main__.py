"""Command line: `minikafka serve` (also `python -m minikafka serve`)."""

from __future__ import annotations

import argparse
import os
import sys

from minikafka import __version__
from minikafka.config import BrokerConfig, ConfigError, load


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="minikafka",
        description="A single-node broker that speaks Apache Kafka's protocol: point any Kafka client at it.",
        epilog="Start a broker: minikafka serve   (127.0.0.1:9092, data in ./data)")
    p.add_argument("--version", action="version", version=f"minikafka {__version__}")
    sub = p.add_subparsers(dest="command")
    s = sub.add_parser("serve", help="run the broker",
                       description="Run the broker until SIGTERM or Ctrl-C (then it stops cleanly).")
    s.add_argument("--host", default=None, help="bind address (default 127.0.0.1, or from listeners)")
    s.add_argument("--port", type=int, default=None, help="port (default 9092, or from listeners)")
    s.add_argument("--data-dir", default=None, help="log directory (default ./data, or log.dirs)")
    s.add_argument("--config", default=None, help="a Kafka-style server.properties file")
    s.add_argument("--override", action="append", default=[], metavar="KEY=VALUE",
                   help="set a property, as kafka-server-start's --override (repeatable)")
    s.add_argument("--control-port", type=int, default=None, metavar="PORT",
                   help="serve the fault-rule control endpoint (HTTP, off by default) on PORT; 0: a free port")
    s.add_argument("--control-host", default="127.0.0.1", help="the control endpoint's address (loopback only)")
    s.add_argument("--check-invariants", action="store_true",
                   help="count and log what breaks exactly-once as it happens (control endpoint: GET /invariants)")
    s.add_argument("--metrics-port", type=int, default=None, metavar="PORT",
                   help="serve Prometheus metrics at /metrics (HTTP, off by default) on PORT; 0: a free port")
    s.add_argument("--metrics-host", default="127.0.0.1", help="the metrics endpoint's address (default loopback)")
    s.add_argument("--console-port", type=int, default=None, metavar="PORT",
                   help="serve the web console (HTTP, off by default) on PORT; the same port as --metrics-port serves both")
    s.add_argument("--console-host", default="127.0.0.1", help="the console's address (default loopback)")
    s.add_argument("--console-actions", action="store_true",
                   help="let the console abort hanging transactions and reset empty groups' offsets (loopback only)")
    s.add_argument("--log-level", default="INFO")
    s.add_argument("--log-json", action="store_true", help="JSON log lines")
    # inspect and pipeline parse their own arguments (and import their modules) only when used, so
    # `serve` starts without them.
    sub.add_parser("inspect", help="transactions, last stable offsets, aborted ranges (minikafka inspect --help)",
                   add_help=False)
    sub.add_parser("pipeline", help="the Spark order pipeline (minikafka pipeline --help)", add_help=False)
    sub.add_parser("certs", help="throw-away TLS certificates for tests: a CA, the broker's, clients' "
                   "(minikafka certs --help)", add_help=False)
    sub.add_parser("check-eos", help="is an output topic an exactly-once copy of an input topic? "
                   "(minikafka check-eos --help)", add_help=False)
    return p


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["pipeline"]:  # its own parser: minikafka.pipeline.cli
        from minikafka.pipeline.cli import main as pipeline_main

        return pipeline_main(argv[1:])
    if argv[:1] == ["check-eos"]:
        from minikafka.eos_check import cli as check_eos

        check_parser = argparse.ArgumentParser(prog="minikafka check-eos", description=check_eos.DESCRIPTION)
        check_eos.add_arguments(check_parser)
        return check_eos.run(check_parser.parse_args(argv[1:]))
    if argv[:1] == ["certs"]:
        return _certs(argv[1:])
    if argv[:1] == ["inspect"]:
        from minikafka import inspect

        inspect_parser = argparse.ArgumentParser(prog="minikafka inspect", description=inspect.DESCRIPTION)
        inspect.add_arguments(inspect_parser)
        return inspect.run(inspect_parser.parse_args(argv[1:]))
    parser = _parser()
    args = parser.parse_args(argv)
    if args.command == "serve":
        return _serve(args)
    parser.print_help()  # `minikafka` alone: what it can do
    return 0


def _certs(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="minikafka certs", description=(
        "Make a throw-away CA, a broker certificate and client certificates (PEM) for tests and local "
        "TLS, and print the broker settings that use them. Keys are written unencrypted: not for production."))
    p.add_argument("--out", default="./certs", help="directory for the PEM files (default ./certs)")
    p.add_argument("--host", action="append", default=None, metavar="NAME",
                   help="a host name or address the broker certificate is valid for (repeatable; "
                        "default localhost and 127.0.0.1)")
    p.add_argument("--client", action="append", default=None, metavar="NAME",
                   help="make a client certificate with this common name (repeatable; default: client)")
    p.add_argument("--days", type=int, default=30, help="validity in days (default 30)")
    args = p.parse_args(argv)
    from minikafka.security.certs import make_certs

    files = make_certs(args.out, hosts=args.host or ("localhost", "127.0.0.1"), clients=args.client or ("client",),
                       days=args.days)
    print(f"# CA (clients' ssl.ca.location): {files.ca}")
    for name, (cert, key) in files.clients.items():
        print(f"# client {name}: ssl.certificate.location={cert} ssl.key.location={key}")
    print("# broker settings (server.properties) for an SSL listener asking for client certificates:")
    print("listeners=PLAINTEXT://127.0.0.1:9092,SSL://127.0.0.1:9093")
    for k, v in files.broker_properties(client_auth="required").items():
        print(f"{k}={v}")
    return 0


def _serve(args: argparse.Namespace) -> int:
    # Two optional packages the broker never needs are imported by its dependencies whenever they
    # are installed (a test environment), for nothing but start-up time: kio's phantom types import
    # hypothesis's strategies (0.1 s), and structlog's deprecated thread-local module imports
    # greenlet (~6 ms; no greenlet ever runs here). This process is the broker's alone.
    sys.modules.setdefault("hypothesis", None)  # type: ignore[arg-type]
    sys.modules.setdefault("greenlet", None)  # type: ignore[arg-type]
    from minikafka.logging import configure_logging

    configure_logging(json=args.log_json, level=args.log_level)
    data_dir = args.data_dir
    if data_dir is None and args.config is None and not any(o.startswith(("log.dirs=", "log.dir="))
                                                            for o in args.override):
        data_dir = "./data"
    try:
        config = load(args.config, args.override, host=args.host, port=args.port, data_dir=data_dir)
    except ConfigError as exc:
        print(f"minikafka: configuration error: {exc}", file=sys.stderr)
        return 2

    import uvloop

    from minikafka.broker.app import Broker
    from minikafka.storage.errors import StartupError

    control = None
    if args.control_port is not None:
        from minikafka.broker.control_server import ControlError, check_loopback
        try:
            check_loopback(args.control_host)
        except ControlError as exc:
            print(f"minikafka: {exc}", file=sys.stderr)
            return 2
        control = (args.control_host, args.control_port)
    from minikafka.observe.settings import Endpoint, ObserveSettings

    observe = ObserveSettings(
        metrics=None if args.metrics_port is None else Endpoint(args.metrics_host, args.metrics_port),
        console=None if args.console_port is None else Endpoint(args.console_host, args.console_port),
        console_actions=args.console_actions)
    try:
        broker = Broker(config, control=control, check_invariants=args.check_invariants, observe=observe)
    except ConfigError as exc:  # a listener's TLS or SASL settings
        print(f"minikafka: configuration error: {exc}", file=sys.stderr)
        return 2
    from minikafka.broker.allocator import tune_broker_process

    try:
        # This process is the broker's own: its allocator keeps large buffers (after start-up,
        # which the 2 ms this takes would only delay).
        uvloop.run(broker.run(after_start=lambda: tune_broker_process(os.environ)))
    except StartupError as exc:  # a data directory that cannot be used: one line, no traceback
        print(f"minikafka: {exc}", file=sys.stderr)
        return 1
    except OSError as exc:  # a busy port, an unreadable or unwritable data directory
        print(f"minikafka: cannot start: {_describe_os_error(exc, config)}", file=sys.stderr)
        return 1
    return 0


def _describe_os_error(exc: OSError, config: BrokerConfig) -> str:
    import errno

    if exc.errno == errno.EADDRINUSE:
        return f"{config.host}:{config.port} is already in use (another broker? choose another --port)"
    if exc.errno == errno.EADDRNOTAVAIL:
        return f"{config.host} is not an address of this machine (--host)"
    if exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        where = f" {exc.filename}" if exc.filename else ""
        return f"permission denied{where} (data directory {config.data_dir}): {exc.strerror}"
    return str(exc)


if __name__ == "__main__":
    sys.exit(main())
