"""KIP-1071 with Kafka Streams 4.3.1 itself: two instances of an exactly_once_v2 word count
(tests/compat/apps/StreamsWordCount.java) run with `group.protocol=streams`; the broker creates
their repartition and changelog topics and the coordinator splits the tasks between them. One is
killed with -9 while it works; the other takes over its tasks once its session expires. A
read_committed reader of the output then sees every word's exact count (nothing lost, nothing
counted twice), and at every StreamsGroupDescribe no task is active on two members. Issue 18,
"How it is shown": a Kafka Streams 4.3 exactly_once_v2 app with group.protocol=streams gives
exact counts. Kafka's own `kafka-streams-groups.sh` (StreamsGroupCommand) describes the members
and, once the application stopped, deletes the group with its internal topics. Runs against
Apache Kafka 4.3.1 in conformance mode too.
"""

from __future__ import annotations

import collections
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from clients import create_topic, uniq
from rawclient import RawClient
from confluent_kafka.admin import AdminClient
from test_streams_protocol import FAST, Described, describe

pytestmark = [pytest.mark.integration, pytest.mark.kafka_reference, pytest.mark.timeout(420)]

APPS = Path(__file__).resolve().parents[1] / "compat" / "apps"
# The dead member's session (6 s) must pass before its tasks move, as in Kafka.
SESSION = {**FAST, "group.streams.session.timeout.ms": "6000"}
STREAMS_GROUPS_TOOL = "org.apache.kafka.tools.streams.StreamsGroupCommand"


def no_shared_tasks(d: Described) -> None:
    shared = {t: o for t, o in d.active_owners().items() if len(o) > 1}
    assert not shared, f"tasks active on two members at group epoch {d.group_epoch}: {shared}"


def wait_for(raw: RawClient, group: str, cond: Any, what: str, procs: list[subprocess.Popen[bytes]],
             timeout: float = 180.0) -> Described:
    deadline = time.monotonic() + timeout
    while True:
        try:
            d = describe(raw, group)
        except AssertionError:   # GROUP_ID_NOT_FOUND until the first heartbeat
            d = None
        if d is not None:
            no_shared_tasks(d)
            if cond(d):
                return d
        dead = [p.args for p in procs if p.poll() is not None]
        assert not dead, f"a Streams instance exited: {dead}"
        assert time.monotonic() < deadline, f"{what}: not reached in {timeout}s; last {d}"
        time.sleep(0.2)


def test_kafka_streams_eos_word_count_with_the_streams_protocol(configured_broker: Any, streams_app: Any,
                                                                tmp_path: Path) -> None:
    streams_eos, app_support, kafka_ref = streams_app
    broker = configured_broker(overrides=SESSION)
    prefix = uniq("ks")
    text, counts_topic, app_id = f"{prefix}-text", f"{prefix}-counts", f"{prefix}-wc"
    create_topic(broker.bootstrap, text, 4)
    create_topic(broker.bootstrap, counts_topic, 4)
    expected: collections.Counter[str] = collections.Counter()
    streams_eos.produce_lines(broker.bootstrap, text, 0, 300, expected)

    def start(i: int) -> subprocess.Popen[bytes]:
        state = tmp_path / f"state-{i}"
        state.mkdir(exist_ok=True)
        return app_support.java(str(APPS / "StreamsWordCount.java"), broker.bootstrap, prefix, str(state), "streams",
                                log=tmp_path / f"app-{i}.log")

    procs = [start(0), start(1)]
    try:
        with RawClient.connect(broker.bootstrap) as raw:
            # Two members, each with its share of the 8 active tasks (2 subtopologies x 4).
            d = wait_for(raw, app_id, lambda d: d.state == "Stable" and len(d.members) == 2
                         and len(d.active_owners()) == 8, "two Streams members stable", procs)
            shares = sorted(sum(len(t.partitions) for t in m.assignment.active_tasks) for m in d.members.values())
            assert shares == [4, 4], shares
            tool = kafka_ref.kafka_tool(STREAMS_GROUPS_TOOL, "--bootstrap-server", broker.bootstrap, "--describe",
                                        "--group", app_id, "--members")
            assert tool.returncode == 0, tool.stderr[-2000:]
            rows = [line.split() for line in tool.stdout.splitlines() if line.startswith(app_id)]
            assert {r[1] for r in rows} == set(d.members) and all("ACTIVE:" in r for r in rows), tool.stdout
            # Kill one while it is counting.
            end = time.monotonic() + 120
            while not any(app_support.watermarks(broker.bootstrap, counts_topic, p)[1] > 0 for p in range(4)):
                assert time.monotonic() < end, "no output from the Streams app"
                time.sleep(0.2)
            procs[0].send_signal(signal.SIGKILL)
            procs[0].wait(30)
            streams_eos.produce_lines(broker.bootstrap, text, 300, 300, expected)
            wait_for(raw, app_id, lambda d: d.state == "Stable" and len(d.members) == 1
                     and len(d.active_owners()) == 8, "the survivor owns every task", procs[1:])
        got = streams_eos.committed_counts(broker.bootstrap, counts_topic, expected, 150)
        wrong = {w: (got.get(w), n) for w, n in expected.items() if got.get(w) != n}
        assert not wrong, f"counts (seen, expected) differ after kill -9: {dict(sorted(wrong.items())[:4])}"

        # Stopped (SIGTERM: Streams leaves the group), the group is Empty and the tool deletes it
        # with the internal topics the broker created for it.
        app_support.stop(procs[1])
        with RawClient.connect(broker.bootstrap) as raw:
            wait_for(raw, app_id, lambda d: d.state == "Empty", "the group empty", [])
        tool = kafka_ref.kafka_tool(STREAMS_GROUPS_TOOL, "--bootstrap-server", broker.bootstrap, "--delete",
                                    "--group", app_id, "--delete-all-internal-topics")
        assert tool.returncode == 0 and "was successful" in tool.stdout, tool.stdout + tool.stderr[-2000:]
        listed = kafka_ref.kafka_tool(STREAMS_GROUPS_TOOL, "--bootstrap-server", broker.bootstrap, "--list")
        assert app_id not in listed.stdout.split()
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        end = time.monotonic() + 30
        while any(t.startswith(f"{app_id}-") for t in admin.list_topics(timeout=10).topics):
            assert time.monotonic() < end, "internal topics left after --delete-all-internal-topics"
            time.sleep(0.2)
    finally:
        for p in procs:
            app_support.stop(p)
        for i in range(2):
            log = tmp_path / f"app-{i}.log"
            if log.exists() and "ERROR" in log.read_text(errors="replace"):
                print(f"--- app-{i}.log ---\n" + log.read_text(errors="replace")[-4000:])
