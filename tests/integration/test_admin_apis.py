"""The admin surface around the core (issue 16, item 1), with confluent-kafka's AdminClient where it
has the call and raw requests where it has not: DeleteRecords, the ACL APIs without an authorizer,
DescribeLogDirs, ElectLeaders, Alter/ListPartitionReassignments. Runs against Apache Kafka 4.3.1 in
conformance mode (`make conformance`) too, except the restart test.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from clients import consumer, create_topic, produce_all, producer, uniq
from confluent_kafka import ElectionType, KafkaError, KafkaException, TopicPartition
from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    ResourcePatternType,
    ResourceType,
)
from kio.schema.alter_partition_reassignments.v0.request import (
    AlterPartitionReassignmentsRequest,
    ReassignablePartition,
    ReassignableTopic,
)
from kio.schema.describe_log_dirs.v4.request import DescribableLogDirTopic, DescribeLogDirsRequest
from kio.schema.list_partition_reassignments.v0.request import (
    ListPartitionReassignmentsRequest,
    ListPartitionReassignmentsTopics,
)
from kio.schema.types import TopicName
from kio.schema.describe_acls.v3.request import DescribeAclsRequest
from kio.static.primitive import i8, i32
from rawclient import RawClient, ms

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

SECURITY_DISABLED = 54
ELECTION_NOT_NEEDED = 84
NO_REASSIGNMENT_IN_PROGRESS = 85
INVALID_REPLICA_ASSIGNMENT = 39
NO_AUTHORIZER = "No Authorizer is configured."


def _admin(bootstrap: str) -> AdminClient:
    return AdminClient({"bootstrap.servers": bootstrap})


def _fill(bootstrap: str, topic: str, n: int, config: dict[str, str] | None = None, size: int = 40) -> None:
    create_topic(bootstrap, topic, 1, config)
    p = producer(bootstrap, **{"linger.ms": 0, "batch.num.messages": 1})
    produce_all(p, topic, [{"value": f"{i:08d}".encode() * (size // 8), "partition": 0} for i in range(n)])


def _first_offset(bootstrap: str, topic: str) -> int:
    c = consumer(bootstrap, **{"auto.offset.reset": "earliest", "group.id": uniq("g")})
    try:
        c.assign([TopicPartition(topic, 0, -2)])  # OFFSET_BEGINNING: resolved by ListOffsets(-2)
        while True:
            m = c.poll(10)
            assert m is not None, "nothing to read"
            if not m.error():
                return m.offset()
    finally:
        c.close()


def test_delete_records_moves_the_log_start(kafka_broker) -> None:
    topic = uniq("delrec")
    _fill(kafka_broker.bootstrap, topic, 100)
    admin = _admin(kafka_broker.bootstrap)
    done = admin.delete_records([TopicPartition(topic, 0, 60)])
    result = next(iter(done.values())).result(30)
    assert result.low_watermark == 60
    lo, hi = consumer(kafka_broker.bootstrap).get_watermark_offsets(TopicPartition(topic, 0), timeout=10)
    assert (lo, hi) == (60, 100)
    assert _first_offset(kafka_broker.bootstrap, topic) == 60
    # At or below the log start: nothing changes, the answer is the current log start.
    again = next(iter(admin.delete_records([TopicPartition(topic, 0, 10)]).values())).result(30)
    assert again.low_watermark == 60
    # -1 means the high watermark: everything goes.
    everything = next(iter(admin.delete_records([TopicPartition(topic, 0, -1)]).values())).result(30)
    assert everything.low_watermark == 100


def test_delete_records_errors(kafka_broker) -> None:
    topic = uniq("delrec-err")
    _fill(kafka_broker.bootstrap, topic, 10)
    admin = _admin(kafka_broker.bootstrap)
    with pytest.raises(KafkaException) as past_end:
        next(iter(admin.delete_records([TopicPartition(topic, 0, 11)]).values())).result(30)
    assert past_end.value.args[0].code() == KafkaError.OFFSET_OUT_OF_RANGE
    compacted = uniq("delrec-compact")
    create_topic(kafka_broker.bootstrap, compacted, 1, {"cleanup.policy": "compact"})
    with pytest.raises(KafkaException) as policy:
        next(iter(admin.delete_records([TopicPartition(compacted, 0, 0)]).values())).result(30)
    assert policy.value.args[0].code() == KafkaError.POLICY_VIOLATION


def test_delete_records_survives_kill9_and_deletes_segments(broker_factory) -> None:
    broker = broker_factory()
    topic = uniq("delrec-kill")
    # 1 MiB segments (Kafka's minimum segment.bytes): ~4 MB of records make several.
    _fill(broker.bootstrap, topic, 200, {"segment.bytes": str(1 << 20)}, size=20_000)
    part_dir = Path(broker.data_dir) / f"{topic}-0"
    before = sorted(part_dir.glob("*.log"))
    assert len(before) > 3
    admin = _admin(broker.bootstrap)  # kept alive until its future resolves
    result = next(iter(admin.delete_records([TopicPartition(topic, 0, 150)]).values())).result(30)
    assert result.low_watermark == 150
    after = sorted(part_dir.glob("*.log"))
    assert len(after) < len(before)
    assert all(int(p.stem) <= 150 for p in after[:1])  # the first segment left holds offset 150
    broker.restart(hard=True)
    assert _first_offset(broker.bootstrap, topic) == 150
    lo, _ = consumer(broker.bootstrap).get_watermark_offsets(TopicPartition(topic, 0), timeout=10, cached=False)
    assert lo == 150


def test_acl_apis_answer_security_disabled(kafka_broker) -> None:
    admin = _admin(kafka_broker.bootstrap)
    flt = AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY, None, None,
                           AclOperation.ANY, AclPermissionType.ANY)
    # librdkafka turns the describe error into an empty list (so does it against Kafka); the raw
    # answer carries the error.
    assert admin.describe_acls(flt).result(30) == []
    with RawClient.connect(kafka_broker.bootstrap) as c:
        raw = c.request(DescribeAclsRequest(resource_type_filter=i8(1), resource_name_filter=None,
                                            pattern_type_filter=i8(1), principal_filter=None, host_filter=None,
                                            operation=i8(1), permission_type=i8(1)), 3)
    assert (int(raw.error_code), raw.error_message, raw.resources) == (
        SECURITY_DISABLED, "No Authorizer is configured on the broker", ())
    binding = AclBinding(ResourceType.TOPIC, "t", ResourcePatternType.LITERAL, "User:alice", "*",
                         AclOperation.READ, AclPermissionType.ALLOW)
    with pytest.raises(KafkaException) as created:
        admin.create_acls([binding])[binding].result(30)
    assert created.value.args[0].code() == SECURITY_DISABLED
    assert created.value.args[0].str() == NO_AUTHORIZER
    with pytest.raises(KafkaException) as deleted:
        admin.delete_acls([flt])[flt].result(30)
    assert deleted.value.args[0].code() == SECURITY_DISABLED


def test_elect_leaders_is_never_needed(kafka_broker) -> None:
    topic = uniq("elect")
    create_topic(kafka_broker.bootstrap, topic, 2)
    admin = _admin(kafka_broker.bootstrap)
    tps = [TopicPartition(topic, 0), TopicPartition(topic, 1)]
    results = admin.elect_leaders(ElectionType.PREFERRED, tps).result(30)
    assert sorted((tp.partition, err.code()) for tp, err in results.items()) == [
        (0, ELECTION_NOT_NEEDED), (1, ELECTION_NOT_NEEDED)]
    unknown = admin.elect_leaders(ElectionType.PREFERRED, [TopicPartition(uniq("nope"), 0)]).result(30)
    assert [err.code() for err in unknown.values()] == [KafkaError.UNKNOWN_TOPIC_OR_PART]
    assert admin.elect_leaders(ElectionType.PREFERRED, None).result(30) == {}


def test_describe_log_dirs_reports_sizes(kafka_broker) -> None:
    topic = uniq("logdirs")
    _fill(kafka_broker.bootstrap, topic, 20)
    with RawClient.connect(kafka_broker.bootstrap) as c:
        req = DescribeLogDirsRequest(topics=(DescribableLogDirTopic(topic=TopicName(topic), partitions=(i32(0), i32(7))),))
        resp = c.request(req, 4)
    assert int(resp.error_code) == 0
    (result,) = resp.results
    assert int(result.error_code) == 0 and result.log_dir
    assert result.total_bytes > 0 and 0 <= result.usable_bytes <= result.total_bytes
    (t,) = result.topics
    assert t.name == topic
    (p,) = t.partitions  # partition 7 does not exist: left out
    assert p.partition_index == 0 and p.partition_size > 20 * 40 and p.offset_lag == 0 and not p.is_future_key


def test_partition_reassignments_on_one_node(kafka_broker) -> None:
    topic = uniq("reassign")
    create_topic(kafka_broker.bootstrap, topic, 1)
    with RawClient.connect(kafka_broker.bootstrap) as c:
        listed = c.request(ListPartitionReassignmentsRequest(timeout=ms(30_000), topics=None), 0)
        assert int(listed.error_code) == 0 and listed.topics == ()
        named = c.request(ListPartitionReassignmentsRequest(
            timeout=ms(30_000),
            topics=(ListPartitionReassignmentsTopics(name=TopicName(topic), partition_indexes=(i32(0),)),)), 0)
        assert named.topics == ()
        node = _node_id(kafka_broker.bootstrap)

        def alter(replicas):  # type: ignore[no-untyped-def]
            resp = c.request(AlterPartitionReassignmentsRequest(
                timeout=ms(30_000),
                topics=(ReassignableTopic(name=TopicName(topic), partitions=(
                    ReassignablePartition(partition_index=i32(0), replicas=replicas),)),)), 0)
            assert int(resp.error_code) == 0
            return int(resp.responses[0].partitions[0].error_code)

        assert alter((i32(node),)) == 0                         # the current assignment: done at once
        assert alter(None) == NO_REASSIGNMENT_IN_PROGRESS        # cancel with nothing in progress
        assert alter((i32(node + 100),)) == INVALID_REPLICA_ASSIGNMENT
        assert alter(()) == INVALID_REPLICA_ASSIGNMENT


def _node_id(bootstrap: str) -> int:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    md = admin.list_topics(timeout=10)
    return next(iter(md.brokers))
