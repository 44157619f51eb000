"""minikafka's topic configs next to Apache Kafka 4.3.1's (issue 16, item 2).

tests/data/kafka-4.3.1-configs.json is what Kafka 4.3.1 answered to DescribeConfigs: minikafka
has the same 33 topic configs with the same types, defaults and broker synonyms.
tests/data/kafka-4.3.1-topic-config-answers.json is what Kafka answered to CreateTopics for each
config set to each of 31 values (bench/kafka/record-config-answers.py): minikafka accepts
the same values and refuses the others with the same error code and message.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from kafka_answers import differences, recorded

from minikafka.topic_config import TOPIC_CONFIGS, parse_topic_config, topic_config_type

pytestmark = pytest.mark.unit

RECORD = Path(__file__).resolve().parents[1] / "data" / "kafka-4.3.1-configs.json"

def _kafka_topic_configs() -> dict[str, dict]:
    return json.loads(RECORD.read_text())["topic"]


def test_accepted_configs_are_kafkas_and_the_rest_are_listed() -> None:
    kafka = _kafka_topic_configs()
    assert len(kafka) == 33
    assert set(TOPIC_CONFIGS) - set(kafka) == set(), "a topic config Kafka 4.3.1 does not have"
    assert set(kafka) - set(TOPIC_CONFIGS) == set(), "a topic config of Kafka 4.3.1 minikafka refuses"


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


def test_every_value_is_accepted_or_refused_in_kafkas_words() -> None:
    answers = recorded("kafka-4.3.1-topic-config-answers.json")
    assert len(answers) == 33 * 31
    assert differences(answers, parse_topic_config) == {}


def test_describe_configs_gives_kafkas_defaults_and_synonyms() -> None:
    """Each config's default value and its broker synonym, as Kafka 4.3.1 described a new topic."""
    from types import SimpleNamespace

    from minikafka.broker.handlers.describe_configs import topic_config_entries
    from minikafka.config import BrokerConfig

    svc = SimpleNamespace(config=BrokerConfig.build({}, data_dir="/nonexistent"))
    kafka = _kafka_topic_configs()
    for e in topic_config_entries(svc, "t", {}):  # type: ignore[arg-type]
        want = kafka[e.name]
        assert e.value == want["value"], e.name
        assert {s[0] for s in e.synonyms} <= set(want["synonyms"]) | {e.name}, e.name
