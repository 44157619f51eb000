"""Share groups (KIP-932, issue 23) with confluent-kafka's ShareConsumer over real sockets: records
shared record by record between consumers, ACCEPT / RELEASE / REJECT, delivery counts and their
limit, acquisition locks expiring in virtual time, read_committed isolation, the state surviving a
kill -9 of the broker, and the group's life on the admin side."""

from __future__ import annotations

import contextlib
import subprocess
import sys
import textwrap
import time
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from clients import admin, create_topic, producer, uniq, wait_until
from confluent_kafka import AcknowledgeType, ShareConsumer
from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource
from rawclient import RawClient
from txnclients import txn_producer

from minikafka.protocol.errors import ErrorCode
from minikafka.protocol.versions import request_class

pytestmark = pytest.mark.integration
QUIET = {"log_level": 3}


def set_group_configs(bs: str, group: str, **configs: str) -> None:
    res = ConfigResource("group", group, incremental_configs=[
        ConfigEntry(name.replace("_", "."), value, incremental_operation=AlterConfigOpType.SET)
        for name, value in configs.items()])
    a = admin(bs)   # alive until the future resolves
    a.incremental_alter_configs([res])[res].result(30)


def share_consumer(bs: str, group: str, topics: list[str], **conf: Any) -> ShareConsumer:
    c = ShareConsumer({"bootstrap.servers": bs, "group.id": group, "share.acknowledgement.mode": "explicit",
                       **QUIET, **conf})
    c.subscribe(topics)
    return c


def produce(bs: str, topic: str, n: int, partitions: int = 1) -> None:
    p = producer(bs)
    for i in range(n):
        p.produce(topic, value=b"v%d" % i, partition=i % partitions)
    assert p.flush(30) == 0


def poll_until(c: ShareConsumer, want: int, *, ack: Any = AcknowledgeType.ACCEPT, timeout: float = 30.0,
               into: list[Any] | None = None,
               record: Callable[[Any], Any] = lambda m: (m.partition(), m.offset(), m.delivery_count())) -> list[Any]:
    """Poll, acknowledge every record with `ack` and commit, until `want` records came; each
    record kept as `record` makes it ((partition, offset, delivery count) by default)."""
    got: list[Any] = [] if into is None else into
    deadline = time.monotonic() + timeout
    while len(got) < want and time.monotonic() < deadline:
        msgs = [m for m in c.poll(0.5) if m.error() is None]
        for m in msgs:
            got.append(record(m))
            c.acknowledge(m, ack)
        if msgs:
            c.commit_sync(30)
    return got


def nothing_more(c: ShareConsumer, seconds: float = 1.5) -> list[Any]:
    extra = []
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        for m in c.poll(0.3):
            if m.error() is None:
                extra.append((m.partition(), m.offset()))
                c.acknowledge(m)
    return extra


def test_two_share_consumers_share_every_record_exactly_once(kafka_broker):
    bs = kafka_broker.bootstrap
    topic, group = uniq("share"), uniq("sg")
    create_topic(bs, topic, 3)
    set_group_configs(bs, group, share_auto_offset_reset="earliest")
    a, b = share_consumer(bs, group, [topic]), share_consumer(bs, group, [topic])
    try:
        produce(bs, topic, 300, partitions=3)
        got_a: list[Any] = []
        got_b: list[Any] = []
        deadline = time.monotonic() + 60
        while len(got_a) + len(got_b) < 300 and time.monotonic() < deadline:
            poll_until(a, len(got_a) + 1, timeout=0.5, into=got_a)
            poll_until(b, len(got_b) + 1, timeout=0.5, into=got_b)
        seen = Counter((p, o) for p, o, _n in got_a + got_b)
        assert len(seen) == 300 and set(seen.values()) == {1}, "every record once, none twice"
        assert all(n == 1 for _p, _o, n in got_a + got_b)
        assert nothing_more(a) == [] and nothing_more(b) == []
    finally:
        a.close()
        b.close()


