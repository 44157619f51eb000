"""Rolled segments are fsynced in the background, and the recovery point follows (storage/segment_flusher.py).

A roll used to fsync the old segment on the event loop; now a worker thread does, as Kafka's
"flush-log" task, and the partition's recovery point moves past the segment once that is done,
and reaches the recovery-point checkpoint within a second instead of at the next 60 s interval.
The checkpoint is what a restart after kill -9 trusts without re-reading, so it must reach the
rolled segments (or a restart re-validates all written since: 9.8 s at 20 GB) and never pass one
not yet flushed.
"""

from __future__ import annotations

import uuid

import pytest
from clients import create_topic, read_all, wait_until
from confluent_kafka import Producer
from rawclient import RawClient, high_watermark

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

SEGMENT = 1_048_576  # Kafka's smallest segment.bytes
VALUE = 16 * 1024
RECORDS = 300  # ~4.9 MB: four rolls


def _recovery_points(broker) -> dict[tuple[str, int], int]:
    """The `recovery-point-offset-checkpoint` file, in Kafka's format: version, count, then
    `topic partition offset` per line."""
    lines = (broker.data_dir / "recovery-point-offset-checkpoint").read_text().splitlines()
    assert lines[0] == "0" and int(lines[1]) == len(lines) - 2
    return {(t, int(p)): int(o) for t, p, o in (line.split() for line in lines[2:])}


def test_the_recovery_point_reaches_the_rolled_segments_and_a_kill9_keeps_everything(broker_factory) -> None:
    # Kafka's default checkpoint interval (60 s): what the test waits for is the checkpoint that
    # follows a finished background flush within a second (LogManager.checkpoint_flushed_rolls).
    broker = broker_factory()
    topic = f"rolled-{uuid.uuid4().hex[:6]}"
    create_topic(broker.bootstrap, topic, partitions=1, config={"segment.bytes": str(SEGMENT)})
    p = Producer({"bootstrap.servers": broker.bootstrap, "acks": "all", "linger.ms": 5})
    acked: dict[int, bytes] = {}
    for i in range(RECORDS):
        p.produce(topic, (b"%06d" % i) * (VALUE // 6), partition=0,
                  on_delivery=lambda err, m: acked.__setitem__(m.offset(), m.value()) if err is None else None)
        p.poll(0)
    assert p.flush(60) == 0 and len(acked) == RECORDS

    bases = sorted(int(f.name[:20]) for f in (broker.data_dir / f"{topic}-0").glob("*.log"))
    assert len(bases) >= 4, bases
    wait_until(lambda: _recovery_points(broker).get((topic, 0), 0) >= bases[-1], 30,
               f"the recovery point checkpointed at the last roll ({bases[-1]})")
    assert _recovery_points(broker)[(topic, 0)] <= RECORDS

    broker.kill9()
    broker.start()
    with RawClient.connect(broker.bootstrap) as c:
        assert high_watermark(c, topic) == RECORDS
    got = read_all(broker.bootstrap, topic, 1, RECORDS, timeout=60)
    assert {m.offset(): m.value() for m in got} == acked
    assert len(got) == RECORDS
