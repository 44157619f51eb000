"""Kafka's own DumpLogSegments reads minikafka's files (style.md: kafka_reference row).

minikafka runs with small segments and a small index interval, confluent-kafka producers write a
few hundred records with every compression codec (keys, null keys, tombstones, headers), the
broker stops with SIGTERM, and Apache Kafka 4.3.1's `org.apache.kafka.tools.DumpLogSegments`
(bench/kafka/dump-log.sh) checks every `.log`, `.index` and `.timeindex` in the data directory.
Output formats: bench/kafka/README.md ("DumpLogSegments: exact output (verified)").

Needs Java 17+ and Maven (jars are fetched from Maven Central once, into .cache/kafka); skips
without them.
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

import pytest
from confluent_kafka import Producer

from minikafka.protocol.records import read_header

pytestmark = pytest.mark.integration

TOPIC = "dump-check"
PARTITIONS = 2
CODECS = ("none", "gzip", "snappy", "lz4", "zstd")
CODEC_IDS = {name: i for i, name in enumerate(CODECS)}
ROUNDS = 10
PER_FLUSH = 9  # records per (codec, round, partition): 10 * 5 * 2 * 9 = 900 records

OVERRIDES = {
    "log.segment.bytes": "20000",
    "log.index.interval.bytes": "1024",
    "num.partitions": str(PARTITIONS),
}

# What DumpLogSegments prints when something is wrong (bench/kafka/README.md, verified on damage).
# "Non-consecutive offsets" is checked separately: Kafka 4.3.1's DumpLogSegments starts its
# previous-offset tracker at -1 for every file, so a segment whose base offset is not 0 always gets
# "-1 is followed by <base offset>" (Kafka's own segments too; verified in the tool's bytecode).
LOG_PROBLEMS = ("invalid bytes", "isvalid: false", "Exception")
INDEX_PROBLEMS = (
    "Mismatches in",
    "Found timestamp mismatch",
    "Found out of order timestamp",
    "indexed offsets are not found",
    "Exception",
)

_PAIR = re.compile(r"(\w+): (\[[^\]]*\]|\S+)")
_GAP = re.compile(r"^\s+(-?\d+) is followed by (-?\d+)$")


@pytest.fixture(scope="module")
def kafka_tools():
    """kafka_ref with the jars in place; skip when Java or Maven are missing."""
    import kafka_ref

    kafka_ref.jars_or_skip("DumpLogSegments")
    return kafka_ref


def _pairs(line: str) -> dict[str, str]:
    return dict(_PAIR.findall(line))


def _non_consecutive(stdout: str) -> dict[str, list[tuple[int, int]]]:
    """The `Non-consecutive offsets in <path>` / `  <a> is followed by <b>` report, per file."""
    out: dict[str, list[tuple[int, int]]] = {}
    current: list[tuple[int, int]] | None = None
    for line in stdout.splitlines():
        if line.startswith("Non-consecutive offsets in "):
            current = out.setdefault(line[len("Non-consecutive offsets in ") :].strip(), [])
        elif current is not None and (m := _GAP.match(line)):
            current.append((int(m.group(1)), int(m.group(2))))
        else:
            current = None
    return out


def _split_dumps(stdout: str) -> dict[str, list[str]]:
    """Output lines per file: each file's dump starts with `Dumping <path>` (the trailing
    `Non-consecutive offsets` report is left out)."""
    out: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in stdout.splitlines():
        if line.startswith("Non-consecutive offsets in "):
            current = None
        elif line.startswith("Dumping "):
            current = out.setdefault(line[len("Dumping ") :].strip(), [])
        elif current is not None:
            current.append(line)
    return out


def _batches_on_disk(log: Path) -> list[dict[str, int]]:
    """Each batch of a .log as minikafka wrote it, read with our own header parser."""
    data = log.read_bytes()
    batches, pos = [], 0
    while pos < len(data):
        h = read_header(data, pos)
        assert h.size >= 61 and pos + h.size <= len(data), f"{log}: batch at {pos} runs past the end"
        batches.append(
            {
                "baseOffset": h.base_offset,
                "lastOffset": h.last_offset,
                "count": h.records_count,
                "position": pos,
                "size": h.size,
                "crc": h.crc,
                "codec": h.compression,
                "isControl": int(h.is_control),
                "isTransactional": int(h.is_transactional),
                "producerId": h.producer_id,
                "producerEpoch": h.producer_epoch,
                "baseSequence": h.base_sequence,
                "lastSequence": h.last_sequence,
                "partitionLeaderEpoch": h.partition_leader_epoch,
                "maxTimestamp": h.max_timestamp,
            }
        )
        pos += h.size
    return batches


def _produce(bootstrap: str) -> dict[int, list[tuple[bytes | None, bytes | None, list[str]]]]:
    """Interleave producers of every codec so segments mix them; returns what each partition got."""
    producers = {
        codec: Producer(
            {
                "bootstrap.servers": bootstrap,
                "compression.type": codec,
                "linger.ms": 50,
                "acks": "all",
                "enable.idempotence": codec in ("none", "zstd"),  # batches with producer ids too
            }
        )
        for codec in CODECS
    }
    sent: dict[int, list[tuple[bytes | None, bytes | None, list[str]]]] = {p: [] for p in range(PARTITIONS)}
    errors: list[str] = []

    def on_delivery(err, msg) -> None:
        if err is not None:
            errors.append(f"{err.name()}: {err.str()}")

    n = 0
    for rnd in range(ROUNDS):
        for codec, producer in producers.items():
            for partition in range(PARTITIONS):
                for _ in range(PER_FLUSH):
                    key = None if n % 7 == 0 else f"k-{codec}-{n}".encode()
                    value = None if n % 23 == 0 else (f"{codec}:{rnd}:{n}:".encode() * 4 + os.urandom(40 + n % 97))
                    headers = [] if n % 3 == 0 else [("h-codec", codec.encode()), ("h-n", str(n).encode())]
                    producer.produce(TOPIC, value=value, key=key, partition=partition, headers=headers,
                                     on_delivery=on_delivery)
                    sent[partition].append((key, value, [h for h, _ in headers]))
                    n += 1
            assert producer.flush(30) == 0, f"{codec}: messages left unsent"
    assert not errors, errors[:5]
    return sent


def test_dump_log_segments_reads_minikafka_files(broker_factory, kafka_tools):
    broker = broker_factory(overrides=OVERRIDES)
    sent = _produce(broker.bootstrap)
    assert broker.term() == 0, broker.log_tail()

    data_dir = Path(broker.data_dir)
    logs = sorted(data_dir.glob("*-*/*.log"))
    assert logs, f"no segments under {data_dir}"
    topic_logs = {p: sorted((data_dir / f"{TOPIC}-{p}").glob("*.log")) for p in range(PARTITIONS)}
    for p, segs in topic_logs.items():
        assert len(segs) >= 3, f"partition {p}: expected several segments, got {[s.name for s in segs]}"

    # ---- .log files, batch by batch and record by record --------------------------------------
    t0 = time.monotonic()
    dump = kafka_tools.dump_log_segments([str(f) for f in logs], "--deep-iteration")
    dump_seconds = time.monotonic() - t0
    assert dump.returncode == 0, dump.stderr[-3000:]
    for problem in LOG_PROBLEMS:
        assert problem not in dump.stdout and problem not in dump.stderr, (
            f"DumpLogSegments reported {problem!r}:\n{dump.stdout[-2000:]}\n{dump.stderr[-2000:]}"
        )
    per_file = _split_dumps(dump.stdout)
    assert set(per_file) == {str(f) for f in logs}, "DumpLogSegments skipped some files"
    gaps = _non_consecutive(dump.stdout)
    real_gaps = {
        path: [g for g in pairs if g != (-1, int(Path(path).stem))] for path, pairs in gaps.items()
    }
    assert not any(real_gaps.values()), f"Non-consecutive offsets: {real_gaps}"
    assert dump.stdout.count("Non-consecutive offsets in ") == len(gaps)

    codecs_seen: set[str] = set()
    producer_ids: set[int] = set()
    records_per_partition = {p: 0 for p in range(PARTITIONS)}
    record_lines: dict[int, list[dict[str, str]]] = {p: [] for p in range(PARTITIONS)}
    for log in logs:
        lines = per_file[str(log)]
        base = int(log.stem)
        assert lines and lines[0] == f"Log starting offset: {base}", lines[:2]
        expected = _batches_on_disk(log)
        batch_lines = [_pairs(line) for line in lines if line.startswith("baseOffset:")]
        assert len(batch_lines) == len(expected), f"{log}: {len(batch_lines)} batches dumped, {len(expected)} on disk"
        # records of each batch follow its batch line
        rec_groups: list[list[dict[str, str]]] = []
        for line in lines[1:]:
            if line.startswith("baseOffset:"):
                rec_groups.append([])
            elif line.startswith("| offset:"):
                assert rec_groups, f"{log}: record line before any batch line: {line}"
                rec_groups[-1].append(_pairs(line[2:]))
            else:
                pytest.fail(f"{log}: unexpected DumpLogSegments line: {line}")
        assert expected[0]["baseOffset"] == base, f"{log}: first batch does not start at the file's base offset"
        for got, want, recs in zip(batch_lines, expected, rec_groups, strict=True):
            where = f"{log.name} position {want['position']}"
            assert got["isvalid"] == "true", where
            assert got["magic"] == "2", where
            assert int(got["baseOffset"]) == want["baseOffset"], where
            assert int(got["lastOffset"]) == want["lastOffset"], where
            assert int(got["count"]) == want["count"], where
            assert int(got["position"]) == want["position"], where
            assert int(got["size"]) == want["size"], where
            assert int(got["crc"]) == want["crc"], where
            assert got["compresscodec"] == CODECS[want["codec"]], where
            assert got["isControl"] == ("true" if want["isControl"] else "false"), where
            assert got["isTransactional"] == ("true" if want["isTransactional"] else "false"), where
            for field in ("producerId", "producerEpoch", "baseSequence", "lastSequence", "partitionLeaderEpoch"):
                assert int(got[field]) == want[field], f"{where}: {field}"
            if int(got["producerId"]) >= 0:
                producer_ids.add(int(got["producerId"]))
            codecs_seen.add(got["compresscodec"])
            offsets = [int(r["offset"]) for r in recs]
            assert offsets == list(range(want["baseOffset"], want["lastOffset"] + 1)), where
            assert len(recs) == want["count"], where
        # offsets are consecutive across batches within the segment
        for prev, nxt in zip(expected, expected[1:]):
            assert nxt["baseOffset"] == prev["lastOffset"] + 1, f"{log}: gap after offset {prev['lastOffset']}"
        for p in range(PARTITIONS):
            if log.parent.name == f"{TOPIC}-{p}":
                records_per_partition[p] += sum(b["count"] for b in expected if not b["isControl"])
                for recs in rec_groups:
                    record_lines[p].extend(recs)

    # librdkafka compresses with lz4 only when ApiVersions lists FindCoordinator (its "LZ4" feature
    # check); otherwise it logs "Broker does not support compression type lz4: not compressing".
    assert codecs_seen >= set(CODECS), f"codecs in the files: {sorted(codecs_seen)}"
    for p in range(PARTITIONS):
        assert records_per_partition[p] == len(sent[p]), f"partition {p}"
        # segment files of a partition are contiguous, and record contents line up with what was sent
        segs = topic_logs[p]
        ends = [max(b["lastOffset"] for b in _batches_on_disk(s)) for s in segs]
        assert [int(s.stem) for s in segs[1:]] == [e + 1 for e in ends[:-1]], f"partition {p}: segment gap"
        assert [int(r["offset"]) for r in record_lines[p]] == list(range(len(sent[p])))
        for rec, (key, value, header_keys) in zip(record_lines[p], sent[p], strict=True):
            assert int(rec["keySize"]) == (-1 if key is None else len(key)), rec
            assert int(rec["valueSize"]) == (-1 if value is None else len(value)), rec
            assert rec["headerKeys"] == "[" + ",".join(header_keys) + "]", rec
    total = sum(records_per_partition.values())
    assert total == sum(len(v) for v in sent.values())
    assert len(producer_ids) == 2, f"the two idempotent producers' ids in the batches: {producer_ids}"

    # ---- producer-state snapshots, if the broker writes them ----------------------------------
    snapshots = sorted(data_dir.glob("*-*/*.snapshot"))
    if snapshots:
        snap = kafka_tools.dump_log_segments([str(f) for f in snapshots])
        assert snap.returncode == 0 and "Exception" not in snap.stderr, snap.stderr[-3000:]
        assert set(_split_dumps(snap.stdout)) == {str(f) for f in snapshots}
        for path, lines in _split_dumps(snap.stdout).items():
            snap_offset = int(Path(path).stem)
            # the last batch of each producer below the snapshot offset, from the .log files
            last: dict[int, dict[str, int]] = {}
            for log in sorted(Path(path).parent.glob("*.log")):
                for b in _batches_on_disk(log):
                    if b["producerId"] >= 0 and b["lastOffset"] < snap_offset:
                        last[b["producerId"]] = b
            got = {}
            for line in lines:
                e = _pairs(line)
                assert "producerId" in e, f"unexpected snapshot line: {line}"
                got[int(e["producerId"])] = e
            assert set(got) == set(last), f"{path}: producers {sorted(got)}, batches say {sorted(last)}"
            for pid, e in got.items():
                b = last[pid]
                assert (int(e["producerEpoch"]), int(e["firstSequence"]), int(e["lastSequence"]),
                        int(e["lastOffset"]), int(e["offsetDelta"]), int(e["timestamp"])) == (
                    b["producerEpoch"], b["baseSequence"], b["lastSequence"], b["lastOffset"],
                    b["lastOffset"] - b["baseOffset"], b["maxTimestamp"]), f"{path}: {e}"

    # ---- .index / .timeindex ------------------------------------------------------------------
    indexes = sorted(f for f in data_dir.glob("*-*/*") if f.suffix in (".index", ".timeindex"))
    assert len(indexes) == 2 * len(logs), "every segment has an .index and a .timeindex"
    verify = kafka_tools.dump_log_segments([str(f) for f in indexes], "--verify-index-only")
    assert verify.returncode == 0, verify.stderr[-3000:]
    for problem in INDEX_PROBLEMS:
        assert problem not in verify.stdout and problem not in verify.stderr, (
            f"--verify-index-only reported {problem!r}:\n{verify.stdout[-2000:]}\n{verify.stderr[-2000:]}"
        )
    assert set(_split_dumps(verify.stdout)) == {str(f) for f in indexes}

    sanity = kafka_tools.dump_log_segments([str(f) for f in indexes], "--index-sanity-check")
    assert sanity.returncode == 0, sanity.stderr[-3000:]
    for f in indexes:
        # Kafka says "<file> is empty." instead for an index without entries (its own files too)
        verdict = f"{f} is empty." if f.stat().st_size == 0 else f"{f} passed sanity check."
        assert verdict in sanity.stdout, f"{f}:\n{sanity.stdout[-2000:]}{sanity.stderr[-2000:]}"

    # the index entries themselves: Kafka prints them; each must point at a batch start whose
    # last offset is the entry's offset, and there must be some (index.interval.bytes=1024)
    plain = kafka_tools.dump_log_segments([str(f) for f in indexes])
    assert plain.returncode == 0, plain.stderr[-3000:]
    entries = _split_dumps(plain.stdout)
    offset_entries = 0
    for f in indexes:
        batches = {b["position"]: b for b in _batches_on_disk(f.with_suffix(".log"))}
        by_last = {b["lastOffset"] for b in batches.values()}
        lines = [ln for ln in entries[str(f)] if ln.strip() and ln != f"{f} is empty."]
        if f.suffix == ".index":
            for line in lines:
                e = _pairs(line)
                assert set(e) == {"offset", "position"}, line
                b = batches.get(int(e["position"]))
                assert b is not None and b["lastOffset"] == int(e["offset"]), f"{f}: {line}"
                offset_entries += 1
        else:
            stamps = []
            for line in lines:
                e = _pairs(line)
                assert set(e) == {"timestamp", "offset"}, line
                assert int(e["offset"]) in by_last, f"{f}: {line} is not a batch's last offset"
                stamps.append(int(e["timestamp"]))
            assert stamps == sorted(stamps), f"{f}: timestamps go backwards"
            if f.with_suffix(".log").stat().st_size:
                assert stamps, f"{f}: a closed segment has at least its final time index entry"
    assert offset_entries >= len(logs), f"only {offset_entries} offset index entries in {len(logs)} segments"
    print(f"dumped {len(logs)} segments, {total} records, {offset_entries} index entries; "
          f"--deep-iteration took {dump_seconds:.1f} s")


# ---------------------------------------------------------------------------------------------
# Batches minikafka writes itself: transaction markers, __consumer_offsets, __transaction_state

TXN_TOPIC = "dump-txn"
TXN_ID = "dump-tx-1"
GROUP = "dump-group"
TXN_PLAN = ("commit", "commit", "abort", "commit")  # 5 records each
PER_TXN = 5


def _api_keys(bootstrap: str) -> set[int]:
    """API keys the broker lists in ApiVersions v0 (tiny raw request; no client involved)."""
    import socket
    import struct

    host, _, port = bootstrap.rpartition(":")
    body = struct.pack(">hhih", 18, 0, 7, 4) + b"dump"
    with socket.create_connection((host, int(port)), timeout=5) as s:
        s.sendall(struct.pack(">i", len(body)) + body)
        buf = b""
        while len(buf) < 4 or len(buf) < 4 + struct.unpack_from(">i", buf)[0]:
            chunk = s.recv(65536)
            assert chunk, "connection closed during ApiVersions"
            buf += chunk
    _corr, error, n = struct.unpack_from(">ihi", buf, 4)
    assert error == 0, f"ApiVersions error {error}"
    return {struct.unpack_from(">h", buf, 14 + 6 * i)[0] for i in range(n)}


def _transactional_workload(bootstrap: str) -> int:
    """Transactions per TXN_PLAN, then a read_committed group consumes and commits; returns the
    offset the group committed (the partition's end offset)."""
    from confluent_kafka import Consumer, TopicPartition

    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": TXN_ID,
                         "compression.type": "gzip", "linger.ms": 5})
    producer.init_transactions(30)
    for i, outcome in enumerate(TXN_PLAN):
        producer.begin_transaction()
        for j in range(PER_TXN):
            producer.produce(TXN_TOPIC, key=f"{i}-{j}".encode(), value=b"v" * 100, partition=0)
        producer.flush(30)
        if outcome == "commit":
            producer.commit_transaction(30)
        else:
            producer.abort_transaction(30)
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": GROUP,
                         "isolation.level": "read_committed", "enable.auto.commit": False,
                         "auto.offset.reset": "earliest"})
    try:
        consumer.assign([TopicPartition(TXN_TOPIC, 0, 0)])
        got, deadline = 0, time.monotonic() + 30
        want = PER_TXN * TXN_PLAN.count("commit")
        while got < want and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is not None and msg.error() is None:
                got += 1
        assert got == want, f"read_committed consumer got {got} of {want} records"
        _low, high = consumer.get_watermark_offsets(TopicPartition(TXN_TOPIC, 0), timeout=10)
        consumer.commit(offsets=[TopicPartition(TXN_TOPIC, 0, high)], asynchronous=False)
        return high
    finally:
        consumer.close()


