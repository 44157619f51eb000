"""minikafka's group configs (GROUP config resources, KIP-848) next to Apache Kafka 4.3.1's (issue 16,
item 3). tests/data/kafka-4.3.1-group-config-answers.json is what Kafka answered when each group
config of a group was set to each of 57 values (bench/kafka/record-config-answers.py): minikafka
accepts the same values and refuses the others with the same error code and message."""

from __future__ import annotations

import pytest
from kafka_answers import differences, recorded

from minikafka.config import ConfigError
from minikafka.group_config import GROUP_CONFIGS, parse_group_config

pytestmark = pytest.mark.unit


def test_every_value_is_accepted_or_refused_in_kafkas_words() -> None:
    answers = recorded("kafka-4.3.1-group-config-answers.json")
    assert {k.partition("=")[0] for k in answers} == set(GROUP_CONFIGS)
    assert len(answers) == 17 * 57
    assert differences(answers, parse_group_config) == {}


def test_unknown_name() -> None:
    with pytest.raises(ConfigError, match="^Unknown group config name: foo$"):
        parse_group_config("foo", "1")
