"""Requests pipelined on one connection are answered in request order, also when one of them waits.

Kafka reads nothing more from a connection while one of its requests is in flight: a Fetch parked
for its max_wait holds back the requests sent after it, which are handled and answered after it.
minikafka handles most requests inside the socket's read callback (broker/connection.py, the fast
lane) and hands a request that must wait, with those read after it, to a task of its own; bytes
that arrive meanwhile go the connection's ordinary way. These tests pipeline a parked Fetch with
later requests in one write, in two writes, and as a request split over several writes; and a
request that changes the session (a re-authentication) with a Produce behind it.
"""

from __future__ import annotations

import time
import uuid

import pytest
from kio.schema.sasl_authenticate.v2.request import SaslAuthenticateRequest
from kio.schema.sasl_handshake.v1.request import SaslHandshakeRequest
from rawclient import (RawClient, api_versions_v3, fetch_v12, high_watermark, produce, produce_v9, valid_batch,
                       wait_for_topic)

from minikafka.protocol.errors import ErrorCode
from minikafka.testing import free_port

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

WAIT_MS = 400
FETCH, API_VERSIONS, PRODUCE = (1, 12), (18, 3), (0, 9)


def _topic() -> str:
    return f"pipe-{uuid.uuid4().hex[:8]}"


def _parked_fetch_then_produce(c: RawClient, topic: str, writes: int) -> None:
    """A Fetch at the log end (parks for WAIT_MS: nothing to read), an ApiVersions and a Produce,
    sent in `writes` writes (1: all in one; 2: the Fetch, then the rest)."""
    end = high_watermark(c, topic)
    sent = []
    chunks = [bytearray(), bytearray()]
    for i, (body, (key, ver)) in enumerate([(fetch_v12(topic, 0, end, max_wait_ms=WAIT_MS), FETCH),
                                            (api_versions_v3(), API_VERSIONS),
                                            (produce_v9(topic, 0, valid_batch(1, prefix=b"behind")), PRODUCE)]):
        corr, data = c.encode(body, ver)
        sent.append((corr, key, ver))
        chunks[0 if writes == 1 or i == 0 else 1] += data
    started = time.monotonic()
    for chunk in chunks:
        if chunk:
            c.send_bytes(bytes(chunk))
    answers = []
    for corr, key, ver in sent:
        got, body = c.receive(key, ver, timeout=10)
        assert got == corr, f"answer {got} came where {corr} was next"
        answers.append(body)
    fetched, _, produced = answers
    part = fetched.responses[0].partitions[0]
    assert part.error_code == 0
    # The Produce behind the Fetch was not handled while it waited: it found nothing, for max_wait.
    assert not part.records
    assert time.monotonic() - started >= WAIT_MS / 1000 * 0.9
    p = produced.responses[0].partition_responses[0]
    assert (p.error_code, p.base_offset) == (0, end)
    assert high_watermark(c, topic) == end + 1


def test_a_parked_fetch_holds_back_the_requests_sent_with_it(kafka_broker) -> None:
    topic = _topic()
    with RawClient.connect(kafka_broker.bootstrap, timeout=10.0) as c:
        wait_for_topic(c, topic)
        _parked_fetch_then_produce(c, topic, writes=1)
        _parked_fetch_then_produce(c, topic, writes=1)  # and the connection's next read is served as before


def test_requests_sent_while_a_fetch_is_parked_are_answered_after_it(kafka_broker) -> None:
    topic = _topic()
    with RawClient.connect(kafka_broker.bootstrap, timeout=10.0) as c:
        wait_for_topic(c, topic)
        for _ in range(3):
            _parked_fetch_then_produce(c, topic, writes=2)


def test_a_request_split_over_writes_is_answered_once_whole(kafka_broker) -> None:
    topic = _topic()
    with RawClient.connect(kafka_broker.bootstrap, timeout=10.0) as c:
        wait_for_topic(c, topic)
        end = high_watermark(c, topic)
        corr_a, a = c.encode(produce_v9(topic, 0, valid_batch(3, prefix=b"split")), PRODUCE[1])
        corr_b, b = c.encode(api_versions_v3(), API_VERSIONS[1])
        data = a + b
        # The size prefix alone, the rest of the first request with the start of the second, the end.
        for piece in (data[:4], data[4:len(a) + 7], data[len(a) + 7:]):
            c.send_bytes(piece)
        got, body = c.receive(*PRODUCE, timeout=10)
        assert got == corr_a
        p = body.responses[0].partition_responses[0]
        assert (p.error_code, p.base_offset) == (0, end)
        assert c.receive(*API_VERSIONS, timeout=10)[0] == corr_b
        assert high_watermark(c, topic) == end + 3


def test_a_reauthentication_pipelined_with_a_produce_gates_the_produce(broker_factory) -> None:
    """A request that changes the session (SaslHandshake starting a KIP-368 re-authentication)
    sent in one write with a Produce: the Produce meets the re-authentication's rule (only
    SaslAuthenticate now), as it does when sent on its own, and appends nothing. minikafka's own:
    the fast lane hands the rest of a read to the gated path once the session changes."""
    sasl_port = free_port()
    broker = broker_factory({
        "listeners": f"PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:{sasl_port}",
        "sasl.enabled.mechanisms": "PLAIN",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config":
            'org.apache.kafka.common.security.plain.PlainLoginModule required user_bob="bob-secret";',
    })
    topic = _topic()
    with RawClient.connect(broker.bootstrap, timeout=10.0) as admin:
        wait_for_topic(admin, topic)
    with RawClient("127.0.0.1", sasl_port, timeout=10.0) as c:
        assert c.request(SaslHandshakeRequest(mechanism="PLAIN"), 1).error_code == 0
        auth = c.request(SaslAuthenticateRequest(auth_bytes=b"\0bob\0bob-secret"), 2)
        assert auth.error_code == 0 and auth.session_lifetime.total_seconds() == 0  # no expiry: every request passes
        assert produce(c, topic, 0, valid_batch(1)).error_code == 0  # served on the fast lane
        shake_corr, shake = c.encode(SaslHandshakeRequest(mechanism="PLAIN"), 1)
        produce_corr, produced = c.encode(produce_v9(topic, 0, valid_batch(3)), 9)
        c.send_bytes(shake + produced)
        got, answer = c.receive(17, 1, timeout=10)
        assert (got, answer.error_code) == (shake_corr, 0)
        got, answer = c.receive(0, 9, timeout=10)
        assert got == produce_corr
        assert answer.responses[0].partition_responses[0].error_code == ErrorCode.illegal_sasl_state
        assert c.is_closed()
    with RawClient.connect(broker.bootstrap, timeout=10.0) as admin:
        assert high_watermark(admin, topic) == 1
