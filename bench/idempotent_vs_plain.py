"""Idempotent vs plain produce throughput against minikafka (a measurement, not a test).

For each mode a fresh broker (own data dir, own port) gets one topic with one partition; a
confluent-kafka producer in a separate process sends N records of 1 KiB with acks=all and
linger.ms=5 and reports the time from its first produce() to the end of flush(). Modes alternate
over several rounds; the median of each is reported.

    .venv/bin/python bench/idempotent_vs_plain.py [--records 50000] [--size 1024] [--rounds 3]
        [--modes plain,idempotent,plain-inflight5]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PRODUCER = r"""
import json, sys, time
from confluent_kafka import Producer
bootstrap, topic, n, size, mode = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
conf = {"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5, "enable.idempotence": mode == "idempotent",
        "queue.buffering.max.messages": 1000000, "queue.buffering.max.kbytes": 1048576}
if mode == "plain-inflight5":  # plain, but pipelined like the idempotent producer (at most 5 in flight)
    conf["max.in.flight.requests.per.connection"] = 5
p = Producer(conf)
errors = 0
def cb(err, msg):
    global errors
    if err is not None:
        errors += 1
payload = b"x" * size
p.list_topics(topic, timeout=10)
t0 = time.perf_counter()
for i in range(n):
    while True:
        try:
            p.produce(topic, value=payload, partition=0, on_delivery=cb)
            break
        except BufferError:
            p.poll(0.01)
    if i % 1000 == 0:
        p.poll(0)
left = p.flush(120)
dt = time.perf_counter() - t0
print(json.dumps({"seconds": dt, "errors": errors, "undelivered": left}))
"""


MODES = ("plain", "idempotent", "plain-inflight5")


def run_once(mode: str, records: int, size: int, workdir: Path) -> dict:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from minikafka.testing import BrokerProcess

    broker = BrokerProcess(workdir / f"data-{mode}-{time.time_ns()}").start()
    try:
        from confluent_kafka.admin import AdminClient, NewTopic

        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        admin.create_topics([NewTopic("bench", 1, 1)])["bench"].result(30)
        out = subprocess.run([sys.executable, "-c", PRODUCER, broker.bootstrap, "bench", str(records), str(size),
                              mode], capture_output=True, text=True, timeout=300, check=True)
        res = json.loads(out.stdout.strip().splitlines()[-1])
    finally:
        broker.stop()
    res["records_per_s"] = records / res["seconds"]
    res["mib_per_s"] = records * size / res["seconds"] / 2**20
    return res


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=50_000)
    ap.add_argument("--size", type=int, default=1024)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--modes", default="plain,idempotent",
                    help=f"comma-separated, from {', '.join(MODES)}")
    args = ap.parse_args()
    modes = [m for m in args.modes.split(",") if m]
    if not {"plain", "idempotent"} <= set(modes) or not set(modes) <= set(MODES):
        ap.error(f"--modes must include plain and idempotent, from {MODES}")
    results: dict[str, list[dict]] = {m: [] for m in modes}
    with tempfile.TemporaryDirectory(prefix="bench-idem-") as tmp:
        for r in range(args.rounds):
            for mode in (modes if r % 2 == 0 else modes[::-1]):
                res = run_once(mode, args.records, args.size, Path(tmp))
                results[mode].append(res)
                print(f"round {r} {mode:15s} {res['records_per_s']:9.0f} rec/s {res['mib_per_s']:7.1f} MiB/s "
                      f"errors={res['errors']} undelivered={res['undelivered']}", flush=True)
    summary = {mode: {"median_records_per_s": round(statistics.median(x["records_per_s"] for x in rs)),
                      "median_mib_per_s": round(statistics.median(x["mib_per_s"] for x in rs), 1)}
               for mode, rs in results.items()}
    ratio = summary["idempotent"]["median_records_per_s"] / summary["plain"]["median_records_per_s"]
    summary["idempotent_over_plain"] = round(ratio, 3)
    print(json.dumps({"records": args.records, "size": args.size, "rounds": args.rounds, **summary}))


if __name__ == "__main__":
    main()