def check_transactional_files(kafka_tools, log_dir: Path, committed_offset: int) -> None:
    """DumpLogSegments on the data topic (markers, .txnindex) and on the internal topics.
    `log_dir` is the directory holding the `<topic>-<partition>` directories."""
    # data topic: batches valid, markers where the plan says, one aborted-transaction entry
    logs = sorted((log_dir / f"{TXN_TOPIC}-0").glob("*.log"))
    dump = kafka_tools.dump_log_segments([str(f) for f in logs], "--deep-iteration")
    assert dump.returncode == 0, dump.stderr[-3000:]
    for problem in LOG_PROBLEMS:
        assert problem not in dump.stdout + dump.stderr, f"{problem!r}:\n{dump.stdout[-3000:]}"
    markers = []
    data_batches = 0
    for lines in _split_dumps(dump.stdout).values():
        for line in lines:
            if line.startswith("baseOffset:"):
                b = _pairs(line)
                assert b["isvalid"] == "true" and b["isTransactional"] == "true", line
                if b["isControl"] == "true":
                    assert b["count"] == "1" and b["baseSequence"] == "-1", line
                else:
                    data_batches += 1
            elif "endTxnMarker:" in line:
                rec = _pairs(line[2:])
                markers.append((int(rec["offset"]), rec["endTxnMarker"]))
    assert [m for _, m in markers] == [o.upper() for o in TXN_PLAN], markers
    assert data_batches >= len(TXN_PLAN)
    total = PER_TXN * len(TXN_PLAN) + len(TXN_PLAN)
    assert committed_offset == total, f"end offset {committed_offset}, expected {total}"

    abort_idx = TXN_PLAN.index("abort")
    abort_first = abort_idx * (PER_TXN + 1)
    abort_marker = markers[abort_idx][0]
    txnindexes = sorted((log_dir / f"{TXN_TOPIC}-0").glob("*.txnindex"))
    assert txnindexes, "an aborted transaction leaves a .txnindex"
    tx = kafka_tools.dump_log_segments([str(f) for f in txnindexes])
    assert tx.returncode == 0, tx.stderr[-3000:]
    entries = [_pairs(ln) for lines in _split_dumps(tx.stdout).values() for ln in lines if ln.strip()]
    assert len(entries) == 1, tx.stdout
    e = entries[0]
    assert (int(e["version"]), int(e["firstOffset"]), int(e["lastOffset"])) == (0, abort_first, abort_marker), e
    assert int(e["lastStableOffset"]) >= abort_marker + 1, e

    # __consumer_offsets: the group's commit, decoded by Kafka
    off_logs = sorted(log_dir.glob("__consumer_offsets-*/*.log"))
    assert off_logs, "no __consumer_offsets segments"
    off = kafka_tools.dump_log_segments([str(f) for f in off_logs], "--offsets-decoder")
    assert off.returncode == 0 and "Exception" not in off.stderr, off.stderr[-3000:]
    assert "isvalid: false" not in off.stdout and "invalid bytes" not in off.stdout
    key = f'"group":"{GROUP}","topic":"{TXN_TOPIC}","partition":0'
    commits = [ln for ln in off.stdout.splitlines() if key in ln]
    assert commits, f"no offset commit record for {GROUP}:\n{off.stdout[-3000:]}"
    assert f'"offset":{committed_offset},' in commits[-1], commits[-1]

    # __transaction_state: the transactional id ends CompleteCommit (status 4)
    ts_logs = sorted(log_dir.glob("__transaction_state-*/*.log"))
    assert ts_logs, "no __transaction_state segments"
    ts = kafka_tools.dump_log_segments([str(f) for f in ts_logs], "--transaction-log-decoder")
    assert ts.returncode == 0 and "Exception" not in ts.stderr, ts.stderr[-3000:]
    assert "isvalid: false" not in ts.stdout and "invalid bytes" not in ts.stdout
    states = [ln for ln in ts.stdout.splitlines() if f'"transactionalId":"{TXN_ID}"' in ln]
    assert states, f"no transaction log record for {TXN_ID}:\n{ts.stdout[-3000:]}"
    assert '"transactionStatus":4' in states[-1], states[-1]


