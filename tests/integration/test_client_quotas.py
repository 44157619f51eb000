"""Client quotas end to end: set with Kafka's own kafka-configs tool (and AlterClientQuotas on the
wire), kept across kill -9, and enforced on confluent-kafka clients: producers and consumers get
throttle times (librdkafka's throttle_cb) and lose nothing; controller mutations are refused
with THROTTLING_QUOTA_EXCEEDED once used up; new connections beyond connection_creation_rate
are closed.

The enforcement tests run the broker with two one-second quota windows (quota.window.num=2), so
a rate is measured over one second rather than Kafka's default ten and the tests stay short.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Sequence

from clients import consumer, create_topic, producer, uniq
from kafka_ref import kafka_configs
from kio.schema.alter_client_quotas.v1.request import AlterClientQuotasRequest, EntityData, EntryData, OpData
from kio.schema.describe_client_quotas.v1.request import DescribeClientQuotasRequest
from rawclient import ConnectionClosed, RawClient, api_versions_v3, create_topics_v7

from minikafka.protocol.errors import ErrorCode

SHORT_WINDOWS = {"quota.window.num": "2", "quota.window.size.seconds": "1"}


def _alter(bootstrap: str, entity: Sequence[tuple[str, str | None]], **quotas: float | None) -> None:
    req = AlterClientQuotasRequest(entries=(EntryData(
        entity=tuple(EntityData(entity_type=t, entity_name=n) for t, n in entity),
        ops=tuple(OpData(key=k, value=0.0 if v is None else float(v), remove=v is None) for k, v in quotas.items()),
    ),), validate_only=False)
    with RawClient.connect(bootstrap) as c:
        resp = c.request(req, api_version=1)
    assert [(e.error_code, e.error_message) for e in resp.entries] == [(ErrorCode.none, None)]


def _describe(bootstrap: str) -> dict[tuple[tuple[str, str | None], ...], dict[str, float]]:
    with RawClient.connect(bootstrap) as c:
        resp = c.request(DescribeClientQuotasRequest(components=(), strict=False), api_version=1)
    assert resp.error_code == ErrorCode.none
    return {tuple((e.entity_type, e.entity_name) for e in entry.entity): {v.key: v.value for v in entry.values}
            for entry in resp.entries}


def test_kafka_configs_sets_describes_and_removes_client_quotas(kafka_broker) -> None:
    b = kafka_broker.bootstrap
    client = uniq("quota-client")
    done = kafka_configs(b, "--alter", "--entity-type", "clients", "--entity-name", client, "--add-config",
                         "producer_byte_rate=1024,consumer_byte_rate=2048,request_percentage=12.5")
    assert done.returncode == 0, done.stderr
    described = kafka_configs(b, "--describe", "--entity-type", "clients", "--entity-name", client)
    # The order is Kafka's (HashMaps on both sides): the broker must list the values as Kafka does.
    assert described.stdout.strip() == (f"Quota configs for client-id '{client}' are consumer_byte_rate=2048.0, "
                                        "request_percentage=12.5, producer_byte_rate=1024.0")
    refused = kafka_configs(b, "--alter", "--entity-type", "clients", "--entity-name", client, "--add-config",
                            "producer_byte_rate=1.5")
    assert refused.returncode != 0
    assert "InvalidRequestException: producer_byte_rate cannot be a fractional value." in refused.stderr
    removed = kafka_configs(b, "--alter", "--entity-type", "clients", "--entity-name", client, "--delete-config",
                            "producer_byte_rate,consumer_byte_rate,request_percentage")
    assert removed.returncode == 0, removed.stderr
    described = kafka_configs(b, "--describe", "--entity-type", "clients", "--entity-name", client)
    assert described.stdout.strip() == ""  # an entity without quotas is not listed at all


def test_kafka_configs_user_quotas(kafka_broker) -> None:
    """Describing users also asks for their SCRAM credentials (DescribeUserScramCredentials)."""
    b = kafka_broker.bootstrap
    user = uniq("quota-user")
    done = kafka_configs(b, "--alter", "--entity-type", "users", "--entity-name", user,
                         "--entity-type", "clients", "--entity-default", "--add-config", "producer_byte_rate=4096")
    assert done.returncode == 0, done.stderr
    done = kafka_configs(b, "--alter", "--entity-type", "users", "--entity-name", user, "--add-config",
                         "consumer_byte_rate=100")
    assert done.returncode == 0, done.stderr
    described = kafka_configs(b, "--describe", "--entity-type", "users", "--entity-name", user)
    assert described.returncode == 0, described.stderr
    assert described.stdout.strip() == f"Quota configs for user-principal '{user}' are consumer_byte_rate=100.0"
    described = kafka_configs(b, "--describe", "--entity-type", "users", "--entity-name", user,
                              "--entity-type", "clients", "--entity-default")
    assert described.stdout.strip() == (f"Quota configs for user-principal '{user}', the default client-id are "
                                        "producer_byte_rate=4096.0")


def test_quotas_are_kept_across_kill9(broker_factory) -> None:
    broker = broker_factory()
    _alter(broker.bootstrap, [("user", None), ("client-id", "c1")], producer_byte_rate=4096)
    _alter(broker.bootstrap, [("ip", "127.0.0.1")], connection_creation_rate=100)
    before = _describe(broker.bootstrap)
    assert before == {(("user", None), ("client-id", "c1")): {"producer_byte_rate": 4096.0},
                      (("ip", "127.0.0.1"),): {"connection_creation_rate": 100.0}}
    broker.restart(hard=True)
    assert _describe(broker.bootstrap) == before


def _produce(bootstrap: str, topic: str, client_id: str, n: int) -> list[float]:
    throttles: list[float] = []
    p = producer(bootstrap, **{"client.id": client_id, "linger.ms": 5, "batch.size": 16384,
                               "throttle_cb": lambda ev: throttles.append(ev.throttle_time)})
    for i in range(n):
        p.produce(topic, key=str(i).encode(), value=b"x" * 1000, partition=0)
        p.poll(0)
    assert p.flush(60) == 0
    return throttles


def _consume_keys(bootstrap: str, topic: str, n: int, client_id: str) -> tuple[list[bytes], list[float]]:
    """The keys of the first n records (as a new group reads them) and the throttle times seen."""
    throttles: list[float] = []
    c = consumer(bootstrap, **{"group.id": uniq("g"), "client.id": client_id,
                               "throttle_cb": lambda ev: throttles.append(ev.throttle_time)})
    c.subscribe([topic])
    keys: list[bytes] = []
    deadline = time.monotonic() + 90
    while len(keys) < n and time.monotonic() < deadline:
        m = c.poll(0.5)
        if m is not None and not m.error():
            keys.append(m.key())
    c.close()
    return keys, throttles


def test_a_producer_over_its_byte_rate_is_throttled_and_loses_nothing(broker_factory) -> None:
    broker = broker_factory(overrides=SHORT_WINDOWS)
    topic = uniq("quota-produce")
    create_topic(broker.bootstrap, topic, 1)
    slow = uniq("slow-producer")
    _alter(broker.bootstrap, [("client-id", slow)], producer_byte_rate=20_000)
    assert _produce(broker.bootstrap, topic, uniq("free-producer"), 100) == []  # no quota: never throttled
    throttles = _produce(broker.bootstrap, topic, slow, 100) + _produce(broker.bootstrap, topic, slow, 100)
    assert throttles and max(throttles) > 0
    keys, _ = _consume_keys(broker.bootstrap, topic, 300, uniq("reader"))
    assert keys == [str(i).encode() for i in range(100)] * 3  # every record once, in order


def test_a_consumer_over_its_byte_rate_is_throttled_and_reads_everything(broker_factory) -> None:
    broker = broker_factory(overrides=SHORT_WINDOWS)
    topic = uniq("quota-fetch")
    create_topic(broker.bootstrap, topic, 1)
    assert _produce(broker.bootstrap, topic, uniq("free-producer"), 150) == []
    slow = uniq("slow-consumer")
    _alter(broker.bootstrap, [("client-id", slow)], consumer_byte_rate=50_000)
    keys, throttles = _consume_keys(broker.bootstrap, topic, 150, slow)
    assert keys == [str(i).encode() for i in range(150)]
    assert throttles and max(throttles) > 0


def test_controller_mutations_beyond_the_rate_are_refused(kafka_broker) -> None:
    broker = kafka_broker
    admin_id = uniq("topic-admin")
    # 1 partition mutation per second: a burst of 11 (11 one-second windows), then refusals.
    _alter(broker.bootstrap, [("client-id", admin_id)], controller_mutation_rate=1)
    results = []
    with RawClient.connect(broker.bootstrap, client_id=admin_id) as c:
        for _ in range(6):  # 5 partitions each (Kafka applies a new quota a moment after acking it)
            resp = c.request(create_topics_v7(uniq("mut"), partitions=5), api_version=7)
            results.append((resp.topics[0].error_code, resp.topics[0].error_message, resp.throttle_time))
            if resp.topics[0].error_code != ErrorCode.none:
                break
    admitted = [r for r in results if r[0] == ErrorCode.none]
    assert len(admitted) >= 3  # 15 partitions: the burst is used up within the third request
    assert all(t.total_seconds() == 0 for _, _, t in admitted)  # strict: only a refusal is throttled
    code, message, throttle = results[-1]
    assert (code, message) == (ErrorCode.throttling_quota_exceeded, None)
    # The debt of 4 partitions at 1/s, less what time paid back (all of a second, on a busy machine).
    assert throttle.total_seconds() > 0
    with RawClient.connect(broker.bootstrap, client_id=uniq("other-admin")) as c:  # others are not limited
        assert c.request(create_topics_v7(uniq("mut"), partitions=20), api_version=7).topics[0].error_code \
            == ErrorCode.none


def test_connections_beyond_the_ip_creation_rate_are_closed(kafka_broker) -> None:
    broker = kafka_broker
    _alter(broker.bootstrap, [("ip", "127.0.0.1")], connection_creation_rate=1)  # 10 per 10 s window
    outcomes: list[str] = []
    opened: list[RawClient] = []
    try:
        for _ in range(13):
            c = RawClient.connect(broker.bootstrap)
            opened.append(c)
            try:
                c.request(api_versions_v3(), api_version=3, timeout=30)
                outcomes.append("answered")
            except (ConnectionClosed, OSError, socket.timeout):
                outcomes.append("closed")
    finally:
        for c in opened:
            c.close()
        # The broker may be shared (make conformance): lift the quota, once it lets us in again.
        deadline = time.monotonic() + 30
        while True:
            try:
                _alter(broker.bootstrap, [("ip", "127.0.0.1")], connection_creation_rate=None)
                break
            except (ConnectionClosed, OSError):
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.5)
    # The first ten fit the rate; then each new connection is held for its throttle time (about
    # a second) and closed unanswered, which keeps the rate at the quota.
    assert outcomes[:10] == ["answered"] * 10
    assert outcomes[10:] == ["closed"] * 3
