"""The authorized-operations bitfields of Metadata, DescribeCluster and DescribeGroups (KIP-430).

Without an authorizer Kafka answers, when the client asks for them, every operation that applies
to the resource type (bit n = AclOperation code n); when it does not ask, INT32_MIN ("omitted").
The values are those Apache Kafka 4.3.1 answered (tests/integration/test_authorized_operations.py
checks both brokers). Clients decode the bits into AclOperation names, so a wrong bit breaks them
(kafka-python 2.3 raised on the "omitted" value answered to a request that asked).
"""

from __future__ import annotations

OMITTED = -(2**31)

READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE = 3, 4, 5, 6, 7, 8
CLUSTER_ACTION, DESCRIBE_CONFIGS, ALTER_CONFIGS, IDEMPOTENT_WRITE = 9, 10, 11, 12


def _bits(*ops: int) -> int:
    return sum(1 << op for op in ops)


TOPIC = _bits(READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE, DESCRIBE_CONFIGS, ALTER_CONFIGS)  # 3576
CLUSTER = _bits(CREATE, ALTER, DESCRIBE, CLUSTER_ACTION, DESCRIBE_CONFIGS, ALTER_CONFIGS, IDEMPOTENT_WRITE)  # 8096
GROUP = _bits(READ, DELETE, DESCRIBE, DESCRIBE_CONFIGS, ALTER_CONFIGS)  # 3400


def answer(asked: bool, all_ops: int) -> int:
    return all_ops if asked else OMITTED
