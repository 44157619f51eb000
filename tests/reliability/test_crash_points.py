"""C-3 and C-8 (test-plan.md): the broker dies at a named step of the transaction commit path.

C-3: one transaction over two partitions plus the group's offsets; MINIKAFKA_CRASH_AT makes the
broker exit (status 137, like kill -9) at one step; after a restart a new producer with the same
transactional.id runs init_transactions. What must hold:
- atomicity: read_committed sees both records and the offsets, or none of them;
- decision: once PrepareCommit is in the log the transaction ends committed; if only Ongoing was
  persisted it ends aborted; PrepareAbort ends aborted;
- liveness: LSO == HWM on both partitions; fencing: the new epoch is higher than the old one;
- the .txnindex files hold exactly the aborts.
C-8: transactional ids in Ongoing, PrepareCommit and PrepareAbort at the moment of a kill -9: after
the restart PrepareCommit ends committed, PrepareAbort aborted, Ongoing aborted at its timeout, and
init_transactions succeeds for each id.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from clients import consumer, create_topic, watermarks
from confluent_kafka import Producer, TopicPartition

from minikafka import faults
from minikafka.storage.txn_index import TransactionIndex

pytestmark = [pytest.mark.reliability, pytest.mark.integration]

DRIVER = Path(__file__).with_name("txn_driver.py")
TOPIC = "c3"
GROUP = "c3-group"

COMMIT, ABORT = "commit", "abort"
# (crash point, how the client ends the transaction, expected outcome)
CASES = [
    (faults.AFTER_ADD_PARTITIONS, COMMIT, ABORT),
    (faults.AFTER_TXN_PRODUCE, COMMIT, ABORT),
    (faults.AFTER_TXN_OFFSET_COMMIT, COMMIT, ABORT),
    (faults.AFTER_PREPARE_COMMIT, COMMIT, COMMIT),
    (faults.AFTER_FIRST_MARKER, COMMIT, COMMIT),
    (faults.AFTER_ALL_MARKERS, COMMIT, COMMIT),
    (faults.AFTER_PREPARE_ABORT, ABORT, ABORT),
    (faults.AFTER_FIRST_MARKER, ABORT, ABORT),
    (faults.AFTER_ALL_MARKERS, ABORT, ABORT),
]



def _wait_stable(bootstrap: str, partitions: list[TopicPartition], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while True:
        marks = [watermarks(bootstrap, tp) for tp in partitions]
        if all(lso == hwm for lso, hwm in marks):
            return
        assert time.monotonic() < deadline, f"LSO behind HWM: {marks}"
        time.sleep(0.1)


def _committed_values(bootstrap: str, partitions: int) -> list[bytes]:
    c = consumer(bootstrap, **{"isolation.level": "read_committed", "group.id": f"reader-{uuid.uuid4().hex[:6]}",
                               "enable.partition.eof": True})
    c.assign([TopicPartition(TOPIC, p, 0) for p in range(partitions)])
    values: list[bytes] = []
    eof: set[int] = set()
    deadline = time.monotonic() + 20
    while len(eof) < partitions and time.monotonic() < deadline:
        for m in c.consume(100, timeout=0.3):
            if m.error():
                if m.error().code() == -191:  # _PARTITION_EOF
                    eof.add(m.partition())
                continue
            values.append(m.value())
    c.close()
    assert len(eof) == partitions, "read_committed did not reach the end of every partition"
    return values


def _aborts_in_txn_index(data_dir: Path) -> int:
    total = 0
    for part in range(2):
        for f in sorted((data_dir / f"{TOPIC}-{part}").glob("*.txnindex")):
            idx = TransactionIndex(f)
            assert idx.load()
            total += len(idx.entries)
    return total


@pytest.mark.parametrize(("point", "ending", "expected"), CASES,
                         ids=[f"{p.split('.', 1)[1]}-{e}" for p, e, _ in CASES])
def test_crash_point(broker_factory, point, ending, expected):
    broker = broker_factory(env={"MINIKAFKA_CRASH_AT": f"{point}:1"},
                            overrides={"transaction.abort.timed.out.transaction.cleanup.interval.ms": "200"})
    create_topic(broker.bootstrap, TOPIC, 2)
    txn_id = f"c3-{uuid.uuid4().hex[:6]}"
    driver = subprocess.Popen([sys.executable, str(DRIVER), broker.bootstrap, txn_id, TOPIC, GROUP, ending],
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        assert broker.proc is not None and broker.proc.wait(60) == 137, "the broker did not stop at the crash point"
    finally:
        try:
            out, _ = driver.communicate(timeout=3)
        except subprocess.TimeoutExpired:
            driver.kill()  # still blocked in a client call against the dead broker
            out, _ = driver.communicate()
    lines = [json.loads(line) for line in out.splitlines() if line.strip()]
    assert {"stage": "initialised"} in lines, lines
    succeeded = any(line.get("succeeded") for line in lines)
    assert not succeeded or ending == ABORT  # a commit is never acknowledged before it is complete

    broker.env = {}
    broker.restart()
    new = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": txn_id})
    new.init_transactions(30)  # completes or aborts what the crashed broker left, then bumps the epoch
    parts = [TopicPartition(TOPIC, 0), TopicPartition(TOPIC, 1)]
    _wait_stable(broker.bootstrap, parts, timeout=20 + 5)

    values = sorted(_committed_values(broker.bootstrap, 2))
    c = consumer(broker.bootstrap, **{"group.id": GROUP})
    committed_offset = c.committed([TopicPartition(TOPIC, 0)], timeout=10)[0].offset
    c.close()
    if expected == COMMIT:
        assert values == [b"r0", b"r1"]
        assert committed_offset == 42
    else:
        assert values == []
        assert committed_offset < 0
    # One .txnindex entry per partition that received data from the aborted transaction (a marker
    # with no data before it records nothing), none for a commit.
    with_data = sum(1 for part in range(2) if watermarks(broker.bootstrap, TopicPartition(TOPIC, part))[1] > 1)
    broker.term()
    assert _aborts_in_txn_index(broker.data_dir) == (with_data if expected == ABORT else 0)


def test_coordinator_state_recovers_after_kill9(broker_factory):
    """C-8: Ongoing, PrepareCommit and PrepareAbort at the moment of a kill -9."""
    broker = broker_factory()
    create_topic(broker.bootstrap, TOPIC, 2)
    ids = {name: f"c8-{name}-{uuid.uuid4().hex[:6]}" for name in ("ongoing", "commit", "abort")}
    producers = {}
    for name, txn_id in ids.items():
        p = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": txn_id,
                      "transaction.timeout.ms": 5000 if name == "ongoing" else 60000,
                      "metadata.recovery.strategy": "none"})
        p.init_transactions(30)
        p.begin_transaction()
        p.produce(TOPIC, value=name.encode(), partition=0)
        p.produce(TOPIC, value=name.encode(), partition=1)
        assert p.flush(10) == 0
        producers[name] = p
    held = broker.faults.add("stall_markers")  # gone with the process: the restarted broker has no rules
    # EndTxn answers once PrepareCommit/PrepareAbort is persisted (as Kafka does); the markers then
    # fail and are retried, so both ids stay in Prepare* until the kill.
    producers["commit"].commit_transaction(10)
    producers["abort"].abort_transaction(10)
    assert broker.faults.get(held["id"])["fired"] >= 4  # both partitions of both transactions
    broker.kill9()
    broker.restart()
    assert broker.faults.list() == []
    parts = [TopicPartition(TOPIC, 0), TopicPartition(TOPIC, 1)]
    _wait_stable(broker.bootstrap, parts, timeout=5 + 10)  # Ongoing is aborted at its 5 s timeout
    assert sorted(_committed_values(broker.bootstrap, 2)) == [b"commit", b"commit"]
    for txn_id in ids.values():
        Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": txn_id}).init_transactions(30)
