"""Consumer groups with confluent-kafka against a broker started by the test: assignment without
overlap for every client-side assignor, rebalances on join/leave/crash, committed offsets across
restarts, static membership, the admin group APIs, and `__consumer_offsets` itself."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from clients import create_topic, produce_all, producer
from confluent_kafka import Consumer, ConsumerGroupState, ConsumerGroupTopicPartitions, TopicPartition
from confluent_kafka.admin import AdminClient

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

FAST_GROUPS = {"group.min.session.timeout.ms": "1000"}
SESSION_MS = 6000


class Member:
    """One consumer in the group, with the partitions it currently owns (from its callbacks)."""

    def __init__(self, bootstrap: str, group: str, topic: str, **conf: Any) -> None:
        self.owned: set[int] = set()
        self.assign_calls = 0
        self.revoke_calls = 0
        self.cooperative = conf.get("partition.assignment.strategy") == "cooperative-sticky"
        self.consumer = Consumer({
            "bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest",
            "enable.auto.commit": False, "session.timeout.ms": SESSION_MS, "heartbeat.interval.ms": 300,
            **conf})
        self.consumer.subscribe([topic], on_assign=self._on_assign, on_revoke=self._on_revoke)

    def _on_assign(self, c: Consumer, parts: list[TopicPartition]) -> None:
        self.assign_calls += 1
        if self.cooperative:
            self.owned |= {p.partition for p in parts}
        else:
            self.owned = {p.partition for p in parts}

    def _on_revoke(self, c: Consumer, parts: list[TopicPartition]) -> None:
        self.revoke_calls += 1
        self.owned -= {p.partition for p in parts}

    def poll(self) -> None:
        msg = self.consumer.poll(0.05)
        if msg is not None and msg.error():
            raise AssertionError(f"consumer error: {msg.error()}")

    def close(self) -> None:
        self.consumer.close()


def poll_until(members: list[Member], cond: Callable[[], bool], timeout: float, what: str) -> float:
    """Poll every member until cond() holds; returns the seconds it took."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        for m in members:
            m.poll()
        if cond():
            return time.monotonic() - t0
    raise AssertionError(f"timed out after {timeout}s waiting for {what}: "
                         f"{[sorted(m.owned) for m in members]}")


def exact_cover(members: list[Member], partitions: int) -> bool:
    owned = [p for m in members for p in m.owned]
    return sorted(owned) == list(range(partitions)) and all(m.owned for m in members)


def topic_with_data(bootstrap: str, name: str, partitions: int = 6, per_partition: int = 5) -> None:
    create_topic(bootstrap, name, partitions)
    produce_all(producer(bootstrap), name, [
        {"partition": p, "key": f"{p}-{i}".encode(), "value": b"v"}
        for p in range(partitions) for i in range(per_partition)])


# ------------------------------------------------------------------------------------------ assignment
@pytest.mark.parametrize("assignor", ["range", "roundrobin", "cooperative-sticky"])
def test_three_members_share_six_partitions(kafka_broker: Any, assignor: str) -> None:
    topic, group = f"share-{assignor}", f"g-share-{assignor}"
    topic_with_data(kafka_broker.bootstrap, topic)
    t0 = time.monotonic()
    members = [Member(kafka_broker.bootstrap, group, topic, **{"partition.assignment.strategy": assignor})
               for _ in range(3)]
    try:
        poll_until(members, lambda: exact_cover(members, 6), 60, "three members covering six partitions")
        elapsed = time.monotonic() - t0
        print(f"\nrebalance {assignor}: 3 members, join to all assigned: {elapsed:.2f}s")
        assert [len(m.owned) for m in members] == [2, 2, 2]
        admin = AdminClient({"bootstrap.servers": kafka_broker.bootstrap})  # alive until the result
        desc = admin.describe_consumer_groups([group])[group].result(20)
        assert desc.state == ConsumerGroupState.STABLE
        assert desc.partition_assignor == assignor
        described = sorted(tp.partition for m in desc.members for tp in m.assignment.topic_partitions)
        assert described == list(range(6))
    finally:
        for m in members:
            m.close()


