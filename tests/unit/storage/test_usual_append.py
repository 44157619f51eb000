"""PartitionLog's append of the usual producer batch (`_append_usual`, taken when the compiled
checker passes the batch) against the general path it stands in for.

The contract: a sequence of produced payloads appended to two logs of the same configuration,
one with the compiled checker (the usual path for what it passes) and one without (every
payload through the general path and the Python reference checks), gives the same results or
the same errors, the same files (log, offset index, time index), the same segments and the same
producer state."""

from __future__ import annotations

import tempfile
from pathlib import Path

import builders
import pytest
from builders import record
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from minikafka.config import BrokerConfig
from minikafka.protocol import validator as V
from minikafka.protocol.errors import CorruptRecord, InvalidRecord
from minikafka.protocol.types import TopicPartition
from minikafka.storage.errors import MessageTooLarge, StorageError
from minikafka.storage.partition_log import PartitionLog
from minikafka.storage.producer_state import InvalidProducerEpoch, OutOfOrderSequence
from minikafka.topic_config import topic_defaults

pytestmark = [pytest.mark.unit,
              pytest.mark.skipif(V.client_batch_c is None, reason="the C checker was not built on this machine")]

NOW = 1_700_000_000_000
CONFIGS = {
    "plain": {},
    "log_append_time": {"message.timestamp.type": "LogAppendTime"},
    "small_segments": {"internal.segment.bytes": 600, "index.interval.bytes": 1},
    "small_index": {"segment.index.bytes": 24, "index.interval.bytes": 1},
    "segment_ms": {"segment.ms": 50},
    "flush_each": {"flush.messages": 1},
}


def _open(path: Path, overrides: dict) -> PartitionLog:
    config = topic_defaults(BrokerConfig.build({}))
    config.update(overrides)
    return PartitionLog.open(TopicPartition("t", 0), path, config, recovery_point=0, log_start_offset=0,
                             clean=True, now_ms=NOW)


def _append(plog: PartitionLog, payload: bytes, now_ms: int, compiled: bool) -> tuple:
    saved = V.client_batch_c
    if not compiled:
        V.client_batch_c = None
    try:
        return ("ok", plog.append(bytearray(payload), now_ms=now_ms))
    except (CorruptRecord, InvalidRecord, MessageTooLarge, StorageError, InvalidProducerEpoch,
            OutOfOrderSequence) as exc:
        return ("refused", type(exc), str(exc))
    finally:
        V.client_batch_c = saved


def _state(plog: PartitionLog) -> tuple:
    files = {p.name: p.read_bytes() for p in sorted(plog.dir.iterdir()) if p.suffix in (".log", ".index", ".timeindex")}
    segments = [(s.base_offset, s.size, s.next_offset, s.max_timestamp, s.offset_of_max_timestamp,
                 s.rolling_base_ms, s.bytes_since_last_index_entry) for s in plog.segments]
    return (files, segments, plog.producer_state.to_snapshot(), plog.unflushed_messages, plog.completed_txns)


_ts = st.sampled_from([NOW, NOW + 5, NOW - 7, -1, 0, -10])
_batch = st.fixed_dictionaries({
    "records": st.integers(1, 4),
    "base_ts": _ts,
    "max_ts": st.none() | _ts,  # None: the header says base_ts (records' deltas may say more)
    "deltas": st.sampled_from(["zero", "rising", "negative"]),
    "attributes": st.sampled_from([0, 0, 0, 8]),  # 8: the client set the LogAppendTime bit
    "producer": st.sampled_from(["none", "none", "next", "next", "repeat", "gap", "old_epoch", "new_epoch"]),
    "corrupt": st.sampled_from([False] * 9 + [True]),
    "advance_ms": st.sampled_from([0, 0, 30, 100]),
})


def _payload(spec: dict, seq: dict) -> bytes:
    n = spec["records"]
    step = {"zero": 0, "rising": 3, "negative": -2}[spec["deltas"]]
    area = b"".join(record(i, b"k%d" % i, b"v%d" % i, ts_delta=i * step) for i in range(n))
    pid, epoch, base_seq = -1, -1, -1
    kind = spec["producer"]
    if kind != "none":
        pid = 77
        if kind == "new_epoch":
            seq["epoch"], seq["next"] = seq["epoch"] + 1, 0
        epoch = seq["epoch"] - 1 if kind == "old_epoch" else seq["epoch"]
        base_seq = {"next": seq["next"], "repeat": max(seq["next"] - seq["last_n"], 0), "gap": seq["next"] + 5,
                    "old_epoch": seq["next"], "new_epoch": 0}[kind]
        if kind in ("next", "new_epoch"):
            seq["next"], seq["last_n"] = base_seq + n, n
    payload = builders.batch(area, n, base_ts=spec["base_ts"], max_ts=spec["max_ts"], attributes=spec["attributes"],
                             producer_id=pid, producer_epoch=epoch, base_sequence=base_seq)
    if spec["corrupt"]:
        payload[-1] ^= 0x55
    return bytes(payload)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(specs=st.lists(_batch, min_size=1, max_size=12), config=st.sampled_from(sorted(CONFIGS)))
def test_the_usual_append_is_the_general_append(specs, config) -> None:
    with tempfile.TemporaryDirectory() as d:
        usual, general = _open(Path(d) / "usual", CONFIGS[config]), _open(Path(d) / "general", CONFIGS[config])
        seq = {"epoch": 0, "next": 0, "last_n": 0}
        now = NOW
        try:
            for spec in specs:
                now += spec["advance_ms"]
                payload = _payload(spec, seq)
                assert _append(usual, payload, now, True) == _append(general, payload, now, False)
                assert _state(usual) == _state(general)
        finally:
            usual.close()
            general.close()


def test_the_usual_path_is_taken_and_rolls_as_the_general_one(tmp_path) -> None:
    """Not only the general path on both sides: the usual one answers a sound batch (its
    refusal of a duplicate and its roll are seen from outside)."""
    calls = []
    plog = _open(tmp_path / "t", CONFIGS["small_segments"])
    real = plog._append_usual
    plog._append_usual = lambda *a: calls.append(1) or real(*a)  # type: ignore[method-assign]
    for i in range(6):
        payload = builders.batch(record(0, b"k", b"v" * 200), 1, base_ts=NOW, producer_id=5, producer_epoch=0,
                                 base_sequence=i)
        assert plog.append(payload, now_ms=NOW).base_offset == i
    assert len(calls) == 6
    assert len(plog.segments) > 1
    plog.close()