def test_dump_log_segments_reads_markers_and_internal_topics(broker_factory, kafka_tools):
    broker = broker_factory(overrides={"log.index.interval.bytes": "1024"})
    missing = {26: "EndTxn", 10: "FindCoordinator", 8: "OffsetCommit"}.keys() - _api_keys(broker.bootstrap)
    if missing:
        pytest.skip(f"minikafka does not serve API keys {sorted(missing)} yet (transactions/groups)")
    committed = _transactional_workload(broker.bootstrap)
    assert broker.term() == 0, broker.log_tail()
    check_transactional_files(kafka_tools, Path(broker.data_dir), committed)


def decoded_group_records(kafka_tools, data_dir, group: str) -> dict[str, list[tuple[dict, dict | None]]]:
    """Kafka's --offsets-decoder over every __consumer_offsets segment: the group's records by
    type, as (key data, value data or None for a tombstone), in log order."""
    import json

    off_logs = sorted(Path(data_dir).glob("__consumer_offsets-*/*.log"))
    off = kafka_tools.dump_log_segments([str(f) for f in off_logs], "--offsets-decoder")
    assert off.returncode == 0 and "Exception" not in off.stderr, off.stderr[-3000:]
    assert "isvalid: false" not in off.stdout and "invalid bytes" not in off.stdout
    records: dict[str, list[tuple[dict, dict | None]]] = {}
    for line in off.stdout.splitlines():
        if f'"groupId":"{group}"' not in line:
            continue
        key = json.loads(line.split(" key: ", 1)[1].split(" payload: ", 1)[0])
        payload = line.split(" payload: ", 1)[1].strip()
        records.setdefault(key["type"], []).append((key["data"], None if payload == "<DELETE>" else
                                                    json.loads(payload)["data"]))
    return records


