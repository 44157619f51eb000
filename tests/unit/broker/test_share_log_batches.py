"""Which batches of a share fetch's read are delivered (issue 23): Kafka's walk over aborted
transactions (an aborted producer's data is archived from its first offset until its ABORT
marker), markers archived, everything else delivered. Pure: built batches, no broker."""

from __future__ import annotations

import struct

import pytest

from minikafka.broker.share_partitions import _log_batches
from minikafka.coordinator.share_group.share_partition import LogBatch
from minikafka.protocol import records

pytestmark = pytest.mark.unit


def at(batch: bytearray, base: int) -> bytes:
    struct.pack_into(">q", batch, 0, base)   # the base offset is not under the CRC
    return bytes(batch)


def data(base: int, n: int, pid: int = -1, transactional: bool = False) -> bytes:
    return at(records.build_batch([(None, b"x")] * n, producer_id=pid, producer_epoch=0 if pid >= 0 else -1,
                                  base_sequence=0 if pid >= 0 else -1, transactional=transactional), base)


def marker(base: int, pid: int, commit: bool) -> bytes:
    return at(records.build_control_batch(producer_id=pid, producer_epoch=0, commit=commit, coordinator_epoch=0,
                                          timestamp_ms=0), base)


def test_aborted_data_is_archived_committed_and_plain_data_delivered_markers_archived():
    log = (data(0, 2, pid=7, transactional=True) + data(2, 1) + data(3, 2, pid=8, transactional=True)
           + marker(5, 7, commit=False) + marker(6, 8, commit=True) + data(7, 1, pid=7, transactional=True))
    got = _log_batches(log, aborted=[(7, 0)])
    assert got == [LogBatch(0, 1, aborted=True), LogBatch(2, 2), LogBatch(3, 4), LogBatch(5, 5, aborted=True),
                   LogBatch(6, 6, aborted=True), LogBatch(7, 7)]   # pid 7's later transaction is not aborted


def test_without_aborted_transactions_only_markers_are_held_back():
    log = data(0, 3, pid=3, transactional=True) + marker(3, 3, commit=True)
    assert _log_batches(log, aborted=[]) == [LogBatch(0, 2), LogBatch(3, 3, aborted=True)]
