"""The exactly-once checker's pure parts (minikafka/eos_check): a partition's history from its
raw batches, the read_committed client view, and the verdict's findings."""

from __future__ import annotations

import json

import pytest

from minikafka.eos_check.history import ABORTED, COMMITTED, OPEN, PLAIN, LoggedRecord, client_view, reconstruct
from minikafka.eos_check.verdict import judge
from minikafka.protocol.records import build_batch, build_control_batch, set_base_offset

pytestmark = pytest.mark.unit


class Log:
    """A partition's batches as a broker would return them, offsets assigned in order."""

    def __init__(self) -> None:
        self.data = bytearray()
        self.next = 0

    def data_batch(self, *values: bytes, pid: int = -1, txn: bool = False, key: bytes | None = None) -> Log:
        b = build_batch([(key or v, v) for v in values], producer_id=pid, producer_epoch=0 if pid >= 0 else -1,
                        base_sequence=0 if pid >= 0 else -1, transactional=txn)
        set_base_offset(b, 0, self.next)
        self.data += b
        self.next += len(values)
        return self

    def marker(self, pid: int, commit: bool) -> Log:
        b = build_control_batch(producer_id=pid, producer_epoch=0, commit=commit, coordinator_epoch=0, timestamp_ms=0)
        set_base_offset(b, 0, self.next)
        self.data += b
        self.next += 1
        return self


def test_each_record_gets_the_fate_of_its_producers_next_marker():
    log = (Log().data_batch(b"a", pid=1, txn=True).data_batch(b"p")  # plain, between
           .data_batch(b"b", pid=2, txn=True).marker(1, commit=True)
           .data_batch(b"c", pid=1, txn=True).marker(2, commit=False).data_batch(b"d", pid=2, txn=True))
    got = [(r.value, r.offset, r.outcome) for r in reconstruct("t", 0, [bytes(log.data)])]
    assert got == [(b"a", 0, COMMITTED), (b"p", 1, PLAIN), (b"b", 2, ABORTED), (b"c", 4, OPEN), (b"d", 6, OPEN)]


def test_answers_that_overlap_are_read_once():
    log = Log().data_batch(b"a", b"b").data_batch(b"c")
    data = bytes(log.data)
    assert [r.value for r in reconstruct("t", 0, [data, data])] == [b"a", b"b", b"c"]


def test_the_client_view_skips_aborted_transactions_from_their_first_offset():
    log = (Log().data_batch(b"a", pid=1, txn=True).data_batch(b"b", pid=2, txn=True).marker(1, commit=False)
           .data_batch(b"c", pid=1, txn=True).marker(2, commit=True).marker(1, commit=True))
    assert client_view([(bytes(log.data), [(1, 0)])]) == {1, 3}  # a is aborted; c (a later txn of 1) is not
    # a broker that forgets to list the aborted transaction lets it through:
    assert client_view([(bytes(log.data), [])]) == {0, 1, 3}


def rec(offset: int, value: bytes, outcome: str = COMMITTED, key: bytes | None = None, pid: int = 7,
        topic: str = "out", partition: int = 0) -> LoggedRecord:
    return LoggedRecord(topic, partition, offset, key if key is not None else value, value, pid, 0, outcome)


def test_a_clean_copy_is_exactly_once():
    inputs = [rec(i, b"v%d" % i, PLAIN, topic="in") for i in range(3)]
    outputs = [rec(i, b"v%d" % i) for i in range(3)] + [rec(3, b"x", ABORTED)]
    report = judge("in", inputs, "out", outputs, {(0, 0), (0, 1), (0, 2)}, key_by="value")
    assert report.ok and (report.inputs, report.outputs) == (3, 3)
    assert "exactly once (3 in, 3 out" in report.summary()


def test_every_kind_of_finding_with_where_it_is():
    inputs = [rec(0, b"1", PLAIN, key=b"k", topic="in"), rec(1, b"2", PLAIN, key=b"k", topic="in"),
              rec(2, b"3", PLAIN, key=b"j", topic="in"), rec(3, b"4", PLAIN, key=b"j", topic="in")]
    outputs = [rec(0, b"2"), rec(1, b"1"),               # key k in the wrong order
               rec(2, b"3"), rec(3, b"3", pid=8),         # 3 twice, the second by producer 8
               rec(4, b"x", ABORTED), rec(5, b"y", OPEN)]  # 4 lost; x aborted but served; y open
    report = judge("in", inputs, "out", outputs, {(0, 0), (0, 1), (0, 2), (0, 3), (0, 4)}, key_by="value",
                   transactional_ids={8: "copier-2"})
    assert not report.ok
    assert {k: report.count(k) for k in ("lost", "duplicated", "aborted_visible", "reordered", "open")} == {
        "lost": 1, "duplicated": 1, "aborted_visible": 1, "reordered": 1, "open": 1}
    dup = next(f for f in report.findings if f.kind == "duplicated")
    assert [r["offset"] for r in dup.records] == [2, 3]
    assert dup.records[1]["transactional_id"] == "copier-2"
    text = report.text()
    assert "NOT exactly once" in text and "out-0@3 producer 8 (copier-2) committed" in text
    assert json.loads(report.as_json())["counts"]["lost"] == 1


def test_identity_by_key_by_function_and_refusals():
    inputs = [rec(0, b"a", PLAIN, key=b"1", topic="in")]
    outputs = [rec(0, b"A", key=b"1")]
    assert judge("in", inputs, "out", outputs, {(0, 0)}, key_by="key").ok
    assert not judge("in", inputs, "out", outputs, {(0, 0)}, key_by="value").ok
    assert judge("in", inputs, "out", outputs, {(0, 0)}, key_by=lambda r: r.value.lower()).ok
    with pytest.raises(ValueError, match="key_by"):
        judge("in", inputs, "out", outputs, set(), key_by="offset")