def test_release_redelivers_with_a_higher_delivery_count_reject_never_and_the_limit_archives(kafka_broker):
    bs = kafka_broker.bootstrap
    topic, group = uniq("share-acks"), uniq("sg")
    create_topic(bs, topic, 1)
    set_group_configs(bs, group, share_auto_offset_reset="earliest", share_delivery_count_limit="2")
    produce(bs, topic, 10)
    c = share_consumer(bs, group, [topic])
    try:
        first = []
        deadline = time.monotonic() + 30
        while len(first) < 10 and time.monotonic() < deadline:
            msgs = [m for m in c.poll(0.5) if m.error() is None]
            for m in msgs:
                first.append((m.offset(), m.delivery_count()))
                # 0-3 go back, 4-6 are rejected, 7-9 accepted
                c.acknowledge(m, AcknowledgeType.RELEASE if m.offset() < 4 else
                              AcknowledgeType.REJECT if m.offset() < 7 else AcknowledgeType.ACCEPT)
            if msgs:
                c.commit_sync(30)
        assert sorted(first) == [(o, 1) for o in range(10)]
        second = poll_until(c, 4, ack=AcknowledgeType.RELEASE)
        assert sorted(second) == [(0, o, 2) for o in range(4)], "released records come back, delivered twice"
        # delivered twice with group.share.delivery.count.limit = 2: a release archives them
        assert nothing_more(c) == []
    finally:
        c.close()


@pytest.mark.minikafka_in_process
def test_an_expired_acquisition_lock_hands_the_records_to_another_consumer(kafka_broker):
    bs = kafka_broker.bootstrap
    topic, group = uniq("share-lock"), uniq("sg")
    create_topic(bs, topic, 1)
    set_group_configs(bs, group, share_auto_offset_reset="earliest")
    produce(bs, topic, 5)
    holder = share_consumer(bs, group, [topic])
    other = None
    try:
        held = []
        deadline = time.monotonic() + 30
        while len(held) < 5 and time.monotonic() < deadline:
            held += [m.offset() for m in holder.poll(0.5) if m.error() is None]
        assert sorted(held) == list(range(5))   # acquired and never acknowledged
        other = share_consumer(bs, group, [topic])
        assert nothing_more(other, 1.0) == [], "the records are locked"
        kafka_broker.clock.advance(31)   # group.share.record.lock.duration.ms = 30 s
        got = poll_until(other, 5)
        assert sorted(got) == [(0, o, 2) for o in range(5)]
    finally:
        if other is not None:
            other.close()
        holder.close()


def test_read_committed_share_groups_never_see_aborted_records(kafka_broker):
    bs = kafka_broker.bootstrap
    topic = uniq("share-txn")
    create_topic(bs, topic, 1)
    p = txn_producer(bs, uniq("tx"))
    for outcome, n in (("commit", 5), ("abort", 4), ("commit", 3)):
        p.begin_transaction()
        for i in range(n):
            p.produce(topic, value=f"{outcome}-{i}".encode(), partition=0)
        assert p.flush(30) == 0   # on the broker before the abort (librdkafka purges unsent ones)
        (p.commit_transaction if outcome == "commit" else p.abort_transaction)(30)
    committed, uncommitted = uniq("rc"), uniq("ru")
    set_group_configs(bs, committed, share_auto_offset_reset="earliest", share_isolation_level="read_committed")
    set_group_configs(bs, uncommitted, share_auto_offset_reset="earliest")
    rc, ru = share_consumer(bs, committed, [topic]), share_consumer(bs, uncommitted, [topic])
    try:
        values_rc = [v for _p, v, _n in _values(rc, 8)]
        values_ru = [v for _p, v, _n in _values(ru, 12)]
        assert sorted(values_rc) == sorted([f"commit-{i}" for i in range(5)] + [f"commit-{i}" for i in range(3)])
        assert sum(v.startswith("abort") for v in values_ru) == 4 and len(values_ru) == 12
        assert nothing_more(rc) == [] and nothing_more(ru) == []
    finally:
        rc.close()
        ru.close()


