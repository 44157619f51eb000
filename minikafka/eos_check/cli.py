"""`minikafka check-eos`: the exactly-once checker from the command line. Exit status 0: exactly
once; 1: a violation (lost, duplicated, aborted but visible, reordered); 2: the topics could not
be read."""

from __future__ import annotations

import argparse
import sys

DESCRIPTION = ("Check that a pipeline copied every record of an input topic to an output topic exactly once: "
               "nothing lost or duplicated, nothing aborted visible to read_committed, per-key order kept.")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--bootstrap-server", "--bootstrap", dest="bootstrap", default="127.0.0.1:9092")
    p.add_argument("--input", required=True, help="the topic the pipeline reads")
    p.add_argument("--output", required=True, help="the topic it writes")
    p.add_argument("--key-by", default="key", choices=("key", "value", "key+value"),
                   help="what identifies a record on both sides (default: its key)")
    p.add_argument("--json", action="store_true", help="the whole report as JSON")
    p.add_argument("--limit", type=int, default=20, help="findings listed in the text report")


def run(args: argparse.Namespace) -> int:
    from minikafka.eos_check import CheckError, check_eos

    try:
        report = check_eos(args.bootstrap, args.input, args.output, key_by=args.key_by)
    except CheckError as exc:
        print(f"minikafka check-eos: {exc}", file=sys.stderr)
        return 2
    print(report.as_json() if args.json else report.text(args.limit))
    return 0 if report.ok else 1
