"""Log compaction (issue 19), transaction-aware, driven by confluent-kafka over real sockets.

The main scenario writes 100,000 records over 1,000 keys: plain idempotent writes, 40
transactions of 1,000 records that alternately commit and abort, tombstones (plain, inside a
committed transaction and inside an aborted one), then rolls the active segment with a record
stamped a minute ahead (segment.ms is 30 s, so the roll needs no waiting). While the cleaner works
and after it is done, a read_committed consumer must see exactly the last committed value of each
key; once cleaning is done no key appears twice, no aborted record is left, and the data is within
2x of the live records. The same test runs against Apache Kafka 4.3.1 (`make conformance`): both
brokers get the same broker and topic settings through `configured_broker`.

minikafka only: Kafka's DumpLogSegments reads the cleaned segments, the cleaned log survives
kill -9, and a broker killed at each step of a cleaning pass (MINIKAFKA_CRASH_AT) restarts with
either the old or the new log, never a mix, and finishes the pass.
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

import pytest
from clients import admin, create_topic, producer, read_to_eof, uniq, wait_until
from confluent_kafka import Producer
from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource

from minikafka import faults
from minikafka.protocol.records import read_header

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

BROKER = {"log.cleaner.backoff.ms": "100"}
TOPIC_CONFIG = {
    "cleanup.policy": "compact",
    "segment.bytes": "1048576",            # Kafka's smallest: ~23 segments for the main scenario
    "segment.ms": "30000",
    "min.cleanable.dirty.ratio": "0.01",
    "delete.retention.ms": "600000",       # tombstones and markers stay for the whole test
}
KEYS = 1000
VALUE_PAD = 200


def value(tag: str) -> bytes:
    return tag.encode().ljust(VALUE_PAD, b".")


class Workload:
    """Writes through two producers in a fixed order and keeps what a read_committed reader of a
    compacted log must end up with: key -> last committed value (None for a tombstone)."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        self.topic = topic
        self.expected: dict[bytes, bytes | None] = {}
        self.written = 0
        self.plain = producer(bootstrap, **{"enable.idempotence": True, "linger.ms": 20, "log_level": 3})
        self.txn = Producer({"bootstrap.servers": bootstrap, "transactional.id": uniq("compactor"),
                             "linger.ms": 20, "log_level": 3})
        self.txn.init_transactions(30)
        self.errors: list[object] = []

    def _cb(self, err: object, _msg: object) -> None:
        if err is not None:
            self.errors.append(err)

    def put(self, pairs: list[tuple[bytes, bytes | None]], **kw: object) -> None:
        for k, v in pairs:
            self.plain.produce(self.topic, key=k, value=v, on_delivery=self._cb, **kw)
            self.plain.poll(0)
            self.expected[k] = v
        assert self.plain.flush(60) == 0
        self.written += len(pairs)

    def transaction(self, pairs: list[tuple[bytes, bytes | None]], commit: bool) -> None:
        self.txn.begin_transaction()
        for k, v in pairs:
            self.txn.produce(self.topic, key=k, value=v, on_delivery=self._cb)
            self.txn.poll(0)
        assert self.txn.flush(60) == 0  # the records are in the log before the abort, too
        if commit:
            self.txn.commit_transaction(60)
            self.expected.update(pairs)
        else:
            self.txn.abort_transaction(60)
        self.written += len(pairs)

    def close(self) -> None:
        self.plain.flush(30)
        self.txn.flush(30)
        assert not self.errors, self.errors[:5]


def key(i: int) -> bytes:
    return f"key-{i % KEYS:04d}".encode()


def run_workload(bootstrap: str, topic: str) -> Workload:
    w = Workload(bootstrap, topic)
    w.put([(key(i), value(f"A{i}")) for i in range(50_000)])
    for t in range(40):
        committed = t % 2 == 0
        tag = "C" if committed else "aborted"
        w.transaction([(key(t * 37 + j), value(f"{tag}{t}-{j}")) for j in range(1000)], committed)
        w.put([(key(t * 11 + j), value(f"B{t}-{j}")) for j in range(100)])
    w.put([(key(i), None) for i in range(100)])  # plain tombstones
    w.transaction([(key(i), value(f"C-re{i}")) for i in range(50)] + [(key(i), None) for i in range(900, 950)], True)
    w.transaction([(key(i), value(f"aborted-re{i}")) for i in range(50, 100)]
                  + [(key(i), None) for i in range(950, 1000)], False)
    w.put([(key(100 + i % 800), value(f"D{i}")) for i in range(5_700)])
    assert w.written == 100_000
    # A record stamped a minute ahead rolls the active segment (segment.ms 30 s) at once.
    w.put([(b"roll", b"roll")], timestamp=int(time.time() * 1000) + 60_000)
    w.close()
    return w


def committed_view(bootstrap: str, topic: str) -> dict[bytes, bytes | None]:
    view: dict[bytes, bytes | None] = {}
    for _t, _p, _o, k, v in read_to_eof(bootstrap, [(topic, 0)], "read_committed", timeout=120):
        view[k] = v
    return view


def partition_dir(broker: object, topic: str) -> Path:
    process = broker.process
    base = process.log_dir if hasattr(process, "log_dir") else process.data_dir
    return Path(base) / f"{topic}-0"


def cleaned(bootstrap: str, topic: str) -> bool:
    """Every key once below the roll record, and no record of an aborted transaction anywhere."""
    rows = read_to_eof(bootstrap, [(topic, 0)], "read_uncommitted", timeout=120)
    keys = [k for _t, _p, _o, k, _v in rows]
    return len(keys) == len(set(keys)) and not any(v is not None and v.startswith(b"aborted") for *_, v in rows)


