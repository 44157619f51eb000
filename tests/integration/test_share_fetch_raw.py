"""ShareFetch and ShareAcknowledge at the protocol level (issue 23): the share session's epochs and
their errors, acquired ranges and delivery counts, acknowledgements refused for records the member
does not hold, and RENEW holding a lock past its duration (virtual time). Raw requests, so the
fields are checked as the broker sends them; runs against minikafka and, but for the virtual-time
test, Apache Kafka 4.3.1 (make conformance)."""

from __future__ import annotations

import time
import uuid
from typing import Any

import pytest
from clients import create_topic, producer, uniq
from rawclient import RawClient
from test_share_groups import set_group_configs

from minikafka.protocol.errors import ErrorCode
from minikafka.protocol.types import kafka_uuid_str
from minikafka.protocol.versions import request_class

pytestmark = pytest.mark.integration
ACCEPT, RELEASE, RENEW = 1, 2, 4


def heartbeat(raw: RawClient, group: str, member: str, epoch: int, topics: tuple[str, ...] | None) -> Any:
    req = request_class(76, 1)(group_id=group, member_id=member, member_epoch=epoch, rack_id=None,
                               subscribed_topic_names=topics)
    return raw.request(req, 1)


def share_fetch(raw: RawClient, group: str, member: str, epoch: int, topic_id: uuid.UUID, *,
                acks: list[tuple[int, int, int]] = (), fetch: bool = True, max_wait_ms: int = 0,
                max_bytes: int = 1 << 20, version: int = 2) -> Any:
    from kio.schema.share_fetch.v2.request import AcknowledgementBatch, FetchPartition, FetchTopic
    from rawclient import ms
    batches = tuple(AcknowledgementBatch(first_offset=f, last_offset=last, acknowledge_types=(t,)) for f, last, t in acks)
    topics = (FetchTopic(topic_id=topic_id, partitions=(FetchPartition(partition_index=0,
                                                                       acknowledgement_batches=batches),)),) \
        if fetch or acks else ()
    req = request_class(78, 2)(group_id=group, member_id=member, share_session_epoch=epoch, max_wait=ms(max_wait_ms),
                               min_bytes=1, max_bytes=max_bytes, max_records=500, batch_size=500, share_acquire_mode=0,
                               is_renew_ack=False, topics=topics, forgotten_topics_data=())
    return raw.request(req, version)


def share_ack(raw: RawClient, group: str, member: str, epoch: int, topic_id: uuid.UUID,
              acks: list[tuple[int, int, int]], *, renew: bool = False) -> Any:
    from kio.schema.share_acknowledge.v2.request import AcknowledgementBatch, AcknowledgePartition, AcknowledgeTopic
    batches = tuple(AcknowledgementBatch(first_offset=f, last_offset=last, acknowledge_types=(t,)) for f, last, t in acks)
    req = request_class(79, 2)(group_id=group, member_id=member, share_session_epoch=epoch, is_renew_ack=renew,
                               topics=(AcknowledgeTopic(topic_id=topic_id, partitions=(
                                   AcknowledgePartition(partition_index=0, acknowledgement_batches=batches),)),))
    return raw.request(req, 2)


def acquired(resp: Any) -> list[tuple[int, int, int]]:
    return [(a.first_offset, a.last_offset, a.delivery_count) for t in resp.responses for p in t.partitions
            for a in p.acquired_records]


def partition(resp: Any) -> Any:
    (t,) = resp.responses
    (p,) = t.partitions
    return p


def joined(raw: RawClient, bs: str, n: int) -> tuple[str, str, str, uuid.UUID]:
    """A topic of one partition with `n` records in one batch, and a member of a new share group
    that reads it from the beginning, once the partition is assigned (Kafka assigns it a
    heartbeat after the join)."""
    topic, group = uniq("sfr"), uniq("sg")
    create_topic(bs, topic, 1)
    p = producer(bs, **{"linger.ms": 50})
    for i in range(n):
        p.produce(topic, value=b"v%d" % i, partition=0)
    assert p.flush(30) == 0
    set_group_configs(bs, group, share_auto_offset_reset="earliest")
    member = kafka_uuid_str(uuid.uuid4())
    hb = heartbeat(raw, group, member, 0, (topic,))
    assert hb.error_code is ErrorCode.none, hb
    epoch = hb.member_epoch
    deadline = time.monotonic() + 30
    while not (hb.assignment and hb.assignment.topic_partitions):
        assert time.monotonic() < deadline, "never assigned"
        time.sleep(0.2)
        hb = heartbeat(raw, group, member, epoch, None)
        epoch = hb.member_epoch
    return topic, group, member, hb.assignment.topic_partitions[0].topic_id


