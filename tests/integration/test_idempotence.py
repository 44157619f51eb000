"""Idempotent producer over the wire: InitProducerId and Produce with exact error codes.

A raw client (tests/rawclient.py, minikafka's own codec) sends hand-built record batches with chosen
producer ids, epochs and sequences, so every rule of protocol.md P-10/P-11 is checked against the
bytes a broker really returns: duplicates answered NO_ERROR with the original offsets, gaps
OUT_OF_ORDER_SEQUENCE_NUMBER (45), stale epochs INVALID_PRODUCER_EPOCH (47), unknown producers
accepted at any sequence (KIP-360), and log_start_offset filled in error responses (P-6).
"""

from __future__ import annotations

import time

import pytest
from kio.schema.init_producer_id.v4.request import InitProducerIdRequest
from kio.schema.produce.v10.request import PartitionProduceData as PartitionProduceDataV10
from kio.schema.produce.v10.request import ProduceRequest as ProduceRequestV10
from kio.schema.produce.v10.request import TopicProduceData as TopicProduceDataV10
from kio.static.primitive import i16, i32
from rawclient import (
    RawClient,
    create_topics_v7,
    fetch_records,
    high_watermark,
    ms,
    produce_v9,
    wait_for_topic,
)

from minikafka.protocol.records import build_batch

pytestmark = pytest.mark.integration

NONE = 0
OUT_OF_ORDER_SEQUENCE_NUMBER = 45
INVALID_PRODUCER_EPOCH = 47


def init_producer_id(c: RawClient) -> tuple[int, int]:
    """A non-transactional InitProducerId v4; returns (producer id, epoch)."""
    resp = c.request(InitProducerIdRequest(transactional_id=None, transaction_timeout=ms(60_000)), 4)
    assert resp.error_code == NONE, resp
    return int(resp.producer_id), int(resp.producer_epoch)


def batch(pid: int, epoch: int, seq: int, n: int, tag: str) -> bytes:
    return bytes(build_batch([(f"{tag}-{i}".encode(), f"{tag}-{seq + i}".encode()) for i in range(n)],
                             timestamp_ms=int(time.time() * 1000), producer_id=pid, producer_epoch=epoch,
                             base_sequence=seq))


def send(c: RawClient, version: int, topic: str, data: bytes):
    """One partition's Produce response, sent as Produce v9 (flexible) or v10."""
    if version == 9:
        resp = c.request(produce_v9(topic, 0, data), 9)
    else:
        req = ProduceRequestV10(
            transactional_id=None, acks=i16(-1), timeout=ms(10_000),
            topic_data=(TopicProduceDataV10(name=topic, partition_data=(
                PartitionProduceDataV10(index=i32(0), records=data),)),))
        resp = c.request(req, 10)
    assert len(resp.responses) == 1 and len(resp.responses[0].partition_responses) == 1
    return resp.responses[0].partition_responses[0]


def make_topic(c: RawClient, topic: str) -> None:
    resp = c.request(create_topics_v7(topic, 1), 7)
    assert resp.topics[0].error_code == NONE, resp
    wait_for_topic(c, topic)


@pytest.mark.parametrize("produce_version", [9, 10])
def test_sequence_and_epoch_rules(kafka_broker, produce_version):
    topic = f"idem-rules-v{produce_version}"
    with RawClient.connect(kafka_broker.bootstrap) as c:
        make_topic(c, topic)
        pid, epoch = init_producer_id(c)
        assert pid >= 0 and epoch == 0

        def ok(data: bytes, expected_base: int) -> None:
            r = send(c, produce_version, topic, data)
            assert (r.error_code, r.base_offset) == (NONE, expected_base), r
            assert r.log_start_offset == 0

        def refused(data: bytes, code: int) -> None:
            hw = high_watermark(c, topic)
            r = send(c, produce_version, topic, data)
            assert r.error_code == code, r
            assert r.base_offset == -1
            assert r.log_start_offset == 0  # filled on errors (protocol.md P-6), not -1
            assert high_watermark(c, topic) == hw, "a refused batch was appended"

        first = batch(pid, 0, 0, 3, "a")
        ok(first, 0)                                  # offsets 0..2, sequences 0..2
        # The same batch again (a retry whose response was lost): NO_ERROR, ORIGINAL base offset,
        # nothing appended.
        ok(first, 0)
        assert high_watermark(c, topic) == 3
        ok(batch(pid, 0, 3, 2, "b"), 3)              # offsets 3..4, sequences 3..4
        ok(first, 0)                                  # still inside the 5-batch window
        # A gap: sequence 10 when 5 is expected.
        refused(batch(pid, 0, 10, 1, "gap"), OUT_OF_ORDER_SEQUENCE_NUMBER)
        # The next epoch must start at sequence 0 ...
        refused(batch(pid, 1, 5, 1, "e1-bad"), OUT_OF_ORDER_SEQUENCE_NUMBER)
        ok(batch(pid, 1, 0, 2, "e1"), 5)              # ... and is accepted there: offsets 5..6
        # Now the old epoch is fenced, whatever its sequence.
        refused(batch(pid, 0, 5, 1, "e0-late"), INVALID_PRODUCER_EPOCH)
        refused(first, INVALID_PRODUCER_EPOCH)
        # A newer epoch not at sequence 0.
        refused(batch(pid, 2, 2, 1, "e2-bad"), OUT_OF_ORDER_SEQUENCE_NUMBER)
        ok(batch(pid, 1, 2, 1, "e1-next"), 7)
        # A producer id the broker never handed out and never saw: any sequence (KIP-360).
        stranger = pid + 10**9
        ok(batch(stranger, 3, 17, 2, "stranger"), 8)
        ok(batch(stranger, 3, 19, 1, "stranger2"), 10)
        refused(batch(stranger, 3, 30, 1, "stranger-gap"), OUT_OF_ORDER_SEQUENCE_NUMBER)

        assert high_watermark(c, topic) == 11
        values = [r.value for r in fetch_records(c, topic, 0, 0)]
        assert values == [b"a-0", b"a-1", b"a-2", b"b-3", b"b-4", b"e1-0", b"e1-1", b"e1-next-2",
                          b"stranger-17", b"stranger-18", b"stranger2-19"]


