"""TransactionCoordinator orchestration: decide -> persist -> apply, markers, timers, replay.

In-memory fakes only (tests/fakes.py): appends are held in flight with events, time moves with
FakeClock, and the marker retry interval is 0 so retries are driven by the event loop, not by sleeps.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import AsyncIterator

import pytest
from fakes import FakeClock, InMemoryRecordLog, Marker, RecordingMarkerWriter

from minikafka.coordinator.ports import LogRecord
from minikafka.coordinator.transaction import coordinator as coordinator_mod
from minikafka.coordinator.transaction import txn_log
from minikafka.coordinator.transaction.coordinator import COORDINATOR_EPOCH, TransactionCoordinator
from minikafka.coordinator.transaction.state import TxnMetadata, TxnState
from minikafka.protocol.errors import ErrorCode
from minikafka.protocol.types import TopicPartition

pytestmark = pytest.mark.unit

S, Err = TxnState, ErrorCode
FIRST_PID = 1000
TIMEOUT = 60_000
MAX_TIMEOUT = 900_000
EXPIRATION = 7 * 24 * 3600 * 1000
T0, T1, U0 = TopicPartition("t", 0), TopicPartition("t", 1), TopicPartition("u", 0)


# ---------------------------------------------------------------------------------- wiring
@pytest.fixture(autouse=True)
def _no_retry_delay(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(coordinator_mod, "MARKER_RETRY_S", 0)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def log() -> InMemoryRecordLog:
    return InMemoryRecordLog(partition_count=50)


@pytest.fixture
def writer() -> RecordingMarkerWriter:
    return RecordingMarkerWriter()


def make(log: InMemoryRecordLog, writer: RecordingMarkerWriter, first_pid: int = FIRST_PID,
         transaction_version: int = 2) -> TransactionCoordinator:
    pids = iter(range(first_pid, first_pid + 10_000))
    return TransactionCoordinator(log, writer, new_producer_id=lambda: next(pids), max_timeout_ms=MAX_TIMEOUT,
                                  expiration_ms=EXPIRATION, transaction_version=transaction_version)


@pytest.fixture
async def coord(log: InMemoryRecordLog, writer: RecordingMarkerWriter) -> AsyncIterator[TransactionCoordinator]:
    c = make(log, writer)
    c.load()
    yield c
    await c.close()


class Client:
    """One producer instance's calls, to keep the tests short."""

    def __init__(self, coord: TransactionCoordinator, clock: FakeClock, txn_id: str) -> None:
        self.coord, self.clock, self.txn_id = coord, clock, txn_id
        self.pid, self.epoch = -1, -1

    async def init(self, *, expected: tuple[int, int] = (-1, -1), timeout_ms: int = TIMEOUT) -> tuple[ErrorCode, int, int]:
        reply = await self.coord.init_producer_id(self.txn_id, timeout_ms=timeout_ms, producer_id=expected[0],
                                                  producer_epoch=expected[1], now_ms=self.clock.now_ms)
        if reply[0] is Err.none:
            self.pid, self.epoch = reply[1], reply[2]
        return reply

    async def add(self, *tps: TopicPartition, epoch: int | None = None) -> ErrorCode:
        return await self.coord.add_partitions(self.txn_id, producer_id=self.pid,
                                               producer_epoch=self.epoch if epoch is None else epoch,
                                               partitions=frozenset(tps), now_ms=self.clock.now_ms)

    async def end(self, commit: bool, *, epoch: int | None = None) -> ErrorCode:
        return (await self.end_v(commit, epoch=epoch, client_tv=0))[0]

    async def end_v(self, commit: bool, *, epoch: int | None = None, client_tv: int = 2) -> tuple[ErrorCode, int, int]:
        """EndTxn as a client of the given transaction.version: (error, producer id, epoch)."""
        return await self.coord.end_txn(self.txn_id, producer_id=self.pid,
                                        producer_epoch=self.epoch if epoch is None else epoch, commit=commit,
                                        now_ms=self.clock.now_ms, client_tv=client_tv)

    async def begin(self, *tps: TopicPartition, timeout_ms: int = TIMEOUT) -> None:
        assert (await self.init(timeout_ms=timeout_ms))[0] is Err.none
        assert await self.add(*tps) is Err.none

    @property
    def meta(self) -> TxnMetadata | None:
        return self.coord.get(self.txn_id)


def history(log: InMemoryRecordLog, txn_id: str) -> list[TxnMetadata | None]:
    """Every value appended for txn_id, decoded (None for a tombstone)."""
    key = txn_log.encode_key(txn_id)
    return [None if v is None else txn_log.decode_value(txn_id, v) for k, v in log.records() if k == key]


def states(log: InMemoryRecordLog, txn_id: str) -> list[TxnState | None]:
    return [None if m is None else m.state for m in history(log, txn_id)]


def project(coord: TransactionCoordinator) -> dict[str, tuple[object, ...]]:
    """What the log carries of each cached id (last epoch and previous pid live in memory only)."""
    return {m.transactional_id: (m.state, m.producer_id, m.producer_epoch, m.timeout_ms, m.partitions, m.start_ms,
                                 m.last_update_ms) for m in coord.all()}


def decoded_state(records: tuple[tuple[bytes, bytes | None], ...]) -> TxnState | None:
    (key, value), = records
    txn_id = txn_log.decode_key(key)
    assert txn_id is not None
    return None if value is None else txn_log.decode_value(txn_id, value).state