def _values(c: ShareConsumer, want: int) -> list[tuple[int, str, int]]:
    return poll_until(c, want, record=lambda m: (m.offset(), m.value().decode(), m.delivery_count()))


HOLDER = textwrap.dedent("""
    import sys, time
    from confluent_kafka import ShareConsumer, AcknowledgeType
    bs, group, topic, accept = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    c = ShareConsumer({"bootstrap.servers": bs, "group.id": group, "share.acknowledgement.mode": "explicit",
                       "log_level": 0})
    c.subscribe([topic])
    got = []
    deadline = time.monotonic() + 30
    while len(got) < 100 and time.monotonic() < deadline:
        got += [m for m in c.poll(0.5) if m.error() is None]
    got.sort(key=lambda m: m.offset())
    for m in got[:accept]:
        c.acknowledge(m, AcknowledgeType.ACCEPT)
    c.commit_sync(30)
    print("holding", len(got), flush=True)
    time.sleep(600)
""")


@contextlib.contextmanager
def holding(bs: str, topic: str, group: str, *, accept: int) -> Iterator[None]:
    """A topic of 100 records and a consumer process (HOLDER) that acquired them all and ACCEPTed
    the first `accept`; killed with -9 when the block ends."""
    create_topic(bs, topic, 1)
    set_group_configs(bs, group, share_auto_offset_reset="earliest")
    produce(bs, topic, 100)
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, bs, group, topic, str(accept)],
                              stdout=subprocess.PIPE, text=True)
    try:
        line = holder.stdout.readline() if holder.stdout else ""
        assert line.strip() == "holding 100", line
        yield
    finally:
        holder.kill()
        holder.wait(10)


def test_after_kill_9_the_acquired_records_come_back_and_the_accepted_never_do(kafka_broker):
    """A consumer ACCEPTs 0-39 of 100, holds 40-99 unacknowledged, and dies with the broker
    (kill -9 both): after the restart a new consumer gets exactly 40-99."""
    topic, group = uniq("share-crash"), uniq("sg")
    with holding(kafka_broker.bootstrap, topic, group, accept=40):
        kafka_broker.restart(hard=True)   # kill -9, then start on the same data dir and port
    c = share_consumer(kafka_broker.bootstrap, group, [topic])
    try:
        got = poll_until(c, 60)
        assert sorted(o for _p, o, _n in got) == list(range(40, 100))
        assert nothing_more(c) == []
    finally:
        c.close()


def _raw(bs: str) -> RawClient:
    return RawClient.connect(bs)


def test_the_group_on_the_admin_side_describe_list_refusals_and_delete(kafka_broker):
    bs = kafka_broker.bootstrap
    topic, group = uniq("share-admin"), uniq("sg")
    create_topic(bs, topic, 2)
    c = share_consumer(bs, group, [topic], **{"client.id": "share-client"})
    try:
        c.poll(0.5)
        with _raw(bs) as raw:
            describe = request_class(77, 1)

            def assigned() -> int:
                members = raw.request(describe(group_ids=(group,), include_authorized_operations=False), 1).groups[0].members
                return sum(len(t.partitions) for m in members for t in m.assignment.topic_partitions)

            # Kafka assigns a new partition once its share state is initialized (a heartbeat later)
            wait_until(lambda: (c.poll(0.1), assigned())[1] == 2, 30, "the member assigned both partitions")
            g = raw.request(describe(group_ids=(group,), include_authorized_operations=False), 1).groups[0]
            assert (g.error_code, g.group_state, g.assignor_name) == (ErrorCode.none, "Stable", "simple")
            (m,) = g.members
            assert m.client_id == "share-client" and m.subscribed_topic_names == (topic,)
            assert sorted(p for t in m.assignment.topic_partitions for p in t.partitions) == [0, 1]
            missing = raw.request(describe(group_ids=("nope",), include_authorized_operations=False), 1).groups[0]
            assert (missing.error_code, missing.error_message) == (ErrorCode.group_id_not_found, "Group nope not found.")
            # ShareAcknowledge without a session, ShareFetch at a wrong epoch
            ack = request_class(79, 2)
            r = raw.request(ack(group_id=group, member_id="x" * 22, share_session_epoch=3, is_renew_ack=False,
                                topics=()), 2)
            assert r.error_code is ErrorCode.share_session_not_found
            listed = raw.request(request_class(16, 5)(states_filter=(), types_filter=("share",)), 5).groups
            assert [(g.group_id, g.protocol_type, g.group_state, g.group_type) for g in listed
                    if g.group_id == group] == [(group, "share", "Stable", "share")]
            assert not [g for g in raw.request(request_class(16, 5)(states_filter=(), types_filter=("consumer",)), 5)
                        .groups if g.group_id == group]
        a = admin(bs)
        with pytest.raises(Exception, match="NON_EMPTY_GROUP|not empty"):
            a.delete_consumer_groups([group])[group].result(30)
    finally:
        c.close()
    wait_until(lambda: _deleted(bs, group), 30, "the empty share group deleted")


