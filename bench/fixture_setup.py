"""How long the kafka_broker fixture takes to give a test a ready broker, in both modes.

Usage: python bench/fixture_setup.py [N]
Starts N fresh brokers each way on new data directories and prints one JSON line: the median and
p90 milliseconds from "start" to a broker that answers (the subprocess broker: until its ApiVersions
round trip succeeds; the in-process broker: until start() returns, its port bound and its state
loaded), then to a clean stop. The first in-process start pays the broker's imports; it is reported
apart. A probe for closing notes, not a timed test.
"""

from __future__ import annotations

import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from minikafka.testing import TEST_OVERRIDES, BrokerProcess, api_versions_probe


def _ms(samples: list[float]) -> dict[str, float]:
    s = sorted(samples)
    return {"median_ms": round(statistics.median(s), 1), "p90_ms": round(s[int(0.9 * (len(s) - 1))], 1)}


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    root = Path(tempfile.mkdtemp(prefix="fixture-bench-"))
    try:
        from minikafka.embedded import EmbeddedBroker

        first_import = None
        inproc_up, inproc_down, proc_up, proc_down = [], [], [], []
        for i in range(n):
            t0 = time.perf_counter()
            b = EmbeddedBroker(root / f"in-{i}", overrides=TEST_OVERRIDES).start()
            up = (time.perf_counter() - t0) * 1000
            assert api_versions_probe(b.host, b.port)
            t1 = time.perf_counter()
            b.term()
            down = (time.perf_counter() - t1) * 1000
            if i == 0:
                first_import = round(up, 1)
                continue
            inproc_up.append(up)
            inproc_down.append(down)
        for i in range(n):
            t0 = time.perf_counter()
            p = BrokerProcess(root / f"proc-{i}").start()
            proc_up.append((time.perf_counter() - t0) * 1000)
            t1 = time.perf_counter()
            p.stop()
            proc_down.append((time.perf_counter() - t1) * 1000)
        print(json.dumps({"n": n, "in_process_first_start_ms": first_import,
                          "in_process_start": _ms(inproc_up), "in_process_stop": _ms(inproc_down),
                          "subprocess_start": _ms(proc_up), "subprocess_stop": _ms(proc_down)}))
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