# ---------------------------------------------------------------------------------- load
async def test_not_loaded_answers_load_in_progress(log: InMemoryRecordLog, writer: RecordingMarkerWriter,
                                                   clock: FakeClock) -> None:
    c = make(log, writer)
    client = Client(c, clock, "tx")
    assert await client.init() == (Err.coordinator_load_in_progress, -1, -1)
    client.pid, client.epoch = 5, 0
    assert await client.add(T0) is Err.coordinator_load_in_progress
    assert await client.end(True) is Err.coordinator_load_in_progress
    assert log.appends == []
    c.load()
    assert (await client.init())[0] is Err.none


# ---------------------------------------------------------------------------------- the happy path
@pytest.mark.parametrize("commit", [True, False], ids=["commit", "abort"])
async def test_end_transaction_flow(coord: TransactionCoordinator, log: InMemoryRecordLog,
                                    writer: RecordingMarkerWriter, clock: FakeClock, commit: bool) -> None:
    client = Client(coord, clock, "tx")
    assert await client.init() == (Err.none, FIRST_PID, 0)
    clock.advance(5)
    started = clock.ms
    assert await client.add(U0, T1) is Err.none
    assert await client.add(T0) is Err.none
    assert client.meta is not None
    assert (client.meta.state, client.meta.partitions, client.meta.start_ms) == (S.ONGOING, {T0, T1, U0}, started)

    clock.advance(5)
    prepare_hold, complete_hold = log.hold_next_append(), log.hold_next_append()
    ending = asyncio.create_task(client.end(commit))
    await prepare_hold.entered.wait()
    assert decoded_state(prepare_hold.records) is (S.PREPARE_COMMIT if commit else S.PREPARE_ABORT)
    assert writer.attempts == []  # no marker before the decision is durable
    assert client.meta.state is S.ONGOING  # not applied before the append returned
    prepare_hold.release.set()
    await complete_hold.entered.wait()
    assert decoded_state(complete_hold.records) is (S.COMPLETE_COMMIT if commit else S.COMPLETE_ABORT)
    assert writer.markers == [Marker(tp, FIRST_PID, 0, commit, COORDINATOR_EPOCH) for tp in (T0, T1, U0)]
    assert client.meta.state is (S.PREPARE_COMMIT if commit else S.PREPARE_ABORT)
    complete_hold.release.set()
    assert await ending is Err.none

    done = client.meta
    assert (done.state, done.partitions, done.producer_epoch, done.start_ms) == (
        S.COMPLETE_COMMIT if commit else S.COMPLETE_ABORT, frozenset(), 0, started)
    assert states(log, "tx") == [S.EMPTY, S.ONGOING, S.ONGOING,
                                 S.PREPARE_COMMIT if commit else S.PREPARE_ABORT,
                                 S.COMPLETE_COMMIT if commit else S.COMPLETE_ABORT]
    assert history(log, "tx")[3].partitions == {T0, T1, U0}  # type: ignore[union-attr]
    assert {a.partition for a in log.appends} == {txn_log.partition_for("tx", 50)} == {coord.partition_for("tx")}

    # a retried EndTxn is answered without writing anything; the other result is invalid
    appended, marked = len(log.appends), len(writer.attempts)
    assert await client.end(commit) is Err.none
    assert await client.end(not commit) is Err.invalid_txn_state
    assert (len(log.appends), len(writer.attempts)) == (appended, marked)

    # the next transaction starts now
    clock.advance(100)
    assert await client.add(T0) is Err.none
    assert (client.meta.state, client.meta.partitions, client.meta.start_ms) == (S.ONGOING, {T0}, clock.ms)


async def test_add_of_known_partitions_writes_nothing(coord: TransactionCoordinator, log: InMemoryRecordLog,
                                                      clock: FakeClock) -> None:
    client = Client(coord, clock, "tx")
    await client.begin(T0, T1)
    appended = len(log.appends)
    assert await client.add(T1) is Err.none
    assert len(log.appends) == appended


async def test_verify_partition_follows_the_cache(coord: TransactionCoordinator, clock: FakeClock) -> None:
    client = Client(coord, clock, "tx")
    await client.begin(T0)
    assert coord.verify_partition("tx", client.pid, client.epoch, T0) is Err.none
    assert coord.verify_partition("tx", client.pid, client.epoch, T1) is Err.invalid_txn_state
    assert coord.verify_partition(None, client.pid, client.epoch, T0) is Err.invalid_producer_id_mapping
    assert await client.end(True) is Err.none
    assert coord.verify_partition("tx", client.pid, client.epoch, T0) is Err.invalid_txn_state


# ---------------------------------------------------------------------------------- a slow append
@pytest.mark.parametrize("held", ["init", "add", "end"])
async def test_requests_during_a_held_append_get_concurrent_transactions(
        coord: TransactionCoordinator, log: InMemoryRecordLog, clock: FakeClock, held: str) -> None:
    client = Client(coord, clock, "tx")
    if held != "init":
        assert (await client.init())[0] is Err.none
    if held == "end":
        assert await client.add(T0) is Err.none
    before = client.meta

    hold = log.hold_next_append()
    first: asyncio.Task[object] = asyncio.create_task(
        {"init": client.init, "add": lambda: client.add(T1), "end": lambda: client.end(True)}[held]())
    await hold.entered.wait()
    assert client.meta == before  # nothing applied while the append is in flight

    other_instance = Client(coord, clock, "tx")
    assert await other_instance.init() == (Err.concurrent_transactions, -1, -1)
    if held != "init":
        assert await client.add(U0) is Err.concurrent_transactions
        assert await client.end(True) is Err.concurrent_transactions
        assert await client.end(False) is Err.concurrent_transactions
    assert client.meta == before

    # another transactional id is not blocked
    assert (await Client(coord, clock, "other").init())[0] is Err.none

    hold.release.set()
    result = await first
    if held == "init":
        assert result == (Err.none, FIRST_PID, 0)
    else:
        assert result is Err.none
    assert client.meta is not None
    assert client.meta.state is {"init": S.EMPTY, "add": S.ONGOING, "end": S.COMPLETE_COMMIT}[held]
    assert await client.add(T1) is Err.none  # no longer pending


