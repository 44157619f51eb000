"""Authorized operations (KIP-430) as Kafka answers them without an authorizer: every operation of
the resource type when the client asks, none listed when it does not (issue 16, item 3). Through
confluent-kafka's describe_topics / describe_cluster / describe_consumer_groups; the same in
conformance mode against Apache Kafka 4.3.1.
"""

from __future__ import annotations

import pytest
from clients import consumer, create_topic, uniq
from confluent_kafka import TopicCollection
from confluent_kafka.admin import AclOperation, AdminClient
from kio.schema.metadata.v12.request import MetadataRequest
from rawclient import RawClient

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

TOPIC_OPS = {AclOperation.READ, AclOperation.WRITE, AclOperation.CREATE, AclOperation.DELETE, AclOperation.ALTER,
             AclOperation.DESCRIBE, AclOperation.DESCRIBE_CONFIGS, AclOperation.ALTER_CONFIGS}
CLUSTER_OPS = {AclOperation.CREATE, AclOperation.ALTER, AclOperation.DESCRIBE, AclOperation.CLUSTER_ACTION,
               AclOperation.DESCRIBE_CONFIGS, AclOperation.ALTER_CONFIGS, AclOperation.IDEMPOTENT_WRITE}
GROUP_OPS = {AclOperation.READ, AclOperation.DELETE, AclOperation.DESCRIBE, AclOperation.DESCRIBE_CONFIGS,
             AclOperation.ALTER_CONFIGS}


def test_topic_cluster_and_group_operations(kafka_broker) -> None:
    topic, group = uniq("authops"), uniq("authops-g")
    create_topic(kafka_broker.bootstrap, topic, 1)
    admin = AdminClient({"bootstrap.servers": kafka_broker.bootstrap})
    asked = admin.describe_topics(TopicCollection([topic]), include_authorized_operations=True)[topic].result(30)
    assert set(asked.authorized_operations) == TOPIC_OPS
    not_asked = admin.describe_topics(TopicCollection([topic]))[topic].result(30)
    assert not not_asked.authorized_operations
    # All topics (a null topic list) the same way, over the raw protocol.
    with RawClient.connect(kafka_broker.bootstrap) as raw:
        md = raw.request(MetadataRequest(topics=None, allow_auto_topic_creation=False,
                                         include_topic_authorized_operations=True), 12)
    assert {t.name: t.topic_authorized_operations for t in md.topics}[topic] == 3576
    cluster = admin.describe_cluster(include_authorized_operations=True).result(30)
    assert set(cluster.authorized_operations) == CLUSTER_OPS
    assert not admin.describe_cluster().result(30).authorized_operations

    c = consumer(kafka_broker.bootstrap, **{"group.id": group})
    try:
        c.subscribe([topic])
        for _ in range(60):
            c.poll(0.5)
            if c.assignment():
                break
        described = admin.describe_consumer_groups([group], include_authorized_operations=True)[group].result(30)
        assert set(described.authorized_operations) == GROUP_OPS
        plain = admin.describe_consumer_groups([group])[group].result(30)
        assert not plain.authorized_operations
    finally:
        c.close()
