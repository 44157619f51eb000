"""Incremental fetch sessions (KIP-227) over the raw protocol: a full Fetch (epoch 0) opens a
session and answers every partition; an incremental Fetch (the session id, the next epoch) names
only what changed and is answered only the partitions with records or a moved high watermark;
forgotten partitions leave the session; a wrong epoch, an unknown session and a session used with
the other kind of topic naming (by name before v13, by id from v13) are top-level errors that read
nothing; epoch -1 closes the session. Issue 17 (consumption over many partitions). The same
answers from Apache Kafka 4.3.1 in conformance mode.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from clients import uniq
from kio.schema.fetch.v12.request import FetchPartition as FetchPartitionV12
from kio.schema.fetch.v12.request import FetchRequest as FetchRequestV12
from kio.schema.fetch.v12.request import FetchTopic as FetchTopicV12
from kio.schema.fetch.v12.request import ForgottenTopic as ForgottenTopicV12
from kio.schema.fetch.v18.request import FetchPartition, FetchRequest, FetchTopic, ForgottenTopic
from kio.static.primitive import i8, i32, i64
from rawclient import RawClient, create_topics_v7, metadata_v12, ms, produce, valid_batch, wait_for_topic

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

FETCH_SESSION_ID_NOT_FOUND, INVALID_FETCH_SESSION_EPOCH, FETCH_SESSION_TOPIC_ID_ERROR = 70, 71, 106


def fetch12(c: RawClient, session_id: int, epoch: int, parts: dict[tuple[str, int], int],
            forgotten: dict[str, list[int]] | None = None) -> Any:
    topics: dict[str, list[Any]] = {}
    for (topic, p), offset in parts.items():
        topics.setdefault(topic, []).append(FetchPartitionV12(
            partition=i32(p), current_leader_epoch=i32(-1), fetch_offset=i64(offset), last_fetched_epoch=i32(-1),
            log_start_offset=i64(-1), partition_max_bytes=i32(1 << 20)))
    return c.request(FetchRequestV12(
        replica_id=i32(-1), max_wait=ms(0), min_bytes=i32(0), max_bytes=i32(1 << 24), isolation_level=i8(0),
        session_id=i32(session_id), session_epoch=i32(epoch),
        topics=tuple(FetchTopicV12(topic=t, partitions=tuple(ps)) for t, ps in topics.items()),
        forgotten_topics_data=tuple(ForgottenTopicV12(topic=t, partitions=tuple(i32(p) for p in ps))
                                    for t, ps in (forgotten or {}).items()), rack_id=""), 12)


def fetch18(c: RawClient, session_id: int, epoch: int, parts: dict[tuple[uuid.UUID, int], int],
            forgotten: dict[uuid.UUID, list[int]] | None = None) -> Any:
    topics: dict[uuid.UUID, list[Any]] = {}
    for (tid, p), offset in parts.items():
        topics.setdefault(tid, []).append(FetchPartition(partition=i32(p), fetch_offset=i64(offset),
                                                         partition_max_bytes=i32(1 << 20)))
    return c.request(FetchRequest(
        max_wait=ms(0), min_bytes=i32(0), isolation_level=i8(0), session_id=i32(session_id),
        session_epoch=i32(epoch), topics=tuple(FetchTopic(topic_id=t, partitions=tuple(ps)) for t, ps in topics.items()),
        forgotten_topics_data=tuple(ForgottenTopic(topic_id=t, partitions=tuple(i32(p) for p in ps))
                                    for t, ps in (forgotten or {}).items())), 18)


def answered(resp: Any, key: str = "topic") -> dict[tuple[Any, int], Any]:
    return {(getattr(t, key), int(p.partition_index)): p for t in resp.responses for p in t.partitions}


def test_a_session_answers_only_what_changed(kafka_broker: Any) -> None:
    topic = uniq("fsess")
    with RawClient.connect(kafka_broker.bootstrap) as c:
        assert int(c.request(create_topics_v7(topic, 4), 7).topics[0].error_code) == 0
        wait_for_topic(c, topic, partitions=4)
        for p in range(4):
            assert produce(c, topic, p, valid_batch(2, prefix=f"p{p}-".encode())).error_code == 0
        full = fetch12(c, 0, 0, {(topic, p): 0 for p in range(4)})
        assert int(full.error_code) == 0 and full.session_id != 0
        got = answered(full)
        assert set(got) == {(topic, p) for p in range(4)} and all(got[k].records for k in got)
        sid = full.session_id

        # Position moved past the data: only the positions change; nothing new, nothing answered.
        quiet = fetch12(c, sid, 1, {(topic, p): 2 for p in range(4)})
        assert (int(quiet.error_code), quiet.session_id, answered(quiet)) == (0, sid, {})
        # New records in one partition: that partition alone, without naming it in the request.
        assert produce(c, topic, 2, valid_batch(1, prefix=b"new")).error_code == 0
        one = fetch12(c, sid, 2, {})
        got = answered(one)
        assert list(got) == [(topic, 2)] and got[topic, 2].records and got[topic, 2].high_watermark == 3
        # Its high watermark was sent: asking again from the same offset answers nothing new.
        assert answered(fetch12(c, sid, 3, {(topic, 2): 3})) == {}

        # Errors: a wrong epoch, an unknown session, the by-id kind of request on a by-name session.
        for resp, code in ((fetch12(c, sid, 7, {}), INVALID_FETCH_SESSION_EPOCH),
                           (fetch12(c, sid + 1 if sid < 2**31 - 1 else 1, 1, {}), FETCH_SESSION_ID_NOT_FOUND)):
            assert (int(resp.error_code), resp.session_id, resp.responses) == (code, 0, ())
        by_id = fetch18(c, sid, 4, {})
        assert (int(by_id.error_code), by_id.responses) == (FETCH_SESSION_TOPIC_ID_ERROR, ())
        # The session is still at epoch 4: the errors changed nothing.
        assert produce(c, topic, 0, valid_batch(1, prefix=b"late")).error_code == 0
        assert produce(c, topic, 1, valid_batch(1, prefix=b"late")).error_code == 0
        # Forgetting partition 1: only partition 0 answers its new record.
        forgot = fetch12(c, sid, 4, {}, forgotten={topic: [1]})
        assert list(answered(forgot)) == [(topic, 0)]
        # Epoch -1 closes the session (a sessionless full fetch); the id is gone afterwards.
        closing = fetch12(c, sid, -1, {(topic, 3): 0})
        assert (closing.session_id, list(answered(closing))) == (0, [(topic, 3)])
        gone = fetch12(c, sid, 5, {})
        assert int(gone.error_code) == FETCH_SESSION_ID_NOT_FOUND


def test_a_session_by_topic_id(kafka_broker: Any) -> None:
    topic = uniq("fsess-id")
    with RawClient.connect(kafka_broker.bootstrap) as c:
        assert int(c.request(create_topics_v7(topic, 2), 7).topics[0].error_code) == 0
        wait_for_topic(c, topic, partitions=2)
        tid = c.request(metadata_v12(topic, auto_create=False), 12).topics[0].topic_id
        full = fetch18(c, 0, 0, {(tid, 0): 0, (tid, 1): 0})
        assert full.session_id != 0 and set(answered(full, "topic_id")) == {(tid, 0), (tid, 1)}
        assert produce(c, topic, 1, valid_batch(2, prefix=b"x")).error_code == 0
        inc = fetch18(c, full.session_id, 1, {})
        got = answered(inc, "topic_id")
        assert list(got) == [(tid, 1)] and got[tid, 1].high_watermark == 2   # named by id, not asked
        by_name = fetch12(c, full.session_id, 2, {})
        assert int(by_name.error_code) == FETCH_SESSION_TOPIC_ID_ERROR
        forgot = fetch18(c, full.session_id, 2, {}, forgotten={tid: [0, 1]})
        # Every partition forgotten: the session closes and the answer is sessionless.
        assert (int(forgot.error_code), forgot.session_id) == (0, 0)
        assert int(fetch18(c, full.session_id, 3, {}).error_code) == FETCH_SESSION_ID_NOT_FOUND
