"""TLS and SASL on the broker's listeners (issue 21), driven by confluent-kafka over real sockets.

One broker, four listeners, as a production setup would have them:
  PLAINTEXT (admin, and the test's own view of the data), SASL_SSL with SCRAM-SHA-256/512 and
  PLAIN, SSL requiring client certificates (mTLS), SASL_PLAINTEXT with PLAIN and
  re-authentication every 5 s (connections.max.reauth.ms, KIP-368).
Bad input on each of them (wrong passwords, an unknown mechanism, requests before authentication,
a plaintext client or garbage on a TLS port) gets Kafka's answer, changes nothing, and the broker
keeps serving everyone else.
"""

from __future__ import annotations

import base64
import json
import socket
import time
from typing import Any

import pytest
from clients import create_topic, read_to_eof, uniq, watermarks
from conftest import start_secured
from confluent_kafka import Producer, TopicPartition
from confluent_kafka.admin import AdminClient, ScramCredentialInfo, ScramMechanism, UserScramCredentialUpsertion
from kio.schema.metadata.v12.request import MetadataRequest
from kio.schema.sasl_authenticate.v2.request import SaslAuthenticateRequest
from kio.schema.sasl_handshake.v0.request import SaslHandshakeRequest as SaslHandshakeRequestV0
from kio.schema.sasl_handshake.v1.request import SaslHandshakeRequest
from rawclient import RawClient, api_versions_v3, produce_v9, valid_batch
from txnclients import QUIET, close_quietly, txn_producer, wait_stable

from minikafka.protocol.errors import ErrorCode
from minikafka.security.certs import make_certs
from minikafka.testing import free_port

pytestmark = pytest.mark.integration

PLAIN_JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required '
              'user_bob="bob-secret" user_carol="carol-secret";')


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Any:
    certs = make_certs(tmp_path_factory.mktemp("certs"), clients=("alice-cert",))
    sasl_ssl, ssl_port, sasl_plain = free_port(), free_port(), free_port()
    overrides = {
        "listeners": f"PLAINTEXT://127.0.0.1:0,SASL_SSL://127.0.0.1:{sasl_ssl},SSL://127.0.0.1:{ssl_port},"
                     f"SASL_PLAINTEXT://127.0.0.1:{sasl_plain}",
        "sasl.enabled.mechanisms": "SCRAM-SHA-512,SCRAM-SHA-256,PLAIN,OAUTHBEARER",
        "listener.name.sasl_ssl.plain.sasl.jaas.config": PLAIN_JAAS,
        "listener.name.sasl_ssl.oauthbearer.sasl.jaas.config":
            "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required "
            # the broker's own token (Kafka logs in with it at start-up; minikafka ignores it)
            'unsecuredLoginStringClaim_sub="broker" unsecuredValidatorRequiredScope="kafka";',
        "listener.name.sasl_plaintext.sasl.enabled.mechanisms": "PLAIN",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": PLAIN_JAAS,
        # 5 s: librdkafka re-authenticates at 90 % of a session, and a busy machine's stall longer
        # than the rest (150 ms of 1.5 s sessions) would end one before its re-authentication.
        "listener.name.sasl_plaintext.connections.max.reauth.ms": "5000",
        **certs.broker_properties(),
        "listener.name.ssl.ssl.client.auth": "required",
        "listener.name.ssl.ssl.truststore.type": "PEM",
        "listener.name.ssl.ssl.truststore.location": str(certs.ca),
    }
    broker = start_secured(tmp_path_factory.mktemp("secured") / "data", overrides, control=True)
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    for user, mech in (("alice", ScramMechanism.SCRAM_SHA_512), ("dave", ScramMechanism.SCRAM_SHA_256)):
        futures = admin.alter_user_scram_credentials(
            [UserScramCredentialUpsertion(user, ScramCredentialInfo(mech, 4096), f"{user}-secret".encode())])
        for f in futures.values():
            f.result(30)
    yield broker, certs, {"SASL_SSL": sasl_ssl, "SSL": ssl_port, "SASL_PLAINTEXT": sasl_plain}
    broker.stop()


