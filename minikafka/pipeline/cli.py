"""Commands of the order pipeline: run (all of it), produce, job, verify.

    python -m minikafka.pipeline run --bootstrap-servers 127.0.0.1:9092 --master 'local[2]' \\
        --events 2000 --abort-every 5 --work-dir ./pipeline-out

`run` produces the first half of the transactions, runs the streaming job until it has caught up and
stops it, produces the second half, resumes the job from its checkpoint, then verifies. The separate
commands do one step each and share state through <work-dir>/manifest.json (what the producer
committed), so they can run in different processes or containers; `job --forever` keeps the query
running. On a cluster pass --master spark://... and a --work-dir every node can reach.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import uuid
from pathlib import Path
from typing import Any

from minikafka.pipeline.orders import OrderSpec, ProduceSummary

MANIFEST = "manifest.json"
DEFAULT_BOOTSTRAP = "127.0.0.1:9092"


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--bootstrap-servers", default=os.environ.get("KAFKA_BOOTSTRAP"),
                   help="Kafka bootstrap servers (default $KAFKA_BOOTSTRAP or 127.0.0.1:9092; `run` starts "
                        "an embedded minikafka when neither is given and nothing answers there)")
    p.add_argument("--work-dir", default="./pipeline-out",
                   help="manifest, checkpoint and Parquet results (shared storage on a cluster)")
    p.add_argument("--topic", default=None, help="orders topic (run: orders-<run id>)")
    p.add_argument("--results-topic", default=None, help="totals topic (run: order-totals-<run id>)")


def _spark_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--master", default=None, help="Spark master (default $SPARK_MASTER or local[*])")
    p.add_argument("--shuffle-partitions", type=int, default=2,
                   help="partitions of the aggregation state (fixed by the checkpoint once started)")


def _spec_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--events", type=int, default=2000)
    p.add_argument("--txn-size", type=int, default=20, help="events per transaction")
    p.add_argument("--abort-every", type=int, default=5, help="abort every n-th transaction (0: none)")
    p.add_argument("--customers", type=int, default=50)
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--partitions", type=int, default=3, help="partitions of the orders topic")


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m minikafka.pipeline",
                                description="Exactly-once order totals on Spark Structured Streaming.")
    sub = p.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="produce, run the job (stop/resume from checkpoint), verify")
    _common(run)
    _spark_args(run)
    _spec_args(run)
    run.add_argument("--phases", type=int, default=2,
                     help="produce/process rounds; the job restarts from its checkpoint between them")
    run.add_argument("--json", action="store_true", help="also print the numbers as one JSON line")
    prod = sub.add_parser("produce", help="write the order events (transactional) and the manifest")
    _common(prod)
    _spec_args(prod)
    job = sub.add_parser("job", help="run the streaming job")
    _common(job)
    _spark_args(job)
    job.add_argument("--forever", action="store_true", help="keep running (default: stop when caught up)")
    job.add_argument("--timeout", type=float, default=None, help="with --forever: stop after this many seconds")
    ver = sub.add_parser("verify", help="check the results against the manifest")
    _common(ver)
    _spark_args(ver)
    ver.add_argument("--json", action="store_true")
    return p


# -- helpers ------------------------------------------------------------------------------------


def _manifest_path(args: argparse.Namespace) -> Path:
    return Path(args.work_dir) / MANIFEST


def _save_manifest(args: argparse.Namespace, summary: ProduceSummary, results_topic: str) -> None:
    Path(args.work_dir).mkdir(parents=True, exist_ok=True)
    data = {"summary": summary.to_json(), "results_topic": results_topic, "bootstrap": args.bootstrap_servers}
    tmp = _manifest_path(args).with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=2))
    tmp.replace(_manifest_path(args))


def _load_manifest(args: argparse.Namespace) -> tuple[ProduceSummary, str]:
    path = _manifest_path(args)
    if not path.is_file():
        raise SystemExit(f"{path} not found: run `produce` (or `run`) with this --work-dir first")
    data = json.loads(path.read_text())
    summary = ProduceSummary.from_json(data["summary"])
    return summary, args.results_topic or data["results_topic"]


def _session(args: argparse.Namespace) -> Any:
    from minikafka.pipeline.spark_session import build_session

    return build_session("minikafka-order-totals", args.master,
                         conf={"spark.sql.shuffle.partitions": str(args.shuffle_partitions)})


def _job_config(args: argparse.Namespace, topic: str, results_topic: str) -> Any:
    from minikafka.pipeline.job import JobConfig

    return JobConfig(bootstrap=args.bootstrap_servers, topic=topic, results_topic=results_topic,
                     output=str(Path(args.work_dir).resolve()) if "://" not in args.work_dir else args.work_dir)


def _spec(args: argparse.Namespace) -> OrderSpec:
    return OrderSpec(events=args.events, txn_size=args.txn_size, abort_every=args.abort_every,
                     customers=args.customers, seed=args.seed)


def _print_verification(v: Any) -> None:
    status = "PASSED" if v.ok else "FAILED"
    print(f"verify: {status}: {v.expected_customers} customers, {v.expected_events} committed events; "
          f"source read_committed {v.source_events}, parquet rows {v.parquet_rows}, topic records {v.topic_records}")
    for problem in v.problems[:20]:
        print(f"  {problem}")


# -- commands -----------------------------------------------------------------------------------


def cmd_run(args: argparse.Namespace) -> int:
    from minikafka.pipeline import job, orders, verify

    run_id = uuid.uuid4().hex[:8]
    topic = args.topic or f"orders-{run_id}"
    results_topic = args.results_topic or f"order-totals-{run_id}"
    spec = _spec(args)
    t_start = time.monotonic()
    orders.ensure_topic(args.bootstrap_servers, topic, args.partitions)
    orders.ensure_topic(args.bootstrap_servers, results_topic, args.partitions)
    from minikafka.pipeline.spark_session import ensure_connector_jars

    ensure_connector_jars(lambda line: print(f"pipeline: {line}", flush=True))
    print("pipeline: starting Spark...", flush=True)
    t0 = time.monotonic()
    spark = _session(args)
    session_s = time.monotonic() - t0
    cfg = _job_config(args, topic, results_topic)
    summary = ProduceSummary(spec, topic)
    phases = max(1, min(args.phases, spec.transactions))
    bounds = [round(i * spec.transactions / phases) for i in range(phases + 1)]
    job_s, batches = 0.0, 0
    for i in range(phases):
        orders.produce_orders(args.bootstrap_servers, topic, spec, transactional_id=f"orders-producer-{run_id}",
                              txns=range(bounds[i], bounds[i + 1]), summary=summary)
        _save_manifest(args, summary, results_topic)
        print(f"pipeline: round {i + 1}/{phases}: {bounds[i + 1]} of {spec.transactions} transactions produced; "
              "running the job until it has caught up...", flush=True)
        result = job.run_until_caught_up(spark, cfg)  # phase > 0 resumes from the checkpoint
        job_s += result.seconds
        batches += result.batches
    t0 = time.monotonic()
    v = verify.verify(summary, bootstrap=args.bootstrap_servers, results_topic=results_topic,
                      results_path=cfg.results_path, spark=spark)
    verify_s = time.monotonic() - t0
    total_s = time.monotonic() - t_start
    numbers = {
        "events": spec.events, "committed_events": summary.committed_events,
        "aborted_events": summary.aborted_events, "transactions": spec.transactions,
        "aborted_transactions": len(summary.aborted_txns), "customers": v.expected_customers,
        "results_parquet_rows": v.parquet_rows, "results_topic_records": v.topic_records,
        "micro_batches": batches, "phases": phases,
        "produce_seconds": round(summary.seconds, 2), "spark_session_seconds": round(session_s, 2),
        "job_seconds": round(job_s, 2), "verify_seconds": round(verify_s, 2), "total_seconds": round(total_s, 2),
        "topic": topic, "results_topic": results_topic, "work_dir": cfg.output, "ok": v.ok,
    }
    print(f"pipeline: {spec.events} events in {spec.transactions} transactions, "
          f"{summary.aborted_events} events aborted ({len(summary.aborted_txns)} transactions), "
          f"{summary.committed_events} committed")
    print(f"pipeline: produce {summary.seconds:.1f}s, spark start {session_s:.1f}s, "
          f"job {job_s:.1f}s in {batches} micro-batches over {phases} runs, verify {verify_s:.1f}s, total {total_s:.1f}s")
    print(f"pipeline: results: {v.expected_customers} customers, {v.parquet_rows} Parquet rows, "
          f"{v.topic_records} records on {results_topic}")
    _print_verification(v)
    if args.json:
        print(json.dumps(numbers, sort_keys=True))
    return 0 if v.ok else 1


def cmd_produce(args: argparse.Namespace) -> int:
    from minikafka.pipeline import orders

    run_id = uuid.uuid4().hex[:8]
    topic = args.topic or "orders"
    results_topic = args.results_topic or "order-totals"
    orders.ensure_topic(args.bootstrap_servers, topic, args.partitions)
    orders.ensure_topic(args.bootstrap_servers, results_topic, args.partitions)
    summary = orders.produce_orders(args.bootstrap_servers, topic, _spec(args),
                                    transactional_id=f"orders-producer-{run_id}")
    _save_manifest(args, summary, results_topic)
    print(f"produce: {summary.spec.events} events to {topic}, {summary.aborted_events} aborted "
          f"({len(summary.aborted_txns)} transactions), {summary.seconds:.1f}s")
    return 0


def cmd_job(args: argparse.Namespace) -> int:
    from minikafka.pipeline import job

    topic, results_topic = args.topic, args.results_topic
    if topic is None or results_topic is None:
        summary, manifest_results = _load_manifest(args)
        topic, results_topic = topic or summary.topic, results_topic or manifest_results
    spark = _session(args)
    cfg = _job_config(args, topic, results_topic)
    if args.forever:
        job.run_forever(spark, cfg, args.timeout)
        return 0
    result = job.run_until_caught_up(spark, cfg)
    print(f"job: {result.input_rows} input rows in {result.batches} micro-batches, {result.seconds:.1f}s")
    return 0


def cmd_verify(args: argparse.Namespace) -> int:
    from minikafka.pipeline import verify

    summary, results_topic = _load_manifest(args)
    if args.topic:
        summary.topic = args.topic
    spark = _session(args)
    cfg = _job_config(args, summary.topic, results_topic)
    v = verify.verify(summary, bootstrap=args.bootstrap_servers, results_topic=results_topic,
                      results_path=cfg.results_path, spark=spark)
    _print_verification(v)
    if args.json:
        print(json.dumps(v.to_json(), sort_keys=True))
    return 0 if v.ok else 1


COMMANDS = {"run": cmd_run, "produce": cmd_produce, "job": cmd_job, "verify": cmd_verify}


class NoBroker(RuntimeError):
    """Nothing answers ApiVersions at the bootstrap address."""


def _wait_for_broker(bootstrap: str, timeout_s: float = 10.0) -> None:
    """Raise NoBroker unless the first bootstrap address answers within timeout_s (a broker that is
    starting gets that long; no Kafka client is made before, so no flood of client log lines)."""
    from minikafka.healthcheck import check

    host, _, port = bootstrap.split(",")[0].strip().rpartition(":")
    deadline = time.monotonic() + timeout_s
    while True:
        ok, why = check(host or "127.0.0.1", int(port), timeout=2.0)
        if ok:
            return
        if time.monotonic() >= deadline:
            raise NoBroker(f"no Kafka broker at {host}:{port} ({why})")
        time.sleep(0.5)


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    from minikafka.pipeline.spark_session import SparkUnavailable

    explicit = args.bootstrap_servers is not None
    args.bootstrap_servers = args.bootstrap_servers or DEFAULT_BOOTSTRAP
    try:
        try:
            _wait_for_broker(args.bootstrap_servers, 10.0 if explicit or args.command != "run" else 1.0)
        except NoBroker:
            if explicit or args.command != "run":
                raise
            from minikafka.pipeline.embedded import EmbeddedBroker

            with EmbeddedBroker() as broker:
                print(f"pipeline: nothing answers at {DEFAULT_BOOTSTRAP}: started an embedded minikafka at "
                      f"{broker.address} (temporary data, removed at the end)", flush=True)
                args.bootstrap_servers = broker.address
                return COMMANDS[args.command](args)
        return COMMANDS[args.command](args)
    except NoBroker as exc:
        print(f"minikafka pipeline: {exc}", file=sys.stderr)
        return 1
    except SparkUnavailable as exc:
        print(f"minikafka pipeline: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