async def test_timeout_scan_skips_an_id_with_an_append_in_flight(
        coord: TransactionCoordinator, log: InMemoryRecordLog, writer: RecordingMarkerWriter,
        clock: FakeClock) -> None:
    client = Client(coord, clock, "tx")
    await client.begin(T0, timeout_ms=1_000)
    clock.advance(1_001)
    hold = log.hold_next_append()
    ending = asyncio.create_task(client.end(True))
    await hold.entered.wait()
    assert await coord.abort_timed_out(clock.now_ms) == []
    hold.release.set()
    assert await ending is Err.none
    assert client.meta is not None and client.meta.state is S.COMPLETE_COMMIT
    assert [m.commit for m in writer.markers] == [True]


# ---------------------------------------------------------------------------------- failed appends
@pytest.mark.parametrize("op", ["init-new", "init-bump", "add", "commit", "abort", "fence"])
async def test_failed_append_leaves_state_unchanged(coord: TransactionCoordinator, log: InMemoryRecordLog,
                                                    writer: RecordingMarkerWriter, clock: FakeClock, op: str) -> None:
    client = Client(coord, clock, "tx")
    if op != "init-new":
        assert (await client.init())[0] is Err.none
    if op in ("commit", "abort", "fence"):
        assert await client.add(T0, U0) is Err.none
    before, appended = client.meta, len(log.appends)

    async def run() -> object:
        if op in ("init-new", "init-bump"):
            return await client.init()
        if op == "add":
            return await client.add(T1)
        if op == "fence":
            return await Client(coord, clock, "tx").init()
        return await client.end(op == "commit")

    clock.advance(10)
    log.fail_appends = True
    result = await run()
    assert result in (Err.coordinator_not_available, (Err.coordinator_not_available, -1, -1))
    assert log.failed_appends == 1
    assert client.meta == before
    assert len(log.appends) == appended
    assert writer.attempts == []

    log.fail_appends = False  # the client retries; the id is not left pending
    result = await run()
    after = client.meta
    assert after is not None
    if op == "init-new":
        assert result == (Err.none, FIRST_PID + 1, 0)  # the failed attempt's pid is not reused
    elif op == "init-bump":
        assert result == (Err.none, FIRST_PID, 1)
    elif op == "add":
        assert (result, after.state, after.partitions) == (Err.none, S.ONGOING, {T1})
    elif op == "fence":
        # the failed fence did not consume an epoch: the abort runs at epoch 1
        assert result == (Err.concurrent_transactions, -1, -1)
        assert (after.state, after.producer_epoch) == (S.COMPLETE_ABORT, 1)
        assert {m.producer_epoch for m in writer.markers} == {1}
    else:
        assert result is Err.none
        assert after.state is (S.COMPLETE_COMMIT if op == "commit" else S.COMPLETE_ABORT)


async def test_failed_complete_append_is_retried(coord: TransactionCoordinator, log: InMemoryRecordLog,
                                                 writer: RecordingMarkerWriter, clock: FakeClock) -> None:
    client = Client(coord, clock, "tx")
    await client.begin(T0, T1)
    prepare, complete = log.hold_next_append(), log.hold_next_append()
    ending = asyncio.create_task(client.end(True))
    await prepare.entered.wait()
    prepare.release.set()
    await complete.entered.wait()
    log.fail_appends = True  # CompleteCommit cannot be written
    complete.release.set()
    assert await ending is Err.none  # PrepareCommit is durable: the commit will happen
    await log.wait_for(lambda: log.failed_appends >= 3)
    assert client.meta is not None and client.meta.state is S.PREPARE_COMMIT
    assert await client.end(True) is Err.concurrent_transactions
    log.fail_appends = False
    await log.wait_for(lambda: states(log, "tx")[-1] is S.COMPLETE_COMMIT)
    assert client.meta.state is S.COMPLETE_COMMIT
    assert {m.tp for m in writer.markers} == {T0, T1} and all(m.commit for m in writer.markers)


