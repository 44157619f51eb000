"""Produce (API 0): append each partition's record batch and answer per partition.

Kafka: KafkaApis.handleProduceRequest -> ReplicaManager.appendRecords -> UnifiedLog.append.
Every failure is per partition; the connection stays open and nothing is appended for a
partition whose batch is refused. acks=0 gets no response at all.
"""

from __future__ import annotations

import datetime
import types
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from minikafka import faults
from minikafka.broker import txn_enrollment
from minikafka.broker.context import RequestContext
from minikafka.broker.dispatch import CloseConnection
from minikafka.broker.services import BrokerServices
from minikafka.protocol import entities, messages, versions
from minikafka.protocol.errors import CorruptRecord, ErrorCode, InvalidRecord, RecordError
from minikafka.protocol.records import HEADER_SIZE, is_transactional_at, read_header, split_batches
from minikafka.protocol.types import ZERO_MS, TopicPartition
from minikafka.storage.errors import KafkaStorageError, MessageTooLarge, StorageError

if TYPE_CHECKING:
    from minikafka.control.invariants import InvariantMonitor


# The answer's entities, built by filling their slots (protocol/entities.py): __init__ took ~4 us
# of a small Produce, a PartitionProduceResponse alone 2.7 us (issue 17).
_partition_answer = entities.builder(messages.PartitionProduceResponse, (
    "index", "error_code", "base_offset", "log_append_time", "log_start_offset", "record_errors", "error_message",
    "current_leader"))
_topic_answer = entities.builder(messages.TopicProduceResponse, ("name", "partition_responses"))
_answer = entities.builder(messages.ProduceResponse, ("responses", "throttle_time", "node_endpoints"))
_NO_LEADER = versions.nested_class(messages.PartitionProduceResponse, "current_leader")(leader_id=-1, leader_epoch=-1)

_NONE_REFUSED: Mapping[TopicPartition, ErrorCode] = types.MappingProxyType({})

# What Kafka's ReplicaManager does not count as a failed produce (FailedProduceRequestsPerSec): a
# corrupt batch, a batch too large, a storage failure; every other refusal of an append counts.
_NOT_COUNTED_AS_FAILED = (CorruptRecord, MessageTooLarge, KafkaStorageError)


def _error_code_for(exc: Exception) -> ErrorCode:
    if isinstance(exc, CorruptRecord | InvalidRecord | StorageError):
        return exc.error_code
    raise exc


