"""Restarts and crashes on real data (test-plan.md C-2, C-5, C-6, and the clean/hard restart basics).

Every test starts its own broker through `broker_factory` (so they skip when KAFKA_BOOTSTRAP
points at another broker), talks to it with confluent-kafka or the raw test client, stops it with
SIGTERM or SIGKILL, damages files where the scenario says so, restarts it on the same data and
checks what a client reads back.

What startup re-validated is observed through the broker's MINIKAFKA_STATS_FILE test hook (a JSON
file LogManager.startup writes: `clean`, `recovered_segments`), never through log lines.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import struct
import threading
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from clients import create_topic
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from rawclient import RawClient, fetch_v12, high_watermark

from minikafka.protocol import records

pytestmark = [pytest.mark.reliability, pytest.mark.integration, pytest.mark.timeout(240)]

CLEAN_MARKER = ".kafka_cleanshutdown"
Row = tuple[int, int, bytes | None, bytes | None, int]  # partition, offset, key, value, timestamp


# ------------------------------------------------------------------------------------ helpers
def start_broker(broker_factory: Any, tmp_path: Path) -> tuple[Any, Path]:
    stats = tmp_path / f"stats-{uuid.uuid4().hex[:6]}.json"
    broker = broker_factory(env={"MINIKAFKA_STATS_FILE": str(stats)})
    return broker, stats


def read_stats(stats: Path) -> dict[str, Any]:
    return json.loads(stats.read_text())


def produce_rows(bootstrap: str, topic: str, rows: list[dict[str, Any]], **conf: Any) -> list[Row]:
    """Produce with acks=all; every record must be acknowledged. Returns the acked rows."""
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5, "batch.num.messages": 20, **conf})
    acked: list[Row] = []
    errors: list[Any] = []

    def cb(err: KafkaError | None, msg: Any) -> None:
        if err is not None:
            errors.append(err)
        else:
            acked.append((msg.partition(), msg.offset(), msg.key(), msg.value(), msg.timestamp()[1]))

    for r in rows:
        while True:
            try:
                p.produce(topic, on_delivery=cb, **r)
                break
            except BufferError:
                p.poll(0.05)
        p.poll(0)
    assert p.flush(60) == 0, "records not delivered within 60 s"
    assert not errors, errors[:5]
    assert len(acked) == len(rows)
    return acked


def consume_all(bootstrap: str, topic: str, partitions: int, timeout: float = 60.0) -> list[Row]:
    """Every record of every partition from offset 0 up to its high watermark, in offset order."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"verify-{uuid.uuid4().hex}",
                  "enable.auto.commit": False, "auto.offset.reset": "earliest",
                  "enable.partition.eof": False})
    try:
        ends = {}
        for p in range(partitions):
            low, high = c.get_watermark_offsets(TopicPartition(topic, p), timeout=10)
            ends[p] = high
        c.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
        rows: list[Row] = []
        reached = {p: ends[p] == 0 for p in ends}
        deadline = time.monotonic() + timeout
        while not all(reached.values()):
            assert time.monotonic() < deadline, f"consume did not reach {ends} in {timeout}s"
            for m in c.consume(1000, timeout=0.5):
                assert not m.error(), m.error()
                rows.append((m.partition(), m.offset(), m.key(), m.value(), m.timestamp()[1]))
                if m.offset() >= ends[m.partition()] - 1:
                    reached[m.partition()] = True
        return sorted(rows)
    finally:
        c.close()


def raw_fetch_all(bootstrap: str, topic: str, partition: int) -> tuple[bytes, list[tuple]]:
    """Fetch (v12, raw protocol) from offset 0 to the high watermark: the concatenated bytes of the
    whole batches returned, and the decoded records (offset, timestamp, key, value, headers)."""
    out = bytearray()
    recs: list[tuple] = []
    with RawClient.connect(bootstrap) as c:
        hw = high_watermark(c, topic, partition)
        offset = 0
        deadline = time.monotonic() + 60
        while offset < hw:
            assert time.monotonic() < deadline
            resp = c.request(fetch_v12(topic, partition, offset, partition_max_bytes=64 * 1024), 12)
            p = resp.responses[0].partitions[0]
            assert p.error_code == 0, p.error_code
            data = bytes(p.records or b"")
            pos = 0
            while pos + records.LOG_OVERHEAD <= len(data):
                _base, size = records.peek_size(data, pos)
                if pos + size > len(data):
                    break
                h = records.read_header(data, pos)
                if h.last_offset >= offset:
                    out += data[pos:pos + size]
                    recs.extend(tuple(r) for r in records.iter_records(data, pos) if r.offset >= offset)
                offset = max(offset, h.next_offset)
                pos += size
            assert pos > 0, f"fetch at {offset} returned no whole batch"
    return bytes(out), recs


