"""DescribeTopicPartitions (API 75, KIP-966): topics and their partitions, a page at a time.

Kafka 4.x's kafka-topics.sh --describe and the Java Admin's describeTopics ask this instead of
Metadata. Kafka: DescribeTopicPartitionsRequestHandler and KRaftMetadataCache. What follows is what
Kafka 4.3.1 answered, probed request by request:

- The topics asked for (every topic, internal ones too, when none is named) are answered sorted by
  name, each once. A topic that does not exist is UNKNOWN_TOPIC_OR_PARTITION, an illegal name
  INVALID_TOPIC_EXCEPTION, and the empty name UNKNOWN_SERVER_ERROR with the operations omitted:
  an error topic has the all-zero id and no partitions.
- At most response_partition_limit partitions are answered (capped at 2,000, Kafka's
  max.request.partition.size.limit, and at least one); when the page ends before the last
  partition of the last topic, next_cursor names the first partition not answered (the next
  topic's partition 0 when a topic ended exactly there).
- A cursor starts the page at that topic and partition: topics sorted before it are skipped, and a
  partition index past the topic's end answers the topic with no partitions. A cursor naming a
  topic that is not among those asked for, or a negative partition, makes every topic asked for
  INVALID_REQUEST, in the request's order, with no next cursor.
- Each partition is led by this node at epoch 0 with itself as the only replica and in-sync
  replica; the eligible leader replica lists (KIP-966) are empty. The topic's authorized operations
  are always answered (the request has no flag to ask for them).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from minikafka.broker import authorized_operations
from minikafka.broker.context import RequestContext
from minikafka.broker.services import BrokerServices
from minikafka.protocol import messages
from minikafka.protocol.errors import ErrorCode
from minikafka.protocol.types import ZERO_MS
from minikafka.storage.log_manager import TopicError, TopicInfo, validate_topic_name

MAX_PARTITIONS = 2000  # Kafka's max.request.partition.size.limit (default)


@dataclass(frozen=True, slots=True)
class DescribeTopicPartitionsHandler:
    api_key: ClassVar[int] = 75
    svc: BrokerServices

    async def __call__(self, ctx: RequestContext, req: Any) -> messages.DescribeTopicPartitionsResponse:
        topics = self.svc.logs.topics
        names = sorted({t.name for t in req.topics} if req.topics else set(topics), key=_java_order)
        cursor = req.cursor
        if cursor is not None and (cursor.topic_name not in names or cursor.partition_index < 0):
            asked = dict.fromkeys(t.name for t in req.topics) if req.topics else names  # in the request's order
            return _response([_topic_error(n, ErrorCode.invalid_request, authorized_operations.OMITTED)
                              for n in asked], None)
        start = 0
        if cursor is not None:
            names = names[names.index(cursor.topic_name):]
            start = cursor.partition_index
        remaining = max(1, min(req.response_partition_limit, MAX_PARTITIONS))
        answered = []
        for i, name in enumerate(names):
            info = topics.get(name)
            if info is None:
                answered.append(_missing(name))
                continue
            first = start if i == 0 else 0
            last = min(info.partitions, first + remaining)
            answered.append(_topic(info, self.svc.node_id, first, last))
            remaining -= max(0, last - first)
            if remaining == 0:
                if last < info.partitions:
                    return _response(answered, (name, last))
                if i + 1 < len(names):
                    return _response(answered, (names[i + 1], 0))
                break
        return _response(answered, None)


def _java_order(name: str) -> bytes:
    """Java's String.compareTo order (UTF-16 code units) for the sort of the answer's topics."""
    return name.encode("utf-16-be", errors="surrogatepass")


def _missing(name: str) -> messages.DescribeTopicPartitionsTopic:
    if not name:
        return _topic_error(name, ErrorCode.unknown_server_error, authorized_operations.OMITTED)
    try:
        validate_topic_name(name)
    except TopicError:
        return _topic_error(name, ErrorCode.invalid_topic_exception, authorized_operations.TOPIC)
    return _topic_error(name, ErrorCode.unknown_topic_or_partition, authorized_operations.TOPIC)


def _topic_error(name: str, code: ErrorCode, operations: int) -> messages.DescribeTopicPartitionsTopic:
    return messages.DescribeTopicPartitionsTopic(error_code=code, name=name, topic_id=None, is_internal=False,
                                                 partitions=(), topic_authorized_operations=operations)


def _topic(info: TopicInfo, node: int, first: int, last: int) -> messages.DescribeTopicPartitionsTopic:
    parts = tuple(messages.DescribeTopicPartitionsPartition(
        error_code=ErrorCode.none, partition_index=p, leader_id=node, leader_epoch=0, replica_nodes=(node,),
        isr_nodes=(node,), eligible_leader_replicas=(), last_known_elr=(), offline_replicas=())
        for p in range(first, last))
    return messages.DescribeTopicPartitionsTopic(error_code=ErrorCode.none, name=info.name, topic_id=info.topic_id,
                                                 is_internal=info.internal, partitions=parts,
                                                 topic_authorized_operations=authorized_operations.TOPIC)


def _response(topics: list[Any], next_cursor: tuple[str, int] | None) -> messages.DescribeTopicPartitionsResponse:
    cursor = None if next_cursor is None else messages.DescribeTopicPartitionsCursor(
        topic_name=next_cursor[0], partition_index=next_cursor[1])
    return messages.DescribeTopicPartitionsResponse(throttle_time=ZERO_MS, topics=tuple(topics), next_cursor=cursor)
