"""`minikafka inspect`: the model, its JSON shape and text tables on hand-built values, and the
read-only data directory reader on files written by the storage classes (no broker, no sockets)."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest

from minikafka import inspect
from minikafka.config import BrokerConfig
from minikafka.coordinator.transaction import txn_log
from minikafka.coordinator.transaction.state import TxnMetadata, TxnState
from minikafka.protocol import records
from minikafka.protocol.types import TopicPartition
from minikafka.storage.partition_log import AppendOrigin, PartitionLog
from minikafka.topic_config import topic_defaults

pytestmark = pytest.mark.unit

NOW = 1_700_000_100_000
T0 = 1_700_000_000_000


def sample_report(*, aborted_known: bool = True) -> inspect.Report:
    txns = [
        inspect.TransactionView(transactional_id="orders-tx", state="Ongoing", producer_id=7, producer_epoch=3,
                                timeout_ms=60_000,
                                partitions=(TopicPartition("orders", 0), TopicPartition("orders", 1)),
                                start_ms=NOW - 90_000, last_update_ms=NOW - 1_000, age_ms=90_000),
        inspect.TransactionView(transactional_id="billing-tx", state="CompleteAbort", producer_id=8, producer_epoch=0,
                                timeout_ms=60_000, start_ms=NOW - 5_000, age_ms=5_000),
    ]
    parts = [
        inspect.PartitionView(topic="orders", partition=1, log_start_offset=0, high_watermark=12,
                              last_stable_offset=12, aborted=() if aborted_known else None),
        inspect.PartitionView(
            topic="orders", partition=0, log_start_offset=0, high_watermark=20, last_stable_offset=5,
            blocking=(inspect.OpenTxn(producer_id=99, first_offset=9), inspect.OpenTxn(producer_id=7, first_offset=5)),
            aborted=(inspect.AbortedRange(producer_id=8, first_offset=1, last_offset=3, last_stable_offset=4),)
            if aborted_known else None),
    ]
    notes = [] if aborted_known else [inspect.ABORTED_UNAVAILABLE]
    return inspect.link(source="data-dir" if aborted_known else "bootstrap", location="/data", now_ms=NOW,
                        transactions=txns, partitions=parts, notes=notes)


def test_link_names_the_blocking_ids_and_what_each_holds_back() -> None:
    r = sample_report()
    assert [t.transactional_id for t in r.transactions] == ["billing-tx", "orders-tx"]
    assert [(p.topic, p.partition) for p in r.partitions] == [("orders", 0), ("orders", 1)]
    p0 = r.partitions[0]
    assert [(b.producer_id, b.first_offset, b.transactional_id) for b in p0.blocking] == [
        (7, 5, "orders-tx"), (99, 9, None)]  # oldest first: it gives the LSO
    assert r.transactions[1].holds_back == (inspect.HeldPartition(topic="orders", partition=0, first_offset=5),)
    assert r.transactions[0].holds_back == ()


def test_json_document_shape() -> None:
    doc = json.loads(json.dumps(inspect.to_json(sample_report())))
    assert set(doc) == {"source", "location", "now_ms", "transactions", "partitions", "notes"}
    t = doc["transactions"][1]
    assert t == {
        "transactional_id": "orders-tx", "state": "Ongoing", "producer_id": 7, "producer_epoch": 3,
        "transaction_timeout_ms": 60_000,
        "partitions": [{"topic": "orders", "partition": 0}, {"topic": "orders", "partition": 1}],
        "start_time_ms": NOW - 90_000, "last_update_time_ms": NOW - 1_000, "age_ms": 90_000,
        "holds_back": [{"topic": "orders", "partition": 0, "first_offset": 5}],
    }
    assert doc["transactions"][0]["last_update_time_ms"] is None
    p = doc["partitions"][0]
    assert p == {
        "topic": "orders", "partition": 0, "log_start_offset": 0, "high_watermark": 20, "last_stable_offset": 5,
        "blocking": [{"producer_id": 7, "transactional_id": "orders-tx", "first_offset": 5},
                     {"producer_id": 99, "transactional_id": None, "first_offset": 9}],
        "aborted": [{"producer_id": 8, "first_offset": 1, "last_offset": 3, "last_stable_offset": 4}],
    }
    assert doc["partitions"][1]["blocking"] == [] and doc["partitions"][1]["aborted"] == []


def test_json_says_aborted_ranges_are_unknown_from_a_broker() -> None:
    doc = inspect.to_json(sample_report(aborted_known=False))
    assert all(p["aborted"] is None for p in doc["partitions"])
    assert doc["notes"] == [inspect.ABORTED_UNAVAILABLE]


def test_text_tables() -> None:
    text = inspect.format_text(sample_report())
    lines = text.splitlines()
    assert lines[0].startswith("data directory /data at 2023-11-14T22:")
    header = next(line for line in lines if line.startswith("TRANSACTIONAL ID"))
    row = next(line for line in lines if line.startswith("orders-tx"))
    assert row.index("Ongoing") == header.index("STATE")  # columns line up
    assert "1m30s" in row and "orders-0,orders-1" in row and "orders-0@5" in row
    part = next(line for line in lines if line.startswith("orders-0 "))
    assert part.split()[:5] == ["orders-0", "0", "20", "5", "15"]
    assert "orders-tx (producer 7) from 5; ? (producer 99) from 9" in part
    assert any(line.split() == ["orders-0", "8", "1", "3", "4"] for line in lines)

    remote = inspect.format_text(sample_report(aborted_known=False))
    assert remote.count(inspect.ABORTED_UNAVAILABLE) == 1
    empty = inspect.format_text(inspect.link(source="data-dir", location="/d", now_ms=NOW, transactions=[],
                                             partitions=[]))
    assert empty.count("(none)") == 3


@pytest.mark.parametrize(("ms", "text"), [(None, "-"), (0, "0ms"), (999, "999ms"), (1_500, "1.5s"),
                                          (61_000, "1m01s"), (3_720_000, "1h02m"), (90_000_000, "1d01h")])
def test_format_duration(ms: int | None, text: str) -> None:
    assert inspect.format_duration(ms) == text


def test_age() -> None:
    assert inspect.age_ms(NOW, NOW - 10) == 10
    assert inspect.age_ms(NOW, -1, NOW - 20) == 20
    assert inspect.age_ms(NOW, -1, -1) is None


# -- the data directory reader --------------------------------------------------------------------


def open_log(path: Path, tp: TopicPartition) -> PartitionLog:
    config = topic_defaults(BrokerConfig.build({}))
    return PartitionLog.open(tp, path, config, recovery_point=0, log_start_offset=0, clean=True, now_ms=T0)


def txn_batch(pid: int, seq: int, n: int = 1) -> bytearray:
    return records.build_batch([(None, b"v%d" % i) for i in range(n)], timestamp_ms=T0, producer_id=pid,
                               producer_epoch=0, base_sequence=seq, transactional=True)


def digest(root: Path) -> dict[str, tuple[str, int]]:
    out = {}
    for dirpath, _dirs, names in os.walk(root):
        for name in names:
            p = Path(dirpath) / name
            out[str(p.relative_to(root))] = (hashlib.sha256(p.read_bytes()).hexdigest(), p.stat().st_mtime_ns)
    return out


def test_data_dir_reader_replays_from_the_snapshot_and_reads_the_txn_index(tmp_path: Path) -> None:
    data = tmp_path / "data"
    plog = open_log(data / "t-0", TopicPartition("t", 0))
    plog.append(txn_batch(10, 0, 2), now_ms=T0)  # 0-1: producer 10, later aborted
    plog.append(txn_batch(11, 0), now_ms=T0)  # 2: producer 11, left open
    plog.roll(T0)  # snapshot at 3 with both transactions open
    plog.append_marker(producer_id=10, producer_epoch=0, commit=False, coordinator_epoch=0, now_ms=T0)  # 3
    plog.append(records.build_batch([(None, b"plain")], timestamp_ms=T0), now_ms=T0)  # 4
    plog.close()

    state = open_log(data / "__transaction_state-0", TopicPartition(txn_log.TOPIC, 0))

    def meta(tid: str, pid: int, st: TxnState, parts: frozenset[TopicPartition] = frozenset()) -> bytes | None:
        return txn_log.encode_value(TxnMetadata(transactional_id=tid, producer_id=pid, producer_epoch=0,
                                                timeout_ms=60_000, state=st, partitions=parts, start_ms=T0,
                                                last_update_ms=T0 + 5))

    recs = [(txn_log.encode_key("open-tx"), meta("open-tx", 11, TxnState.EMPTY)),
            (txn_log.encode_key("gone-tx"), meta("gone-tx", 12, TxnState.EMPTY)),
            (txn_log.encode_key("open-tx"), meta("open-tx", 11, TxnState.ONGOING,
                                                 frozenset({TopicPartition("t", 0)}))),
            (txn_log.encode_key("gone-tx"), None)]
    state.append(records.build_batch(recs, timestamp_ms=T0), now_ms=T0, origin=AppendOrigin.COORDINATOR)
    state.close()

    before = digest(data)
    report = inspect.from_data_dir(data, now_ms=T0 + 1_000)
    assert digest(data) == before

    assert [(t.transactional_id, t.state, t.producer_id, t.age_ms) for t in report.transactions] == [
        ("open-tx", "Ongoing", 11, 1_000)]
    assert report.transactions[0].holds_back == (inspect.HeldPartition(topic="t", partition=0, first_offset=2),)
    parts = {(p.topic, p.partition): p for p in report.partitions}
    assert set(parts) == {("t", 0), (txn_log.TOPIC, 0)}
    p = parts[("t", 0)]
    assert (p.log_start_offset, p.high_watermark, p.last_stable_offset) == (0, 5, 2)
    assert p.blocking == (inspect.OpenTxn(producer_id=11, first_offset=2, transactional_id="open-tx"),)
    assert p.aborted == (inspect.AbortedRange(producer_id=10, first_offset=0, last_offset=3, last_stable_offset=2),)
    assert report.notes == (f"{data} has no meta.properties: it may not be a broker's data directory",)

    only_t = inspect.from_data_dir(data, now_ms=T0, topics=["t"])
    assert [(p.topic, p.partition) for p in only_t.partitions] == [("t", 0)]
    assert len(only_t.transactions) == 1  # ids are read whatever the topic filter


def test_data_dir_reader_ignores_a_torn_tail_and_reports_a_missing_index_entry(tmp_path: Path) -> None:
    data = tmp_path / "data"
    plog = open_log(data / "t-0", TopicPartition("t", 0))
    plog.append(txn_batch(10, 0), now_ms=T0)  # 0
    plog.append_marker(producer_id=10, producer_epoch=0, commit=False, coordinator_epoch=0, now_ms=T0)  # 1
    plog.close()
    (data / "t-0" / "00000000000000000000.txnindex").unlink()  # as if lost in a crash
    with open(data / "t-0" / "00000000000000000000.log", "ab") as f:
        f.write(bytes(txn_batch(13, 0))[:40])  # a batch still being written

    report = inspect.from_data_dir(data, now_ms=T0)
    (p,) = report.partitions
    assert (p.high_watermark, p.last_stable_offset, p.blocking, p.aborted) == (2, 2, (), ())
    assert any("no .txnindex lists" in n and "producer 10 at 0..1" in n for n in report.notes)


def test_data_dir_must_exist(tmp_path: Path) -> None:
    with pytest.raises(inspect.InspectError):
        inspect.from_data_dir(tmp_path / "missing", now_ms=NOW)


def test_format_time_to_the_millisecond_and_a_timestamp_past_year_9999_as_its_number() -> None:
    assert inspect.format_time(1_795_866_776_036) == "2026-11-28T11:52:56.036Z"
    assert inspect.format_time(10**15) == f"{10**15} ms"  # a record may carry it; a page must not fail on it
    assert inspect.format_time(-1) == "-"
