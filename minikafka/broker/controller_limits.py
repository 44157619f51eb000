"""Limits Kafka's controller puts on one CreateTopics request, so a request minikafka accepts is
one Kafka accepts too (a test suite that passes here must not fail there).

Kafka 4.x (ReplicationControlManager.createTopics): first, the partitions requested across all the
request's topics (num_partitions, the broker default for -1, or the number of manual assignments;
existing and invalid names count too) may not exceed 10,000: "Excessively large number of
partitions per request."; then the metadata records the creation writes may not exceed 10,000
(QuorumController.MAX_RECORDS_PER_USER_OP: one TopicRecord, one ConfigRecord per config and one
PartitionRecord per partition of each topic that passes validation): "Unable to perform
excessively large batch operation.". Either failure answers every topic of the request with
POLICY_VIOLATION and creates nothing. Checked against Kafka 4.3.1
(tests/integration/test_controller_limits.py with MINIKAFKA_TARGET=kafka).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

MAX_PARTITIONS_PER_REQUEST = 10_000
MAX_RECORDS_PER_USER_OP = 10_000
TOO_MANY_PARTITIONS_MESSAGE = "Excessively large number of partitions per request."
EXCESSIVE_BATCH_MESSAGE = "Unable to perform excessively large batch operation."


def requested_partitions(topics: Iterable[Any], default_partitions: int) -> int:
    """The partitions a CreateTopics request asks for, counted as Kafka counts them."""
    total = 0
    for t in topics:
        if t.assignments:
            total += len(t.assignments)
        elif t.num_partitions == -1:
            total += default_partitions
        elif t.num_partitions > 0:
            total += t.num_partitions
    return total


def topic_records(partitions: int, configs: int) -> int:
    """Metadata records Kafka writes for a new topic."""
    return 1 + configs + partitions
