"""Application row of the compatibility matrix: a Kafka Streams exactly_once_v2 word count
(StreamsWordCount.java, Kafka Streams 4.3.1 from Maven Central) killed with -9 while it works
and restarted. Holds when a read_committed reader of its output sees every word's exact count
(nothing counted twice across the crash) and Streams purged its repartition topic with
DeleteRecords (a long-running app would otherwise grow without bound).

    python streams_eos.py <bootstrap> <prefix> [classic|streams]      exits 0, or prints one line and exits 1

With `streams` the app runs Streams' own group protocol (KIP-1071, `group.protocol=streams`): the
broker creates the internal topics and assigns the tasks.
"""

from __future__ import annotations

import collections
import signal
import sys
import tempfile
import time
from pathlib import Path

from app_support import LIBS, check, java, stop, verdict, watermarks
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic

HERE = Path(__file__).resolve().parent


def produce_lines(bootstrap: str, topic: str, start: int, n: int, counts: collections.Counter) -> None:
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for i in range(start, start + n):
        line = f"w{i % 7} w{i % 11}"
        counts.update(line.split())
        p.produce(topic, key=str(i).encode(), value=line.encode())
    check(p.flush(30) == 0, "input not produced")


def start_app(bootstrap: str, prefix: str, state: str, protocol: str = "classic",  # type: ignore[no-untyped-def]
              *configs: str, log: Path | None = None):
    """configs: further Streams settings as name=value."""
    return java(str(HERE / "StreamsWordCount.java"), bootstrap, prefix, state, protocol, *configs, log=log)


def committed_counts(bootstrap: str, topic: str, expected: collections.Counter, deadline_s: float) -> dict[str, int]:
    """The last count per word a read_committed reader sees, once it matches `expected` or time is up."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"{topic}-check", "auto.offset.reset": "earliest",
                  "isolation.level": "read_committed", "enable.auto.commit": False})
    c.subscribe([topic])
    last: dict[str, int] = {}
    end = time.monotonic() + deadline_s
    try:
        while time.monotonic() < end:
            m = c.poll(0.5)
            if m is not None and not m.error():
                last[m.key().decode()] = int(m.value())
                if last == dict(expected):
                    break
    finally:
        c.close()
    return last


def main(bootstrap: str, prefix: str, protocol: str = "classic") -> None:
    check((LIBS / "kafka-streams-4.3.1.jar").exists(), f"Kafka Streams jars missing in {LIBS}")
    text, counts_topic = f"{prefix}-text", f"{prefix}-counts"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for f in admin.create_topics([NewTopic(text, 2, 1), NewTopic(counts_topic, 2, 1)]).values():
        f.result(30)
    expected: collections.Counter = collections.Counter()
    produce_lines(bootstrap, text, 0, 400, expected)
    with tempfile.TemporaryDirectory(prefix="streams-") as state:
        app = start_app(bootstrap, prefix, state, protocol)
        try:
            # Kill it once it is counting (output exists), in the middle of its transactions.
            end = time.monotonic() + 120
            while not any(watermarks(bootstrap, counts_topic, p)[1] > 0 for p in (0, 1)):
                check(time.monotonic() < end and app.poll() is None, "the Streams app produced no output")
                time.sleep(0.2)
            app.send_signal(signal.SIGKILL)
            app.wait(30)
            produce_lines(bootstrap, text, 400, 400, expected)
            app = start_app(bootstrap, prefix, state, protocol)
            got = committed_counts(bootstrap, counts_topic, expected, 150)
            wrong = {w: (got.get(w), n) for w, n in expected.items() if got.get(w) != n}
            check(not wrong, f"counts (seen, expected) differ after kill -9: {dict(sorted(wrong.items())[:4])}")
            # Streams purges a repartition topic up to what it committed (DeleteRecords).
            repartition = [t for t in admin.list_topics(timeout=10).topics if t.startswith(f"{prefix}-wc-")
                           and t.endswith("-repartition")]
            check(len(repartition) == 1, f"repartition topics: {repartition}")
            end = time.monotonic() + 30
            while not any(watermarks(bootstrap, repartition[0], p)[0] > 0 for p in (0, 1)):
                check(time.monotonic() < end, "the repartition topic was never purged (DeleteRecords)")
                time.sleep(0.5)
        finally:
            stop(app)


if __name__ == "__main__":
    verdict(main, *sys.argv[1:4])