# ---------------------------------------------------------------------------------- markers
async def test_failed_marker_is_retried_until_it_succeeds(coord: TransactionCoordinator, log: InMemoryRecordLog,
                                                         writer: RecordingMarkerWriter, clock: FakeClock) -> None:
    client = Client(coord, clock, "tx")
    await client.begin(T0, T1, timeout_ms=1_000)
    writer.fail(T1, Err.kafka_storage_error)
    assert await client.end(True) is Err.none  # answered once PrepareCommit is durable
    await writer.wait_for(lambda: writer.attempts_for(T1) >= 3)

    assert client.meta is not None and client.meta.state is S.PREPARE_COMMIT
    assert states(log, "tx")[-1] is S.PREPARE_COMMIT
    assert await client.end(True) is Err.concurrent_transactions
    assert await client.end(False) is Err.invalid_txn_state
    assert await client.add(U0) is Err.concurrent_transactions
    assert await Client(coord, clock, "tx").init() == (Err.concurrent_transactions, -1, -1)
    clock.advance(10 * 1_000)
    assert await coord.abort_timed_out(clock.now_ms) == []  # a decided commit is not aborted
    assert client.meta.state is S.PREPARE_COMMIT

    writer.heal(T1)
    await log.wait_for(lambda: states(log, "tx")[-1] is S.COMPLETE_COMMIT)
    assert client.meta.state is S.COMPLETE_COMMIT
    assert Marker(T1, client.pid, 0, True, COORDINATOR_EPOCH) in writer.markers
    assert all(m.commit and m.producer_epoch == 0 for m in writer.markers)


async def test_transient_marker_errors(coord: TransactionCoordinator, log: InMemoryRecordLog,
                                       writer: RecordingMarkerWriter, clock: FakeClock) -> None:
    client = Client(coord, clock, "tx")
    await client.begin(T0, U0)
    writer.script(U0, Err.not_enough_replicas, Err.kafka_storage_error)
    assert await client.end(False) is Err.none
    await log.wait_for(lambda: states(log, "tx")[-1] is S.COMPLETE_ABORT)
    assert writer.attempts_for(U0) == 3
    assert [e for m, e in writer.attempts if m.tp == U0] == [Err.not_enough_replicas, Err.kafka_storage_error,
                                                             Err.none]


async def test_deleted_partition_needs_no_marker(coord: TransactionCoordinator, writer: RecordingMarkerWriter,
                                                 clock: FakeClock) -> None:
    client = Client(coord, clock, "tx")
    await client.begin(T0, U0)
    writer.fail(U0, Err.unknown_topic_or_partition)
    assert await client.end(True) is Err.none
    assert client.meta is not None and client.meta.state is S.COMPLETE_COMMIT
    assert [m.tp for m in writer.markers] == [T0]
    assert writer.attempts_for(U0) == 1


# ---------------------------------------------------------------------------------- fencing (P-12)
async def test_init_on_ongoing_fences_and_aborts(coord: TransactionCoordinator, log: InMemoryRecordLog,
                                                 writer: RecordingMarkerWriter, clock: FakeClock) -> None:
    old = Client(coord, clock, "tx")
    await old.begin(T0, U0)
    new = Client(coord, clock, "tx")
    assert await new.init() == (Err.concurrent_transactions, -1, -1)
    assert writer.markers == [Marker(tp, FIRST_PID, 1, False, COORDINATOR_EPOCH) for tp in (T0, U0)]
    assert old.meta is not None
    assert (old.meta.state, old.meta.producer_epoch) == (S.COMPLETE_ABORT, 1)
    assert states(log, "tx") == [S.EMPTY, S.ONGOING, S.PREPARE_ABORT, S.COMPLETE_ABORT]
    prepare = history(log, "tx")[2]
    assert prepare is not None and (prepare.producer_epoch, prepare.partitions) == (1, {T0, U0})

    # the old instance is fenced
    assert await old.end(True) is Err.producer_fenced
    assert await old.add(T1) is Err.producer_fenced
    assert coord.verify_partition("tx", old.pid, old.epoch, T0) is Err.invalid_producer_epoch
    # the new instance retries and gets the next epoch
    assert await new.init() == (Err.none, FIRST_PID, 2)


async def test_fence_while_abort_markers_fail(coord: TransactionCoordinator, log: InMemoryRecordLog,
                                              writer: RecordingMarkerWriter, clock: FakeClock) -> None:
    old = Client(coord, clock, "tx")
    await old.begin(T0)
    writer.fail(T0)
    new = Client(coord, clock, "tx")
    assert await new.init() == (Err.concurrent_transactions, -1, -1)
    await writer.wait_for(lambda: writer.attempts_for(T0) >= 2)
    assert old.meta is not None and old.meta.state is S.PREPARE_ABORT
    assert await new.init() == (Err.concurrent_transactions, -1, -1)  # still aborting
    writer.heal(T0)
    await log.wait_for(lambda: states(log, "tx")[-1] is S.COMPLETE_ABORT)
    assert writer.markers == [Marker(T0, FIRST_PID, 1, False, COORDINATOR_EPOCH)]
    assert await new.init() == (Err.none, FIRST_PID, 2)


async def test_kip360_bump_and_retry_of_a_lost_reply(coord: TransactionCoordinator, log: InMemoryRecordLog,
                                                     clock: FakeClock) -> None:
    client = Client(coord, clock, "tx")
    assert await client.init() == (Err.none, FIRST_PID, 0)
    assert await client.init(expected=(FIRST_PID, 0)) == (Err.none, FIRST_PID, 1)
    appended = len(log.appends)
    assert await client.init(expected=(FIRST_PID, 0)) == (Err.none, FIRST_PID, 1)  # the reply was lost
    assert len(log.appends) == appended
    assert await client.init(expected=(FIRST_PID, 7)) == (Err.producer_fenced, -1, -1)
    assert await client.init(expected=(FIRST_PID + 5, 1)) == (Err.producer_fenced, -1, -1)