def sasl_ssl_conf(ports: dict[str, int], certs: Any, mechanism: str, user: str, password: str) -> dict[str, Any]:
    return {"bootstrap.servers": f"127.0.0.1:{ports['SASL_SSL']}", "security.protocol": "SASL_SSL",
            "ssl.ca.location": str(certs.ca), "sasl.mechanism": mechanism, "sasl.username": user,
            "sasl.password": password}


def mtls_conf(ports: dict[str, int], certs: Any, with_certificate: bool = True) -> dict[str, Any]:
    conf = {"bootstrap.servers": f"127.0.0.1:{ports['SSL']}", "security.protocol": "SSL",
            "ssl.ca.location": str(certs.ca)}
    if with_certificate:
        cert, key = certs.clients["alice-cert"]
        conf.update({"ssl.certificate.location": str(cert), "ssl.key.location": str(key)})
    return conf


def delivered(conf: dict[str, Any], topic: str, n: int = 3, timeout: float = 30.0) -> list[Any]:
    """Produce n records; the (error, offset) of each delivery report."""
    out: list[Any] = []
    p = Producer({**conf, "linger.ms": 0, "message.timeout.ms": int(timeout * 1000), **QUIET})
    for i in range(n):
        p.produce(topic, value=b"v%d" % i, on_delivery=lambda err, msg: out.append((err, msg.offset())))
    p.flush(timeout + 5)
    return out


def auth_errors(conf: dict[str, Any], topic: str, wait_s: float = 15.0) -> list[str]:
    """The client-side errors of a producer that cannot get in (it never delivers)."""
    errors: list[str] = []
    p = Producer({**conf, "message.timeout.ms": 60000, "error_cb": lambda e: errors.append(str(e)), **QUIET})
    p.produce(topic, value=b"x")
    deadline = time.monotonic() + wait_s
    while not errors and time.monotonic() < deadline:
        p.poll(0.1)
    p.purge()
    p.flush(1)
    return errors


def test_scram_sha_512_over_sasl_ssl_carries_a_transactional_copy(secured: Any) -> None:
    broker, certs, ports = secured
    topic = uniq("scram-txn")
    create_topic(broker.bootstrap, topic)
    conf = sasl_ssl_conf(ports, certs, "SCRAM-SHA-512", "alice", "alice-secret")
    p = txn_producer(conf["bootstrap.servers"], uniq("tid"), **{k: v for k, v in conf.items() if k != "bootstrap.servers"})
    try:
        p.begin_transaction()
        for i in range(10):
            p.produce(topic, value=b"committed-%d" % i)
        p.commit_transaction(30)
        p.begin_transaction()
        p.produce(topic, value=b"aborted")
        p.flush(30)  # written, then aborted (not purged unsent)
        p.abort_transaction(30)
    finally:
        close_quietly(p)
    # Read back over SASL_SSL as another user, another mechanism: exactly the committed records.
    reader = sasl_ssl_conf(ports, certs, "SCRAM-SHA-256", "dave", "dave-secret")
    got = read_to_eof(reader["bootstrap.servers"], [(topic, 0)], "read_committed",
                      **{k: v for k, v in reader.items() if k != "bootstrap.servers"})
    assert [r[4] for r in got] == [b"committed-%d" % i for i in range(10)]
    wait_stable(broker.bootstrap, [(topic, 0)])
    assert watermarks(broker.bootstrap, TopicPartition(topic, 0))[1] == 13  # 11 records, 2 markers


def test_after_authentication_frames_are_no_longer_held_to_the_sasl_token_limit(secured: Any) -> None:
    """sasl.server.max.receive.size (512 KiB) bounds frames only until the client authenticated: a
    1 MiB batch over SASL_SSL afterwards is written (it once closed the connection)."""
    broker, certs, ports = secured
    topic = uniq("big-after-auth")
    create_topic(broker.bootstrap, topic)
    conf = sasl_ssl_conf(ports, certs, "SCRAM-SHA-512", "alice", "alice-secret")
    out: list[Any] = []
    p = Producer({**conf, "linger.ms": 50, "batch.size": 1_000_000, **QUIET})
    for i in range(900):  # ~920 KB in one Produce request
        p.produce(topic, value=b"%04d" % i + b"x" * 1020, on_delivery=lambda err, msg: out.append(err))
    p.flush(30)
    assert out == [None] * 900
    assert watermarks(broker.bootstrap, TopicPartition(topic, 0)) == (900, 900)  # (LSO, HWM)