@dataclass(frozen=True, slots=True)
class ProduceHandler:
    api_key: ClassVar[int] = 0
    svc: BrokerServices

    async def __call__(self, ctx: RequestContext, req: Any) -> messages.ProduceResponse | None:
        refused: Mapping[TopicPartition, ErrorCode] = _NONE_REFUSED
        if req.transactional_id is not None and ctx.api_version >= txn_enrollment.PRODUCE_SINCE \
                and req.acks in (-1, 0, 1):
            # Transactions v2: the request adds its partitions to the transaction itself.
            refused = await txn_enrollment.enroll_produce(self.svc, req.transactional_id, req.topic_data)
        return self.answer(req, self.svc.clock.now_ms(), refused)

    def answer(self, req: Any, now_ms: int,
               refused: Mapping[TopicPartition, ErrorCode] = _NONE_REFUSED) -> messages.ProduceResponse | None:
        """Append each partition's batch and answer, without waiting on anything: all of a Produce
        but a transactional request's enrollment (`refused`: its partitions the transaction did
        not take). broker/usual_produce.py calls this directly for the usual request."""
        acks = req.acks
        topics = []
        for t in req.topic_data:
            parts = []
            for p in t.partition_data:
                if acks not in (-1, 0, 1):
                    parts.append(_partition_error(p.index, ErrorCode.invalid_required_acks, -1))
                    continue
                tp = TopicPartition(t.name, p.index)
                if tp in refused:
                    plog = self.svc.logs.get(tp)
                    parts.append(_partition_error(p.index, refused[tp], plog.log_start_offset if plog else -1))
                    continue
                parts.append(self._append(tp, p.records, now_ms, req.transactional_id))
            topics.append(_topic_answer(t.name, tuple(parts)))
        if acks == 0:
            # No answer; but a partition that failed closes the connection, as Kafka does (so the
            # client, which hears nothing, reconnects and refreshes its metadata).
            failed = [(t.name, p.index, p.error_code.name) for t in topics for p in t.partition_responses
                      if p.error_code is not ErrorCode.none]
            if failed:
                raise CloseConnection(f"acks=0 Produce failed for {failed[:5]}")
            return None
        return _answer(tuple(topics), ZERO_MS, ())

    def _append(self, tp: TopicPartition, records: bytes | bytearray | None, now_ms: int,
                transactional_id: str | None) -> messages.PartitionProduceResponse:
        plog = self.svc.logs.get(tp)
        if plog is None:
            return _partition_error(tp.partition, ErrorCode.unknown_topic_or_partition, -1)
        info = self.svc.logs.topics.get(tp.topic)
        if info is not None and info.internal:
            return _partition_error(tp.partition, ErrorCode.invalid_topic_exception, plog.log_start_offset,
                                    f"cannot append to internal topic {tp.topic}")
        if not records:
            return _partition_error(tp.partition, ErrorCode.invalid_record, plog.log_start_offset,
                                    "produce requests v3+ must carry one record batch per partition")
        error = self._verify_transactional(tp, records, transactional_id)
        if error is not ErrorCode.none:
            return _partition_error(tp.partition, error, plog.log_start_offset,
                                    "the partition is not part of the producer's ongoing transaction"
                                    if error is ErrorCode.invalid_txn_state else None)
        monitor = self.svc.invariants
        end_before = plog.log_end_offset if monitor is not None else 0
        # The append stamps offsets into its payload: the compiled request reader gives each
        # partition's records a bytearray of their own (protocol/produce_request.py), used as it is;
        # kio's bytes are copied.
        payload = records if type(records) is bytearray else bytearray(records)
        try:
            result = plog.append(payload, now_ms=now_ms)
        except (CorruptRecord, InvalidRecord, StorageError) as exc:
            if not isinstance(exc, _NOT_COUNTED_AS_FAILED):
                self.svc.meters.failed(tp.topic)
            return _partition_error(tp.partition, _error_code_for(exc), plog.log_start_offset, str(exc),
                                    getattr(exc, "record_errors", ()))
        if monitor is not None and plog.log_end_offset > end_before:  # not a duplicate's answer
            _watch(monitor, tp, records, result.base_offset)
        if transactional_id is not None:
            self.svc.faults.reach(faults.AFTER_TXN_PRODUCE)
        return _partition_answer(
            tp.partition, ErrorCode.none, result.base_offset,
            (None if result.log_append_time < 0 else
             datetime.datetime.fromtimestamp(result.log_append_time / 1000, datetime.UTC)),
            result.log_start_offset, (), None, _NO_LEADER)

    def _verify_transactional(self, tp: TopicPartition, data: bytes, transactional_id: str | None) -> ErrorCode:
        """KIP-890 part 1: a transactional batch is appended only to a partition of the producer's
        ongoing transaction, so a late write cannot open a transaction nobody will end."""
        if len(data) < HEADER_SIZE or not is_transactional_at(data):
            return ErrorCode.none  # not transactional (or malformed: the append reports it)
        h = read_header(data)
        if h.is_control or h.producer_id < 0:
            return ErrorCode.none
        if transactional_id is None:  # Kafka (KafkaApis.handleProduceRequest): not authorized
            return ErrorCode.transactional_id_authorization_failed
        if self.svc.txn is None or not self.svc.config["transaction.partition.verification.enable"]:
            return ErrorCode.none
        # Produce clients older than KIP-890 do not retry CONCURRENT_TRANSACTIONS on a Produce; Kafka
        # answers retriable verification failures with NOT_ENOUGH_REPLICAS instead (protocol.md P-14).
        return txn_enrollment.produce_error(
            self.svc.txn.verify_partition(transactional_id, h.producer_id, h.producer_epoch, tp))

    def error_response(self, req: Any, code: ErrorCode) -> messages.ProduceResponse:
        return messages.ProduceResponse(
            responses=tuple(
                messages.TopicProduceResponse(name=t.name, partition_responses=tuple(
                    _partition_error(p.index, code, -1) for p in t.partition_data))
                for t in req.topic_data
            ),
            throttle_time=ZERO_MS,
        )


def _watch(monitor: InvariantMonitor, tp: TopicPartition, records: bytes, base_offset: int) -> None:
    """The invariant monitor sees each appended batch with the offsets the log gave it."""
    offset = base_offset
    for _, h in split_batches(records):
        monitor.appended((tp.topic, tp.partition), h._replace(base_offset=offset))
        offset += h.last_offset_delta + 1


def _partition_error(partition: int, code: ErrorCode, log_start_offset: int,
                     message: str | None = None,
                     record_errors: tuple[RecordError, ...] = ()) -> messages.PartitionProduceResponse:
    # log_start_offset is filled even on errors: Java producers loop on -1 (protocol.md P-6).
    return messages.PartitionProduceResponse(
        index=partition, error_code=code, base_offset=-1, log_start_offset=log_start_offset,
        error_message=message,
        record_errors=tuple(messages.BatchIndexAndErrorMessage(batch_index=e.batch_index,
                                                               batch_index_error_message=e.message)
                            for e in record_errors))