def test_share_session_epochs_acquired_ranges_and_acknowledgements(kafka_broker):
    with RawClient.connect(kafka_broker.bootstrap, timeout=20) as raw:
        _topic, group, member, tid = joined(raw, kafka_broker.bootstrap, 10)
        first = share_fetch(raw, group, member, 0, tid, max_wait_ms=5000)
        assert first.error_code is ErrorCode.none
        assert acquired(first) == [(0, 9, 1)] and len(partition(first).records) > 0
        assert first.acquisition_lock_timeout.total_seconds() == 30
        # a new session has nothing to acknowledge; a wrong epoch; acknowledging at epoch 0
        assert share_fetch(raw, group, member, 0, tid, acks=[(0, 0, ACCEPT)]).error_code is ErrorCode.invalid_request
        assert share_fetch(raw, group, member, 7, tid).error_code is ErrorCode.invalid_share_session_epoch
        assert share_ack(raw, group, member, 0, tid, [(0, 0, ACCEPT)]).error_code is \
            ErrorCode.invalid_share_session_epoch
        # the epoch-0 request that acknowledged was refused, so the session is the first one, at epoch 1
        r = share_ack(raw, group, member, 1, tid, [(0, 4, ACCEPT), (5, 9, RELEASE)])
        assert (r.error_code, partition(r).error_code) == (ErrorCode.none, ErrorCode.none)
        # 5 was released: nobody holds it, so it cannot be accepted
        assert partition(share_ack(raw, group, member, 2, tid, [(5, 5, ACCEPT)])).error_code is \
            ErrorCode.invalid_record_state
        again = share_fetch(raw, group, member, 3, tid, max_wait_ms=5000)
        assert acquired(again) == [(5, 9, 2)], "released records come back, delivered a second time"
        closing = share_ack(raw, group, member, -1, tid, [(5, 9, ACCEPT)])
        assert (closing.error_code, partition(closing).error_code) == (ErrorCode.none, ErrorCode.none)
        assert share_ack(raw, group, member, 4, tid, [(5, 5, ACCEPT)]).error_code is ErrorCode.share_session_not_found
        assert heartbeat(raw, group, member, -1, None).member_epoch == -1


def test_max_bytes_zero_acquires_nothing(kafka_broker):
    """fetch.max.bytes=0 (librdkafka's 0180_share_consumer_config): no record is acquired."""
    with RawClient.connect(kafka_broker.bootstrap, timeout=20) as raw:
        _topic, group, member, tid = joined(raw, kafka_broker.bootstrap, 3)
        assert acquired(share_fetch(raw, group, member, 0, tid, max_bytes=0, max_wait_ms=500)) == []
        assert acquired(share_fetch(raw, group, member, 1, tid, max_wait_ms=5000)) == [(0, 2, 1)]


@pytest.mark.minikafka_in_process
def test_renew_holds_the_lock_and_a_lapsed_lock_goes_to_another_member(kafka_broker):
    bs = kafka_broker.bootstrap
    with RawClient.connect(bs, timeout=20) as raw, RawClient.connect(bs, timeout=20) as other:
        _topic, group, member, tid = joined(raw, bs, 4)
        assert acquired(share_fetch(raw, group, member, 0, tid, max_wait_ms=5000)) == [(0, 3, 1)]
        second = kafka_uuid_str(uuid.uuid4())
        assert heartbeat(other, group, second, 0, (_topic,)).error_code is ErrorCode.none
        clock = kafka_broker.clock
        clock.pause()
        clock.advance(20)
        renewed = share_ack(raw, group, member, 1, tid, [(0, 1, RENEW)], renew=True)
        assert partition(renewed).error_code is ErrorCode.none
        clock.advance(20)   # 40 s after the acquisition: 2 and 3 lapsed at 30 s, 0 and 1 were renewed at 20 s
        got = share_fetch(other, group, second, 0, tid)
        assert acquired(got) == [(2, 3, 2)]
        # the holder still holds 0 and 1 (accepted now); 2 and 3 are the other's
        r = share_ack(raw, group, member, 2, tid, [(0, 1, ACCEPT)])
        assert partition(r).error_code is ErrorCode.none
        assert partition(share_ack(raw, group, member, 3, tid, [(2, 3, ACCEPT)])).error_code is \
            ErrorCode.invalid_record_state
