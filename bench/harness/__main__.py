"""`python -m bench.harness` (from the repository root): the benchmark matrix of
shared benchmark-plan.md against minikafka, Apache Kafka and Tansu. See bench/README.md."""

from __future__ import annotations

import argparse
import datetime
import json
import socket
import sys
from pathlib import Path

from .brokers import BROKERS
from .profiles import PROFILES, SCENARIOS

REPO_ROOT = Path(__file__).resolve().parents[2]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.harness", description=__doc__)
    ap.add_argument("--profile", default="full", choices=sorted(PROFILES) + ["scale", "scale-quick", "scale-smoke"],
                    help="scale, scale-quick, scale-smoke: the scale curves (bench/harness/scale.py), not the matrix")
    # Written out, not taken from scale.CURVE_GROUPS: importing scale.py loads kio and minikafka for
    # every run of the matrix too. A name not in CURVE_GROUPS is refused below with the real list.
    ap.add_argument("--curves", help="scale profile: comma-separated from partitions,topics,connections,record_size,"
                                     "txn_ids,txn_producers,data,data_spread,groups,group_members (default all)")
    ap.add_argument("--brokers", default="minikafka,kafka,tansu", help="comma-separated: minikafka,kafka,tansu")
    ap.add_argument("--scenarios", default=",".join(SCENARIOS), help=f"comma-separated from {','.join(SCENARIOS)}")
    ap.add_argument("--reps", type=int, help="repetitions per point (profile default)")
    ap.add_argument("--records", type=int, help="records for P2/P3/P4/C2/M1 (profile default)")
    ap.add_argument("--size", type=float, help="O3 recovery: bytes in the active segment, e.g. 1e9")
    ap.add_argument("--idle-s", type=float, help="O2: seconds after ready for the idle RSS")
    ap.add_argument("--e1-rates", help="E1 rates, comma-separated msg/s")
    ap.add_argument("--pin", action="store_true", help="broker on CPU 1, clients on CPU 0 (taskset)")
    ap.add_argument("--out", type=Path, help="output dir (default bench/results/<date>-<host>[-profile][-pinned])")
    ap.add_argument("--report-only", type=Path, metavar="RESULTS_JSON", help="re-render report.md/chart.png")
    ap.add_argument("--workdir", type=Path, help="where broker data dirs go (default: $TMPDIR)")
    ap.add_argument("--merge-scale", type=Path, nargs="+", metavar="SCALE_JSON",
                    help="combine scale runs of different curves into --out/scale.json and render it "
                         "(a later run's sample replaces an earlier one of the same curve, broker and point)")
    args = ap.parse_args(argv)

    from . import report

    if args.report_only:
        doc = json.loads(args.report_only.read_text())
        if args.report_only.name == "scale.json":
            from . import scale_report

            print(scale_report.render(doc, args.report_only.parent))
            return 0
        print(report.render(doc, args.report_only.parent))
        return 0

    if args.merge_scale:
        from . import scale_report

        if not args.out:
            ap.error("--merge-scale needs --out")
        doc = scale_report.merge([json.loads(p.read_text()) for p in args.merge_scale])
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "scale.json").write_text(json.dumps(doc, indent=1, sort_keys=True))
        print(scale_report.render(doc, args.out))
        return 0

    if args.profile.startswith("scale"):
        from . import scale, scale_report

        brokers = [b for b in args.brokers.split(",") if b and b != "tansu"]
        out = args.out or REPO_ROOT / "bench" / "results" / (
            f"{datetime.date.today().isoformat()}-{socket.gethostname()}-{args.profile}")
        only = set(args.curves.split(",")) if args.curves else None
        if only and only - set(scale.CURVE_GROUPS):
            ap.error(f"unknown curves {sorted(only - set(scale.CURVE_GROUPS))}: choose from {sorted(scale.CURVE_GROUPS)}")
        doc = scale.main(brokers, out, args.profile, only=only, workdir=args.workdir)
        print(scale_report.render(doc, out))
        return 0

    from .runner import Run

    profile = dict(PROFILES[args.profile])
    if args.reps:
        profile["reps"] = args.reps
        profile["recovery_reps"] = args.reps
        profile["m1_reps"] = args.reps
    if args.records:
        for k in ("p2_records", "p3_records", "p4_records", "c2_records", "m1_records"):
            profile[k] = args.records
    if args.size:
        profile["recovery_bytes"] = int(args.size)
    if args.idle_s is not None:
        profile["idle_s"] = args.idle_s
    if args.e1_rates:
        profile["e1_rates"] = [int(x) for x in args.e1_rates.split(",") if x]
    brokers = [b for b in args.brokers.split(",") if b]
    scenarios = [s for s in args.scenarios.split(",") if s]
    bad = [s for s in scenarios if s not in SCENARIOS] + [b for b in brokers if b not in BROKERS]
    if bad:
        ap.error(f"unknown: {bad}")
    out = args.out
    if out is None:
        name = f"{datetime.date.today().isoformat()}-{socket.gethostname()}"
        if args.profile != "full":
            name += f"-{args.profile}"
        if args.pin:
            name += "-pinned"
        out = REPO_ROOT / "bench" / "results" / name
    run = Run(args.profile, profile, brokers, scenarios, out, pin=args.pin, workdir=args.workdir)
    doc = run.run()
    text = report.render(doc, out)
    print(text)
    print(f"\nwritten: {out}/report.md, results.json, chart.png", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
