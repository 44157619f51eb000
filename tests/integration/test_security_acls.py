"""ACLs with Kafka's StandardAuthorizer semantics (issue 21), driven by confluent-kafka over SASL.

One broker with `authorizer.class.name` set, User:admin as super user, and PLAIN users on a
SASL_PLAINTEXT listener (carol has no ACL at all); its PLAINTEXT listener serves User:ANONYMOUS,
a super user too, as Kafka in KRaft mode needs for its PLAINTEXT controller listener (the suite's
own view of the broker). The admin
creates, describes and deletes ACLs with the AdminClient (they survive a restart); a transactional
copy runs with the ACLs it needs and no more; every missing ACL is answered with Kafka's
authorization error and changes nothing; DENY wins over ALLOW.
"""

from __future__ import annotations

import contextlib
import time
from typing import Any

import pytest
from clients import future_errors, read_to_eof, uniq, watermarks
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicCollection, TopicPartition
from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    ConfigResource,
    NewTopic,
    ResourcePatternType,
    ResourceType,
)
from kio.schema.create_acls.v3.request import AclCreation, CreateAclsRequest
from kio.schema.describe_acls.v3.request import DescribeAclsRequest
from kio.schema.describe_transactions.v0.request import DescribeTransactionsRequest
from kio.schema.write_txn_markers.v1.request import WritableTxnMarker, WritableTxnMarkerTopic, WriteTxnMarkersRequest
from kio.schema.sasl_authenticate.v2.request import SaslAuthenticateRequest
from kio.schema.sasl_handshake.v1.request import SaslHandshakeRequest
from kio.static.primitive import i8, i16, i32, i64
from rawclient import RawClient
from conftest import start_secured
from txnclients import QUIET, close_quietly

from minikafka.protocol.errors import ErrorCode
from minikafka.security.certs import make_certs

from minikafka.testing import free_port

pytestmark = pytest.mark.integration

JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required '
        'user_admin="admin-pw" user_alice="alice-pw" user_bob="bob-pw" user_carol="carol-pw";')
ALLOW, DENY = AclPermissionType.ALLOW, AclPermissionType.DENY
LITERAL, PREFIXED = ResourcePatternType.LITERAL, ResourcePatternType.PREFIXED


@pytest.fixture(scope="module")
def authz(tmp_path_factory: pytest.TempPathFactory) -> Any:
    sasl, mtls = free_port(), free_port()
    certs = make_certs(tmp_path_factory.mktemp("authz-certs"), clients=("reporter",))
    overrides = {
        "listeners": f"PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:{sasl},SSL://127.0.0.1:{mtls}",
        **certs.broker_properties("SSL", client_auth="required"),
        # the certificate's subject is CN=reporter,O=minikafka: the rule makes the principal User:reporter
        "listener.name.ssl.ssl.principal.mapping.rules": "RULE:^CN=([^,]*),.*$/$1/,DEFAULT",
        "sasl.enabled.mechanisms": "PLAIN",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS,
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "super.users": "User:admin;User:ANONYMOUS",
    }
    broker = start_secured(tmp_path_factory.mktemp("authz") / "data", overrides)
    MTLS[:] = [mtls, certs]
    yield broker, sasl
    broker.stop()


MTLS: list[Any] = []  # the SSL listener's port and the certificates (set by the fixture)


