"""WriteTxnMarkers (API 27): write COMMIT/ABORT control batches to partitions.

The transaction coordinator writes its markers through `write_marker` (the local MarkerWriter),
and the same code serves WriteTxnMarkers requests from the network (an admin client aborting a
hanging transaction, KIP-664). Kafka: KafkaApis.handleWriteTxnMarkersRequest.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import structlog

from minikafka.broker.context import RequestContext
from minikafka.broker.services import BrokerServices
from minikafka.protocol import messages
from minikafka.protocol.errors import ErrorCode
from minikafka.protocol.types import TopicPartition
from minikafka.storage.errors import StorageError

log = structlog.get_logger("minikafka.broker")


def write_marker(svc: BrokerServices, tp: TopicPartition, *, producer_id: int, producer_epoch: int, commit: bool,
                 coordinator_epoch: int) -> ErrorCode:
    plog = svc.logs.get(tp)
    if plog is None:
        return ErrorCode.unknown_topic_or_partition
    try:
        plog.append_marker(producer_id=producer_id, producer_epoch=producer_epoch, commit=commit,
                           coordinator_epoch=coordinator_epoch, now_ms=svc.clock.now_ms())
    except StorageError as exc:
        log.warning("txn_marker_refused", topic=tp.topic, partition=tp.partition, producer_id=producer_id,
                    reason=str(exc))
        return exc.error_code
    for listener in svc.marker_listeners:
        listener(tp, producer_id, commit)
    return ErrorCode.none


@dataclass(frozen=True, slots=True)
class LocalMarkerWriter:
    """The transaction coordinator's MarkerWriter port: markers are local appends on one node."""

    svc: BrokerServices

    def write_marker(self, tp: TopicPartition, *, producer_id: int, producer_epoch: int, commit: bool,
                     coordinator_epoch: int) -> ErrorCode:
        if self.svc.faults.markers_blocked(tp.topic, tp.partition):
            return ErrorCode.not_enough_replicas  # a stall_markers rule: the coordinator retries
        if self.svc.faults.marker_dropped(tp.topic, tp.partition):
            return ErrorCode.none  # a drop_markers rule: lost on the way, the partition's transaction hangs
        return write_marker(self.svc, tp, producer_id=producer_id, producer_epoch=producer_epoch, commit=commit,
                            coordinator_epoch=coordinator_epoch)


@dataclass(frozen=True, slots=True)
class WriteTxnMarkersHandler:
    api_key: ClassVar[int] = 27
    svc: BrokerServices

    async def __call__(self, ctx: RequestContext, req: Any) -> messages.WriteTxnMarkersResponse:
        results = []
        for m in req.markers:
            topics = []
            for t in m.topics:
                parts = tuple(
                    messages.WritableTxnMarkerPartitionResult(
                        partition_index=p,
                        error_code=write_marker(self.svc, TopicPartition(t.name, p), producer_id=m.producer_id,
                                                producer_epoch=m.producer_epoch, commit=m.transaction_result,
                                                coordinator_epoch=m.coordinator_epoch))
                    for p in t.partition_indexes
                )
                topics.append(messages.WritableTxnMarkerTopicResult(name=t.name, partitions=parts))
            results.append(messages.WritableTxnMarkerResult(producer_id=m.producer_id, topics=tuple(topics)))
        return messages.WriteTxnMarkersResponse(markers=tuple(results))
