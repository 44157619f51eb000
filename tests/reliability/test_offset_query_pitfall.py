"""The librdkafka stale offset-query reset, and the copier pattern that is immune to it (issue 14).

A consumer assigned at a logical offset (OFFSET_BEGINNING) resolves it with a ListOffsets query.
When the application seeks to a concrete offset while that query is in flight and the query then
fails (here: the connection drops, as in a broker bounce), librdkafka 2.16 arms a 500 ms retry of
the BEGINNING query that the seek does not cancel; it fires with the partition already fetching
and moves the position back to the start. Records after the seek are delivered, then the whole
partition again. An exactly-once copier that commits `position()` would copy them twice; this is
what made `test_eos_group_mode_client_bounces` duplicate now and then, against Apache Kafka as
against minikafka.

The pattern in copier.py avoids both halves: only concrete offsets are ever assigned or sought
(nothing to query), and a NextOffsets tracker drops any record below the next expected offset.
"""

from __future__ import annotations

import time

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition
from copier import NextOffsets, concrete_start_offsets
from faultproxy import FaultProxy

from minikafka.testing import free_port

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

LIST_OFFSETS = 2
N = 100
SEEK_TO = 67


@pytest.fixture
def proxied(broker_factory):
    port = free_port()
    broker = broker_factory(overrides={"advertised.listeners": f"PLAINTEXT://127.0.0.1:{port}"})
    with FaultProxy(broker.host, broker.port, listen_port=port) as proxy:
        p = Producer({"bootstrap.servers": proxy.bootstrap, "acks": "all"})
        for i in range(N):
            p.produce("pitfall", str(i).encode(), partition=0)
        assert p.flush(30) == 0
        yield proxy


def _consumer(bootstrap: str) -> Consumer:
    return Consumer({"bootstrap.servers": bootstrap, "group.id": "pitfall", "enable.auto.commit": False,
                     "auto.offset.reset": "earliest"})


def _seek_while_query_fails(proxy: FaultProxy, c: Consumer, start: TopicPartition) -> list[int]:
    """Assign at `start`, seek to SEEK_TO while any ListOffsets is unanswered, drop the connections
    once records from SEEK_TO arrive, then return every offset delivered, up to three seconds after."""
    rule = proxy.drop_response(LIST_OFFSETS, limit=1)
    c.assign([start])
    deadline = time.monotonic() + 5
    while start.offset == OFFSET_BEGINNING and rule.fired == 0 and time.monotonic() < deadline:
        c.poll(0.01)  # the BEGINNING query is on its way (its answer will never come)
    c.seek(TopicPartition("pitfall", 0, SEEK_TO))
    seen: list[int] = []
    deadline = time.monotonic() + 5
    while not seen and time.monotonic() < deadline:  # the seek is applied once SEEK_TO arrives
        seen += [m.offset() for m in c.consume(100, timeout=0.05) if m.error() is None]
    proxy.close_connections()  # the query in flight fails: librdkafka arms its retry
    end = time.monotonic() + 3  # the stale retry fires 500 ms after the failure
    while time.monotonic() < end:
        seen += [m.offset() for m in c.consume(100, timeout=0.2) if m.error() is None]
    return seen


def test_logical_offset_query_resets_a_later_seek(proxied):
    c = _consumer(proxied.bootstrap)
    try:
        seen = _seek_while_query_fails(proxied, c, TopicPartition("pitfall", 0, OFFSET_BEGINNING))
    finally:
        c.close()
    assert seen[: N - SEEK_TO] == list(range(SEEK_TO, N))
    # The reset: offset 0 comes back after 99. If this fails, librdkafka has fixed the pitfall;
    # the copier's pattern stays correct either way.
    assert 0 in seen[N - SEEK_TO :], f"no stale reset seen: {seen}"
    # What the tracker makes of the same stream: each offset once, in order.
    tracker = NextOffsets()
    tracker.start("pitfall", 0, SEEK_TO)
    assert [o for o in seen if tracker.accept("pitfall", 0, o)] == list(range(SEEK_TO, N))
    assert tracker.offsets() == [TopicPartition("pitfall", 0, N)]
    assert tracker.dropped == len(seen) - (N - SEEK_TO)


def test_concrete_offsets_are_immune(proxied):
    c = _consumer(proxied.bootstrap)
    try:
        (start,) = concrete_start_offsets(c, [TopicPartition("pitfall", 0)])
        assert start.offset == 0  # nothing committed: the low watermark
        seen = _seek_while_query_fails(proxied, c, start)
    finally:
        c.close()
    assert seen == list(range(SEEK_TO, N))