def as_user(authz: Any, user: str) -> dict[str, Any]:
    _, port = authz
    return {"bootstrap.servers": f"127.0.0.1:{port}", "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "PLAIN", "sasl.username": user, "sasl.password": f"{user}-pw"}


def admin(authz: Any, user: str = "admin") -> AdminClient:
    return AdminClient({**as_user(authz, user), **QUIET})


def create_topics(authz: Any, *names: str, partitions: int = 1) -> None:
    a = admin(authz)
    errors = future_errors(a.create_topics([NewTopic(n, partitions, 1) for n in names]))
    assert set(errors.values()) == {None}, errors


def allow(authz: Any, *bindings: AclBinding) -> None:
    a = admin(authz)
    errors = future_errors(a.create_acls(list(bindings)))
    assert set(errors.values()) == {None}, errors


def acl(rtype: ResourceType, name: str, user: str, op: AclOperation, permission: AclPermissionType = ALLOW,
        pattern: ResourcePatternType = LITERAL) -> AclBinding:
    return AclBinding(rtype, name, pattern, f"User:{user}", "*", op, permission)


def produce_errors(conf: dict[str, Any], topic: str, n: int = 1) -> list[Any]:
    out: list[Any] = []
    p = Producer({**conf, "linger.ms": 0, "message.timeout.ms": 10000, **QUIET})
    for i in range(n):
        p.produce(topic, value=b"%d" % i, on_delivery=lambda err, msg: out.append(err.code() if err else None))
    p.flush(20)
    return out


def test_acls_are_created_described_deleted_and_kept_across_a_restart(authz: Any) -> None:
    broker, _ = authz
    a = admin(authz)
    topic = uniq("acl-admin")
    bindings = [acl(ResourceType.TOPIC, topic, "alice", AclOperation.READ),
                acl(ResourceType.TOPIC, "logs-", "alice", AclOperation.WRITE, pattern=PREFIXED),
                acl(ResourceType.GROUP, "g-" + topic, "alice", AclOperation.READ, DENY)]
    assert set(future_errors(a.create_acls(bindings)).values()) == {None}
    everything = AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY, "User:alice", None,
                                  AclOperation.ANY, AclPermissionType.ANY)
    assert set(bindings) <= set(a.describe_acls(everything).result(30))
    match = AclBindingFilter(ResourceType.TOPIC, "logs-app", ResourcePatternType.MATCH, None, None,
                             AclOperation.ANY, AclPermissionType.ANY)
    assert a.describe_acls(match).result(30) == [bindings[1]]

    broker.restart()  # stored in the data dir, as Kafka keeps them in its metadata log
    a = admin(authz)
    assert set(bindings) <= set(a.describe_acls(everything).result(30))
    only_topic = AclBindingFilter(ResourceType.TOPIC, topic, ResourcePatternType.LITERAL, None, None,
                                  AclOperation.ANY, AclPermissionType.ANY)
    deleted = a.delete_acls([only_topic])[only_topic].result(30)
    assert deleted == [bindings[0]]
    assert bindings[0] not in a.describe_acls(everything).result(30)
    a.delete_acls([everything])[everything].result(30)
    assert a.describe_acls(everything).result(30) == []


def test_invalid_acls_are_refused_with_kafkas_message(authz: Any) -> None:
    a = admin(authz)
    # confluent-kafka calls the CLUSTER resource type BROKER (its code 4)
    bad = AclBinding(ResourceType.BROKER, "other-cluster", LITERAL, "User:alice", "*", AclOperation.ALTER, ALLOW)
    errors = future_errors(a.create_acls([bad]))
    err = errors[bad]
    assert err is not None and err.code() == KafkaError.INVALID_REQUEST
    assert "The only valid name for the CLUSTER resource is kafka-cluster" in err.str()


def test_only_the_admin_may_manage_acls(authz: Any) -> None:
    binding = acl(ResourceType.TOPIC, "anything", "bob", AclOperation.ALL)
    bob = admin(authz, "bob")  # kept: a client collected while its future waits fails it
    err = future_errors(bob.create_acls([binding]))[binding]
    assert err is not None and err.code() == KafkaError.CLUSTER_AUTHORIZATION_FAILED
    everything = AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY, None, None,
                                  AclOperation.ANY, AclPermissionType.ANY)
    err = future_errors(bob.delete_acls([everything]))[everything]
    assert err is not None and err.code() == KafkaError.CLUSTER_AUTHORIZATION_FAILED
    # librdkafka does not surface DescribeAcls' top-level error (against Kafka neither): read it raw,
    # as carol, who has no ACL.
    with _raw_client(authz[1], "carol", "carol-pw") as c:
        resp = c.request(DescribeAclsRequest(resource_type_filter=i8(1), resource_name_filter=None,
                                             pattern_type_filter=i8(1), principal_filter=None, host_filter=None,
                                             operation=i8(1), permission_type=i8(1)), 3)
    assert (resp.error_code, resp.resources) == (ErrorCode.cluster_authorization_failed, ())