def test_member_leaving_and_joining_triggers_rebalances(kafka_broker: Any) -> None:
    topic, group = "leave-join", "g-leave-join"
    topic_with_data(kafka_broker.bootstrap, topic)
    a = Member(kafka_broker.bootstrap, group, topic)
    b = Member(kafka_broker.bootstrap, group, topic)
    members = [a, b]
    try:
        poll_until(members, lambda: exact_cover(members, 6), 60, "two members")
        c = Member(kafka_broker.bootstrap, group, topic)
        members.append(c)
        poll_until(members, lambda: exact_cover(members, 6) and len(c.owned) == 2, 60, "third member joins")
        b.close()
        members.remove(b)
        poll_until(members, lambda: exact_cover(members, 6) and len(a.owned) == 3, 60, "after b left")
    finally:
        for m in members:
            m.close()


_CHILD = """
import sys
from confluent_kafka import Consumer
bootstrap, group, topic = sys.argv[1:4]
c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest",
              "session.timeout.ms": 6000, "heartbeat.interval.ms": 300, "enable.auto.commit": False})
def on_assign(consumer, parts):
    print("ASSIGNED " + ",".join(str(p.partition) for p in parts), flush=True)
c.subscribe([topic], on_assign=on_assign)
while True:
    c.poll(0.1)
"""