def test_duplicate_detection_window_is_five_batches(kafka_broker):
    topic = "idem-window"
    with RawClient.connect(kafka_broker.bootstrap) as c:
        make_topic(c, topic)
        pid, epoch = init_producer_id(c)
        sent = [batch(pid, epoch, seq, 1, "w") for seq in range(6)]
        for i, data in enumerate(sent):
            r = send(c, 9, topic, data)
            assert (r.error_code, r.base_offset) == (NONE, i)
        for i in range(1, 6):  # the last five are duplicates with their own offsets
            r = send(c, 9, topic, sent[i])
            assert (r.error_code, r.base_offset) == (NONE, i)
        # The sixth-oldest is outside the window: not a duplicate, and not the next sequence.
        r = send(c, 9, topic, sent[0])
        assert r.error_code == OUT_OF_ORDER_SEQUENCE_NUMBER
        assert high_watermark(c, topic) == 6


def _pids(bootstrap: str, n: int) -> list[int]:
    with RawClient.connect(bootstrap) as c:
        out = []
        for _ in range(n):
            pid, epoch = init_producer_id(c)
            assert epoch == 0
            out.append(pid)
        return out


def test_producer_ids_unique_and_increasing_across_restarts(kafka_broker):
    seen: list[int] = []
    seen += _pids(kafka_broker.bootstrap, 5)
    kafka_broker.restart(hard=False)   # SIGTERM, clean shutdown
    seen += _pids(kafka_broker.bootstrap, 5)
    kafka_broker.restart(hard=True)    # kill -9
    seen += _pids(kafka_broker.bootstrap, 5)
    kafka_broker.restart(hard=True)    # twice in a row, nothing handed out in between
    kafka_broker.restart(hard=True)
    seen += _pids(kafka_broker.bootstrap, 2)
    assert len(set(seen)) == len(seen), seen
    assert seen == sorted(seen), seen


def test_dedup_state_survives_restart(kafka_broker):
    """Producer state is rebuilt on restart (snapshot at clean shutdown; log replay after kill -9):
    a retried last batch is still a duplicate and the sequence continues."""
    topic = "idem-restart"
    with RawClient.connect(kafka_broker.bootstrap) as c:
        make_topic(c, topic)
        pid, epoch = init_producer_id(c)
        seq = 0
        for i in range(4):
            r = send(c, 9, topic, batch(pid, epoch, seq, 2, "r"))
            assert (r.error_code, r.base_offset) == (NONE, 2 * i)
            seq += 2
    for hard in (False, True):
        kafka_broker.restart(hard=hard)
        with RawClient.connect(kafka_broker.bootstrap) as c:
            wait_for_topic(c, topic)
            hw = high_watermark(c, topic)
            r = send(c, 9, topic, batch(pid, epoch, seq - 2, 2, "r"))  # retry of the last batch
            assert (r.error_code, r.base_offset) == (NONE, hw - 2)
            r = send(c, 9, topic, batch(pid, epoch, seq + 1, 1, "gap"))
            assert r.error_code == OUT_OF_ORDER_SEQUENCE_NUMBER
            r = send(c, 9, topic, batch(pid, epoch, seq, 2, "r"))
            assert (r.error_code, r.base_offset) == (NONE, hw)
            seq += 2
            assert high_watermark(c, topic) == hw + 2
