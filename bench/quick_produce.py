"""Quick produce throughput probe: 1 KiB records, acks=all, linger.ms=5, one partition.

Usage: python bench/quick_produce.py BOOTSTRAP [N] [extra producer conf as k=v ...]
Prints one JSON line with records/s and MB/s (payload bytes). A probe for closing notes; the
side-by-side benchmark with Apache Kafka lives in `make bench` (issue 8).
"""

from __future__ import annotations

import json
import os
import sys
import time

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic


def main() -> None:
    bootstrap = sys.argv[1]
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 100_000
    extra = dict(a.split("=", 1) for a in sys.argv[3:])
    topic = f"bench-{os.getpid()}"
    a = AdminClient({"bootstrap.servers": bootstrap})
    a.create_topics([NewTopic(topic, 1, 1)])[topic].result(30)
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5, "batch.size": 1_000_000,
                  "batch.num.messages": 10_000, "socket.nagle.disable": True, **extra})
    payload = os.urandom(1024)
    # warm-up
    for _ in range(5000):
        p.produce(topic, payload)
    p.flush(60)
    t0 = time.perf_counter()
    for i in range(n):
        while True:
            try:
                p.produce(topic, payload)
                break
            except BufferError:
                p.poll(0.001)
        if i % 1000 == 0:
            p.poll(0)
    p.flush(120)
    dt = time.perf_counter() - t0
    print(json.dumps({"records": n, "seconds": round(dt, 3), "records_per_s": round(n / dt),
                      "MB_per_s": round(n * 1024 / dt / 1e6, 1), "conf": extra}))


if __name__ == "__main__":
    main()
