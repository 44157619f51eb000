"""N connections in closed loops of Produce (acks=1, 1 KiB: the connections curve's load) against a
fresh minikafka from $REPO (default: this checkout); with a third argument, py-spy of the broker.

    REPO=<checkout> python -P bench/experiments/connections_probe.py N SECONDS [pyspy-raw-out]

With `produce_stages.patch` applied to the checkout, MK_STAGE=decode / noappend / timeappend and
MK_CANNED_PRODUCE=1 take parts of the Produce path away (see bench/README.md, session 19).
"""

import asyncio
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(os.environ.get("REPO", Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(REPO))

from bench.harness.brokers import MiniKafka  # noqa: E402
from bench.harness.runner import create_topics  # noqa: E402
from bench.harness.scale import active_connections  # noqa: E402


def main() -> None:
    n, secs = int(sys.argv[1]), float(sys.argv[2])
    out = sys.argv[3] if len(sys.argv) > 3 else None
    b = MiniKafka(Path(tempfile.mkdtemp(prefix="conn-")))
    b.start()
    try:
        create_topics(b.bootstrap, {"conns": 1})
        asyncio.run(active_connections(b, n, 2.0))  # warm-up
        spy = None
        if out:
            spy = subprocess.Popen([str(REPO / ".venv/bin/py-spy"), "record", "-r", "250", "-f", "raw", "-o", out,
                                    "-d", str(int(secs)), "-p", str(b.pid), "--nonblocking"],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        r = asyncio.run(active_connections(b, n, secs))
        if spy is not None:
            spy.wait()
        print({k: round(v, 2) if isinstance(v, float) else v for k, v in r.items()})
        print("broker log:", b.log_path)
    finally:
        b.stop()


if __name__ == "__main__":
    main()
