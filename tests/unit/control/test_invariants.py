"""The invariant monitor (minikafka/control/invariants.py): its own account of transactions and
sequences, and each violation it must see (and not see)."""

from __future__ import annotations

import pytest

from minikafka.control.invariants import InvariantMonitor
from minikafka.protocol.records import build_batch, read_header, set_base_offset

pytestmark = pytest.mark.unit

TP = ("out", 0)


def header(base_offset: int, n: int = 1, *, pid: int = 7, epoch: int = 0, seq: int = 0, txn: bool = True):
    return read_header(build_batch([(None, b"v")] * n, producer_id=pid, producer_epoch=epoch, base_sequence=seq,
                                   transactional=txn, base_offset=base_offset))


def served(*headers_and_counts: tuple[int, int, int]) -> bytes:
    """An answer of batches (base offset, records, producer id), all transactional."""
    data = bytearray()
    for base, n, pid in headers_and_counts:
        b = build_batch([(None, b"v")] * n, producer_id=pid, producer_epoch=0, base_sequence=0, transactional=True)
        set_base_offset(b, 0, base)
        data += b
    return bytes(data)


def test_contiguous_sequences_pass_and_a_gap_is_counted():
    seen = []
    m = InvariantMonitor(on_violation=seen.append)
    m.appended(TP, header(0, 3, seq=0, txn=False))
    m.appended(TP, header(3, 2, seq=3, txn=False))
    m.appended(TP, header(5, 1, seq=0, epoch=1, txn=False))  # a new epoch starts again at 0
    assert m.violations["sequence_gap"] == 0
    m.appended(TP, header(6, 1, seq=5, epoch=1, txn=False))  # 1 expected
    assert m.violations["sequence_gap"] == 1 and seen[0].offset == 6 and "expected 1" in seen[0].detail


def test_an_aborted_transaction_must_be_listed_when_served():
    m = InvariantMonitor()
    m.appended(TP, header(0, 2, pid=7))   # aborted below
    m.appended(TP, header(2, 1, pid=8))   # committed below
    m.marker(TP, 7, commit=False, offset=3)
    m.marker(TP, 8, commit=True, offset=4)
    data = served((0, 2, 7), (2, 1, 8))
    m.served_read_committed(TP, data, [(7, 0)], last_stable_offset=5)
    assert sum(m.violations.values()) == 0
    m.served_read_committed(TP, data, [], last_stable_offset=5)  # the client would deliver 0-1
    assert m.violations["aborted_visible"] == 1
    m.served_read_committed(TP, data, [(7, 0)], last_stable_offset=2)  # 2 is not stable yet
    assert m.violations["above_lso"] == 1
    assert m.checked["read_committed"] == 3


def test_a_transaction_without_its_marker_is_reported_after_two_checks():
    m = InvariantMonitor()
    m.appended(TP, header(0, 1, pid=7))
    m.appended(("out", 1), header(0, 1, pid=7))
    m.marker(("out", 1), 7, commit=True, offset=1)
    m.check_open(lambda pid: True)   # still open at the coordinator
    m.check_open(lambda pid: False)  # ended: maybe its marker is on its way
    assert m.violations["missing_marker"] == 0
    m.check_open(lambda pid: False)  # still no marker: hanging
    assert m.violations["missing_marker"] == 1
    m.check_open(lambda pid: False)
    assert m.violations["missing_marker"] == 1  # once
    assert m.describe()["recent"][0]["partition"] == 0


def test_a_transactions_group_offsets_stay_invisible_until_its_commit_marker():
    m = InvariantMonitor()
    grp, tp = "copier", ("in", 0)
    m.offset_committed(grp, tp, 10)
    m.txn_offset_written(grp, 7, tp, 20)
    m.offset_served(grp, tp, 10)  # the last committed one: right
    assert m.violations["txn_offset_visible"] == 0
    m.offset_served(grp, tp, 20)  # the open transaction's: wrong
    assert m.violations["txn_offset_visible"] == 1
    m.marker(("__consumer_offsets", 0), 7, commit=True, offset=5)
    m.offset_served(grp, tp, 20)  # committed now
    m.txn_offset_written(grp, 8, tp, 30)
    m.marker(("__consumer_offsets", 0), 8, commit=False, offset=6)
    m.offset_served(grp, tp, 20)  # the aborted 30 never became visible
    assert m.violations["txn_offset_visible"] == 1
    assert m.checked["offset_fetch"] == 4
