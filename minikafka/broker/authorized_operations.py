"""The authorized-operations bitfields of Metadata, DescribeCluster and DescribeGroups (KIP-430).

Without an authorizer Kafka answers, when the client asks for them, every operation that applies
to the resource type (bit n = AclOperation code n); when it does not ask, INT32_MIN ("omitted").
The values are those Apache Kafka 4.3.1 answered (tests/integration/test_authorized_operations.py
checks both brokers). Clients decode the bits into AclOperation names, so a wrong bit breaks them
(kafka-python 2.3 raised on the "omitted" value answered to a request that asked).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from minikafka.security.acls import CLUSTER_NAME, Operation, ResourceType

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


# KIP-430: with an authorizer, the authorized-operations bitfields a client asks for are the
# principal's own (each operation the resource type has that the ACLs allow), not all of them.
_OPERATIONS = {ResourceType.TOPIC: TOPIC, ResourceType.GROUP: GROUP, ResourceType.CLUSTER: CLUSTER}


def _allowed_bits(who: Any, rtype: ResourceType, name: str, asked: int) -> int:
    if asked == OMITTED:
        return asked
    bits = _OPERATIONS[rtype]
    return sum(1 << op for op in range(32) if bits >> op & 1 and who.can(Operation(op), rtype, name))


def with_operations(policy: Any, fix: Callable[[Any, Any], Any]) -> Any:
    """An authorization policy whose answer then gets the principal's own bitfields."""
    async def run(who: Any, req: Any, handler: Any) -> Any:
        response = await policy(who, req, handler)
        return response if response is None else fix(who, response)
    return run


def topic_ops(who: Any, response: Any) -> Any:
    """Each topic's bits; Metadata v8-10 may also carry the cluster's (librdkafka's describe_cluster)."""
    response = dataclasses.replace(response, topics=tuple(
        dataclasses.replace(t, topic_authorized_operations=_allowed_bits(
            who, ResourceType.TOPIC, t.name, t.topic_authorized_operations)) if t.name is not None else t
        for t in response.topics))
    return cluster_ops(who, response) if hasattr(response, "cluster_authorized_operations") else response


def group_ops(who: Any, response: Any) -> Any:
    return dataclasses.replace(response, groups=tuple(
        dataclasses.replace(g, authorized_operations=_allowed_bits(who, ResourceType.GROUP, g.group_id, g.authorized_operations))
        for g in response.groups))


def cluster_ops(who: Any, response: Any) -> Any:
    return dataclasses.replace(response, cluster_authorized_operations=_allowed_bits(
        who, ResourceType.CLUSTER, CLUSTER_NAME, response.cluster_authorized_operations))