async def test_epoch_rotation_and_its_retry(log: InMemoryRecordLog, writer: RecordingMarkerWriter,
                                            clock: FakeClock) -> None:
    exhausted = TxnMetadata(transactional_id="rot", producer_id=77, producer_epoch=32766, timeout_ms=TIMEOUT,
                            state=S.COMPLETE_COMMIT, last_update_ms=clock.ms, start_ms=clock.ms - 5)
    log.inject(LogRecord(partition=txn_log.partition_for("rot", 50), offset=0, key=txn_log.encode_key("rot"),
                         value=txn_log.encode_value(exhausted)))
    c = make(log, writer)
    c.load()
    client = Client(c, clock, "rot")
    assert await client.init(expected=(77, 32766)) == (Err.none, FIRST_PID, 0)
    assert await client.init(expected=(77, 32766)) == (Err.none, FIRST_PID, 0)  # the reply was lost
    await c.close()


# ---------------------------------------------------------------------------------- timers
async def test_abort_timed_out(coord: TransactionCoordinator, log: InMemoryRecordLog,
                               writer: RecordingMarkerWriter, clock: FakeClock) -> None:
    slow = Client(coord, clock, "slow")
    await slow.begin(T0, T1, timeout_ms=10_000)
    fast = Client(coord, clock, "fast")
    await fast.begin(U0, timeout_ms=10_000)
    assert await fast.end(True) is Err.none
    idle = Client(coord, clock, "idle")
    assert (await idle.init(timeout_ms=10_000))[0] is Err.none
    young = Client(coord, clock, "young")
    clock.advance(5_000)
    await young.begin(U0, timeout_ms=10_000)
    others = {c.txn_id: c.meta for c in (fast, idle, young)}

    clock.advance(5_000)  # slow is exactly at its timeout: not past it
    assert await coord.abort_timed_out(clock.now_ms) == []
    clock.advance(1)
    assert await coord.abort_timed_out(clock.now_ms) == ["slow"]

    assert [m for m in writer.markers if m.producer_id == slow.pid] == [
        Marker(T0, slow.pid, 1, False, COORDINATOR_EPOCH), Marker(T1, slow.pid, 1, False, COORDINATOR_EPOCH)]
    assert slow.meta is not None
    assert (slow.meta.state, slow.meta.producer_epoch) == (S.COMPLETE_ABORT, 1)
    assert states(log, "slow")[-2:] == [S.PREPARE_ABORT, S.COMPLETE_ABORT]
    assert await slow.end(True) is Err.producer_fenced  # the producer learns it was aborted
    assert {c.txn_id: c.meta for c in (fast, idle, young)} == others
    assert await coord.abort_timed_out(clock.now_ms) == []


async def test_timeout_scan_decides_on_the_current_state(coord: TransactionCoordinator, log: InMemoryRecordLog,
                                                         writer: RecordingMarkerWriter, clock: FakeClock) -> None:
    """The scan awaits each abort; a transaction committed meanwhile must not be aborted afterwards."""
    a, b = Client(coord, clock, "a"), Client(coord, clock, "b")
    await a.begin(T0, timeout_ms=1_000)
    await b.begin(U0, timeout_ms=1_000)
    clock.advance(1_001)
    hold = log.hold_next_append()
    scan = asyncio.create_task(coord.abort_timed_out(clock.now_ms))
    await hold.entered.wait()
    assert txn_log.decode_key(hold.records[0][0]) == "a"
    assert await b.end(True) is Err.none  # b's producer commits before the scan reaches it
    hold.release.set()
    assert await scan == ["a"]
    assert b.meta is not None
    assert (b.meta.state, b.meta.producer_epoch) == (S.COMPLETE_COMMIT, 0)
    assert [m.commit for m in writer.markers if m.producer_id == b.pid] == [True]
    assert S.PREPARE_ABORT not in states(log, "b")


async def test_expire_transactional_ids(coord: TransactionCoordinator, log: InMemoryRecordLog,
                                        writer: RecordingMarkerWriter, clock: FakeClock) -> None:
    old = Client(coord, clock, "old")
    assert (await old.init())[0] is Err.none
    done = Client(coord, clock, "done")
    await done.begin(T0)
    assert await done.end(True) is Err.none
    busy = Client(coord, clock, "busy")
    await busy.begin(U0, timeout_ms=MAX_TIMEOUT)

    clock.advance(EXPIRATION - 1)
    assert await coord.expire_transactional_ids(clock.now_ms) == []
    clock.advance(1)
    assert await coord.expire_transactional_ids(clock.now_ms) == ["old", "done"]
    assert log.records()[-2:] == [(txn_log.encode_key("old"), None), (txn_log.encode_key("done"), None)]
    assert log.appends[-1].partition == txn_log.partition_for("done", 50)
    assert coord.get("old") is None and coord.get("done") is None
    assert busy.meta is not None and busy.meta.state is S.ONGOING

    reloaded = make(log, RecordingMarkerWriter())
    reloaded.load()
    assert set(project(reloaded)) == {"busy"}
    # the id can be used again, under a new producer id
    assert await old.init() == (Err.none, FIRST_PID + 3, 0)


async def test_expiry_scan_decides_on_the_current_state(coord: TransactionCoordinator, log: InMemoryRecordLog,
                                                        clock: FakeClock) -> None:
    a, b = Client(coord, clock, "a"), Client(coord, clock, "b")
    assert (await a.init())[0] is Err.none
    assert (await b.init())[0] is Err.none
    clock.advance(EXPIRATION)
    hold = log.hold_next_append()
    scan = asyncio.create_task(coord.expire_transactional_ids(clock.now_ms))
    await hold.entered.wait()
    assert hold.records == ((txn_log.encode_key("a"), None),)
    assert await b.add(T0) is Err.none  # b starts a transaction before the scan reaches it
    hold.release.set()
    assert await scan == ["a"]
    assert b.meta is not None and b.meta.state is S.ONGOING
    assert None not in history(log, "b")


