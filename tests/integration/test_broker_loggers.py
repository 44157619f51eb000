"""BROKER_LOGGER config resources (issue 16, item 3): log levels described and changed at run time
with Kafka's rules and error codes (the raw answers are compared with Apache Kafka 4.3.1 in
conformance mode, on its own loggers), and a changed level changes what the broker logs."""

from __future__ import annotations

import pytest
from kio.schema.describe_configs.v4.request import DescribeConfigsRequest, DescribeConfigsResource
from kio.schema.incremental_alter_configs.v1.request import (
    AlterableConfig,
    AlterConfigsResource,
    IncrementalAlterConfigsRequest,
)
from kio.static.primitive import i8
from rawclient import RawClient, create_topics_v7

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

BROKER_LOGGER = 8
SET, DELETE, APPEND = 0, 1, 2
INVALID_CONFIG, INVALID_REQUEST = 40, 42


def _describe(c: RawClient, node: str = "1") -> tuple[int, str | None, dict[str, tuple[str, int, int]]]:
    r = c.request(DescribeConfigsRequest(resources=(DescribeConfigsResource(
        resource_type=i8(BROKER_LOGGER), resource_name=node, configuration_keys=None),),
        include_synonyms=True, include_documentation=False), 4).results[0]
    return int(r.error_code), r.error_message, {e.name: (e.value, int(e.config_source), int(e.config_type))
                                                for e in r.configs}


def _alter(c: RawClient, *ops: tuple[str, int, str | None], node: str = "1") -> tuple[int, str | None]:
    r = c.request(IncrementalAlterConfigsRequest(resources=(AlterConfigsResource(
        resource_type=i8(BROKER_LOGGER), resource_name=node,
        configs=tuple(AlterableConfig(name=n, config_operation=i8(op), value=v) for n, op, v in ops)),),
        validate_only=False), 1).responses[0]
    return int(r.error_code), r.error_message


def test_log_levels_are_described_and_changed_with_kafkas_rules(kafka_broker) -> None:
    with RawClient.connect(kafka_broker.bootstrap) as c:
        code, _msg, loggers = _describe(c)
        assert code == 0
        assert loggers["root"] == ("INFO", 6, 0)  # DYNAMIC_BROKER_LOGGER_CONFIG, type UNKNOWN
        name = "minikafka.broker" if "minikafka.broker" in loggers else "kafka.server.KafkaApis"
        assert _alter(c, (name, SET, "WARN")) == (0, None)
        assert _describe(c)[2][name][0] == "WARN"
        assert _alter(c, (name, DELETE, None)) == (0, None)  # back to its parent's level
        assert _describe(c)[2][name][0] == "INFO"

        assert _describe(c, "7")[:2] == (INVALID_REQUEST, "Unexpected broker id, expected 1 but received 7")
        assert _alter(c, (name, SET, "INFO"), node="7") == (INVALID_REQUEST, "Unexpected node id. Expected 1, but received 7")
        assert _alter(c, (name, SET, "LOUD")) == (
            INVALID_CONFIG, f"Cannot set the log level of {name} to LOUD as it is not a supported log level. "
                            "Valid log levels are DEBUG, ERROR, FATAL, INFO, TRACE, WARN")
        assert _alter(c, ("no.such.logger", SET, "INFO")) == (INVALID_CONFIG, "Logger no.such.logger does not exist!")
        assert _alter(c, ("root", DELETE, None)) == (
            INVALID_REQUEST, "Removing the log level of the root logger is not allowed")
        assert _alter(c, (name, APPEND, "INFO")) == (
            INVALID_REQUEST, "APPEND operation is not allowed for the BROKER_LOGGER resource")


def test_a_changed_level_changes_what_the_broker_logs(broker_factory) -> None:
    broker = broker_factory()
    with RawClient.connect(broker.bootstrap) as c:
        assert _alter(c, ("minikafka.storage", SET, "WARN")) == (0, None)
        assert int(c.request(create_topics_v7("quiet-topic"), 7).topics[0].error_code) == 0
        # A child's own level wins over its parent's.
        assert _alter(c, ("minikafka", SET, "ERROR"), ("minikafka.storage", SET, "INFO")) == (0, None)
        assert int(c.request(create_topics_v7("loud-topic"), 7).topics[0].error_code) == 0
    text = broker.log_tail(200_000)
    assert "topic=loud-topic" in text
    assert "topic=quiet-topic" not in text