def test_dump_log_segments_decodes_consumer_group_records(broker_factory, kafka_tools):
    """The KIP-848 records minikafka writes to __consumer_offsets (types 3, 5-8 and 16: group epoch,
    member metadata, target assignment, current assignment, resolved regex) in Kafka's schemas:
    Kafka's --offsets-decoder reads every one, and the last ones hold the group as minikafka last
    described it."""
    from clients import create_topic
    from kio.schema.consumer_group_heartbeat.v1.request import TopicPartitions as HeartbeatTopicPartitions
    from rawclient import RawClient
    from test_consumer_protocol import describe, heartbeat, new_id

    broker = broker_factory()
    topic, group = "dump-cg", "dump-cg-group"
    create_topic(broker.bootstrap, topic, 2)
    with RawClient.connect(broker.bootstrap) as c:
        a, b = new_id(), new_id()
        assert int(heartbeat(c, group, a, 0, topics=(topic,), instance_id="static-a").error_code) == 0
        assert int(heartbeat(c, group, b, 0, regex="dump-c.*").error_code) == 0
        # a revokes half for b: its owned partitions, reported, move it to the new epoch
        owned = describe(c, group).members[a].assignment.topic_partitions
        assert int(heartbeat(c, group, a, int(describe(c, group).members[a].member_epoch), instance_id="static-a",
                             owned=tuple(HeartbeatTopicPartitions(topic_id=t.topic_id, partitions=t.partitions)
                                         for t in owned)).error_code) == 0
        d = describe(c, group)
    assert broker.term() == 0, broker.log_tail()
    records = decoded_group_records(kafka_tools, broker.data_dir, group)
    assert set(records) >= {"3", "5", "6", "7", "8", "16"}, sorted(records)
    assert records["3"][-1][1]["epoch"] == d.group_epoch
    assert records["6"][-1][1]["assignmentEpoch"] == d.assignment_epoch
    static = [v for k, v in records["5"] if k["memberId"] == a][-1]
    assert (static["instanceId"], static["subscribedTopicNames"]) == ("static-a", [topic])
    assert [v for k, v in records["5"] if k["memberId"] == b][-1]["subscribedTopicRegex"] == "dump-c.*"
    assert records["16"][-1][0]["regularExpression"] == "dump-c.*"
    assert records["16"][-1][1]["topics"] == [topic]
    for member_id, m in d.members.items():
        current = [v for k, v in records["8"] if k["memberId"] == member_id][-1]
        assert current["memberEpoch"] == int(m.member_epoch)


