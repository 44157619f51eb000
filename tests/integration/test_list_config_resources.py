"""ListConfigResources (API 74, KIP-1142) over the raw protocol: the resources configs can be
described for, by type; the same assertions pass against Apache Kafka 4.3.1 in conformance mode
(issue 18, item 5)."""

from __future__ import annotations

import pytest
from clients import create_topic, uniq
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType
from rawclient import RawClient

from minikafka.protocol import versions

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

TOPIC, BROKER, BROKER_LOGGER, CLIENT_METRICS, GROUP = 2, 4, 8, 16, 32
UNSUPPORTED_VERSION = 35


def _list(c: RawClient, version: int, types: tuple[int, ...] = ()) -> tuple[int, list[tuple[int, str]]]:
    body = versions.request_class(74, version)(**({"resource_types": types} if version else {}))
    resp = c.request(body, version)
    return int(resp.error_code), [(int(getattr(r, "resource_type", CLIENT_METRICS)), r.resource_name)
                                  for r in resp.config_resources]


def test_resources_by_type(kafka_broker) -> None:
    topic, group = uniq("lcr"), uniq("lcr-group")
    create_topic(kafka_broker.bootstrap, topic)
    admin = AdminClient({"bootstrap.servers": kafka_broker.bootstrap})
    res = ConfigResource(ResourceType.GROUP, group, incremental_configs=[ConfigEntry(
        "consumer.session.timeout.ms", "50000", incremental_operation=AlterConfigOpType.SET)])
    admin.incremental_alter_configs([res])[res].result(30)
    with RawClient.connect(kafka_broker.bootstrap) as c:
        node = str(c.request(versions.request_class(60, 1)(include_cluster_authorized_operations=False,
                                                         endpoint_type=1), 1).brokers[0].broker_id)
        assert _list(c, 0) == (0, [])  # v0: client-metrics subscriptions only, none configured
        error, every = _list(c, 1)
        assert error == 0
        assert (GROUP, group) in every and (TOPIC, topic) in every
        assert (BROKER, node) in every and (BROKER_LOGGER, node) in every
        kinds = [t for t, _ in every]
        assert kinds == sorted(kinds, reverse=True)  # groups, loggers, broker, then topics
        assert _list(c, 1, (BROKER,)) == (0, [(BROKER, node)])
        assert _list(c, 1, (BROKER_LOGGER,)) == (0, [(BROKER_LOGGER, node)])
        assert _list(c, 1, (CLIENT_METRICS,)) == (0, [])
        error, groups = _list(c, 1, (GROUP,))
        assert error == 0 and (GROUP, group) in groups and {t for t, _ in groups} == {GROUP}
        error, topics = _list(c, 1, (TOPIC,))
        assert error == 0 and (TOPIC, topic) in topics and {t for t, _ in topics} == {TOPIC}
        assert sorted(_list(c, 1, (TOPIC, BROKER))[1]) == sorted(topics + [(BROKER, node)])
        for unknown in ((99,), (1,), (TOPIC, 99)):
            assert _list(c, 1, unknown) == (UNSUPPORTED_VERSION, [])
