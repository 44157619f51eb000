"""The admin side of share groups (issue 23): DescribeShareGroupOffsets, AlterShareGroupOffsets and
DeleteShareGroupOffsets with Kafka 4.3.1's answers, and Kafka's own kafka-share-groups.sh
(ShareGroupCommand) listing, describing, resetting and deleting a share group fed by
confluent-kafka's ShareConsumer. Runs against minikafka and, in the conformance run, Apache Kafka."""

from __future__ import annotations

import time

import pytest
from clients import create_topic, uniq, wait_until
from rawclient import RawClient
from test_share_groups import poll_until, produce, set_group_configs, share_consumer

from minikafka.protocol.errors import ErrorCode
from minikafka.protocol.versions import request_class

pytestmark = [pytest.mark.integration, pytest.mark.kafka_reference]
TOOL = "org.apache.kafka.tools.consumer.group.ShareGroupCommand"


def describe_offsets(raw: RawClient, group: str, topics: list[tuple[str, list[int]]] | None = None) -> dict:
    from kio.schema.describe_share_group_offsets.v1.request import (
        DescribeShareGroupOffsetsRequestGroup as G,
    )
    from kio.schema.describe_share_group_offsets.v1.request import (
        DescribeShareGroupOffsetsRequestTopic as T,
    )
    wanted = None if topics is None else tuple(T(topic_name=n, partitions=tuple(ps)) for n, ps in topics)
    (g,) = raw.request(request_class(90, 1)(groups=(G(group_id=group, topics=wanted),)), 1).groups
    assert g.error_code is ErrorCode.none
    return {(t.topic_name, p.partition_index): (p.start_offset, p.lag) for t in g.topics for p in t.partitions}


def alter(raw: RawClient, group: str, topics: list[tuple[str, list[tuple[int, int]]]]) -> tuple:
    from kio.schema.alter_share_group_offsets.v0.request import (
        AlterShareGroupOffsetsRequestPartition as P,
    )
    from kio.schema.alter_share_group_offsets.v0.request import (
        AlterShareGroupOffsetsRequestTopic as T,
    )
    r = raw.request(request_class(91, 0)(group_id=group, topics=tuple(
        T(topic_name=n, partitions=tuple(P(partition_index=p, start_offset=o) for p, o in ps)) for n, ps in topics)), 0)
    return r.error_code, r.error_message, {(t.topic_name, p.partition_index): p.error_code
                                           for t in r.responses for p in t.partitions}


def delete(raw: RawClient, group: str, topics: list[str]) -> tuple:
    from kio.schema.delete_share_group_offsets.v0.request import DeleteShareGroupOffsetsRequestTopic as T
    r = raw.request(request_class(92, 0)(group_id=group, topics=tuple(T(topic_name=n) for n in topics)), 0)
    return r.error_code, r.error_message, {t.topic_name: t.error_code for t in r.responses}