# ---------------------------------------------------------------------------------- replay
async def test_load_rebuilds_an_equal_cache(log: InMemoryRecordLog, writer: RecordingMarkerWriter,
                                            clock: FakeClock) -> None:
    c1 = make(log, writer)
    c1.load()
    gone = Client(c1, clock, "gone")
    assert (await gone.init())[0] is Err.none
    clock.advance(EXPIRATION)
    assert await c1.expire_transactional_ids(clock.now_ms) == ["gone"]

    committed = Client(c1, clock, "committed")
    await committed.begin(T0, T1)
    assert await committed.end(True) is Err.none
    aborted = Client(c1, clock, "aborted")
    await aborted.begin(U0)
    assert await aborted.end(False) is Err.none
    ongoing = Client(c1, clock, "ongoing")
    await ongoing.begin(T0)
    clock.advance(3)
    assert await ongoing.add(U0) is Err.none
    empty = Client(c1, clock, "empty")
    assert (await empty.init())[0] is Err.none
    assert (await empty.init(expected=(empty.pid, 0)))[0] is Err.none
    fenced = Client(c1, clock, "fenced")
    await fenced.begin(T1)
    assert (await Client(c1, clock, "fenced").init())[0] is Err.concurrent_transactions
    stuck = Client(c1, clock, "stuck")
    p0 = TopicPartition("p", 0)
    await stuck.begin(p0)
    writer.fail(p0)
    assert await stuck.end(True) is Err.none
    # records another coordinator does not own: a control record and a key of another version
    log.inject(LogRecord(partition=0, offset=0, key=b"\x00\x00\x00\x01", value=b"\x00\x00\x00\x00\x00\x00",
                         producer_id=9, transactional=True, control_type=1))
    log.inject(LogRecord(partition=1, offset=0, key=b"\x00\x01\x00\x02xx", value=b"\x00\x03garbage"))
    await c1.close()

    c2 = make(log, RecordingMarkerWriter())
    assert await Client(c2, clock, "committed").init() == (Err.coordinator_load_in_progress, -1, -1)
    c2.load()
    assert project(c2) == project(c1)
    assert set(project(c2)) == {"committed", "aborted", "ongoing", "empty", "fenced", "stuck"}
    assert c2.get("stuck").state is S.PREPARE_COMMIT  # type: ignore[union-attr]
    assert c2.get("fenced").producer_epoch == 1  # type: ignore[union-attr]
    assert c2.get("ongoing").partitions == {T0, U0}  # type: ignore[union-attr]
    await c2.close()


@pytest.mark.parametrize("commit", [True, False], ids=["commit", "abort"])
async def test_resume_pending_markers_completes_a_prepare_found_in_the_log(
        log: InMemoryRecordLog, clock: FakeClock, commit: bool) -> None:
    first_writer = RecordingMarkerWriter()
    c1 = make(log, first_writer)
    c1.load()
    client = Client(c1, clock, "tx")
    await client.begin(T0, T1)
    first_writer.fail(T0)  # the first coordinator dies before any marker is written
    assert await client.end(commit) is Err.none
    await c1.close()
    prepared = S.PREPARE_COMMIT if commit else S.PREPARE_ABORT
    assert states(log, "tx")[-1] is prepared

    second_writer = RecordingMarkerWriter()
    c2 = make(log, second_writer)
    c2.load()
    assert c2.get("tx").state is prepared  # type: ignore[union-attr]
    assert await Client(c2, clock, "tx").init() == (Err.concurrent_transactions, -1, -1)
    c2.resume_pending_markers(clock.now_ms)
    done = S.COMPLETE_COMMIT if commit else S.COMPLETE_ABORT
    await log.wait_for(lambda: states(log, "tx")[-1] is done)
    assert second_writer.markers == [Marker(tp, client.pid, client.epoch, commit, COORDINATOR_EPOCH)
                                     for tp in (T0, T1)]
    meta = c2.get("tx")
    assert meta is not None and (meta.state, meta.partitions) == (done, frozenset())
    await c2.close()


async def test_resume_leaves_other_states_alone(log: InMemoryRecordLog, writer: RecordingMarkerWriter,
                                                clock: FakeClock) -> None:
    c1 = make(log, writer)
    c1.load()
    await Client(c1, clock, "ongoing").begin(T0)
    done = Client(c1, clock, "done")
    await done.begin(T1)
    assert await done.end(True) is Err.none
    await c1.close()
    appended, marked = len(log.appends), len(writer.attempts)
    c2 = make(log, writer)
    c2.load()
    c2.resume_pending_markers(clock.now_ms)
    # an awaited append of another id lets any (wrongly) started marker task run
    assert (await Client(c2, clock, "probe").init())[0] is Err.none
    await c2.close()
    assert (len(log.appends), len(writer.attempts)) == (appended + 1, marked)
    assert states(log, "ongoing")[-1] is S.ONGOING and states(log, "done")[-1] is S.COMPLETE_COMMIT


