"""The log cleaner on real files and its pure rules: batch rewriting, the offset map, the
transaction-aware retention of batches and markers, the choice of what to clean, and crash safety
of the .cleaned/.swap protocol at every step."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from minikafka.config import BrokerConfig
from minikafka.protocol import records
from minikafka.protocol.batch_rewrite import (
    DELETE_HORIZON_FLAG,
    delete_horizon_ms,
    empty_batch,
    rebuild_batch,
    stored_records,
)
from minikafka.protocol.types import TopicPartition
from minikafka.storage.cleaner import choose, swap
from minikafka.storage.cleaner.cleaning import CleaningAborted, Offload, clean
from minikafka.storage.cleaner.offset_map import OffsetMap, capacity
from minikafka.storage.cleaner.retention import ProducerTail, is_producer_tail
from minikafka.storage.partition_log import AppendOrigin, PartitionLog
from minikafka.topic_config import topic_defaults

pytestmark = pytest.mark.unit

TP = TopicPartition("c", 0)
T0 = 1_700_000_000_000
DAY = 86_400_000


def cfg(**overrides) -> dict:
    c = topic_defaults(BrokerConfig.build({}))
    c.update({"cleanup.policy": "compact", "min.cleanable.dirty.ratio": 0.0})
    c.update({k.replace("_", "."): v for k, v in overrides.items()})
    return c


def open_log(d: Path, config: dict, *, clean_stop: bool = True, now_ms: int = T0) -> PartitionLog:
    return PartitionLog.open(TP, d, config, recovery_point=0, log_start_offset=0, clean=clean_stop, now_ms=now_ms)


def put(plog: PartitionLog, pairs, *, ts: int = T0, pid: int = -1, epoch: int = -1, seq: int = -1,
        txn: bool = False) -> None:
    batch = records.build_batch(list(pairs), timestamp_ms=ts, producer_id=pid, producer_epoch=epoch,
                                base_sequence=seq, transactional=txn)
    origin = AppendOrigin.COORDINATOR if pid < 0 else AppendOrigin.CLIENT
    plog.append(batch, now_ms=ts, origin=origin)


def marker(plog: PartitionLog, pid: int, epoch: int, commit: bool, ts: int = T0) -> None:
    plog.append_marker(producer_id=pid, producer_epoch=epoch, commit=commit, coordinator_epoch=0, now_ms=ts)


def run_pass(plog: PartitionLog, now_ms: int, checkpoint: int | None = None, **kw):
    ltc = choose.log_to_clean(plog, checkpoint, now_ms)
    steps = clean(plog, ltc, now_ms=now_ms, map_capacity=kw.pop("map_capacity", 10**6),
                  chunk_bytes=kw.pop("chunk_bytes", 64 * 1024), **kw)
    try:
        while True:
            step = next(steps)
            if isinstance(step, Offload):
                step.fn()
    except StopIteration as stop:
        return stop.value


def visible(plog: PartitionLog, *, committed: bool = False) -> list[tuple[int, bytes | None, bytes | None]]:
    """(offset, key, value) of every data record from the log start; with committed=True the
    records of aborted transactions (per the transaction index) are left out, as a read_committed
    consumer leaves them out."""
    aborted = plog.collect_aborted(plog.log_start_offset, plog.log_end_offset)
    out = []
    for h, batch in all_batches(plog):
        if h.is_control:
            continue
        if committed and h.is_transactional and any(
                a.producer_id == h.producer_id and a.first_offset <= h.base_offset <= a.last_offset for a in aborted):
            continue
        out.extend((r.offset, r.key, r.value) for r in records.iter_records(batch))
    return out


def all_batches(plog: PartitionLog) -> list[tuple[records.BatchHeader, bytes]]:
    out = []
    for seg in plog.segments:
        data = os.pread(seg.fd, seg.size, 0)
        p = 0
        while p + records.HEADER_SIZE <= len(data):
            h = records.read_header(data, p)
            if h.last_offset >= plog.log_start_offset:
                out.append((h, data[p : p + h.size]))
            p += h.size
    return out


def headers_of(plog: PartitionLog) -> list[records.BatchHeader]:
    return [h for h, _ in all_batches(plog)]


# ----------------------------------------------------------------------------------- batch rewrite
@pytest.mark.parametrize("codec", [0, 1, 2, 3, 4])
def test_rebuild_keeps_offsets_producer_fields_and_record_bytes(codec):
    raw = records.build_batch([(b"a", b"1"), (b"b", None), (b"c", b"3")], base_offset=100, timestamp_ms=T0,
                              producer_id=7, producer_epoch=2, base_sequence=40, transactional=True,
                              headers=(("h", b"x"),))
    if codec:  # the same records, compressed with the codec
        h0 = records.read_header(raw)
        raw = records.assemble_batch(
            base_offset=h0.base_offset, attributes=h0.attributes | codec, last_offset_delta=h0.last_offset_delta,
            base_timestamp=h0.base_timestamp, max_timestamp=h0.max_timestamp, producer_id=h0.producer_id,
            producer_epoch=h0.producer_epoch, base_sequence=h0.base_sequence, count=h0.records_count,
            records=records.compress(codec, bytes(raw[records.HEADER_SIZE:])))
    h = records.read_header(raw)
    recs = list(stored_records(raw, h))
    assert [(r.offset, r.key, r.has_value) for r in recs] == [(100, b"a", True), (101, b"b", False), (102, b"c", True)]
    out = rebuild_batch(h, [recs[1], recs[2]], None)
    nh = records.read_header(out)
    assert records.is_intact(out, 0, nh.size)
    assert (nh.base_offset, nh.last_offset_delta, nh.producer_id, nh.producer_epoch, nh.base_sequence) == \
        (100, 2, 7, 2, 40)
    assert nh.compression == codec and nh.is_transactional and nh.records_count == 2
    assert [(r.offset, r.timestamp, r.key, r.value, r.headers) for r in records.iter_records(out)] == \
        [(101, T0, b"b", None, (("h", b"x"),)), (102, T0, b"c", b"3", (("h", b"x"),))]
    with_horizon = rebuild_batch(h, recs, T0 + DAY)
    hh = records.read_header(with_horizon)
    assert hh.attributes & DELETE_HORIZON_FLAG and delete_horizon_ms(hh) == T0 + DAY
    assert [r.timestamp for r in records.iter_records(with_horizon)] == [T0, T0, T0]  # deltas follow the base


def test_empty_batch_is_a_valid_header_with_the_producer_state():
    raw = records.build_batch([(b"a", b"1")] * 3, base_offset=50, timestamp_ms=T0, producer_id=3, producer_epoch=1,
                              base_sequence=9, transactional=True)
    e = empty_batch(records.read_header(raw))
    h = records.read_header(e)
    assert len(e) == records.HEADER_SIZE and records.is_intact(e, 0, h.size)
    assert (h.records_count, h.last_offset, h.last_sequence, h.base_timestamp, h.max_timestamp) == (0, 52, 11, -1, T0)


def test_offset_map_capacity_follows_kafkas_dedupe_buffer():
    assert capacity(134_217_728, 0.9) == int(134_217_728 // 24 * 0.9)
    m = OffsetMap(2)
    m.put(b"a", 5)
    m.put(b"a", 9)
    assert (m.get(b"a"), m.get(b"z"), m.full, m.latest_offset) == (9, -1, False, 9)
    m.put(b"b", 10)
    assert m.full


def test_producer_tail_is_any_of_the_last_batches_or_the_newest_marker():
    h = records.read_header(records.build_batch([(b"k", b"v")], base_offset=10, producer_id=1, producer_epoch=0,
                                                base_sequence=0))
    assert is_producer_tail(h, {1: ProducerTail(frozenset({10, 20}), 0)})
    assert not is_producer_tail(h, {1: ProducerTail(frozenset({20}), 0)})
    m = records.read_header(records.build_control_batch(producer_id=1, producer_epoch=3, commit=True,
                                                        coordinator_epoch=0, timestamp_ms=T0))
    assert is_producer_tail(m, {1: ProducerTail(frozenset(), 3)})
    assert not is_producer_tail(m, {1: ProducerTail(frozenset(), 2)})


# ----------------------------------------------------------------------------------- cleaning passes
def test_pass_keeps_the_latest_value_per_key_and_keeps_offsets(tmp_path):
    plog = open_log(tmp_path, cfg())
    for i in range(30):
        put(plog, [(f"k{i % 3}".encode(), f"v{i}".encode())])
        if i % 10 == 9:
            plog.roll(T0)
    put(plog, [(b"k0", b"tail")])  # the active segment is never cleaned
    before = plog.log_end_offset
    result = run_pass(plog, T0 + 1)
    assert result.end_offset == 30  # the active segment's base
    assert visible(plog) == [(27, b"k0", b"v27"), (28, b"k1", b"v28"), (29, b"k2", b"v29"), (30, b"k0", b"tail")]
    assert plog.log_end_offset == before
    assert len(plog.segments) == 2  # the three cleaned segments fit one
    # the producer snapshots taken when the replaced segments rolled go with them (Kafka's
    # replaceSegments); the active segment's stays
    assert sorted(n for n in os.listdir(tmp_path) if n.endswith(".snapshot")) == [f"{30:020d}.snapshot"]
    # a second pass from the checkpoint has nothing dirty to map
    again = run_pass(plog, T0 + 2, checkpoint=result.end_offset)
    assert again.groups == 0


def test_tombstones_stay_until_the_delete_horizon_then_go(tmp_path):
    plog = open_log(tmp_path, cfg(delete_retention_ms=1000))
    put(plog, [(b"a", b"1"), (b"b", b"1")])
    put(plog, [(b"a", None)])
    plog.roll(T0)
    put(plog, [(b"c", b"1")])
    run_pass(plog, T0 + 10)
    assert visible(plog) == [(1, b"b", b"1"), (2, b"a", None), (3, b"c", b"1")]
    tomb = [h for h in headers_of(plog) if h.base_offset == 2][0]
    assert delete_horizon_ms(tomb) == T0 + 10 + 1000
    plog.roll(T0)
    run_pass(plog, T0 + 500)  # before the horizon: kept
    assert (2, b"a", None) in visible(plog)
    run_pass(plog, T0 + 1011)  # after it: gone
    assert visible(plog) == [(1, b"b", b"1"), (3, b"c", b"1")]


def test_records_without_a_key_are_removed(tmp_path):
    plog = open_log(tmp_path, cfg())
    put(plog, [(None, b"x"), (b"a", b"1")])
    plog.roll(T0)
    put(plog, [(b"b", b"1")])
    run_pass(plog, T0)
    assert visible(plog) == [(1, b"a", b"1"), (2, b"b", b"1")]


def test_aborted_data_goes_and_its_marker_stays_until_the_data_is_gone_plus_the_horizon(tmp_path):
    plog = open_log(tmp_path, cfg(delete_retention_ms=1000))
    put(plog, [(b"a", b"committed")], pid=1, epoch=0, seq=0, txn=True)
    marker(plog, 1, 0, commit=True)
    put(plog, [(b"a", b"aborted"), (b"b", b"aborted")], pid=1, epoch=0, seq=1, txn=True)
    marker(plog, 1, 0, commit=False)
    for i in range(5):  # five newer batches: the aborted one is no longer among the producer's last five
        put(plog, [(b"c%d" % i, b"1")], pid=1, epoch=0, seq=3 + i, txn=True)
    marker(plog, 1, 0, commit=True)
    plog.roll(T0)
    put(plog, [(b"t", b"1")])
    assert len(plog.aborted_txns()) == 1
    newer = [(5 + i, b"c%d" % i, b"1") for i in range(5)]
    run_pass(plog, T0 + 10)
    assert visible(plog) == [(0, b"a", b"committed"), *newer, (11, b"t", b"1")]
    hs = {h.base_offset: h for h in headers_of(plog)}
    # the aborted batch is gone; its ABORT marker stays, with its index entry, since this pass
    # removed its data (a consumer that read those records before must learn of the abort)
    assert 2 not in hs and hs[4].is_control and delete_horizon_ms(hs[4]) is None
    assert [a.first_offset for a in plog.aborted_txns()] == [2]
    # next pass: no data of it is seen any more: the marker gets its horizon, then goes after it
    plog.roll(T0)
    run_pass(plog, T0 + 20)
    assert delete_horizon_ms({h.base_offset: h for h in headers_of(plog)}[4]) == T0 + 1020
    plog.roll(T0)
    run_pass(plog, T0 + 500)
    assert 4 in {h.base_offset for h in headers_of(plog)}  # never before the horizon
    plog.roll(T0)
    run_pass(plog, T0 + 1021)
    hs = {h.base_offset: h for h in headers_of(plog)}
    assert 4 not in hs       # the ABORT marker is gone
    assert {1, 10} <= set(hs)  # COMMIT markers of transactions whose data is still there stay
    assert plog.aborted_txns() == []
    assert visible(plog, committed=True) == [(0, b"a", b"committed"), *newer, (11, b"t", b"1")]


def test_commit_marker_goes_after_its_data_and_the_horizon(tmp_path):
    plog = open_log(tmp_path, cfg(delete_retention_ms=100))
    put(plog, [(b"a", b"1")], pid=1, epoch=0, seq=0, txn=True)
    marker(plog, 1, 0, commit=True)
    put(plog, [(b"a", b"2")], pid=1, epoch=0, seq=1, txn=True)
    for i in range(5):
        put(plog, [(b"d%d" % i, b"1")], pid=1, epoch=0, seq=2 + i, txn=True)
    marker(plog, 1, 0, commit=True)
    plog.roll(T0)
    put(plog, [(b"t", b"1")])
    run_pass(plog, T0)
    hs = {h.base_offset: h for h in headers_of(plog)}
    # offset 0 was superseded and is not among the producer's last five batches: gone; the pass
    # saw it, so its COMMIT marker is not yet eligible
    assert 0 not in hs and 1 in hs and delete_horizon_ms(hs[1]) is None
    plog.roll(T0)
    run_pass(plog, T0 + 1)
    assert delete_horizon_ms({h.base_offset: h for h in headers_of(plog)}[1]) == T0 + 101
    plog.roll(T0)
    run_pass(plog, T0 + 102)
    hs = {h.base_offset: h for h in headers_of(plog)}
    assert 1 not in hs and {2, 8} <= set(hs)
    assert visible(plog, committed=True) == [(2, b"a", b"2"), *[(3 + i, b"d%d" % i, b"1") for i in range(5)],
                                             (9, b"t", b"1")]


def test_the_batches_of_a_producers_last_five_sequences_stay(tmp_path):
    plog = open_log(tmp_path, cfg())
    for i in range(7):  # seven batches of one producer, all with the same key
        put(plog, [(b"k", b"v%d" % i)], pid=1, epoch=3, seq=i)
    put(plog, [(b"k", b"plain")])  # supersedes them all
    plog.roll(T0)
    put(plog, [(b"t", b"1")])
    run_pass(plog, T0)
    hs = {h.base_offset: h for h in headers_of(plog)}
    # the two oldest go; the last five stay as empty headers with their sequences and epoch
    assert sorted(o for o in hs if o < 7) == [2, 3, 4, 5, 6]
    assert [(hs[o].records_count, hs[o].producer_epoch, hs[o].last_sequence) for o in range(2, 7)] == \
        [(0, 3, s) for s in range(2, 7)]
    assert visible(plog) == [(7, b"k", b"plain"), (8, b"t", b"1")]


def test_the_last_batch_of_an_active_producer_stays_as_an_empty_header(tmp_path):
    plog = open_log(tmp_path, cfg())
    put(plog, [(b"a", b"1")], pid=1, epoch=3, seq=7)
    put(plog, [(b"a", b"2")])
    plog.roll(T0)
    put(plog, [(b"t", b"1")])
    run_pass(plog, T0)
    h = {h.base_offset: h for h in headers_of(plog)}[0]
    assert (h.records_count, h.producer_id, h.producer_epoch, h.last_sequence) == (0, 1, 3, 7)
    assert visible(plog) == [(1, b"a", b"2"), (2, b"t", b"1")]


def test_open_transaction_bounds_the_cleanable_range(tmp_path):
    plog = open_log(tmp_path, cfg())
    put(plog, [(b"a", b"1")])
    put(plog, [(b"a", b"open")], pid=1, epoch=0, seq=0, txn=True)  # no marker: the LSO stays at 1
    put(plog, [(b"a", b"2")])
    plog.roll(T0)
    put(plog, [(b"a", b"3")])
    ltc = choose.log_to_clean(plog, None, T0)
    assert (ltc.first_dirty, ltc.first_uncleanable) == (0, 0)  # rounded down to the segment base
    assert run_pass(plog, T0).groups == 0
    assert [v for _, _, v in visible(plog)] == [b"1", b"open", b"2", b"3"]


def test_min_compaction_lag_and_dirty_ratio(tmp_path):
    plog = open_log(tmp_path, cfg(min_compaction_lag_ms=1000))
    put(plog, [(b"a", b"1")], ts=T0)
    plog.roll(T0)
    put(plog, [(b"a", b"2")], ts=T0 + 900)
    plog.roll(T0)
    put(plog, [(b"a", b"3")], ts=T0 + 950)
    ltc = choose.log_to_clean(plog, None, T0 + 1000)
    assert ltc.first_uncleanable == 1  # the second segment is within the lag
    ltc = choose.log_to_clean(plog, None, T0 + 2000)
    assert ltc.first_uncleanable == 2 and ltc.ratio == 1.0
    assert choose.filthiest([(ltc, 0.5)]) is ltc
    assert choose.filthiest([(ltc._replace(clean_bytes=10 * ltc.cleanable_bytes), 0.5)]) is None


def test_max_compaction_lag_forces_a_pass_below_the_ratio(tmp_path):
    plog = open_log(tmp_path, cfg(max_compaction_lag_ms=1000))
    put(plog, [(b"a", b"1")], ts=T0)
    plog.roll(T0)
    put(plog, [(b"a", b"2")], ts=T0)
    ltc = choose.log_to_clean(plog, 0, T0 + 5000)
    assert ltc.need_compaction_now
    assert choose.filthiest([(ltc._replace(clean_bytes=100 * ltc.cleanable_bytes), 0.99)]) is not None


def test_invalid_checkpoint_resets_to_the_log_start(tmp_path):
    plog = open_log(tmp_path, cfg())
    put(plog, [(b"a", b"1")])
    ltc = choose.log_to_clean(plog, 999, T0)
    assert ltc.first_dirty == 0 and ltc.reset_checkpoint


def test_a_full_offset_map_cleans_up_to_where_it_stopped(tmp_path):
    plog = open_log(tmp_path, cfg())
    for i in range(6):
        put(plog, [(f"k{i}".encode(), b"1")])
        plog.roll(T0)
    put(plog, [(b"k0", b"2")])
    result = run_pass(plog, T0, map_capacity=3)
    assert result.end_offset == 3  # mapped k0..k2, then full
    result = run_pass(plog, T0, checkpoint=result.end_offset, map_capacity=3)
    assert result.end_offset == 6


def test_pass_aborts_when_retention_deletes_a_segment_under_it(tmp_path):
    plog = open_log(tmp_path, cfg())
    for i in range(3):
        put(plog, [(b"a", bytes([i]))])
        plog.roll(T0)
    ltc = choose.log_to_clean(plog, None, T0)
    steps = clean(plog, ltc, now_ms=T0, map_capacity=100, chunk_bytes=64 * 1024)
    next(steps)
    plog.delete_records_before(2)
    with pytest.raises(CleaningAborted):
        while True:
            next(steps)
    assert not [n for n in os.listdir(tmp_path) if n.endswith((".cleaned", ".swap"))]


# ----------------------------------------------------------------------------------- crash safety
class Crash(Exception):
    pass


@pytest.mark.parametrize("step", swap.STEPS)
def test_a_crash_at_any_step_leaves_the_old_log_or_the_new_one(tmp_path, step):
    from minikafka import faults
    assert step in faults.CLEANER_STEPS
    config = cfg()
    plog = open_log(tmp_path, config)
    put(plog, [(b"a", b"1"), (b"b", b"1")], pid=1, epoch=0, seq=0, txn=True)
    marker(plog, 1, 0, commit=False)
    for i in range(20):
        put(plog, [(f"k{i % 4}".encode(), f"v{i}".encode())])
    plog.roll(T0)
    put(plog, [(b"z", b"1")])
    old = visible(plog, committed=True)
    old_all = visible(plog)
    latest = {k: (o, k, v) for o, k, v in old}
    expected_new = sorted(latest.values())

    def reach(s: str) -> None:
        if s == step:
            raise Crash(s)

    with pytest.raises(Crash):
        run_pass(plog, T0, reach=reach)
    for seg in plog.segments:  # the process is gone: nothing is closed cleanly
        seg.files.close(seg._log_key)
    again = open_log(tmp_path, config, clean_stop=False)
    if step in (swap.AFTER_CLEANED, swap.MID_SWAP_RENAME):  # before the commit point: the old log
        assert visible(again) == old_all
    else:                                                    # after it: the new one
        assert visible(again, committed=True) == expected_new
    assert not [n for n in os.listdir(tmp_path) if n.endswith((".cleaned", ".swap"))]
    # and the next pass completes from either state
    run_pass(again, T0)
    assert visible(again, committed=True) == expected_new


# ----------------------------------------------------------------------------------- the compiled twin
def test_record_spans_compiled_twin_matches_the_python_reference():
    import random

    from minikafka.protocol import batch_rewrite
    from minikafka.protocol.errors import CorruptRecord

    if batch_rewrite._record_spans_c is None:
        pytest.skip("the C extension was not built here")
    rng = random.Random(19)

    def verdict(fn, data, count):
        try:
            return fn(data, count)
        except (CorruptRecord, ValueError):
            return "corrupt"

    for _ in range(400):
        pairs = [(None if rng.random() < 0.1 else rng.randbytes(rng.randrange(0, 40)),
                  None if rng.random() < 0.2 else rng.randbytes(rng.randrange(0, 300))) for _ in range(rng.randrange(1, 8))]
        raw = records.build_batch(pairs, headers=(("h", b"v"),) if rng.random() < 0.5 else ())
        h = records.read_header(raw)
        data = bytes(raw[records.HEADER_SIZE:])
        good = batch_rewrite.record_spans_py(data, h.records_count)
        assert batch_rewrite._record_spans_c(data, h.records_count) == good
        assert [(s[3], s[4]) for s in good] == [(-1 if k is None else len(k), -1 if v is None else len(v))
                                              for k, v in pairs]
        for _ in range(5):  # truncated, flipped, or with a wrong count: the same verdict from both
            bad = bytearray(data)
            kind = rng.randrange(3)
            if kind == 0:
                bad = bad[: rng.randrange(len(bad))]
            elif kind == 1:
                bad[rng.randrange(len(bad))] = rng.randrange(256)
            count = h.records_count + (1 if kind == 2 else 0)
            py = verdict(batch_rewrite.record_spans_py, bytes(bad), count)
            c = verdict(lambda d, n: batch_rewrite._record_spans_c(d, n), bytes(bad), count)
            assert c == py
