"""KIP-848 with the Java 4.3.1 clients: three kafka-console-consumer processes
(`group.protocol=consumer`) share a topic, one leaves, and kafka-consumer-groups.sh describes the
group (ConsumerGroupCommand over the Java AdminClient's ConsumerGroupDescribe). Every record is
read; at every ConsumerGroupDescribe each partition has one owner. Runs against minikafka and, in
the conformance run, Apache Kafka 4.3.1 (issue 18, "How it is shown").
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from clients import create_topic, produce_all, producer, uniq
from rawclient import RawClient
from test_consumer_protocol import FAST, Described, check_single_owner, describe, stable_with

pytestmark = [pytest.mark.integration, pytest.mark.kafka_reference, pytest.mark.timeout(240)]

CONSOLE_CONSUMER = "org.apache.kafka.tools.consumer.ConsoleConsumer"
GROUPS_TOOL = "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand"


@pytest.fixture(scope="module")
def kafka_ref_tools() -> Any:
    import kafka_ref

    kafka_ref.jars_or_skip("kafka-console-consumer.sh")
    return kafka_ref


def console_consumer(kafka_ref: Any, bootstrap: str, topic: str, group: str, out: Path) -> subprocess.Popen[bytes]:
    kafka_ref.ensure_kafka_jars()
    return subprocess.Popen(
        [str(kafka_ref.RUN_TOOL), CONSOLE_CONSUMER, "--bootstrap-server", bootstrap, "--topic", topic,
         "--group", group, "--from-beginning", "--command-property", "group.protocol=consumer",
         "--command-property", "auto.commit.interval.ms=200"],
        stdout=out.open("wb"), stderr=subprocess.DEVNULL, start_new_session=True)


def wait_for(raw: RawClient, group: str, cond: Any, what: str, procs: list[subprocess.Popen[bytes]],
             timeout: float = 90.0) -> Described:
    deadline = time.monotonic() + timeout
    while True:
        d = describe(raw, group, missing_ok=True)
        check_single_owner(d)
        if cond(d):
            return d
        dead = [p.args for p in procs if p.poll() is not None]
        assert not dead, f"a console consumer exited: {dead}"
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not reached in {timeout}s; last {d}")
        time.sleep(0.1)


def test_java_console_consumers_share_a_topic(configured_broker: Any, kafka_ref_tools: Any, tmp_path: Path) -> None:
    broker = configured_broker(overrides=FAST)
    topic, group = uniq("java848"), uniq("jg848")
    create_topic(broker.bootstrap, topic, 6)
    values = {f"v{i}" for i in range(300)}
    produce_all(producer(broker.bootstrap), topic, [{"value": v.encode(), "partition": i % 6}
                                                   for i, v in enumerate(sorted(values))])
    outs = [tmp_path / f"consumer-{i}.txt" for i in range(3)]
    procs: list[subprocess.Popen[bytes]] = []
    try:
        with RawClient.connect(broker.bootstrap) as raw:
            for i, out in enumerate(outs):
                procs.append(console_consumer(kafka_ref_tools, broker.bootstrap, topic, group, out))
                wait_for(raw, group, stable_with(i + 1, 6), f"{i + 1} Java members stable", procs)
            d = describe(raw, group)
            assert sorted(len(d.owned_by(mid)) for mid in d.members) == [2, 2, 2]
            assert {m.client_id.startswith("console-consumer") for m in d.members.values()} == {True}
            tool = kafka_ref_tools.kafka_tool(GROUPS_TOOL, "--bootstrap-server", broker.bootstrap, "--describe",
                                              "--group", group, "--members")
            assert tool.returncode == 0, tool.stderr[-2000:]
            rows = [line.split() for line in tool.stdout.splitlines() if line.startswith(group)]
            assert len(rows) == 3 and all(row[-1] == "2" for row in rows), tool.stdout  # #PARTITIONS
            leaving = procs.pop(0)
            os.killpg(leaving.pid, signal.SIGTERM)  # the console consumer closes: a leave heartbeat
            leaving.wait(60)
            d = wait_for(raw, group, stable_with(2, 6), "2 Java members after a leave", procs)
            assert sorted(len(d.owned_by(mid)) for mid in d.members) == [3, 3]

            deadline = time.monotonic() + 60
            while not read(outs) >= values:
                assert time.monotonic() < deadline, "records not all read"
                time.sleep(0.2)
    finally:
        for p in procs:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGTERM)
                p.wait(60)
    assert read(outs) == values


def read(outs: list[Path]) -> set[str]:
    return {line for o in outs for line in o.read_text().split()}