async def test_compaction_keeps_exactly_the_live_state() -> None:
    """After compact(), replaying the partition alone gives the same cache (state is a replay)."""
    from fakes import FakeClock, InMemoryRecordLog, RecordingMarkerWriter

    from minikafka.coordinator.transaction.coordinator import TransactionCoordinator
    from minikafka.protocol.types import TopicPartition

    log = InMemoryRecordLog(partition_count=1)
    clock = FakeClock()
    ids = iter(range(100, 200))
    coord = TransactionCoordinator(log, RecordingMarkerWriter(), new_producer_id=lambda: next(ids),
                                   max_timeout_ms=60000, expiration_ms=10**9)
    coord.load()
    for name in ("a", "b", "c"):
        for _ in range(3):  # several epochs each: many records for three ids
            err, pid, epoch = await coord.init_producer_id(name, timeout_ms=1000, producer_id=-1, producer_epoch=-1,
                                                           now_ms=clock.now_ms)
            assert err.value == 0
    err, pid, epoch = await coord.init_producer_id("a", timeout_ms=1000, producer_id=-1, producer_epoch=-1,
                                                   now_ms=clock.now_ms)
    await coord.add_partitions("a", producer_id=pid, producer_epoch=epoch,
                               partitions=frozenset({TopicPartition("t", 0)}), now_ms=clock.now_ms)
    before = {m.transactional_id: m for m in coord.all()}
    assert len(list(log.replay())) > 3
    log.compaction_wanted = True
    assert await coord.compact(clock.now_ms) == 1
    assert len(list(log.replay())) == 3
    reloaded = TransactionCoordinator(log, RecordingMarkerWriter(), new_producer_id=lambda: 0,
                                      max_timeout_ms=60000, expiration_ms=10**9)
    reloaded.load()
    after = {m.transactional_id: m for m in reloaded.all()}
    strip = lambda m: (m.producer_id, m.producer_epoch, m.state, m.partitions, m.timeout_ms)  # noqa: E731
    assert {k: strip(v) for k, v in after.items()} == {k: strip(v) for k, v in before.items()}


# ---------------------------------------------------------------------------------- transactions v2
# EndTxn v5+ (KIP-890 part 2): every commit and abort bumps the epoch; a retry is known by the
# epoch it carries. The table is Kafka's TransactionCoordinator.endTransaction for TV2.


async def _v2_client(coord: TransactionCoordinator, clock: FakeClock, txn_id: str, *tps: TopicPartition) -> Client:
    client = Client(coord, clock, txn_id)
    assert (await client.init())[0] is Err.none
    assert await coord.add_partitions(txn_id, producer_id=client.pid, producer_epoch=client.epoch,
                                      partitions=frozenset(tps), now_ms=clock.now_ms, client_tv=2) is Err.none
    return client


async def test_v2_commit_bumps_the_epoch_and_marks_with_it(coord: TransactionCoordinator,
                                                           writer: RecordingMarkerWriter, clock: FakeClock) -> None:
    c = await _v2_client(coord, clock, "v2", T0, T1)
    assert await c.end_v(True) == (Err.none, FIRST_PID, 1)
    meta = coord.get("v2")
    assert meta is not None
    assert (meta.state, meta.producer_epoch, meta.last_producer_epoch, meta.client_transaction_version) == (
        S.COMPLETE_COMMIT, 1, 0, 2)
    assert {(m.tp, m.producer_epoch, m.commit) for m in writer.markers} == {(T0, 1, True), (T1, 1, True)}


async def test_v2_retries_and_the_next_end(coord: TransactionCoordinator, log: InMemoryRecordLog,
                                           writer: RecordingMarkerWriter, clock: FakeClock) -> None:
    c = await _v2_client(coord, clock, "v2r", T0)
    assert await c.end_v(True) == (Err.none, FIRST_PID, 1)
    appended = len(log.appends)
    assert await c.end_v(True, epoch=0) == (Err.none, FIRST_PID, 1)  # the answer was lost: same identity
    assert await c.end_v(False, epoch=0) == (Err.invalid_txn_state, -1, -1)  # a retry of the other result
    assert await c.end_v(True, epoch=1) == (Err.invalid_txn_state, -1, -1)  # commit with nothing open
    assert await c.end_v(True, epoch=5) == (Err.producer_fenced, -1, -1)
    assert len(log.appends) == appended
    # an abort with nothing open still bumps the epoch, and marks nothing
    markers = len(writer.markers)
    assert await c.end_v(False, epoch=1) == (Err.none, FIRST_PID, 2)
    assert coord.get("v2r").state is S.COMPLETE_ABORT  # type: ignore[union-attr]
    assert len(writer.markers) == markers
    assert await c.end_v(False, epoch=1) == (Err.none, FIRST_PID, 2)  # its retry


async def test_v2_empty_and_prepare_states(coord: TransactionCoordinator, writer: RecordingMarkerWriter,
                                           clock: FakeClock) -> None:
    c = Client(coord, clock, "v2e")
    assert (await c.init())[0] is Err.none
    assert await c.end_v(True) == (Err.invalid_txn_state, -1, -1)
    assert await c.end_v(False) == (Err.none, FIRST_PID, 1)
    # PREPARE_*: the markers are being written; the retry is told to wait, the other result is refused
    await coord.add_partitions("v2e", producer_id=FIRST_PID, producer_epoch=1, partitions=frozenset({T0}),
                               now_ms=clock.now_ms, client_tv=2)
    writer.fail(T0)
    assert await c.end_v(True, epoch=1) == (Err.none, FIRST_PID, 2)
    assert coord.get("v2e").state is S.PREPARE_COMMIT  # type: ignore[union-attr]
    assert await c.end_v(True, epoch=1) == (Err.concurrent_transactions, -1, -1)
    assert await c.end_v(False, epoch=1) == (Err.invalid_txn_state, -1, -1)
    assert await c.end_v(True, epoch=2) == (Err.producer_fenced, -1, -1)
    writer.heal(T0)