def test_a_transactional_copy_runs_with_exactly_the_acls_it_needs(authz: Any) -> None:
    source, sink, group, tid = uniq("in"), uniq("out"), uniq("copier"), uniq("tid")
    create_topics(authz, source, sink)
    p = Producer({**as_user(authz, "admin"), **QUIET})
    for i in range(20):
        p.produce(source, value=b"%d" % i)
    p.flush(20)
    allow(authz, acl(ResourceType.TOPIC, source, "alice", AclOperation.READ),
          acl(ResourceType.TOPIC, sink, "alice", AclOperation.WRITE),
          acl(ResourceType.GROUP, group, "alice", AclOperation.READ),
          acl(ResourceType.TRANSACTIONAL_ID, tid, "alice", AclOperation.WRITE))
    conf = as_user(authz, "alice")
    consumer = Consumer({**conf, "group.id": group, "enable.auto.commit": False, "auto.offset.reset": "earliest",
                         "isolation.level": "read_committed", **QUIET})
    producer = Producer({**conf, "transactional.id": tid, **QUIET})
    try:
        producer.init_transactions(30)
        consumer.subscribe([source])
        copied = 0
        while copied < 20:
            msgs = [m for m in consumer.consume(20, timeout=1.0) if not m.error()]
            if not msgs:
                continue
            producer.begin_transaction()
            for m in msgs:
                producer.produce(sink, value=m.value())
            producer.send_offsets_to_transaction(consumer.position(consumer.assignment()),
                                                 consumer.consumer_group_metadata(), 30)
            producer.commit_transaction(30)
            copied += len(msgs)
    finally:
        consumer.close()
        close_quietly(producer)
    admin_conf = {k: v for k, v in as_user(authz, "admin").items() if k != "bootstrap.servers"}
    got = read_to_eof(as_user(authz, "admin")["bootstrap.servers"], [(sink, 0)], "read_committed", **admin_conf)
    assert sorted(int(r[4]) for r in got) == list(range(20))
    c = Consumer({**as_user(authz, "admin"), "group.id": group, **QUIET})
    try:
        (tp,) = c.committed([TopicPartition(source, 0)], timeout=15)
        assert tp.offset == 20  # the group's offsets were committed in the transactions
    finally:
        c.close()


def test_each_missing_acl_gets_kafkas_error_and_changes_nothing(authz: Any) -> None:
    topic, group, tid = uniq("guarded"), uniq("g"), uniq("tid")
    create_topics(authz, topic)
    bob = as_user(authz, "bob")
    assert produce_errors(bob, topic) == [KafkaError.TOPIC_AUTHORIZATION_FAILED]
    p = Producer({**bob, "transactional.id": tid, **QUIET})
    with pytest.raises(KafkaException) as info:
        p.init_transactions(15)
    assert info.value.args[0].code() == KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    # With READ on the topic but not on the group, joining the group is refused.
    allow(authz, acl(ResourceType.TOPIC, topic, "bob", AclOperation.READ))
    c = Consumer({**bob, "group.id": group, "auto.offset.reset": "earliest", **QUIET})
    try:
        c.subscribe([topic])
        errors = []
        for _ in range(20):
            m = c.poll(0.5)
            if m is not None and m.error():
                errors.append(m.error().code())
                break
        assert errors == [KafkaError.GROUP_AUTHORIZATION_FAILED]
    finally:
        c.close()
    # Metadata shows bob only what he may describe (READ implies DESCRIBE).
    bob_admin = AdminClient({**bob, **QUIET})
    topics = bob_admin.list_topics(timeout=15).topics
    assert topic in topics and all(t == topic or t.startswith("__") is False for t in topics)
    carol = AdminClient({**as_user(authz, "carol"), **QUIET})  # no ACL at all
    assert carol.list_topics(timeout=15).topics == {}
    err = future_errors(carol.create_topics([NewTopic(uniq("nope"), 1, 1)]))
    assert [e.code() for e in err.values()] == [KafkaError.TOPIC_AUTHORIZATION_FAILED]


def test_deny_wins_over_a_prefixed_allow(authz: Any) -> None:
    base = uniq("orders")
    public, secret = f"{base}-public", f"{base}-secret"
    create_topics(authz, public, secret)
    allow(authz, acl(ResourceType.TOPIC, f"{base}-", "alice", AclOperation.WRITE, pattern=PREFIXED),
          acl(ResourceType.TOPIC, secret, "alice", AclOperation.WRITE, DENY))
    alice = as_user(authz, "alice")
    assert produce_errors(alice, public, 2) == [None, None]
    assert produce_errors(alice, secret) == [KafkaError.TOPIC_AUTHORIZATION_FAILED]


def test_a_client_certificate_is_a_principal_through_the_mapping_rules(authz: Any) -> None:
    port, certs = MTLS
    cert, key = certs.clients["reporter"]
    conf = {"bootstrap.servers": f"127.0.0.1:{port}", "security.protocol": "SSL", "ssl.ca.location": str(certs.ca),
            "ssl.certificate.location": str(cert), "ssl.key.location": str(key)}
    mine, other = uniq("reports"), uniq("payroll")
    create_topics(authz, mine, other)
    allow(authz, acl(ResourceType.TOPIC, mine, "reporter", AclOperation.WRITE))
    assert produce_errors(conf, mine, 2) == [None, None]
    assert produce_errors(conf, other) == [KafkaError.TOPIC_AUTHORIZATION_FAILED]


