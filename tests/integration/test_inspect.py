"""`minikafka inspect` against a real broker and real confluent-kafka clients (issue 6, item 4).

One partition gets, in order: a committed transaction, an aborted one, one left open by a
transactional producer with a long transaction.timeout.ms, and a non-transactional record after
it. `python -m minikafka inspect --json` then has to report, from the broker (--bootstrap) and from
its files (--data-dir, while it runs and after a SIGTERM): the open transaction's id as Ongoing
with its producer id and epoch, the partition's LSO at that transaction's first offset below the
high watermark, the producer holding it back, and the aborted range (first offset, marker offset).
Inspecting the data directory must leave every file byte-identical.

Oracles independent of the tool: offsets from the producers' delivery reports; producer id and
epoch from the batch headers a raw Fetch returns; marker offsets from ListOffsets (the read_committed
end reaches the log end once a marker is written, and the marker is then the last offset).
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from clients import create_topic
from confluent_kafka import KafkaError, Producer
from kio.schema.list_offsets.v7.request import ListOffsetsPartition, ListOffsetsRequest, ListOffsetsTopic
from kio.static.primitive import i8, i32, i64
from rawclient import RawClient, fetch_v12

from minikafka.protocol import records

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]

QUIET = {"log_level": 3}


def wait_until(cond: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for: {what}")
        time.sleep(0.05)


def send(p: Producer, topic: str, values: list[bytes]) -> list[int]:
    """Produce to partition 0, flush, return the offsets (every delivery must succeed)."""
    errors: list[KafkaError] = []
    offsets: list[int] = []

    def cb(err: KafkaError | None, msg: Any) -> None:
        (errors.append(err) if err else offsets.append(msg.offset()))

    for v in values:
        p.produce(topic, value=v, partition=0, on_delivery=cb)
    assert p.flush(30) == 0
    assert not errors, errors
    return sorted(offsets)


def list_offset(c: RawClient, topic: str, isolation: int) -> int:
    resp = c.request(ListOffsetsRequest(replica_id=i32(-1), isolation_level=i8(isolation), topics=(
        ListOffsetsTopic(name=topic, partitions=(ListOffsetsPartition(partition_index=i32(0), timestamp=i64(-1)),)),
    )), 7)
    p = resp.topics[0].partitions[0]
    assert p.error_code == 0
    return int(p.offset)


def batch_producer(c: RawClient, topic: str, offset: int) -> tuple[int, int]:
    """(producer id, epoch) from the header of the batch holding `offset`, as the broker stored it."""
    resp = c.request(fetch_v12(topic, 0, offset), 12)
    data = bytes(resp.responses[0].partitions[0].records or b"")
    pos = 0
    while pos + records.HEADER_SIZE <= len(data):
        h = records.read_header(data, pos)
        if h.base_offset <= offset <= h.last_offset:
            return h.producer_id, h.producer_epoch
        pos += h.size
    raise AssertionError(f"no batch holds offset {offset}")


def inspect(*args: str) -> dict[str, Any]:
    proc = subprocess.run([sys.executable, "-m", "minikafka", "inspect", *args, "--json"],
                          capture_output=True, timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr.decode()
    return json.loads(proc.stdout)


def tree_digest(root: Path, *, with_mtime: bool) -> dict[str, tuple[Any, ...]]:
    out: dict[str, tuple[Any, ...]] = {}
    for dirpath, _dirs, names in os.walk(root):
        for name in names:
            path = Path(dirpath) / name
            st = path.stat()
            digest = hashlib.sha256(path.read_bytes()).hexdigest()
            out[str(path.relative_to(root))] = (st.st_size, digest, st.st_mtime_ns) if with_mtime \
                else (st.st_size, digest)
    return out


def by_id(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {t["transactional_id"]: t for t in doc["transactions"]}


def partition(doc: dict[str, Any], topic: str) -> dict[str, Any]:
    found = [p for p in doc["partitions"] if p["topic"] == topic and p["partition"] == 0]
    assert len(found) == 1, doc["partitions"]
    return found[0]


def test_inspect_reports_open_aborted_and_committed_transactions(broker_factory: Any) -> None:
    broker = broker_factory()
    bootstrap = broker.bootstrap
    suffix = uuid.uuid4().hex[:8]
    topic = f"inspect-{suffix}"
    committer, aborter, opener = f"committer-{suffix}", f"aborter-{suffix}", f"opener-{suffix}"
    create_topic(bootstrap, topic)
    raw = RawClient.connect(bootstrap)

    def markers_written(expected_end: int) -> Callable[[], bool]:
        return lambda: list_offset(raw, topic, 0) == expected_end and list_offset(raw, topic, 1) == expected_end

    def txn_producer(tid: str, **conf: Any) -> Producer:
        p = Producer({"bootstrap.servers": bootstrap, "transactional.id": tid, "linger.ms": 5, **QUIET, **conf})
        p.init_transactions(30)
        return p

    # 1. committed
    pc = txn_producer(committer)
    pc.begin_transaction()
    committed = send(pc, topic, [b"c0", b"c1"])
    pc.commit_transaction(30)
    wait_until(markers_written(committed[-1] + 2), 30, "the COMMIT marker")

    # 2. aborted: the ABORT marker is the last offset once the read_committed end reaches the log end
    pa = txn_producer(aborter)
    pa.begin_transaction()
    aborted = send(pa, topic, [b"a0", b"a1"])
    pa.abort_transaction(30)
    wait_until(markers_written(aborted[-1] + 2), 30, "the ABORT marker")
    abort_marker = aborted[-1] + 1

    # 3. left open (long timeout so the coordinator does not abort it during the test)
    po = txn_producer(opener, **{"transaction.timeout.ms": 600_000})
    po.begin_transaction()
    open_offsets = send(po, topic, [b"o0"])
    open_first = open_offsets[0]

    # 4. a non-transactional record after it
    plain = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, **QUIET})
    (plain_offset,) = send(plain, topic, [b"plain"])
    assert plain_offset > open_first
    hwm = plain_offset + 1
    wait_until(lambda: list_offset(raw, topic, 0) == hwm and list_offset(raw, topic, 1) == open_first, 30,
               "HWM after the plain record, LSO at the open transaction")

    open_pid, open_epoch = batch_producer(raw, topic, open_first)
    abort_pid, _ = batch_producer(raw, topic, aborted[0])
    commit_pid, _ = batch_producer(raw, topic, committed[0])
    raw.close()
    assert open_pid >= 0 and abort_pid >= 0 and len({open_pid, abort_pid, commit_pid}) == 3

    def check(doc: dict[str, Any], *, aborted_known: bool) -> None:
        txns = by_id(doc)
        t = txns[opener]
        assert (t["state"], t["producer_id"], t["producer_epoch"]) == ("Ongoing", open_pid, open_epoch)
        assert t["transaction_timeout_ms"] == 600_000
        assert {"topic": topic, "partition": 0} in t["partitions"]
        assert {"topic": topic, "partition": 0, "first_offset": open_first} in t["holds_back"]
        assert t["age_ms"] is not None and t["age_ms"] >= 0
        assert (txns[committer]["state"], txns[committer]["producer_id"]) == ("CompleteCommit", commit_pid)
        assert (txns[aborter]["state"], txns[aborter]["producer_id"]) == ("CompleteAbort", abort_pid)
        assert txns[committer]["holds_back"] == [] and txns[aborter]["holds_back"] == []

        p = partition(doc, topic)
        assert p["high_watermark"] == hwm
        assert p["last_stable_offset"] == open_first < p["high_watermark"]
        assert p["blocking"] == [{"producer_id": open_pid, "transactional_id": opener, "first_offset": open_first}]
        if aborted_known:
            assert p["aborted"] == [{"producer_id": abort_pid, "first_offset": aborted[0],
                                     "last_offset": abort_marker, "last_stable_offset": abort_marker + 1}]
        else:
            assert p["aborted"] is None

    check(inspect("--bootstrap", bootstrap), aborted_known=False)

    # --data-dir while the broker runs: same answers, nothing written
    before = tree_digest(broker.data_dir, with_mtime=False)
    check(inspect("--data-dir", str(broker.data_dir)), aborted_known=True)
    assert tree_digest(broker.data_dir, with_mtime=False) == before

    text = subprocess.run([sys.executable, "-m", "minikafka", "inspect", "--data-dir", str(broker.data_dir)],
                          capture_output=True, timeout=60, check=False)
    assert text.returncode == 0, text.stderr.decode()
    assert opener in text.stdout.decode() and "Ongoing" in text.stdout.decode()

    # --data-dir after a clean stop (the open transaction is now in the producer snapshot)
    assert broker.term() == 0
    before = tree_digest(broker.data_dir, with_mtime=True)
    check(inspect("--data-dir", str(broker.data_dir)), aborted_known=True)
    assert tree_digest(broker.data_dir, with_mtime=True) == before