def test_killed_member_expires_after_session_timeout_and_partitions_move(broker_factory: Any,
                                                                           tmp_path: Path) -> None:
    broker = broker_factory(overrides=FAST_GROUPS)
    topic, group = "kill9", "g-kill9"
    topic_with_data(broker.bootstrap, topic)
    # Sessions of 6 s (Kafka's minimum): a stall of a busy machine must not expire a member early.
    survivor = Member(broker.bootstrap, group, topic, **{"session.timeout.ms": 6000})
    lines: list[str] = []
    child = subprocess.Popen([sys.executable, "-c", _CHILD, broker.bootstrap, group, topic],
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    reader = threading.Thread(target=lambda: lines.extend(iter(child.stdout.readline, "")),  # type: ignore[union-attr]
                              daemon=True)
    reader.start()
    try:
        poll_until([survivor], lambda: len(survivor.owned) == 3 and any(
            line.startswith("ASSIGNED ") and len(line.split()[1].split(",")) == 3 for line in lines), 60,
            "the child process to own half the partitions")
        child.kill()
        child.wait(10)
        t_kill = time.monotonic()
        poll_until([survivor], lambda: survivor.owned == set(range(6)), 30, "partitions to move")
        moved_after = time.monotonic() - t_kill
        # Not before the session timeout (minus heartbeat slack), and not much after it.
        assert 3.0 <= moved_after <= 25.0, moved_after
    finally:
        if child.poll() is None:
            child.kill()
            child.wait(10)
        survivor.close()


# ------------------------------------------------------------------------------------------ offsets
def test_committed_offsets_survive_sigterm_and_kill9(kafka_broker: Any) -> None:
    if kafka_broker.external:
        pytest.skip("restarts the broker")
    topic, group = "durable-offsets", "g-durable"
    topic_with_data(kafka_broker.bootstrap, topic, partitions=2)
    m = Member(kafka_broker.bootstrap, group, topic)
    try:
        poll_until([m], lambda: m.owned == {0, 1}, 60, "assignment")
        m.consumer.commit(offsets=[TopicPartition(topic, 0, 3), TopicPartition(topic, 1, 5)], asynchronous=False)
    finally:
        m.close()

    def committed() -> list[tuple[int, int]]:
        c = Consumer({"bootstrap.servers": kafka_broker.bootstrap, "group.id": group})
        try:
            return [(tp.partition, tp.offset) for tp in c.committed(
                [TopicPartition(topic, 0), TopicPartition(topic, 1)], timeout=20)]
        finally:
            c.close()

    assert committed() == [(0, 3), (1, 5)]
    kafka_broker.restart(hard=False)
    assert committed() == [(0, 3), (1, 5)]
    c = Consumer({"bootstrap.servers": kafka_broker.bootstrap, "group.id": group})
    c.commit(offsets=[TopicPartition(topic, 0, 4)], asynchronous=False)   # simple (generation -1) commit
    c.close()
    kafka_broker.restart(hard=True)
    assert committed() == [(0, 4), (1, 5)]


def test_consumer_resumes_from_committed_offset_after_restart(kafka_broker: Any) -> None:
    if kafka_broker.external:
        pytest.skip("restarts the broker")
    topic, group = "resume", "g-resume"
    topic_with_data(kafka_broker.bootstrap, topic, partitions=1, per_partition=10)
    m = Member(kafka_broker.bootstrap, group, topic)
    try:
        got = []
        deadline = time.monotonic() + 30
        while len(got) < 4 and time.monotonic() < deadline:
            msg = m.consumer.poll(0.2)
            if msg is not None and not msg.error():
                got.append(msg.offset())
        assert got == [0, 1, 2, 3]
        m.consumer.commit(asynchronous=False)
    finally:
        m.close()
    kafka_broker.restart(hard=True)
    m = Member(kafka_broker.bootstrap, group, topic)
    try:
        deadline = time.monotonic() + 30
        msg = None
        while time.monotonic() < deadline:
            msg = m.consumer.poll(0.2)
            if msg is not None and not msg.error():
                break
        assert msg is not None and msg.offset() == 4
    finally:
        m.close()


# ------------------------------------------------------------------------------------------ static
def test_static_member_rejoins_without_rebalance(broker_factory: Any) -> None:
    broker = broker_factory(overrides=FAST_GROUPS)
    topic, group = "static", "g-static"
    topic_with_data(broker.bootstrap, topic)
    conf = {"session.timeout.ms": 10000}
    a = Member(broker.bootstrap, group, topic, **{"group.instance.id": "inst-a"}, **conf)
    b = Member(broker.bootstrap, group, topic, **{"group.instance.id": "inst-b"}, **conf)
    members = [a, b]
    try:
        poll_until(members, lambda: exact_cover(members, 6), 60, "two static members")
        before_b = set(b.owned)
        a_assigns, a_revokes = a.assign_calls, a.revoke_calls
        b.close()                       # a static member leaves no LeaveGroup behind (KIP-345)
        members.remove(b)
        b2 = Member(broker.bootstrap, group, topic, **{"group.instance.id": "inst-b"}, **conf)
        members.append(b2)
        poll_until(members, lambda: b2.owned == before_b, 30, "the restarted static member to get its partitions")
        t_end = time.monotonic() + 2.0  # and nothing else moves
        while time.monotonic() < t_end:
            for m in members:
                m.poll()
        assert (a.assign_calls, a.revoke_calls) == (a_assigns, a_revokes)
        assert exact_cover(members, 6)
    finally:
        for m in members:
            m.close()


# ------------------------------------------------------------------------------------------ admin
def test_admin_group_operations(kafka_broker: Any) -> None:
    bootstrap = kafka_broker.bootstrap
    topic, group, idle = "admin-groups", "g-admin-active", "g-admin-idle"
    topic_with_data(bootstrap, topic, partitions=2)
    admin = AdminClient({"bootstrap.servers": bootstrap})
    m = Member(bootstrap, group, topic)
    try:
        poll_until([m], lambda: m.owned == {0, 1}, 60, "assignment")
        # alter offsets of an idle (Empty) group, then read them back
        alter = admin.alter_consumer_group_offsets([ConsumerGroupTopicPartitions(
            idle, [TopicPartition(topic, 0, 1), TopicPartition(topic, 1, 2)])])
        assert alter[idle].result(20).group_id == idle
        listed = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(idle)])[idle].result(20)
        assert sorted((tp.partition, tp.offset) for tp in listed.topic_partitions) == [(0, 1), (1, 2)]

        groups = admin.list_consumer_groups().result(20)
        states = {g.group_id: g.state for g in groups.valid}
        assert states.get(group) == ConsumerGroupState.STABLE
        assert states.get(idle) == ConsumerGroupState.EMPTY
        stable_only = admin.list_consumer_groups(states={ConsumerGroupState.STABLE}).result(20)
        assert {g.group_id for g in stable_only.valid} >= {group} and idle not in {
            g.group_id for g in stable_only.valid}

        desc = admin.describe_consumer_groups([group, idle])
        active = desc[group].result(20)
        assert active.state == ConsumerGroupState.STABLE and len(active.members) == 1
        assert desc[idle].result(20).state == ConsumerGroupState.EMPTY

        # an active group cannot be deleted; an empty one can, and its offsets go with it
        with pytest.raises(Exception, match="NON_EMPTY_GROUP"):
            admin.delete_consumer_groups([group])[group].result(20)
        admin.delete_consumer_groups([idle])[idle].result(20)
        gone = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(
            idle, [TopicPartition(topic, 0)])])[idle].result(20)
        assert [tp.offset for tp in gone.topic_partitions] == [-1001]
        assert idle not in {g.group_id for g in admin.list_consumer_groups().result(20).valid}
        with pytest.raises(Exception, match="GROUP_ID_NOT_FOUND"):
            admin.delete_consumer_groups([idle])[idle].result(20)
    finally:
        m.close()