def test_admin_requests_are_checked_per_resource(authz: Any) -> None:
    mine, theirs = uniq("cfg-mine"), uniq("cfg-theirs")
    create_topics(authz, mine, theirs)
    allow(authz, acl(ResourceType.TOPIC, mine, "bob", AclOperation.ALTER_CONFIGS),
          acl(ResourceType.TOPIC, mine, "bob", AclOperation.DELETE))
    bob = admin(authz, "bob")
    got = future_errors(bob.describe_configs([ConfigResource(ConfigResource.Type.TOPIC, mine),
                                              ConfigResource(ConfigResource.Type.TOPIC, theirs)]))
    codes = {r.name: (e.code() if e else None) for r, e in got.items()}
    assert codes == {mine: None, theirs: KafkaError.TOPIC_AUTHORIZATION_FAILED}  # ALTER_CONFIGS implies DESCRIBE_CONFIGS
    got = future_errors(bob.delete_topics([mine, theirs], operation_timeout=15))
    assert {t: (e.code() if e else None) for t, e in got.items()} == {
        mine: None, theirs: KafkaError.TOPIC_AUTHORIZATION_FAILED}
    assert theirs in admin(authz).list_topics(timeout=15).topics  # untouched


def _raw_client(port: int, user: str = "admin", password: str = "admin-pw") -> RawClient:
    """A raw connection authenticated as `user` (SASL/PLAIN over SaslHandshake v1)."""
    c = RawClient("127.0.0.1", port)
    assert c.request(SaslHandshakeRequest(mechanism="PLAIN"), 1).error_code == ErrorCode.none
    token = b"\0" + user.encode() + b"\0" + password.encode()
    assert c.request(SaslAuthenticateRequest(auth_bytes=token), 2).error_code == ErrorCode.none
    return c


def test_acl_requests_with_invalid_values_are_refused_and_store_nothing(authz: Any) -> None:
    _, port = authz
    topic = uniq("bad-acl")
    good = dict(resource_type=i8(2), resource_name=topic, resource_pattern_type=i8(3), principal="User:alice",
                host="*", operation=i8(3), permission_type=i8(3))
    bad = [  # each refused on its own, with Kafka 4.3.1's messages
        ({**good, "resource_type": i8(99)}, "Invalid resourceType UNKNOWN"),
        ({**good, "resource_type": i8(4)}, "The only valid name for the CLUSTER resource is kafka-cluster"),
        ({**good, "resource_name": ""}, "Invalid empty resource name"),
        ({**good, "principal": "alice"}, "Could not parse principal from `alice` (no colon is present separating "
                                         "the principal type from the principal name)"),
    ]
    everything = DescribeAclsRequest(resource_type_filter=i8(1), resource_name_filter=topic, pattern_type_filter=i8(1),
                                     principal_filter=None, host_filter=None, operation=i8(1), permission_type=i8(1))
    with _raw_client(port) as c:
        resp = c.request(CreateAclsRequest(creations=tuple(AclCreation(**fields) for fields, _ in bad)), 3)
        for result, (_, message) in zip(resp.results, bad, strict=True):
            assert result.error_code == ErrorCode.invalid_request and message in (result.error_message or ""), [
                (r.error_code, r.error_message) for r in resp.results]
        assert c.request(everything, 3).resources == ()  # nothing was stored
        # ANY or MATCH, which only filters take: all of the request fails, as in Kafka
        resp = c.request(CreateAclsRequest(creations=(AclCreation(**good), AclCreation(**{**good, "operation": i8(1)}),
                                                      AclCreation(**{**good, "resource_pattern_type": i8(2)}))), 3)
        assert [(r.error_code, r.error_message) for r in resp.results] == [(ErrorCode.unknown_server_error, None)] * 3
        assert c.request(everything, 3).resources == ()
    # An UNKNOWN code (0) anywhere: the request does not parse, as in Kafka; the connection closes.
    with _raw_client(port) as c:
        c.send(CreateAclsRequest(creations=(AclCreation(**good), AclCreation(**{**good, "operation": i8(0)}))), 3)
        assert c.is_closed()
    with _raw_client(port) as c:
        c.send(DescribeAclsRequest(resource_type_filter=i8(2), resource_name_filter=topic, pattern_type_filter=i8(0),
                                   principal_filter=None, host_filter=None, operation=i8(1), permission_type=i8(1)), 3)
        assert c.is_closed()
    with _raw_client(port) as c:
        assert c.request(everything, 3).resources == ()  # not even the valid one of that request


