"""Rebalance time of a classic consumer group: three members subscribe to a 6-partition topic;
the time from the first subscribe to every partition assigned (no overlap). A probe for closing
notes, run against any bootstrap address: python bench/rebalance_time.py HOST:PORT [runs] [delay]"""

from __future__ import annotations

import json
import statistics
import sys
import threading
import time
import uuid

from confluent_kafka import Consumer
from confluent_kafka.admin import AdminClient, NewTopic


def one_run(bootstrap: str, topic: str) -> float:
    group = f"rebalance-{uuid.uuid4().hex[:8]}"
    assigned: dict[int, set[int]] = {}
    lock = threading.Lock()
    done = threading.Event()
    consumers = []

    def on_assign(i: int):
        def cb(consumer, partitions):  # noqa: ANN001
            with lock:
                assigned[i] = {p.partition for p in partitions}
                union = set().union(*assigned.values()) if assigned else set()
                total = sum(len(v) for v in assigned.values())
                if len(assigned) == 3 and union == set(range(6)) and total == 6:
                    done.set()
        return cb

    t0 = time.perf_counter()
    for i in range(3):
        c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "session.timeout.ms": 10000,
                      "heartbeat.interval.ms": 500, "partition.assignment.strategy": "range"})
        c.subscribe([topic], on_assign=on_assign(i))
        consumers.append(c)
    deadline = time.perf_counter() + 60
    while not done.is_set() and time.perf_counter() < deadline:
        for c in consumers:
            c.poll(0.01)
    elapsed = time.perf_counter() - t0
    for c in consumers:
        c.close()
    if not done.is_set():
        raise RuntimeError("the group did not settle within 60 s")
    return elapsed


def main() -> None:
    bootstrap = sys.argv[1]
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    topic = f"rebalance-{uuid.uuid4().hex[:6]}"
    a = AdminClient({"bootstrap.servers": bootstrap})
    a.create_topics([NewTopic(topic, 6, 1)])[topic].result(30)
    times = [one_run(bootstrap, topic) for _ in range(runs)]
    print(json.dumps({"runs_s": [round(t, 3) for t in times], "median_s": round(statistics.median(times), 3)}))


if __name__ == "__main__":
    main()