def test_compaction_of_100k_records_with_transactions_and_tombstones(configured_broker):
    broker = configured_broker(overrides=BROKER)
    topic = uniq("compacted")
    create_topic(broker.bootstrap, topic, 1, TOPIC_CONFIG)
    w = run_workload(broker.bootstrap, topic)
    # while the cleaner works (it starts as soon as segments roll): exactly the committed state
    assert committed_view(broker.bootstrap, topic) == w.expected
    wait_until(lambda: cleaned(broker.bootstrap, topic), 120, "the log to be compacted", interval=0.5)
    assert committed_view(broker.bootstrap, topic) == w.expected
    live = sum(len(k) + (len(v) if v is not None else 0) for k, v in w.expected.items())
    pdir = partition_dir(broker, topic)
    logs = sorted(pdir.glob("*.log"))
    # The partition directory's allocated bytes (Kafka's preallocated, sparse 10 MiB index of the
    # active segment counts for what it holds; its `.deleted` files go file.delete.delay.ms later).
    used = sum(f.stat().st_blocks * 512 for f in pdir.iterdir() if not f.name.endswith(".deleted"))
    assert used <= 2 * live, f"{used} bytes in {pdir} for {live} bytes of live records"
    if broker.external:
        return
    # minikafka: the cleaned log survives kill -9, and Kafka's DumpLogSegments reads it
    broker.process.restart(hard=True)
    assert committed_view(broker.bootstrap, topic) == w.expected
    checkpoint = (broker.process.data_dir / "cleaner-offset-checkpoint").read_text().split()
    assert topic in checkpoint
    broker.process.term()
    import kafka_ref

    kafka_ref.jars_or_skip("DumpLogSegments")
    dump = kafka_ref.dump_log_segments([str(f) for f in logs], "--deep-iteration")
    assert dump.returncode == 0, dump.stderr[-3000:]
    for problem in ("invalid bytes", "isvalid: false", "Exception"):
        assert problem not in dump.stdout and problem not in dump.stderr, dump.stdout[-2000:]
    # it walked every batch we wrote, the rebuilt and the empty ones included, with their counts
    ours = [read_header(data, p) for f in logs for data in [f.read_bytes()] for p in _positions(data)]
    theirs = re.findall(r"^baseOffset: (\d+) lastOffset: (\d+) count: (\d+)", dump.stdout, re.M)
    assert [(int(b), int(la), int(c)) for b, la, c in theirs] == [(h.base_offset, h.last_offset, h.records_count)
                                                                for h in ours]
    assert any(h.records_count == 0 for h in ours) and any(h.attributes & 0x40 for h in ours)


def _positions(data: bytes) -> list[int]:
    out, p = [], 0
    while p + 61 <= len(data):
        out.append(p)
        p += read_header(data, p).size
    return out


@pytest.mark.parametrize("step", faults.CLEANER_STEPS)
def test_kill_at_each_step_of_a_cleaning_pass(configured_broker, step):
    broker = configured_broker(overrides=BROKER, env={"MINIKAFKA_CRASH_AT": f"{step}:1"})
    topic = uniq("crash")
    # No pass until the test lowers the ratio: the log is read whole first.
    create_topic(broker.bootstrap, topic, 1, {**TOPIC_CONFIG, "min.cleanable.dirty.ratio": "1.0"})
    w = Workload(broker.bootstrap, topic)
    for t in range(6):  # 1 KiB values: three segments of 1 MiB
        w.transaction([(f"k{(t * 7 + j) % 100}".encode(), f"t{t}-{j}".encode().ljust(1000, b"."))
                       for j in range(250)], t % 3 != 1)
        w.put([(f"k{j % 100}".encode(), f"p{t}-{j}".encode().ljust(1000, b".")) for j in range(250)])
    w.put([(b"roll", b"roll")], timestamp=int(time.time() * 1000) + 60_000)
    w.close()
    before = read_to_eof(broker.bootstrap, [(topic, 0)], "read_uncommitted", timeout=60)
    a = admin(broker.bootstrap)
    res = ConfigResource(ConfigResource.Type.TOPIC, topic, incremental_configs=[
        ConfigEntry("min.cleanable.dirty.ratio", "0.01", incremental_operation=AlterConfigOpType.SET)])
    a.incremental_alter_configs([res])[res].result(30)
    proc = broker.process
    wait_until(lambda: proc.proc.poll() is not None, 60, f"the broker to stop at {step}")
    assert proc.proc.returncode == 137, proc.log_tail()
    names = os.listdir(partition_dir(broker, topic))
    assert any(n.endswith((".cleaned", ".swap")) for n in names), names
    # Restarted with the cleaner off, the log is seen as the recovery left it.
    proc.env = {}
    proc.overrides["log.cleaner.enable"] = "false"
    proc.start()
    assert not [n for n in os.listdir(partition_dir(broker, topic)) if n.endswith((".cleaned", ".swap"))]
    after = read_to_eof(broker.bootstrap, [(topic, 0)], "read_uncommitted", timeout=60)
    if step in faults.CLEANER_STEPS[:2]:  # before the commit point: the old log, untouched
        assert after == before
    else:                                  # after it: the first cleaned segment is in place
        assert len(after) < len(before) and after[-1] == before[-1]
        assert set(after) <= set(before)
    assert committed_view(broker.bootstrap, topic) == w.expected
    proc.overrides["log.cleaner.enable"] = "true"
    proc.restart()
    wait_until(lambda: cleaned(broker.bootstrap, topic), 60, "the pass to finish after the restart", interval=0.5)
    assert committed_view(broker.bootstrap, topic) == w.expected