def test_authorized_operations_are_the_principals_own(authz: Any) -> None:
    """KIP-430 with an authorizer: what a client asks to know of a topic, a group or the cluster is
    what its ACLs allow (READ implies DESCRIBE), not every operation."""
    topic, group = uniq("ops"), uniq("ops-group")
    create_topics(authz, topic)
    allow(authz, acl(ResourceType.TOPIC, topic, "bob", AclOperation.READ),
          acl(ResourceType.GROUP, group, "bob", AclOperation.DESCRIBE))
    bob = admin(authz, "bob")
    (described,) = bob.describe_topics(TopicCollection([topic]), include_authorized_operations=True).values()
    assert sorted(op.name for op in described.result(30).authorized_operations) == ["DESCRIBE", "READ"]
    cluster = bob.describe_cluster(include_authorized_operations=True).result(30)
    assert cluster.authorized_operations is None  # no operation at all: librdkafka reports None (Kafka too)
    (g,) = bob.describe_consumer_groups([group], include_authorized_operations=True).values()
    assert [op.name for op in g.result(30).authorized_operations] == ["DESCRIBE"]


def test_transaction_apis_without_acls_are_refused(authz: Any) -> None:
    """Carol has no ACL: an idempotent producer cannot get a producer id (IDEMPOTENT_WRITE on the
    cluster or WRITE on some topic is needed), DescribeTransactions does not tell her about a
    transaction, and WriteTxnMarkers (ALTER or CLUSTER_ACTION on the cluster) writes nothing."""
    topic = uniq("txn-apis")
    create_topics(authz, topic)
    errors: list[Any] = []
    p = Producer({**as_user(authz, "carol"), "enable.idempotence": True, "message.timeout.ms": 10000,
                  "error_cb": lambda e: errors.append(e.code()), **QUIET})
    p.produce(topic, value=b"x")
    deadline = time.monotonic() + 15
    while KafkaError.CLUSTER_AUTHORIZATION_FAILED not in errors and time.monotonic() < deadline:
        try:
            p.poll(0.1)
        except KafkaException as exc:  # a fatal error (no producer id) is raised from poll
            errors.append(exc.args[0].code())
    with contextlib.suppress(KafkaException):  # the producer is in a fatal state: it raises it again
        p.purge()
        p.flush(1)
    assert KafkaError.CLUSTER_AUTHORIZATION_FAILED in errors, errors
    _, port = authz
    with _raw_client(port, "carol", "carol-pw") as c:
        (state,) = c.request(DescribeTransactionsRequest(transactional_ids=(uniq("tid"),)), 0).transaction_states
        assert state.error_code == ErrorCode.transactional_id_authorization_failed
        marker = WritableTxnMarker(producer_id=i64(1), producer_epoch=i16(0), transaction_result=False,
                                   topics=(WritableTxnMarkerTopic(name=topic, partition_indexes=(i32(0),)),),
                                   coordinator_epoch=i32(0))
        (result,) = c.request(WriteTxnMarkersRequest(markers=(marker,)), 1).markers
        assert [p.error_code for t in result.topics for p in t.partitions] == [ErrorCode.cluster_authorization_failed]
    assert watermarks(authz[0].bootstrap, TopicPartition(topic, 0)) == (0, 0)  # no marker was written


def test_offsets_in_a_transaction_need_read_on_the_group(authz: Any) -> None:
    """Alice may write the transaction and its topic but not read the group: sending the consumer's
    offsets to the transaction (AddOffsetsToTxn, READ on the group) is refused with
    GROUP_AUTHORIZATION_FAILED, and the transaction can still be aborted."""
    topic, group, tid = uniq("no-group"), uniq("g"), uniq("tid")
    create_topics(authz, topic)
    allow(authz, acl(ResourceType.TOPIC, topic, "alice", AclOperation.WRITE),
          acl(ResourceType.TRANSACTIONAL_ID, tid, "alice", AclOperation.WRITE))
    consumer = Consumer({**as_user(authz, "alice"), "group.id": group, **QUIET})
    producer = Producer({**as_user(authz, "alice"), "transactional.id": tid, **QUIET})
    try:
        producer.init_transactions(30)
        producer.begin_transaction()
        producer.produce(topic, value=b"x")
        with pytest.raises(KafkaException) as info:
            producer.send_offsets_to_transaction([TopicPartition(topic, 0, 1)], consumer.consumer_group_metadata(), 30)
        assert info.value.args[0].code() == KafkaError.GROUP_AUTHORIZATION_FAILED
        producer.abort_transaction(30)
    finally:
        consumer.close()
        close_quietly(producer)