def test_dump_log_segments_decodes_streams_group_records(broker_factory, kafka_tools):
    """The KIP-1071 records minikafka writes to __consumer_offsets (types 17, 19-23: group
    metadata, member metadata, target assignment, current assignment, topology) in Kafka's
    schemas: Kafka's --offsets-decoder reads every one, and the last ones hold the group as
    StreamsGroupDescribe showed it."""
    from clients import create_topic
    from rawclient import RawClient
    from test_streams_protocol import FAST, Member, describe, new_id, until, word_count_topology

    broker = broker_factory(overrides=FAST)
    app, source = "dump-sg", "dump-sg-text"
    create_topic(broker.bootstrap, source, 2)
    with RawClient.connect(broker.bootstrap) as c:
        a = Member(c, app, new_id(), "process-a")
        until("tasks", lambda: a.beat(word_count_topology(app, source)), lambda r: bool(a.active and len(a.active) == 2))
        d = describe(c, app)
    assert broker.term() == 0, broker.log_tail()
    records = decoded_group_records(kafka_tools, broker.data_dir, app)
    assert set(records) >= {"17", "19", "20", "21", "22", "23"}, sorted(records)
    group = records["17"][-1][1]
    assert (group["epoch"], group["validatedTopologyEpoch"]) == (d.group_epoch, 0)
    assert group["lastAssignmentConfigs"] == [{"key": "num.standby.replicas", "value": "0"}]
    assert records["20"][-1][1]["assignmentEpoch"] == d.assignment_epoch
    topology = records["23"][-1][1]
    assert [s["subtopologyId"] for s in topology["subtopologies"]] == ["0", "1"]
    assert topology["subtopologies"][1]["stateChangelogTopics"][0]["name"].endswith("-changelog")
    member = [v for k, v in records["19"] if k["memberId"] == a.member_id][-1]
    assert (member["processId"], member["topologyEpoch"]) == ("process-a", 0)
    current = [v for k, v in records["22"] if k["memberId"] == a.member_id][-1]
    assert current["memberEpoch"] == int(d.members[a.member_id].member_epoch)
    assert sorted((t["subtopologyId"], tuple(t["partitions"])) for t in current["activeTasks"]) == \
        [("0", (0, 1)), ("1", (0, 1))]
    target = [v for k, v in records["21"] if k["memberId"] == a.member_id][-1]
    assert sorted(t["subtopologyId"] for t in target["activeTasks"]) == ["0", "1"]