def partition_dir(broker: Any, topic: str, partition: int = 0) -> Path:
    return Path(broker.data_dir) / f"{topic}-{partition}"


def active_log(broker: Any, topic: str) -> Path:
    return sorted(partition_dir(broker, topic).glob("*.log"))[-1]


def batches_of(path: Path) -> list[tuple[int, int, int]]:
    """(position, size, base offset) of each complete batch in a .log file."""
    data = path.read_bytes()
    out, pos = [], 0
    while pos + records.LOG_OVERHEAD <= len(data):
        base, size = records.peek_size(data, pos)
        if pos + size > len(data):
            break
        out.append((pos, size, base))
        pos += size
    return out


def index_files(broker: Any, topic: str) -> dict[str, bytes]:
    root = Path(broker.data_dir)
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.glob(f"{topic}-*/*"))
            if p.suffix in (".index", ".timeindex")}


def log_files(broker: Any, topic: str) -> dict[str, bytes]:
    root = Path(broker.data_dir)
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.glob(f"{topic}-*/*.log"))}


def expected_for_time(rows: list[Row], target: int) -> int:
    """Offset of the first record (offset order) with timestamp >= target, -1 if none."""
    return next((r[1] for r in rows if r[4] >= target), -1)


def check_offsets_for_times_and_seeks(bootstrap: str, topic: str, rows: list[Row], rnd: random.Random) -> None:
    """Random ListOffsets-by-time and seeks on partition 0 return the right records."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"seek-{uuid.uuid4().hex}",
                  "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    try:
        by_offset = {r[1]: r for r in rows}
        targets = [r[4] for r in rnd.sample(rows, min(10, len(rows)))]
        targets += [r[4] - 1 for r in rnd.sample(rows, min(10, len(rows)))]
        targets += [rows[0][4] - 1000, rows[-1][4]]
        for target in targets:
            (got,) = c.offsets_for_times([TopicPartition(topic, 0, target)], timeout=10)
            assert got.error is None, got.error
            assert got.offset == expected_for_time(rows, target), f"offsets_for_times({target})"
        for r in rnd.sample(rows, min(8, len(rows))) + [rows[0], rows[-1]]:
            c.assign([TopicPartition(topic, 0, r[1])])
            msg = None
            deadline = time.monotonic() + 15
            while msg is None and time.monotonic() < deadline:
                msg = c.poll(0.5)
            assert msg is not None and not msg.error(), f"seek to {r[1]}: {msg and msg.error()}"
            assert (msg.offset(), msg.key(), msg.value(), msg.timestamp()[1]) == (r[1], r[2], r[3], r[4])
            assert by_offset[msg.offset()] == r
    finally:
        c.close()


def keyed_rows(n: int, *, t0: int | None = None, prefix: str = "r", step_ms: int = 10) -> list[dict[str, Any]]:
    """n records with unique keys and strictly increasing explicit timestamps."""
    t0 = int(time.time() * 1000) - 3_600_000 if t0 is None else t0
    return [{"key": f"{prefix}{i:06d}".encode(), "value": f"value-{prefix}-{i}-".encode() * (1 + i % 7),
             "timestamp": t0 + step_ms * i} for i in range(n)]


# ------------------------------------------------------------------------------------ (i) SIGTERM
def test_restart_after_sigterm_loses_nothing_and_skips_recovery(broker_factory, tmp_path):
    broker, stats = start_broker(broker_factory, tmp_path)
    topic = "clean-restart"
    create_topic(broker.bootstrap, topic, 3, {"internal.segment.bytes": "16384"})
    acked = produce_rows(broker.bootstrap, topic, keyed_rows(3000))
    assert broker.term() == 0, "SIGTERM must exit 0"
    assert (Path(broker.data_dir) / CLEAN_MARKER).exists()
    logs_before, idx_before = log_files(broker, topic), index_files(broker, topic)
    assert len(logs_before) > 3, "the test needs several segments"

    broker.start()
    s = read_stats(stats)
    assert s["clean"] is True
    assert s["recovered_segments"] == 0, "a restart after SIGTERM must not re-validate any segment"
    assert not (Path(broker.data_dir) / CLEAN_MARKER).exists()

    got = consume_all(broker.bootstrap, topic, 3)
    assert sorted(acked) == got, "every acked record exactly once, nothing else"
    # Nothing was rewritten by the restart: neither the logs nor their indexes.
    assert log_files(broker, topic) == logs_before
    assert index_files(broker, topic) == idx_before


# ------------------------------------------------------------------------------------ (ii) kill -9
def test_kill9_during_continuous_production_keeps_every_acked_record(broker_factory, tmp_path):
    broker, stats = start_broker(broker_factory, tmp_path)
    topic = "kill9-produce"
    create_topic(broker.bootstrap, topic, 3, {"internal.segment.bytes": "65536"})
    rnd = random.Random()
    seed = rnd.randrange(1 << 30)
    rnd.seed(seed)

    acked: dict[bytes, tuple[int, int]] = {}
    failed: list[bytes] = []
    lock = threading.Lock()
    stop = threading.Event()
    thread_error: list[BaseException] = []

    def run() -> None:
        # retries=0: a record is either acked once or reported failed, never silently re-sent,
        # so a duplicate in the log can only come from the broker.
        p = Producer({"bootstrap.servers": broker.bootstrap, "acks": "all", "linger.ms": 2,
                      "retries": 0, "enable.idempotence": False, "message.timeout.ms": 10_000,
                      "request.timeout.ms": 5_000, "reconnect.backoff.max.ms": 200})

        def cb(err: KafkaError | None, msg: Any) -> None:
            with lock:
                if err is None:
                    acked[msg.key()] = (msg.partition(), msg.offset())
                else:
                    failed.append(msg.key())

        i = 0
        try:
            while not stop.is_set():
                with lock:
                    outstanding = i - len(acked) - len(failed)
                if outstanding > 2000:
                    p.poll(0.01)
                    continue
                try:
                    p.produce(topic, key=f"c{i:08d}".encode(), value=f"payload-{i}".encode() * 3, on_delivery=cb)
                    i += 1
                except BufferError:
                    p.poll(0.05)
                p.poll(0)
            p.flush(30)
        except BaseException as exc:  # surfaced in the main thread
            thread_error.append(exc)

    def count() -> int:
        with lock:
            return len(acked)

    def wait_acked(n: int, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while count() < n:
            assert time.monotonic() < deadline, f"only {count()} acks of {n} within {timeout}s"
            assert not thread_error, thread_error
            time.sleep(0.01)

    t = threading.Thread(target=run, daemon=True)
    t.start()
    try:
        wait_acked(rnd.randint(500, 5000), 60)
        time.sleep(rnd.random() * 0.2)  # a random moment while production continues
        broker.kill9()
        acked_at_kill = count()
        broker.start()
        assert read_stats(stats)["clean"] is False
        wait_acked(acked_at_kill + 1000, 60)
    finally:
        stop.set()
        t.join(60)
    assert not t.is_alive()
    assert not thread_error, thread_error

    got = consume_all(broker.bootstrap, topic, 3)
    occurrences = Counter(r[2] for r in got)
    where = {r[2]: (r[0], r[1]) for r in got}
    missing = [k for k in acked if occurrences[k] == 0]
    duplicated = [k for k in acked if occurrences[k] > 1]
    moved = [k for k, loc in acked.items() if where.get(k) != loc]
    assert not missing, f"seed {seed}: {len(missing)} acked records lost, e.g. {missing[:5]}"
    assert not duplicated, f"seed {seed}: acked records duplicated: {duplicated[:5]}"
    assert not moved, f"seed {seed}: acked records not at their acked offsets: {moved[:5]}"
    # Records that were never acked may or may not be there, but at most once (retries=0).
    assert all(n == 1 for n in occurrences.values()), f"seed {seed}: duplicates in the log"
    # Offsets in each partition are dense from 0.
    for p in range(3):
        offs = [r[1] for r in got if r[0] == p]
        assert offs == list(range(len(offs)))


# ------------------------------------------------------------------------------------ (iii) C-5
@pytest.mark.parametrize("damage", ["garbage", "truncate", "flip"])
def test_c5_torn_tail(broker_factory, tmp_path, damage):
    rnd = random.Random()
    seed = rnd.randrange(1 << 30)
    rnd.seed(seed)
    broker, stats = start_broker(broker_factory, tmp_path)
    topic = f"c5-{damage}"
    create_topic(broker.bootstrap, topic, 1, {"internal.segment.bytes": "20000", "index.interval.bytes": "512"})
    rows = keyed_rows(1500, prefix="a")
    produce_rows(broker.bootstrap, topic, rows[:-7])
    produce_rows(broker.bootstrap, topic, rows[-7:], **{"linger.ms": 50})  # the last batch(es)
    before = consume_all(broker.bootstrap, topic, 1)
    assert len(before) == len(rows)
    broker.kill9()

    log = active_log(broker, topic)
    idx = log.with_suffix(".index")
    batches = batches_of(log)
    assert batches and sum(b[1] for b in batches) == log.stat().st_size
    last_pos, last_size, last_base = batches[-1]
    if damage == "garbage":
        with open(log, "ab") as f:
            f.write(rnd.randbytes(rnd.randint(1, 1024)))
        with open(idx, "ab") as f:
            f.write(rnd.randbytes(rnd.randint(1, 1024)))
        expected = before
    elif damage == "truncate":
        os.truncate(log, last_pos + rnd.randint(1, last_size - 1))
        expected = [r for r in before if r[1] < last_base]
    else:
        # A byte the batch's CRC-32C covers (attributes .. end) or its magic/CRC field itself.
        at = last_pos + rnd.randint(16, last_size - 1)
        with open(log, "r+b") as f:
            f.seek(at)
            b = f.read(1)[0]
            f.seek(at)
            f.write(bytes([b ^ (1 << rnd.randrange(8))]))
        expected = [r for r in before if r[1] < last_base]

    broker.start()
    s = read_stats(stats)
    assert s["clean"] is False and s["recovered_segments"] >= 1
    after = consume_all(broker.bootstrap, topic, 1)
    assert after == expected, f"seed {seed}"
    leo = len(expected)
    if damage != "garbage":
        assert log.stat().st_size == last_pos, f"seed {seed}: the log is truncated to the last valid batch"

    # New records land at the new log end offset.
    new = produce_rows(broker.bootstrap, topic, keyed_rows(5, prefix="new", t0=rows[-1]["timestamp"] + 1000))
    assert [r[1] for r in sorted(new)] == list(range(leo, leo + 5)), f"seed {seed}"
    final = consume_all(broker.bootstrap, topic, 1)
    assert final == expected + sorted(new)
    check_offsets_for_times_and_seeks(broker.bootstrap, topic, final, rnd)


# ------------------------------------------------------------------------------------ (iv) C-6
@pytest.mark.parametrize("stop", ["sigterm", "sigkill"])
def test_c6_index_loss(broker_factory, tmp_path, stop):
    rnd = random.Random(11)
    broker, stats = start_broker(broker_factory, tmp_path)
    topic = "c6"
    create_topic(broker.bootstrap, topic, 1, {"internal.segment.bytes": "16384", "index.interval.bytes": "1024"})
    produce_rows(broker.bootstrap, topic, keyed_rows(2000, prefix="i"))
    before = consume_all(broker.bootstrap, topic, 1)
    if stop == "sigterm":
        assert broker.term() == 0
    else:
        broker.kill9()
    pdir = partition_dir(broker, topic)
    originals = {p.name: p.read_bytes() for p in pdir.iterdir() if p.suffix in (".index", ".timeindex")}
    assert len([n for n in originals if n.endswith(".index")]) > 3
    for p in pdir.iterdir():
        if p.suffix in (".index", ".timeindex", ".txnindex"):
            p.unlink()
    (Path(broker.data_dir) / CLEAN_MARKER).unlink(missing_ok=True)

    broker.start()
    assert read_stats(stats)["clean"] is False
    assert consume_all(broker.bootstrap, topic, 1) == before
    check_offsets_for_times_and_seeks(broker.bootstrap, topic, before, rnd)
    # After a clean stop, the rebuilt indexes are byte for byte the ones written live.
    assert broker.term() == 0
    rebuilt = {p.name: p.read_bytes() for p in pdir.iterdir() if p.suffix in (".index", ".timeindex")}
    if stop == "sigterm":
        assert rebuilt == originals
    else:
        # The crashed broker had not written the active segment's final time index entry yet.
        inactive = {n: v for n, v in originals.items() if n.split(".")[0] != active_log(broker, topic).stem}
        assert {n: rebuilt[n] for n in inactive} == inactive


# ------------------------------------------------------------------------------------ (v) C-2
def test_c2_clean_and_hard_restart_give_identical_fetches(broker_factory, tmp_path):
    broker_a, stats_a = start_broker(broker_factory, tmp_path)
    topic = "c2"
    partitions = 3
    create_topic(broker_a.bootstrap, topic, partitions, {"internal.segment.bytes": "8192", "index.interval.bytes": "700"})
    produce_rows(broker_a.bootstrap, topic, keyed_rows(1200, prefix="f"))
    produce_rows(broker_a.bootstrap, topic, keyed_rows(300, prefix="g", t0=int(time.time() * 1000)),
                 **{"compression.type": "lz4"})
    reference = {p: raw_fetch_all(broker_a.bootstrap, topic, p) for p in range(partitions)}

    # Copy the data directory of the (paused, so quiescent) broker: the copy is a crashed broker's.
    broker_b, stats_b = start_broker(broker_factory, tmp_path)
    assert broker_b.term() == 0
    broker_a.pause()
    try:
        shutil.rmtree(broker_b.data_dir)
        shutil.copytree(broker_a.data_dir, broker_b.data_dir)
    finally:
        broker_a.resume()
    assert not (Path(broker_b.data_dir) / CLEAN_MARKER).exists()

    # A: SIGTERM, restart. B: start on the copy, SIGKILL, restart.
    assert broker_a.term() == 0
    broker_a.start()
    broker_b.start()
    broker_b.kill9()
    broker_b.start()
    sa, sb = read_stats(stats_a), read_stats(stats_b)
    assert sa["clean"] is True and sa["recovered_segments"] == 0
    assert sb["clean"] is False and sb["recovered_segments"] >= partitions

    for p in range(partitions):
        raw_a, recs_a = raw_fetch_all(broker_a.bootstrap, topic, p)
        raw_b, recs_b = raw_fetch_all(broker_b.bootstrap, topic, p)
        assert recs_a == recs_b == reference[p][1]
        assert raw_a == raw_b == reference[p][0], f"partition {p}: Fetch bytes differ"
    assert consume_all(broker_a.bootstrap, topic, partitions) == consume_all(broker_b.bootstrap, topic, partitions)
    assert log_files(broker_a, topic) == log_files(broker_b, topic)


def test_torn_tail_helpers_agree_with_records_module():
    """The file walker used above finds every batch of a concatenation (guards the C-5 oracle)."""
    blob = b"".join(bytes(records.build_batch([(b"k", b"v" * i)], base_offset=i)) for i in range(1, 6))
    path = Path(os.environ.get("TMPDIR", "/tmp")) / f"walk-{uuid.uuid4().hex}.log"
    try:
        path.write_bytes(blob + b"\x00" * 5)
        found = batches_of(path)
        assert [b[2] for b in found] == [1, 2, 3, 4, 5]
        assert sum(b[1] for b in found) == len(blob)
        assert struct.unpack_from(">q", blob, found[-1][0])[0] == 5
    finally:
        path.unlink(missing_ok=True)