def test_share_group_offsets_describe_alter_delete_as_kafka_answers(kafka_broker):
    bs = kafka_broker.bootstrap
    topic, other, group = uniq("sgo"), uniq("sgo-other"), uniq("sg")
    create_topic(bs, topic, 2)
    create_topic(bs, other, 1)
    produce(bs, topic, 10)   # all to partition 0
    set_group_configs(bs, group, share_auto_offset_reset="earliest")
    c = share_consumer(bs, group, [topic])
    with RawClient.connect(bs) as raw:
        try:
            assert len(poll_until(c, 10)) == 10
            # every record ACCEPTed: nothing left; partition 1 never fetched: -1 and -1
            wait_until(lambda: describe_offsets(raw, group)[(topic, 0)][1] == 0, 20, "the lag at 0")
            offsets = describe_offsets(raw, group)
            assert offsets[(topic, 1)] == (-1, -1) and set(offsets) == {(topic, 0), (topic, 1)}
            missing = uniq("missing")
            assert describe_offsets(raw, group, [(missing, [0])]) == {(missing, 0): (-1, -1)}
            assert describe_offsets(raw, uniq("nobody")) == {}
            assert alter(raw, group, [(topic, [(0, 3)])])[:2] == (ErrorCode.non_empty_group, "The group is not empty.")
            assert delete(raw, group, [topic])[:2] == (ErrorCode.non_empty_group, "The group is not empty.")
        finally:
            c.close()
        wait_until(lambda: alter(raw, group, [(topic, [(0, 3), (7, 1)]), (missing, [(0, 1)]), (other, [(0, 0)])])[0]
                   is ErrorCode.none, 30, "the group empty")
        code, _msg, parts = alter(raw, group, [(topic, [(0, 3), (7, 1)]), (missing, [(0, 1)]), (other, [(0, 0)])])
        assert parts == {(topic, 0): ErrorCode.none, (topic, 7): ErrorCode.unknown_topic_or_partition,
                         (missing, 0): ErrorCode.unknown_topic_or_partition, (other, 0): ErrorCode.none}
        after = describe_offsets(raw, group)
        assert after[(topic, 0)] == (3, 7) and after[(other, 0)] == (0, 0)
        code, _msg, topics = delete(raw, group, [topic, missing])
        assert code is ErrorCode.none and topics == {topic: ErrorCode.none, missing: ErrorCode.unknown_topic_or_partition}
        assert set(describe_offsets(raw, group)) == {(other, 0)}
    # the topic starts over from share.auto.offset.reset: every record again
    again = share_consumer(bs, group, [topic])
    try:
        assert sorted(o for _p, o, _n in poll_until(again, 10)) == list(range(10))
    finally:
        again.close()


@pytest.fixture(scope="module")
def kafka_ref_tools():
    import kafka_ref

    kafka_ref.jars_or_skip("kafka-share-groups.sh")
    return kafka_ref


def _rows(stdout: str) -> list[list[str]]:
    """The table's rows without its header."""
    return [line.split() for line in stdout.splitlines() if line.strip()][1:]


def test_kafka_share_groups_sh_lists_describes_resets_and_deletes(kafka_broker, kafka_ref_tools):
    bs = kafka_broker.bootstrap
    topic, group = uniq("sgt"), uniq("sg")
    create_topic(bs, topic, 2)
    produce(bs, topic, 20, partitions=2)
    set_group_configs(bs, group, share_auto_offset_reset="earliest")

    def tool(*args: str) -> str:
        r = kafka_ref_tools.kafka_tool(TOOL, "--bootstrap-server", bs, *args)
        assert r.returncode == 0, r.stderr[-2000:]
        return r.stdout

    c = share_consumer(bs, group, [topic], **{"client.id": "sgt-client"})
    try:
        assert len(poll_until(c, 20)) == 20
        assert group in tool("--list").split()
        # GROUP TOPIC PARTITION START-OFFSET LAG: everything delivered and accepted
        # (Kafka's start offset is the one its last write carried: from before the acknowledgements)
        assert sorted(r[1:] for r in _rows(tool("--describe", "--group", group))) == \
            [[topic, "0", "0", "0"], [topic, "1", "0", "0"]]
        (member,) = _rows(tool("--describe", "--group", group, "--members"))
        assert member[0] == group and member[3] == "sgt-client" and member[4] == "2" and member[5] == f"{topic}:0,1"
    finally:
        c.close()
    deadline = time.monotonic() + 30
    while True:   # until the member's leave landed (the group is empty)
        r = kafka_ref_tools.kafka_tool(TOOL, "--bootstrap-server", bs, "--reset-offsets", "--group", group,
                                       "--topic", topic, "--to-earliest", "--execute")
        if r.returncode == 0 or time.monotonic() > deadline:
            break
    assert r.returncode == 0, r.stderr[-2000:]
    assert sorted(r[1:] for r in _rows(r.stdout)) == [[topic, "0", "0"], [topic, "1", "0"]]
    assert sorted(r[1:] for r in _rows(tool("--describe", "--group", group))) == \
        [[topic, "0", "0", "10"], [topic, "1", "0", "10"]]
    assert _rows(tool("--delete-offsets", "--group", group, "--topic", topic)) == [[topic, "Successful"]]
    assert "was successful" in tool("--delete", "--group", group)
    assert group not in tool("--list").split()