def _deleted(bs: str, group: str) -> bool:
    a = admin(bs)
    try:
        a.delete_consumer_groups([group])[group].result(10)
        return True
    except Exception:  # noqa: BLE001 - non-empty until the member's leave landed
        return False


def test_a_consumer_that_dies_gives_its_records_back_at_once(kafka_broker):
    """kill -9 of a consumer holding records: its connection closes, its share session ends, and
    what it held is AVAILABLE again without waiting for the 30 s locks; the records come back with
    the delivery count they had before (fetched, never delivered to an application)."""
    bs = kafka_broker.bootstrap
    topic, group = uniq("share-dies"), uniq("sg")
    with holding(bs, topic, group, accept=0):
        pass
    c = share_consumer(bs, group, [topic])
    try:
        started = time.monotonic()
        got = poll_until(c, 100, timeout=25)
        assert sorted(o for _p, o, _n in got) == list(range(100))
        assert time.monotonic() - started < 25, "not the 30 s lock: the session ended with its connection"
    finally:
        c.close()


@pytest.mark.minikafka_in_process
def test_a_member_whose_session_times_out_leaves_the_group(kafka_broker):
    from test_share_fetch_raw import heartbeat

    bs = kafka_broker.bootstrap
    topic, group = uniq("share-timeout"), uniq("sg")
    create_topic(bs, topic, 1)
    with RawClient.connect(bs) as raw:
        kafka_broker.clock.pause()  # only the advances below move the session's clock
        assert heartbeat(raw, group, "m-quiet", 0, (topic,)).error_code is ErrorCode.none
        describe = request_class(77, 1)
        members = lambda: raw.request(describe(group_ids=(group,), include_authorized_operations=False),  # noqa: E731
                                      1).groups[0].members
        assert [m.member_id for m in members()] == ["m-quiet"]
        kafka_broker.clock.advance(44)
        assert len(members()) == 1
        kafka_broker.clock.advance(2)   # group.share.session.timeout.ms = 45 s
        assert members() == ()
        assert heartbeat(raw, group, "m-quiet", 2, None).error_code is ErrorCode.unknown_member_id


def test_a_topic_deleted_and_created_again_is_read_from_its_own_start(kafka_broker):
    """The share-partition of the old topic does not carry over to the new one of the same name
    (librdkafka's 0184_share_consumer_topic_recreate)."""
    bs = kafka_broker.bootstrap
    topic, group = uniq("share-recreate"), uniq("sg")
    create_topic(bs, topic, 1)
    set_group_configs(bs, group, share_auto_offset_reset="earliest")
    produce(bs, topic, 30)
    c = share_consumer(bs, group, [topic])
    try:
        assert len(poll_until(c, 30)) == 30
        a = admin(bs)
        a.delete_topics([topic])[topic].result(30)
        wait_until(lambda: topic not in a.list_topics(timeout=5).topics, 30, "the topic gone")
        create_topic(bs, topic, 1)
        produce(bs, topic, 5)
        got = poll_until(c, 5, timeout=45)
        assert sorted(o for _p, o, _n in got) == list(range(5))
    finally:
        c.close()
