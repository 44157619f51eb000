"""The group coordinator starts when it is first needed (issue 17: start-up). A data dir without
`__consumer_offsets` and `__share_group_state` has no group to load, so the broker serves without
importing the coordinator; the first request that needs it starts it; a data dir holding its topic
starts it with the broker, and what the topic holds is there at once."""

from __future__ import annotations

import asyncio

import pytest
from clients import consume_n, consumer, create_topic, produce_all, producer, uniq
from confluent_kafka import TopicPartition

from minikafka.broker import app
from minikafka.config import load
from minikafka.coordinator.group import offsets_log
from minikafka.coordinator.group.decisions import JoinRequest
from minikafka.coordinator.share_group import state_log
from minikafka.embedded import EmbeddedBroker
from minikafka.protocol.errors import ErrorCode
from minikafka.testing import TEST_OVERRIDES

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]


def test_the_broker_names_the_coordinator_topics_as_the_coordinator_does() -> None:
    assert (app.OFFSETS_TOPIC, app.SHARE_STATE_TOPIC) == (offsets_log.TOPIC, state_log.TOPIC)


def _started(broker: EmbeddedBroker) -> bool:
    return broker._broker.services.started_groups is not None


def test_groups_start_at_their_first_use_and_with_the_broker_once_they_have_a_topic(tmp_path) -> None:
    topic, group = uniq("on-demand"), uniq("g")
    with EmbeddedBroker(tmp_path / "data", overrides=TEST_OVERRIDES).start() as broker:
        assert not _started(broker)
        create_topic(broker.bootstrap, topic)
        # A transactional producer looks up its transaction coordinator, not a group's.
        p = producer(broker.bootstrap, **{"transactional.id": uniq("tx")})
        p.init_transactions(30)
        p.begin_transaction()
        p.produce(topic, value=b"v0")
        p.commit_transaction(30)
        p.close()
        produce_all(producer(broker.bootstrap), topic, [{"value": f"v{i}".encode()} for i in range(1, 5)])
        assert not _started(broker)
        assert "__consumer_offsets" not in broker._broker.logs.topics

        c = consumer(broker.bootstrap, **{"group.id": group})
        c.subscribe([topic])
        try:
            got = consume_n(c, 5)
            assert [m.value() for m in got] == [f"v{i}".encode() for i in range(5)]
            c.commit(got[2], asynchronous=False)  # the offset after the third record
            committed = got[2].offset() + 1
            assert committed == 4  # v0 at 0 and its commit marker at 1: v2 at 3
        finally:
            c.close()
        assert _started(broker)

    with EmbeddedBroker(tmp_path / "data", overrides=TEST_OVERRIDES).start() as again:
        assert _started(again)  # its topic holds a group: loaded before the first answer
        c = consumer(again.bootstrap, **{"group.id": group})
        try:
            (tp,) = c.committed([TopicPartition(topic, 0)], timeout=30)
            assert tp.offset == committed
        finally:
            c.close()


async def test_a_coordinator_first_needed_during_shutdown_starts_closed(tmp_path) -> None:
    """shutdown() lets the requests it has read finish. If one of them is the first to need the
    group coordinator, the coordinator it starts is already closed (a JoinGroup is answered
    NOT_COORDINATOR, not parked until the grace period ends), and none of its timers outlives the
    broker."""
    config = load(None, [f"{k}={v}" for k, v in TEST_OVERRIDES.items()], host="127.0.0.1", port=0,
                  data_dir=tmp_path / "data")
    broker = app.Broker(config)
    await broker.start()
    stopping = asyncio.create_task(broker.shutdown())
    for _ in range(100):  # shutdown() runs up to its first wait, on its endpoints
        if broker._shutting_down:
            break
        await asyncio.sleep(0)
    assert broker._shutting_down and not stopping.done()
    groups = broker.services.groups
    join = JoinRequest(group_id="g", member_id="", session_timeout_ms=10_000, rebalance_timeout_ms=60_000,
                       protocols=(("range", b""),), require_known_member_id=False)
    result = await asyncio.wait_for(groups.join_group(join, broker.clock.now_ms()), 5)
    assert result.error is ErrorCode.not_coordinator
    await asyncio.wait_for(stopping, 30)
    assert [t for t in asyncio.all_tasks() if t is not asyncio.current_task()] == []