def test_each_listener_is_told_its_own_address(secured: Any) -> None:
    broker, certs, ports = secured
    conf = sasl_ssl_conf(ports, certs, "PLAIN", "bob", "bob-secret")
    brokers = AdminClient(conf).list_topics(timeout=15).brokers
    assert [(b.host, b.port) for b in brokers.values()] == [("127.0.0.1", ports["SASL_SSL"])]
    brokers = AdminClient({"bootstrap.servers": broker.bootstrap}).list_topics(timeout=15).brokers
    assert [(b.host, b.port) for b in brokers.values()] == [("127.0.0.1", broker.port)]


def test_plain_over_sasl_ssl_and_client_certificates_over_ssl(secured: Any) -> None:
    broker, certs, ports = secured
    topic = uniq("secured")
    create_topic(broker.bootstrap, topic)
    assert delivered(sasl_ssl_conf(ports, certs, "PLAIN", "carol", "carol-secret"), topic) == [
        (None, 0), (None, 1), (None, 2)]
    assert delivered(mtls_conf(ports, certs), topic) == [(None, 3), (None, 4), (None, 5)]


@pytest.mark.parametrize("mechanism, user, password, message", [
    ("SCRAM-SHA-512", "alice", "wrong", "Authentication failed during authentication due to invalid credentials "
                                        "with SASL mechanism SCRAM-SHA-512"),
    ("SCRAM-SHA-256", "nobody", "x", "Authentication failed during authentication due to invalid credentials "
                                     "with SASL mechanism SCRAM-SHA-256"),
    ("SCRAM-SHA-256", "alice", "alice-secret", "invalid credentials"),  # alice has SHA-512 only
    ("PLAIN", "bob", "wrong", "Authentication failed: Invalid username or password"),
])
def test_wrong_credentials_get_kafkas_message_and_nothing_is_written(secured: Any, mechanism: str, user: str,
                                                                     password: str, message: str) -> None:
    broker, certs, ports = secured
    topic = uniq("denied")
    create_topic(broker.bootstrap, topic)
    errors = auth_errors(sasl_ssl_conf(ports, certs, mechanism, user, password), topic)
    assert any("SASL authentication error" in e and message in e for e in errors), errors
    assert watermarks(broker.bootstrap, TopicPartition(topic, 0)) == (0, 0)
    assert delivered({"bootstrap.servers": broker.bootstrap}, topic, 1) == [(None, 0)]  # others are served


def test_a_client_without_a_certificate_cannot_use_the_mtls_listener(secured: Any) -> None:
    broker, certs, ports = secured
    topic = uniq("mtls-denied")
    create_topic(broker.bootstrap, topic)
    errors = auth_errors(mtls_conf(ports, certs, with_certificate=False), topic)
    assert errors and all("SSL" in e or "brokers are down" in e or "Disconnected" in e for e in errors), errors
    assert watermarks(broker.bootstrap, TopicPartition(topic, 0)) == (0, 0)


def test_a_plaintext_client_or_garbage_on_a_tls_port_is_dropped_and_others_are_served(secured: Any) -> None:
    broker, certs, ports = secured
    topic = uniq("tls-port")
    create_topic(broker.bootstrap, topic)
    errors = auth_errors({"bootstrap.servers": f"127.0.0.1:{ports['SASL_SSL']}"}, topic, wait_s=5)
    assert errors, "a plaintext client on the SASL_SSL port must not get in"
    for port in (ports["SASL_SSL"], ports["SSL"]):
        with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
            s.sendall(b"\x16\x03\x01\x00\x05garbagegarbage" * 20)
            s.settimeout(10)
            try:
                while s.recv(4096):
                    pass
            except ConnectionResetError:
                pass  # closed by the broker, as it should be
    assert delivered(sasl_ssl_conf(ports, certs, "PLAIN", "bob", "bob-secret"), topic, 1) == [(None, 0)]


