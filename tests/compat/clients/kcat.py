"""The compatibility scenarios (scenario.py) with kcat (Debian's package), driven from Python.

kcat produces and consumes (also in a group, and idempotently through librdkafka properties);
it has no transactional consume-transform-produce and no admin API beyond metadata, so those two
scenarios are n/a. Topics are created with confluent-kafka's admin.
"""

from __future__ import annotations

import subprocess

from common import check, check_ordered, main
from confluent_kafka.admin import AdminClient, NewTopic

SEP = "\t"


def _kcat(*args: str, stdin: str | None = None, timeout: float = 60) -> str:
    proc = subprocess.run(["kcat", *args], input=stdin, capture_output=True, text=True, timeout=timeout)
    check(proc.returncode == 0, f"kcat {' '.join(args[:3])} exited {proc.returncode}: {proc.stderr.strip()[-200:]}")
    return proc.stdout


def _create(bootstrap: str, topic: str, partitions: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 3})  # kept alive until the answer
    admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(30)


def _produce(bootstrap: str, topic: str, start: int, n: int, *props: str) -> None:
    lines = "".join(f"k{i}{SEP}v{i}\n" for i in range(start, start + n))
    _kcat("-b", bootstrap, "-P", "-t", topic, "-K", SEP, *props, stdin=lines)


def _consume_all(bootstrap: str, topic: str) -> list[tuple[int, bytes, bytes]]:
    out = _kcat("-b", bootstrap, "-C", "-t", topic, "-o", "beginning", "-e", "-f", "%p\t%k\t%s\n")
    rows = [line.split("\t") for line in out.splitlines() if line]
    return [(int(p), k.encode(), v.encode()) for p, k, v in rows]


def produce_consume(bootstrap: str, prefix: str) -> None:
    topic = f"{prefix}-pc"
    _create(bootstrap, topic, 3)
    _produce(bootstrap, topic, 0, 300)
    check_ordered(_consume_all(bootstrap, topic), 300)


def group_resume(bootstrap: str, prefix: str) -> None:
    """kcat -G reads as a group member and commits as it goes; a second run resumes after it."""
    topic, group = f"{prefix}-gr", f"{prefix}-gr-g"
    _create(bootstrap, topic, 2)
    _produce(bootstrap, topic, 0, 100)
    first = _kcat("-b", bootstrap, "-G", group, "-X", "auto.offset.reset=earliest", "-c", "100",
                  "-f", "%s\n", topic)
    check(sorted(first.split()) == sorted(f"v{i}" for i in range(100)), "first member did not read the 100")
    _produce(bootstrap, topic, 100, 50)
    second = _kcat("-b", bootstrap, "-G", group, "-X", "auto.offset.reset=earliest", "-c", "50",
                   "-f", "%s\n", topic)
    check(sorted(second.split()) == sorted(f"v{i}" for i in range(100, 150)), "did not resume at the commit")


def idempotent(bootstrap: str, prefix: str) -> None:
    topic = f"{prefix}-idem"
    _create(bootstrap, topic, 1)
    _produce(bootstrap, topic, 0, 200, "-X", "enable.idempotence=true", "-X", "acks=all")
    check_ordered(_consume_all(bootstrap, topic), 200)


if __name__ == "__main__":
    main({"produce_consume": produce_consume, "group_resume": group_resume, "idempotent": idempotent})
