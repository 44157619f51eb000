"""TransactionCoordinator: decide -> persist to __transaction_state -> apply; then the markers.

Theory of operation
- The cache maps transactional id -> TxnMetadata and is exactly the fold of the log: `load()`
  replays __transaction_state on start-up through the same apply step used live.
- A request is decided by a pure function (decisions.py) from the cached metadata. A Reply is
  returned as it is. A Transition is appended to the log first; only when the append returned is
  the cache updated ("decide, persist, apply"). While the append is in flight the id is in
  `_pending`, so a concurrent request for it gets CONCURRENT_TRANSACTIONS. Nothing awaits
  between a decision and its append, which on one event loop makes the pair atomic.
- Ending a transaction: PREPARE_COMMIT / PREPARE_ABORT is persisted, then one marker per
  partition is written through the MarkerWriter port (the WriteTxnMarkers handler's core), then
  COMPLETE_COMMIT / COMPLETE_ABORT is persisted. Markers that fail are retried in the background
  until they succeed; until then the id stays PREPARE_* and answers CONCURRENT_TRANSACTIONS.
- After a restart, ids found in PREPARE_* have their markers written again (a duplicate marker is
  harmless: it ends nothing); ONGOING ones are aborted when they time out or when the producer
  re-initialises. If the log lost records (a corrupt batch cut out at start), `repair_damaged`
  corrects ids whose rebuilt state the data partitions contradict (repair.py).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable
from typing import Protocol

import structlog

from minikafka import faults
from minikafka.coordinator.ports import DataPartitions, RecordLog
from minikafka.coordinator.transaction import decisions, repair, txn_log
from minikafka.coordinator.transaction.decisions import Reply, Transition
from minikafka.coordinator.transaction.state import TV_2, TxnMetadata, TxnState
from minikafka.protocol.errors import ErrorCode
from minikafka.protocol.types import TopicPartition

log = structlog.get_logger("minikafka.coordinator.transaction")

_CRASH_AFTER = {
    TxnState.ONGOING: faults.AFTER_ADD_PARTITIONS,
    TxnState.PREPARE_COMMIT: faults.AFTER_PREPARE_COMMIT,
    TxnState.PREPARE_ABORT: faults.AFTER_PREPARE_ABORT,
}

COORDINATOR_EPOCH = 0  # one node: the __transaction_state leader epoch never changes
MARKER_RETRY_S = 0.1


class MarkerWriter(Protocol):
    def write_marker(self, tp: TopicPartition, *, producer_id: int, producer_epoch: int, commit: bool,
                     coordinator_epoch: int) -> ErrorCode:
        """Append a COMMIT/ABORT control batch to tp; UNKNOWN_TOPIC_OR_PARTITION if tp is gone."""




class TransactionCoordinator:
    def __init__(self, log_: RecordLog, markers: MarkerWriter, *, new_producer_id: Callable[[], int],
                 max_timeout_ms: int, expiration_ms: int, crash_point: Callable[[str], None] = lambda _p: None,
                 transaction_version: int = TV_2) -> None:
        self._log = log_
        # The broker's finalized transaction.version: 2 lets clients speak transactions v2, and the
        # coordinator ends timed-out transactions as v2 does (an exhausted epoch rotates the id).
        self.set_transaction_version(transaction_version)
        self._crash_point = crash_point  # test-only fault injection (minikafka/faults.py)
        self._markers = markers
        self._new_producer_id = new_producer_id
        self.max_timeout_ms = max_timeout_ms
        self.expiration_ms = expiration_ms
        self._cache: dict[str, TxnMetadata] = {}
        self._pending: set[str] = set()
        self._marker_tasks: dict[str, asyncio.Task[None]] = {}
        self.loaded = False
        # Told of every transition once it is in the log: (what caused it: the request's name,
        # "timeout", "expiry", "markers" or "repair"; the state before or None; the metadata after).
        # The broker's metrics count completions, timeouts and fences here (observe/meters.py).
        self.transition_listeners: list[Callable[[str, TxnState | None, TxnMetadata], None]] = []

    def set_transaction_version(self, level: int) -> None:
        """At start-up, and when kafka-features.sh changes the finalized level (UpdateFeatures)."""
        self.transaction_version = level
        self.log_value_version = 1 if level >= 1 else 0  # TransactionLogValue, as Kafka writes it

    # ------------------------------------------------------------------------------ lifecycle
    def load(self) -> None:
        """Replay __transaction_state into the cache."""
        cache: dict[str, TxnMetadata] = {}
        for rec in self._log.replay():
            if rec.key is None or rec.control_type is not None:
                continue
            txn_id = txn_log.decode_key(rec.key)
            if txn_id is None:
                continue
            if rec.value is None:
                cache.pop(txn_id, None)
            else:
                cache[txn_id] = txn_log.decode_value(txn_id, rec.value)
        self._cache = cache
        self.loaded = True
        log.info("transaction_state_loaded", transactional_ids=len(cache))

    def report_damage(self, partitions: Iterable[int]) -> list[str]:
        """After `__transaction_state` partitions lost unreadable records at startup: one warning per
        transactional id living there, with the state it was rebuilt to (a state written in the lost
        bytes, a completion for instance, is not known)."""
        damaged = set(partitions)
        affected = sorted(t for t in self._cache if self.partition_for(t) in damaged)
        for txn_id in affected:
            meta = self._cache[txn_id]
            log.warning("transaction_state_possibly_lost", transactional_id=txn_id,
                        partition=self.partition_for(txn_id), rebuilt_state=meta.state.name,
                        producer_id=meta.producer_id, producer_epoch=meta.producer_epoch,
                        hint="records of this id were in an unreadable batch; its state may be older")
        return affected

    async def repair_damaged(self, partitions: Iterable[int], data: DataPartitions,
                             now_ms: Callable[[], int]) -> None:
        """After `__transaction_state` partitions lost records: correct each id living there whose
        rebuilt state the data partitions contradict (repair.py), so that a completed transaction
        is never re-opened and no open data is left without a transaction to end it. One warning
        per id repaired, and one per hanging transaction no id accounts for."""
        damaged = set(partitions)
        if not damaged:
            return
        open_txns = data.open_transactions()
        for txn_id in sorted(t for t in self._cache if self.partition_for(t) in damaged):
            meta = self._cache[txn_id]
            markers = {tp: data.last_marker(tp.topic, tp.partition, meta.producer_id) for tp in meta.partitions}
            fix = repair.decide_repair(meta, open_txns, markers, now_ms())
            if fix.transition is None:
                continue
            log.warning("transaction_state_repaired", transactional_id=txn_id, producer_id=meta.producer_id,
                        rebuilt_state=meta.state.kafka_name, repaired_state=fix.transition.target.state.kafka_name,
                        producer_epoch=fix.transition.target.producer_epoch, evidence=fix.evidence.value)
            await self._apply(txn_id, fix.transition, now_ms, "repair")
        for o in repair.hanging(open_txns, self._cache):
            log.warning("hanging_transaction", topic=o.topic, partition=o.partition, producer_id=o.producer_id,
                        producer_epoch=o.producer_epoch, first_offset=o.first_offset,
                        hint="its transactional id was lost with the damaged records; end it with "
                             "kafka-transactions.sh abort (it holds the last stable offset back)")

    def resume_pending_markers(self, now_ms: Callable[[], int]) -> None:
        """Finish what was decided before a restart: PREPARE_* gets its markers again."""
        for txn_id, meta in list(self._cache.items()):
            if meta.state in (TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT):
                self._start_marker_retry(txn_id, now_ms)

    async def close(self) -> None:
        for t in self._marker_tasks.values():
            t.cancel()
        await asyncio.gather(*self._marker_tasks.values(), return_exceptions=True)

    # ------------------------------------------------------------------------------ queries
    def partition_for(self, transactional_id: str) -> int:
        return txn_log.partition_for(transactional_id, self._log.partition_count)

    def get(self, transactional_id: str) -> TxnMetadata | None:
        return self._cache.get(transactional_id)

    def all(self) -> Iterable[TxnMetadata]:
        return self._cache.values()

    def verify_partition(self, transactional_id: str | None, producer_id: int, epoch: int,
                         tp: TopicPartition) -> ErrorCode:
        meta = self._cache.get(transactional_id) if transactional_id else None
        return decisions.verify_partition(meta, producer_id=producer_id, epoch=epoch, tp=tp)

    # ------------------------------------------------------------------------------ requests
    async def init_producer_id(self, transactional_id: str, *, timeout_ms: int, producer_id: int,
                               producer_epoch: int, now_ms: Callable[[], int]) -> tuple[ErrorCode, int, int]:
        if not self.loaded:
            return ErrorCode.coordinator_load_in_progress, -1, -1
        decision = decisions.decide_init_producer_id(
            self._cache.get(transactional_id), transactional_id=transactional_id, timeout_ms=timeout_ms,
            expected_producer_id=producer_id, expected_epoch=producer_epoch,
            pending=transactional_id in self._pending, now_ms=now_ms(), max_timeout_ms=self.max_timeout_ms,
            new_producer_id=self._new_producer_id)
        if isinstance(decision, Reply):
            if decision.error is ErrorCode.none and decision.meta is not None:
                return ErrorCode.none, decision.meta.producer_id, decision.meta.producer_epoch
            return decision.error, -1, -1
        error = await self._apply(transactional_id, decision, now_ms, "InitProducerId")
        if error is not ErrorCode.none:
            return error, -1, -1
        if decision.reply_error is not ErrorCode.none:
            return decision.reply_error, -1, -1
        return ErrorCode.none, decision.target.producer_id, decision.target.producer_epoch

    async def add_partitions(self, transactional_id: str, *, producer_id: int, producer_epoch: int,
                             partitions: frozenset[TopicPartition], now_ms: Callable[[], int],
                             client_tv: int = 0) -> ErrorCode:
        """AddPartitionsToTxn / AddOffsetsToTxn (client_tv 0), or the partitions a TV2 Produce or
        TxnOffsetCommit adds implicitly (client_tv 2), as Kafka's AddPartitionsToTxnManager does."""
        if not self.loaded:
            return ErrorCode.coordinator_load_in_progress
        decision = decisions.decide_add_partitions(
            self._cache.get(transactional_id), producer_id=producer_id, epoch=producer_epoch,
            partitions=partitions, pending=transactional_id in self._pending, now_ms=now_ms(), client_tv=client_tv)
        if isinstance(decision, Reply):
            return decision.error
        return await self._apply(transactional_id, decision, now_ms, "AddPartitionsToTxn")

    async def end_txn(self, transactional_id: str, *, producer_id: int, producer_epoch: int, commit: bool,
                      now_ms: Callable[[], int], client_tv: int = 0) -> tuple[ErrorCode, int, int]:
        """(error, producer id, epoch): the identity a TV2 client (EndTxn v5+) goes on with, or -1, -1."""
        if not self.loaded:
            return ErrorCode.coordinator_load_in_progress, -1, -1
        meta = self._cache.get(transactional_id)
        pending = transactional_id in self._pending
        if client_tv >= TV_2:
            decision = decisions.decide_end_txn_v2(meta, producer_id=producer_id, epoch=producer_epoch, commit=commit,
                                                   pending=pending, now_ms=now_ms(),
                                                   new_producer_id=self._new_producer_id)
        else:
            decision = decisions.decide_end_txn(meta, producer_id=producer_id, epoch=producer_epoch, commit=commit,
                                                pending=pending, now_ms=now_ms())
        if isinstance(decision, Reply):
            if decision.error is ErrorCode.none and meta is not None:
                return ErrorCode.none, *decisions.identity_after(decision.meta or meta)
            return decision.error, -1, -1
        error = await self._apply(transactional_id, decision, now_ms, "EndTxn")
        if error is not ErrorCode.none:
            return error, -1, -1
        return ErrorCode.none, *decisions.identity_after(decision.target)

    # ------------------------------------------------------------------------------ timers
    async def abort_timed_out(self, now_ms: Callable[[], int]) -> list[str]:
        """Abort every ONGOING transaction past its timeout, fencing its producer (epoch + 1)."""
        aborted = []
        for txn_id in list(self._cache):
            meta = self._cache.get(txn_id)  # current, not a snapshot: earlier appends yielded
            if meta is None or txn_id in self._pending:
                continue
            rotate = self._new_producer_id if self.transaction_version >= TV_2 else None
            decision = decisions.decide_timeout(meta, now_ms(), rotate)
            if decision is not None:
                log.info("transaction_timed_out", transactional_id=txn_id, producer_id=meta.producer_id,
                         producer_epoch=meta.producer_epoch)
                await self._apply(txn_id, decision, now_ms, "timeout")
                aborted.append(txn_id)
        return aborted

    async def expire_transactional_ids(self, now_ms: Callable[[], int]) -> list[str]:
        """Remove ids idle past transactional.id.expiration.ms (a tombstone in the log)."""
        expired = []
        for txn_id in list(self._cache):
            meta = self._cache.get(txn_id)  # current, not a snapshot: earlier appends yielded
            if meta is None or txn_id in self._pending:
                continue
            decision = decisions.decide_expire(meta, now_ms(), self.expiration_ms)
            if decision is not None:
                await self._apply(txn_id, decision, now_ms, "expiry")
                expired.append(txn_id)
        return expired

    async def compact(self, now_ms: Callable[[], int]) -> int:
        """Keep __transaction_state bounded: for each partition whose log rolled, write every live
        transactional id again and drop the older segments (see RecordLog.compact)."""
        compacted = 0
        for p in range(self._log.partition_count):
            if not self._log.needs_compaction(p):
                continue
            records = [(txn_log.encode_key(txn_id), txn_log.encode_value(meta, self.log_value_version))
                       for txn_id, meta in sorted(self._cache.items()) if self.partition_for(txn_id) == p]
            await self._log.compact(p, records, now_ms())
            compacted += 1
        return compacted

    # ------------------------------------------------------------------------------ apply
    async def _persist(self, txn_id: str, target: TxnMetadata, now_ms: Callable[[], int], cause: str) -> ErrorCode:
        self._pending.add(txn_id)
        try:
            await self._log.append(self.partition_for(txn_id),
                                   [(txn_log.encode_key(txn_id), txn_log.encode_value(target, self.log_value_version))], now_ms())
        except Exception as exc:  # the append failed: nothing changes, the client retries
            log.warning("transaction_log_append_failed", transactional_id=txn_id, reason=repr(exc))
            return ErrorCode.coordinator_not_available
        finally:
            self._pending.discard(txn_id)
        source = self._cache.get(txn_id)
        if target.state is TxnState.DEAD:
            self._cache.pop(txn_id, None)
        else:
            self._cache[txn_id] = target
        # Debug, as Kafka's TransactionMetadata logs its completed transitions: three to four per
        # transaction, and at info their rendering was ~17 % of the broker's CPU with 100
        # producers committing small transactions (py-spy, issue 17).
        log.debug("txn_transition", transactional_id=txn_id, producer_id=target.producer_id,
                 producer_epoch=target.producer_epoch,
                 from_state=source.state.kafka_name if source else None, to_state=target.state.kafka_name)
        for listener in self.transition_listeners:
            listener(cause, source.state if source else None, target)
        return ErrorCode.none

    async def _apply(self, txn_id: str, decision: Transition, now_ms: Callable[[], int], cause: str) -> ErrorCode:
        error = await self._persist(txn_id, decision.target, now_ms, cause)
        if error is ErrorCode.none:
            self._crash_point(_CRASH_AFTER.get(decision.target.state, ""))
        if error is ErrorCode.none and decision.write_markers:
            if not await self._write_markers_and_complete(txn_id, now_ms):
                self._start_marker_retry(txn_id, now_ms)
        return error

    async def _write_markers_and_complete(self, txn_id: str, now_ms: Callable[[], int]) -> bool:
        """One marker per partition, then COMPLETE_*; False if a marker must be retried."""
        meta = self._cache.get(txn_id)
        if meta is None or meta.state not in (TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT):
            return True
        commit = meta.state is TxnState.PREPARE_COMMIT
        for i, tp in enumerate(sorted(meta.partitions)):
            if i == 1:
                self._crash_point(faults.AFTER_FIRST_MARKER)
            error = self._markers.write_marker(tp, producer_id=meta.producer_id, producer_epoch=meta.producer_epoch,
                                               commit=commit, coordinator_epoch=COORDINATOR_EPOCH)
            if error in (ErrorCode.none, ErrorCode.unknown_topic_or_partition):
                continue  # a deleted partition has nothing left to mark (Kafka drops it)
            log.warning("transaction_marker_failed", transactional_id=txn_id, topic=tp.topic,
                        partition=tp.partition, error_code=error.name)
            return False
        self._crash_point(faults.AFTER_ALL_MARKERS)
        return await self._persist(txn_id, decisions.decide_complete(meta, now_ms()).target, now_ms, "markers") \
            is ErrorCode.none

    def _start_marker_retry(self, txn_id: str, now_ms: Callable[[], int]) -> None:
        if txn_id in self._marker_tasks and not self._marker_tasks[txn_id].done():
            return

        async def retry() -> None:
            while not await self._write_markers_and_complete(txn_id, now_ms):
                await asyncio.sleep(MARKER_RETRY_S)
            self._marker_tasks.pop(txn_id, None)

        self._marker_tasks[txn_id] = asyncio.get_running_loop().create_task(retry())