def sasl_plaintext_client(ports: dict[str, int]) -> RawClient:
    return RawClient("127.0.0.1", ports["SASL_PLAINTEXT"])


def test_requests_before_authentication_close_the_connection_and_append_nothing(secured: Any) -> None:
    broker, _, ports = secured
    topic = uniq("unauthenticated")
    create_topic(broker.bootstrap, topic)
    with sasl_plaintext_client(ports) as c:
        c.send(produce_v9(topic, 0, bytes(valid_batch(3))), 9)
        assert c.is_closed()
    with sasl_plaintext_client(ports) as c:  # after ApiVersions, still only SaslHandshake
        assert c.request(api_versions_v3(), 3).error_code == ErrorCode.none
        c.send(MetadataRequest(topics=None, allow_auto_topic_creation=False,
                               include_topic_authorized_operations=False), 12)
        assert c.is_closed()
    with sasl_plaintext_client(ports) as c:  # after the handshake, only SaslAuthenticate
        assert c.request(SaslHandshakeRequest(mechanism="PLAIN"), 1).error_code == ErrorCode.none
        # as Kafka: answered with the API's ILLEGAL_SASL_STATE (after the failure delay), then closed
        resp = c.request(produce_v9(topic, 0, bytes(valid_batch(3))), 9)
        (partition,) = resp.responses[0].partition_responses
        assert partition.error_code == ErrorCode.illegal_sasl_state
        assert c.is_closed()
    assert watermarks(broker.bootstrap, TopicPartition(topic, 0)) == (0, 0)


def test_an_unknown_mechanism_is_refused_with_the_enabled_ones(secured: Any) -> None:
    _, _, ports = secured
    with sasl_plaintext_client(ports) as c:
        resp = c.request(SaslHandshakeRequest(mechanism="GSSAPI"), 1)
        assert (resp.error_code, resp.mechanisms) == (ErrorCode.unsupported_sasl_mechanism, ("PLAIN",))
        assert c.is_closed()


def test_handshake_v0_takes_bare_tokens_then_serves_requests(secured: Any) -> None:
    _, _, ports = secured
    with sasl_plaintext_client(ports) as c:
        assert c.request(SaslHandshakeRequestV0(mechanism="PLAIN"), 0).error_code == ErrorCode.none
        c.send_frame(b"\0bob\0bob-secret")
        c.sock.settimeout(10)
        assert c.sock.recv(4) == b"\0\0\0\0"  # PLAIN's empty answer, size-prefixed as Kafka sends it
        md = c.request(MetadataRequest(topics=None, allow_auto_topic_creation=False,
                                       include_topic_authorized_operations=False), 12)
        assert [b.port for b in md.brokers] == [ports["SASL_PLAINTEXT"]]


def test_garbage_in_the_sasl_exchange_fails_it_and_oversized_tokens_close_the_connection(secured: Any) -> None:
    _, _, ports = secured
    with sasl_plaintext_client(ports) as c:
        c.request(SaslHandshakeRequest(mechanism="PLAIN"), 1)
        resp = c.request(SaslAuthenticateRequest(auth_bytes=b"\xff\xfe no nul separators"), 2)
        assert resp.error_code == ErrorCode.sasl_authentication_failed
        assert resp.error_message == "Invalid SASL/PLAIN response: expected 3 tokens, got 1"
        assert c.is_closed()
    with sasl_plaintext_client(ports) as c:
        c.request(SaslHandshakeRequest(mechanism="PLAIN"), 1)
        c.send_bytes((600_000).to_bytes(4, "big"))  # over sasl.server.max.receive.size
        assert c.is_closed()


def test_the_session_lifetime_is_announced_and_an_expired_session_is_closed(secured: Any) -> None:
    broker, _, ports = secured
    with sasl_plaintext_client(ports) as c:
        c.request(SaslHandshakeRequest(mechanism="PLAIN"), 1)
        resp = c.request(SaslAuthenticateRequest(auth_bytes=b"\0bob\0bob-secret"), 2)
        assert resp.error_code == ErrorCode.none and resp.session_lifetime.total_seconds() == 5.0
        metadata = MetadataRequest(topics=None, allow_auto_topic_creation=False,
                                   include_topic_authorized_operations=False)
        assert c.request(metadata, 12).brokers  # served while the session lasts
        broker.clock.advance(5.1)  # virtual time: the broker's clock moves on, the test does not wait
        c.send(metadata, 12)
        assert c.is_closed()