async def test_v1_and_v2_clients_side_by_side(coord: TransactionCoordinator, clock: FakeClock) -> None:
    v1 = Client(coord, clock, "old")
    await v1.begin(T0)
    assert await v1.end(True) is Err.none
    assert coord.get("old").producer_epoch == 0  # type: ignore[union-attr]
    assert await v1.end(True) is Err.none  # TV1: a retry is the same epoch
    v2 = await _v2_client(coord, clock, "new", T1)
    assert await v2.end_v(True) == (Err.none, FIRST_PID + 1, 1)


def _ongoing_v2(txn_id: str, epoch: int, timeout_ms: int, clock: FakeClock) -> TxnMetadata:
    """A TV2 transaction of producer 77 open on T0 at `epoch`."""
    return TxnMetadata(transactional_id=txn_id, producer_id=77, producer_epoch=epoch, timeout_ms=timeout_ms,
                       state=S.ONGOING, partitions=frozenset({T0}), last_update_ms=clock.ms, start_ms=clock.ms,
                       client_transaction_version=2)


def _loaded_with(log: InMemoryRecordLog, writer: RecordingMarkerWriter, meta: TxnMetadata) -> TransactionCoordinator:
    """A coordinator that loaded `meta` from its log (written as TransactionLogValue v1)."""
    log.inject(LogRecord(partition=txn_log.partition_for(meta.transactional_id, 50), offset=0,
                         key=txn_log.encode_key(meta.transactional_id), value=txn_log.encode_value(meta, 1)))
    c = make(log, writer)
    c.load()
    return c


async def test_v2_exhausted_epoch_hands_over_to_a_new_producer_id(log: InMemoryRecordLog, writer: RecordingMarkerWriter,
                                                                  clock: FakeClock) -> None:
    c = _loaded_with(log, writer, _ongoing_v2("ov", 32766, TIMEOUT, clock))
    client = Client(c, clock, "ov")
    client.pid, client.epoch = 77, 32766
    assert await client.end_v(True) == (Err.none, FIRST_PID, 0)
    assert writer.markers[-1].producer_epoch == 32767  # the old id's last epoch marks its transaction
    meta = c.get("ov")
    assert meta is not None
    assert (meta.state, meta.producer_id, meta.producer_epoch, meta.previous_producer_id, meta.next_producer_id) == (
        S.COMPLETE_COMMIT, FIRST_PID, 0, 77, -1)
    assert await client.end_v(True) == (Err.none, FIRST_PID, 0)  # a retry with the old identity
    replayed = make(log, writer)
    replayed.load()
    # the previous id and the client version survive in the log (v1 tags); the last epoch is memory only
    assert replayed.get("ov") == dataclasses.replace(meta, last_producer_epoch=-1)
    replayed_client = Client(replayed, clock, "ov")
    replayed_client.pid, replayed_client.epoch = 77, 32766
    assert await replayed_client.end_v(True) == (Err.none, FIRST_PID, 0)  # still known as a retry
    await c.close()
    await replayed.close()


async def test_v2_timeout_at_an_exhausted_epoch_rotates(log: InMemoryRecordLog, writer: RecordingMarkerWriter,
                                                        clock: FakeClock) -> None:
    c = _loaded_with(log, writer, _ongoing_v2("to", 32765, 1_000, clock))
    clock.advance(2_000)
    assert await c.abort_timed_out(clock.now_ms) == ["to"]
    assert writer.markers[-1].producer_epoch == 32766
    meta = c.get("to")
    assert meta is not None and (meta.state, meta.producer_id, meta.producer_epoch) == (S.COMPLETE_ABORT, FIRST_PID, 0)
    await c.close()


@pytest.mark.parametrize("level, value_version, rotates", [(0, 0, False), (1, 1, False), (2, 1, True)])
async def test_the_broker_transaction_version_sets_the_log_schema_and_timeout_rotation(
        log: InMemoryRecordLog, writer: RecordingMarkerWriter, clock: FakeClock, level: int, value_version: int,
        rotates: bool) -> None:
    """transaction.version 0 writes TransactionLogValue v0, 1 and 2 write v1 (as Kafka's
    transactionLogValueVersion); only 2 ends a timed-out transaction at an exhausted epoch under
    a new producer id (the server's version decides a timeout, as in Kafka)."""
    exhausted = dataclasses.replace(_ongoing_v2("lv", 32765, 1_000, clock), client_transaction_version=0)
    log.inject(LogRecord(partition=txn_log.partition_for("lv", 50), offset=0, key=txn_log.encode_key("lv"),
                         value=txn_log.encode_value(exhausted, 0)))
    c = make(log, writer, transaction_version=level)
    c.load()
    clock.advance(2_000)
    assert await c.abort_timed_out(clock.now_ms) == ["lv"]
    assert {v[:2] for a in log.appends for _k, v in a.records if v is not None} == {
        value_version.to_bytes(2, "big")}
    meta = c.get("lv")
    assert meta is not None and meta.state is S.COMPLETE_ABORT
    assert (meta.producer_id, meta.producer_epoch) == ((FIRST_PID, 0) if rotates else (77, 32766))
    await c.close()
