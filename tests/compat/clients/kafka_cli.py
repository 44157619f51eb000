"""The compatibility scenarios (scenario.py) with Apache Kafka 4.3.1's command-line tools (the
classes behind kafka-console-producer.sh, kafka-console-consumer.sh, kafka-topics.sh,
kafka-configs.sh, kafka-delete-records.sh and kafka-consumer-groups.sh), from the bench/kafka jar
cache. The tools have no consume-transform-produce, so `transactional` is n/a.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path

from common import check, check_ordered, main, until

REPO = Path(__file__).resolve().parents[3]
CACHE = Path(os.environ.get("KAFKA_CACHE", REPO / ".cache" / "kafka")) / "4.3.1"
LOG4J = REPO / "bench" / "kafka" / "tools-log4j2.properties"
TOOLS = {
    "console-producer": ("tools", "org.apache.kafka.tools.ConsoleProducer"),
    "console-consumer": ("tools", "org.apache.kafka.tools.consumer.ConsoleConsumer"),
    "topics": ("tools", "org.apache.kafka.tools.TopicCommand"),
    "configs": ("broker", "kafka.admin.ConfigCommand"),
    "delete-records": ("tools", "org.apache.kafka.tools.DeleteRecordsCommand"),
    "consumer-groups": ("tools", "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand"),
}


def tool(name: str, *args: str, stdin: str | None = None, timeout: float = 120) -> str:
    libs, cls = TOOLS[name]
    cmd = ["java", "-Xmx256M", f"-Dlog4j2.configurationFile={LOG4J}", "-cp", str(CACHE / libs / "*"), cls, *args]
    proc = subprocess.run(cmd, input=stdin, capture_output=True, text=True, timeout=timeout)
    check(proc.returncode == 0, f"kafka-{name} exited {proc.returncode}: {proc.stderr.strip()[-300:]}")
    return proc.stdout


def _produce(bootstrap: str, topic: str, start: int, n: int, *props: str) -> None:
    lines = "".join(f"k{i}\tv{i}\n" for i in range(start, start + n))
    tool("console-producer", "--bootstrap-server", bootstrap, "--topic", topic, "--reader-property", "parse.key=true",
         *props, stdin=lines)


def _consume(bootstrap: str, topic: str, n: int, *extra: str) -> list[tuple[int, bytes, bytes]]:
    out = tool("console-consumer", "--bootstrap-server", bootstrap, "--topic", topic, "--max-messages", str(n),
               "--timeout-ms", "30000", "--formatter-property", "print.key=true", "--formatter-property",
               "print.partition=true", *extra)
    rows = []
    for line in out.splitlines():
        if not line.startswith("Partition:"):
            continue
        part, key, value = line.split("\t")
        rows.append((int(part.split(":")[1]), key.encode(), value.encode()))
    return rows


def _create(bootstrap: str, topic: str, partitions: int, *extra: str) -> None:
    tool("topics", "--bootstrap-server", bootstrap, "--create", "--topic", topic, "--partitions", str(partitions),
         *extra)


def produce_consume(bootstrap: str, prefix: str) -> None:
    topic = f"{prefix}-pc"
    _create(bootstrap, topic, 3)
    _produce(bootstrap, topic, 0, 300)
    check_ordered(_consume(bootstrap, topic, 300, "--from-beginning"), 300)


def group_resume(bootstrap: str, prefix: str) -> None:
    topic, group = f"{prefix}-gr", f"{prefix}-gr-g"
    _create(bootstrap, topic, 2)
    _produce(bootstrap, topic, 0, 100)
    first = _consume(bootstrap, topic, 100, "--group", group, "--from-beginning")
    check(sorted(int(v[1:]) for _p, _k, v in first) == list(range(100)), "first member did not read the 100")
    _produce(bootstrap, topic, 100, 50)
    second = _consume(bootstrap, topic, 50, "--group", group)
    check(sorted(int(v[1:]) for _p, _k, v in second) == list(range(100, 150)), "did not resume at the commit")
    listed = tool("consumer-groups", "--bootstrap-server", bootstrap, "--describe", "--group", group)
    check(topic in listed, "the group's offsets are not described")


def idempotent(bootstrap: str, prefix: str) -> None:
    topic = f"{prefix}-idem"
    _create(bootstrap, topic, 1)
    _produce(bootstrap, topic, 0, 200, "--command-property", "enable.idempotence=true",
             "--command-property", "acks=all")
    check_ordered(_consume(bootstrap, topic, 200, "--from-beginning"), 200)


def admin(bootstrap: str, prefix: str) -> None:
    topic = f"{prefix}-adm"
    _create(bootstrap, topic, 2, "--config", "retention.ms=100000")
    described = tool("configs", "--bootstrap-server", bootstrap, "--describe", "--entity-type", "topics",
                     "--entity-name", topic)
    check("retention.ms=100000" in described, "retention.ms not as created")
    tool("configs", "--bootstrap-server", bootstrap, "--alter", "--entity-type", "topics", "--entity-name", topic,
         "--add-config", "retention.ms=200000")
    until(30, lambda: "retention.ms=200000" in tool("configs", "--bootstrap-server", bootstrap, "--describe",
                                                    "--entity-type", "topics", "--entity-name", topic),
          lambda: None)  # Kafka applies a change asynchronously
    tool("topics", "--bootstrap-server", bootstrap, "--alter", "--topic", topic, "--partitions", "4")
    check("PartitionCount: 4" in tool("topics", "--bootstrap-server", bootstrap, "--describe", "--topic", topic),
          "partitions not added")
    _produce(bootstrap, topic, 0, 40)
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        f.write('{"partitions": [{"topic": "%s", "partition": 0, "offset": 1}], "version": 1}' % topic)
    try:
        out = tool("delete-records", "--bootstrap-server", bootstrap, "--offset-json-file", f.name)
    finally:
        os.unlink(f.name)
    check("low_watermark: 1" in out, f"delete records answered: {out.strip()[-200:]}")
    tool("consumer-groups", "--bootstrap-server", bootstrap, "--list")
    tool("topics", "--bootstrap-server", bootstrap, "--delete", "--topic", topic)
    check(topic not in tool("topics", "--bootstrap-server", bootstrap, "--list").split(), "topic still listed")


if __name__ == "__main__":
    main({"produce_consume": produce_consume, "group_resume": group_resume, "idempotent": idempotent,
          "admin": admin})