def test_librdkafka_reauthenticates_and_keeps_producing(secured: Any) -> None:
    """Sessions of 5 s: librdkafka re-authenticates on the same connection before each ends
    (its statistics count no disconnect), and every record is acknowledged in order."""
    broker, _, ports = secured
    topic = uniq("reauth")
    create_topic(broker.bootstrap, topic)
    conf = {"bootstrap.servers": f"127.0.0.1:{ports['SASL_PLAINTEXT']}", "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "PLAIN", "sasl.username": "bob", "sasl.password": "bob-secret"}
    errors: list[str] = []
    stats: list[dict[str, Any]] = []
    p = Producer({**conf, "linger.ms": 0, "error_cb": lambda e: errors.append(str(e)), "statistics.interval.ms": 200,
                  "stats_cb": lambda s: stats.append(json.loads(s)), **QUIET})
    acked: list[int] = []
    started = time.monotonic()
    i = 0
    while time.monotonic() - started < 10.0:  # across two re-authentications of 5 s sessions
        p.produce(topic, value=b"%d" % i,
                  on_delivery=lambda err, msg: acked.append(msg.offset()) if err is None else None)
        i += 1
        p.flush(10)
    p.poll(0.5)  # one more statistics report
    assert acked == list(range(i)) and i > 10 and errors == []
    (node,) = [b for b in stats[-1]["brokers"].values() if b["nodeid"] == 1]
    assert (node["connects"], node["disconnects"]) == (1, 0)


def oauth_conf(ports: dict[str, int], certs: Any, **extra: Any) -> dict[str, Any]:
    return {"bootstrap.servers": f"127.0.0.1:{ports['SASL_SSL']}", "security.protocol": "SASL_SSL",
            "ssl.ca.location": str(certs.ca), "sasl.mechanism": "OAUTHBEARER", **extra}


def test_oauthbearer_with_librdkafkas_unsecured_tokens(secured: Any) -> None:
    broker, certs, ports = secured
    topic = uniq("oauth")
    create_topic(broker.bootstrap, topic)
    conf = oauth_conf(ports, certs, **{"enable.sasl.oauthbearer.unsecure.jwt": True,
                                       "sasl.oauthbearer.config": "principal=alice scope=kafka lifeSeconds=600"})
    assert delivered(conf, topic, 2) == [(None, 0), (None, 1)]


def _unsecured_jwt(claims: dict[str, Any]) -> str:
    def b64(obj: Any) -> str:
        return base64.urlsafe_b64encode(json.dumps(obj).encode()).decode().rstrip("=")
    return f"{b64({'alg': 'none'})}.{b64(claims)}."


@pytest.mark.parametrize("expires_in_s, scope, status", [
    (-60, "kafka", '{"status":"invalid_token"}'),  # expired
    (600, "other", '{"status":"insufficient_scope", "scope":"[kafka]"}'),
], ids=["expired", "out-of-scope"])
def test_an_expired_or_out_of_scope_token_is_refused_with_its_status(secured: Any, expires_in_s: int, scope: str,
                                                                     status: str) -> None:
    broker, certs, ports = secured
    topic = uniq("oauth-denied")
    create_topic(broker.bootstrap, topic)
    # made when the test runs: a token made at collection may have expired by then
    jwt = _unsecured_jwt({"sub": "alice", "exp": time.time() + expires_in_s, "scope": scope})
    # the client is told the token lasts (librdkafka refuses to send one it knows has expired)
    conf = oauth_conf(ports, certs, oauth_cb=lambda _config: (jwt, time.time() + 600, "alice"))
    errors = auth_errors(conf, topic)
    assert any("SASL authentication error" in e and status in e for e in errors), errors
    assert watermarks(broker.bootstrap, TopicPartition(topic, 0)) == (0, 0)
