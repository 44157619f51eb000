"""Kafka's own tools and Java clients against a secured minikafka (issue 21): kafka-configs.sh adds
SCRAM users, kafka-acls.sh (over SASL_SSL with SCRAM-SHA-512, as the admin) grants and lists ACLs,
and the Java producer (kafka-producer-perf-test, transactional) writes as the granted user over
SASL_SSL and is refused where it has no ACL. Skipped where Java (or Maven for a first jar fetch) is
missing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from clients import create_topic, uniq, watermarks
from conftest import start_secured
from confluent_kafka import TopicPartition
from confluent_kafka.admin import (
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    ResourcePatternType,
    ResourceType,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialUpsertion,
)
from kafka_ref import jars_or_skip, kafka_configs, kafka_tool

from minikafka.security.certs import make_certs
from minikafka.testing import free_port

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Any:
    jars_or_skip("kafka-acls")
    tmp = tmp_path_factory.mktemp("java-security")
    certs = make_certs(tmp / "certs")
    port = free_port()
    broker = start_secured(tmp / "data", {
        "listeners": f"PLAINTEXT://127.0.0.1:0,SASL_SSL://127.0.0.1:{port}",
        "sasl.enabled.mechanisms": "SCRAM-SHA-512",
        **certs.broker_properties(),
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "super.users": "User:admin;User:ANONYMOUS",  # ANONYMOUS: the PLAINTEXT listener, for set-up
    })

    def client_config(user: str) -> Path:
        path = tmp / f"{user}.properties"
        path.write_text("\n".join([
            "security.protocol=SASL_SSL", "sasl.mechanism=SCRAM-SHA-512",
            "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required "
            f'username="{user}" password="{user}-secret";',
            "ssl.truststore.type=PEM", f"ssl.truststore.location={certs.ca}", ""]))
        return path

    done = kafka_configs(broker.bootstrap, "--alter", "--entity-type", "users", "--entity-name", "alice",
                         "--add-config", "SCRAM-SHA-512=[iterations=8192,password=alice-secret]")
    assert done.returncode == 0, done.stderr
    a = AdminClient({"bootstrap.servers": broker.bootstrap})  # the admin's credential: one JVM less
    for f in a.alter_user_scram_credentials([UserScramCredentialUpsertion(
            "admin", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 8192), b"admin-secret")]).values():
        f.result(30)
    yield broker, f"127.0.0.1:{port}", client_config
    broker.stop()


def acls(sasl: str, config: Path, *args: str) -> Any:
    return kafka_tool("org.apache.kafka.tools.AclCommand", "--bootstrap-server", sasl, "--command-config",
                      str(config), *args)


def perf(sasl: str, config: Path, topic: str, *extra: str, records: int = 50) -> Any:
    return kafka_tool("org.apache.kafka.tools.ProducerPerformance", "--topic", topic, "--num-records", str(records),
                      "--record-size", "100", "--throughput", "-1", "--producer.config", str(config),
                      "--producer-props", f"bootstrap.servers={sasl}", "max.block.ms=15000",
                      "delivery.timeout.ms=20000", "request.timeout.ms=10000", *extra, timeout=120)


def test_kafka_acls_grants_and_the_java_producer_writes_exactly_where_granted(secured: Any) -> None:
    broker, sasl, client_config = secured
    admin, alice = client_config("admin"), client_config("alice")
    topic, other, tid = uniq("java-granted"), uniq("java-denied"), uniq("java-tid")
    create_topic(broker.bootstrap, topic)
    create_topic(broker.bootstrap, other)

    granted = acls(sasl, admin, "--add", "--allow-principal", "User:alice", "--operation", "Write",
                   "--topic", topic, "--transactional-id", tid)
    assert granted.returncode == 0, granted.stderr
    listed = acls(sasl, admin, "--list", "--topic", topic)
    assert listed.returncode == 0 and "principal=User:alice" in listed.stdout and "operation=WRITE" in listed.stdout, \
        listed.stdout + listed.stderr

    sent = perf(sasl, alice, topic, "--transactional-id", tid, "--transaction-duration-ms", "100")
    assert sent.returncode == 0 and "50 records sent" in sent.stdout, sent.stdout + sent.stderr
    low, high = watermarks(broker.bootstrap, TopicPartition(topic, 0))
    assert high >= 51  # 50 records and at least one commit marker

    # one record: the Java producer spends about a second on each refused send, as against Kafka
    refused = perf(sasl, alice, other, records=1)
    assert "TopicAuthorizationException" in refused.stdout + refused.stderr, refused.stdout + refused.stderr
    assert watermarks(broker.bootstrap, TopicPartition(other, 0)) == (0, 0)

    removed = acls(sasl, admin, "--remove", "--force", "--allow-principal", "User:alice", "--operation", "Write",
                   "--topic", topic)
    assert removed.returncode == 0, removed.stderr
    everything = AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY, "User:alice", None,
                                  AclOperation.ANY, AclPermissionType.ANY)
    a = AdminClient({"bootstrap.servers": broker.bootstrap})  # kept alive while its future waits
    left = a.describe_acls(everything).result(30)
    assert [(b.restype, b.name) for b in left] == [(ResourceType.TRANSACTIONAL_ID, tid)]
