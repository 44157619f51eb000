"""minikafka's topic configs next to Apache Kafka 4.3.1's (issue 16, item 2, in progress).

tests/data/kafka-4.3.1-configs.json is what Kafka 4.3.1 answered to DescribeConfigs. Every topic
config minikafka accepts must exist in Kafka with the same broker-level synonym, and the ones it
does not accept yet are listed here, so accepting one means taking it off the list.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from minikafka.config import TOPIC_CONFIGS, topic_config_type

pytestmark = pytest.mark.unit

RECORD = Path(__file__).resolve().parents[1] / "data" / "kafka-4.3.1-configs.json"

# Refused at creation today ("Unknown topic config name"): issue 16 item 2 accepts, validates and
# describes them.
NOT_YET = {
    "compression.gzip.level", "compression.lz4.level", "compression.zstd.level", "delete.retention.ms",
    "follower.replication.throttled.replicas", "leader.replication.throttled.replicas",
    "local.retention.bytes", "local.retention.ms", "max.compaction.lag.ms", "min.cleanable.dirty.ratio",
    "min.compaction.lag.ms", "preallocate", "remote.log.copy.disable", "remote.log.delete.on.disable",
    "remote.storage.enable", "segment.jitter.ms",
}


def _kafka_topic_configs() -> dict[str, dict]:
    return json.loads(RECORD.read_text())["topic"]


def test_accepted_configs_are_kafkas_and_the_rest_are_listed() -> None:
    kafka = _kafka_topic_configs()
    assert len(kafka) == 33
    assert set(TOPIC_CONFIGS) - set(kafka) == set(), "a topic config Kafka 4.3.1 does not have"
    assert set(kafka) - set(TOPIC_CONFIGS) == NOT_YET


KAFKA_TYPES = {1: "BOOLEAN", 2: "STRING", 3: "INT", 4: "SHORT", 5: "LONG", 6: "DOUBLE", 7: "LIST", 8: "CLASS",
               9: "PASSWORD"}


def test_types_match_kafka() -> None:
    """The type that decides Kafka's error messages and APPEND/SUBTRACT (config.topic_config_type)."""
    kafka = _kafka_topic_configs()
    for name in TOPIC_CONFIGS:
        assert topic_config_type(name) == KAFKA_TYPES[kafka[name]["type"]], name


def test_describe_configs_gives_kafkas_types() -> None:
    """What DescribeConfigs answers for a topic without overrides (handlers/describe_configs.py)."""
    from types import SimpleNamespace

    from minikafka.broker.handlers.describe_configs import topic_config_entries
    from minikafka.config import BrokerConfig

    svc = SimpleNamespace(config=BrokerConfig.build({}, data_dir="/nonexistent"))
    kafka = _kafka_topic_configs()
    for e in topic_config_entries(svc, "t", {}):  # type: ignore[arg-type]
        assert e.config_type == kafka[e.name]["type"], e.name