def test_consumer_offsets_topic_is_internal_fetchable_and_not_auto_created(kafka_broker: Any) -> None:
    bootstrap = kafka_broker.bootstrap
    topic, group = "internal-check", "g-internal"
    topic_with_data(bootstrap, topic, partitions=1)
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    c.commit(offsets=[TopicPartition(topic, 0, 3)], asynchronous=False)
    c.close()
    admin = AdminClient({"bootstrap.servers": bootstrap})
    from confluent_kafka import TopicCollection
    desc = admin.describe_topics(TopicCollection(["__consumer_offsets"]))["__consumer_offsets"].result(20)
    assert desc.is_internal
    # A client cannot auto-create an internal topic by asking for it.
    md = admin.list_topics("__transaction_state_not_here", timeout=10)
    assert md.topics["__transaction_state_not_here"].error is not None
    # The committed offset is a record in __consumer_offsets, readable with Fetch.
    reader = Consumer({"bootstrap.servers": bootstrap, "group.id": "g-internal-reader",
                       "auto.offset.reset": "earliest", "enable.auto.commit": False,
                       "isolation.level": "read_uncommitted"})
    try:
        n = len(desc.partitions)
        reader.assign([TopicPartition("__consumer_offsets", p, 0) for p in range(n)])
        found = None
        deadline = time.monotonic() + 20
        while found is None and time.monotonic() < deadline:
            msg = reader.poll(0.2)
            if msg is None or msg.error() or msg.key() is None:
                continue
            key = msg.key()
            if key[:2] == b"\x00\x01" and group.encode() in key and msg.value() is not None:
                found = msg.value()
        assert found is not None
        assert int.from_bytes(found[:2], "big") >= 3 and int.from_bytes(found[2:10], "big") == 3
    finally:
        reader.close()


def test_dump_log_segments_decodes_consumer_offsets(broker_factory: Any) -> None:
    import kafka_ref

    kafka_ref.jars_or_skip("DumpLogSegments")
    broker = broker_factory(overrides={**FAST_GROUPS, "offsets.topic.num.partitions": "1"})
    topic, group = "dump-offsets", "g-dump"
    topic_with_data(broker.bootstrap, topic, partitions=2)
    m = Member(broker.bootstrap, group, topic)
    try:
        poll_until([m], lambda: m.owned == {0, 1}, 60, "assignment")
        m.consumer.commit(offsets=[TopicPartition(topic, 1, 4)], asynchronous=False)
    finally:
        m.close()
    segment = broker.data_dir / "__consumer_offsets-0" / f"{0:020d}.log"
    out = kafka_ref.dump_log_segments([str(segment)], "--offsets-decoder")
    text = out.stdout
    assert f'"type":"1","data":{{"group":"{group}","topic":"{topic}","partition":1}}' in text, text[-3000:]
    assert '"offset":4' in text
    assert f'"type":"2","data":{{"group":"{group}"}}' in text
    assert '"protocolType":"consumer"' in text
    assert "Exception" not in text + out.stderr and "Unknown" not in text

