"""Kafka's controller limits on one CreateTopics request (minikafka/broker/controller_limits.py):
more than 10,000 partitions requested, or more than 10,000 metadata records to write (a topic costs
1 record + 1 per config + 1 per partition), and every topic of the request gets POLICY_VIOLATION
with Kafka's message and nothing is created. The boundaries are checked with validate_only (Kafka
applies both limits there too), so no test creates 10,000 partitions. Checked against Apache Kafka
4.3.1 with MINIKAFKA_TARGET=kafka."""

from __future__ import annotations

import pytest
from clients import future_errors, uniq
from confluent_kafka import KafkaError
from confluent_kafka.admin import AdminClient, NewTopic

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

MESSAGE = "Unable to perform excessively large batch operation."
TOO_MANY = "Excessively large number of partitions per request."


def test_create_topics_over_ten_thousand_records_fails_every_topic(kafka_broker) -> None:
    admin = AdminClient({"bootstrap.servers": kafka_broker.bootstrap, "log_level": 3})
    big, small = uniq("big"), uniq("small")
    # 1 + 9,990 records, and 1 + 10 with a config: 10,002 in all
    errors = future_errors(admin.create_topics([NewTopic(big, 9990, 1),
                                          NewTopic(small, 9, 1, config={"retention.ms": "60000"})],
                                         operation_timeout=60))
    for name in (big, small):
        err = errors[name]
        assert err is not None and err.code() == KafkaError.POLICY_VIOLATION, (name, err)
        assert err.str() == MESSAGE
    topics = admin.list_topics(timeout=30).topics
    assert big not in topics and small not in topics


def test_validate_only_applies_both_limits(kafka_broker) -> None:
    admin = AdminClient({"bootstrap.servers": kafka_broker.bootstrap, "log_level": 3})
    at_limit, over = uniq("at-limit"), uniq("over")
    ok = future_errors(admin.create_topics([NewTopic(at_limit, 9999, 1)], validate_only=True, operation_timeout=60))
    assert ok[at_limit] is None  # 9,999 partitions, 1 + 9,999 = 10,000 records: allowed
    refused = future_errors(admin.create_topics([NewTopic(over, 10000, 1)], validate_only=True, operation_timeout=60))
    err = refused[over]  # 10,000 partitions are allowed, 10,001 records are not
    assert err is not None and err.code() == KafkaError.POLICY_VIOLATION and err.str() == MESSAGE, err


def test_more_than_ten_thousand_partitions_requested_fails_every_topic(kafka_broker) -> None:
    """Counted before anything else: an existing name's partitions count too."""
    admin = AdminClient({"bootstrap.servers": kafka_broker.bootstrap, "log_level": 3})
    existing, fresh = uniq("existing"), uniq("fresh")
    admin.create_topics([NewTopic(existing, 1, 1)])[existing].result(60)
    errors = future_errors(admin.create_topics([NewTopic(existing, 5000, 1), NewTopic(fresh, 5001, 1)],
                                         validate_only=True, operation_timeout=60))
    for name in (existing, fresh):
        err = errors[name]
        assert err is not None and err.code() == KafkaError.POLICY_VIOLATION and err.str() == TOO_MANY, (name, err)
    ok = future_errors(admin.create_topics([NewTopic(existing, 5000, 1), NewTopic(fresh, 5000, 1)],
                                     validate_only=True, operation_timeout=60))
    assert ok[existing] is not None and ok[existing].code() == KafkaError.TOPIC_ALREADY_EXISTS
    assert ok[fresh] is None
