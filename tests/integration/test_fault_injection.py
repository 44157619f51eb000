"""Fault rules on the running broker (issue 20), driven by confluent-kafka over real sockets.

Each action and named scenario is set through the control endpoint (`kafka_broker.faults`, the
fixture's client of it) and must do what Kafka's clients meet in the wild: an error answer, a lost
answer, a late answer, a dropped connection, a crash at a step, stalled markers, a failing
transaction log. What the client then does is Kafka's contract (retry, re-find the coordinator,
deduplicate by sequence), so every test ends on the data: each record exactly once, nothing
aborted visible. minikafka only: Kafka has no such endpoint (the tests skip against it).
"""

from __future__ import annotations

import http.client
import json
import socket
import subprocess
import sys
import time

import pytest
from clients import create_topic, end_position, read_to_eof, uniq, wait_until
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from txnclients import close_quietly, txn_producer

from minikafka.testing import free_port

pytestmark = pytest.mark.integration


def committed(bootstrap: str, topic: str, partitions: int = 1) -> list[bytes | None]:
    return [r[4] for r in read_to_eof(bootstrap, [(topic, p) for p in range(partitions)], "read_committed")]


@pytest.mark.minikafka_in_process
def test_error_rule_answers_with_the_code_and_does_nothing(kafka_broker):
    """NOT_COORDINATOR on the first two EndTxn: the producer looks the coordinator up again and
    retries; the commit happens once."""
    topic = uniq("fault-error")
    create_topic(kafka_broker.bootstrap, topic)
    rule = kafka_broker.faults.add("error", api="EndTxn", error_code="NOT_COORDINATOR", count=2)
    p = txn_producer(kafka_broker.bootstrap, uniq("t"))
    p.begin_transaction()
    p.produce(topic, b"once")
    p.commit_transaction(30)
    assert kafka_broker.faults.get(rule["id"])["fired"] == 2
    assert kafka_broker.faults.get(rule["id"])["exhausted"] is True
    assert committed(kafka_broker.bootstrap, topic) == [b"once"]


def test_lost_end_txn_response_commits_once(kafka_broker):
    """The commit is carried out and its answer lost: the producer's EndTxn times out and is
    retried, the coordinator answers it as the same commit, and the next transaction runs."""
    topic = uniq("fault-endtxn")
    create_topic(kafka_broker.bootstrap, topic)
    txn_id = uniq("t")
    rules = kafka_broker.faults.scenario("lost_end_txn_response", transactional_id=txn_id)
    assert [r["action"] for r in rules] == ["drop_response"]
    p = txn_producer(kafka_broker.bootstrap, txn_id, **{"socket.timeout.ms": 2000})
    p.begin_transaction()
    p.produce(topic, b"first")
    p.commit_transaction(60)
    p.begin_transaction()
    p.produce(topic, b"second")
    p.commit_transaction(30)
    assert kafka_broker.faults.get(rules[0]["id"])["fired"] == 1
    assert committed(kafka_broker.bootstrap, topic) == [b"first", b"second"]


def test_lost_produce_ack_is_retried_without_duplicates(kafka_broker):
    """An idempotent producer's first Produce is appended and its answer dropped: the retry is
    answered as a duplicate, nothing is appended twice, nothing is lost, order is kept."""
    topic = uniq("fault-produce")
    create_topic(kafka_broker.bootstrap, topic)
    rule = kafka_broker.faults.scenario("lost_produce_ack", topic=topic)[0]
    p = Producer({"bootstrap.servers": kafka_broker.bootstrap, "enable.idempotence": True, "linger.ms": 20,
                  "socket.timeout.ms": 2000, "message.timeout.ms": 60000})
    errors = []
    for i in range(50):
        p.produce(topic, str(i).encode(), on_delivery=lambda err, _m: err and errors.append(err))
    assert p.flush(60) == 0 and errors == []
    assert kafka_broker.faults.get(rule["id"])["fired"] == 1
    values = [r[4] for r in read_to_eof(kafka_broker.bootstrap, [(topic, 0)], "read_uncommitted")]
    assert values == [str(i).encode() for i in range(50)]


def test_connections_closed_before_and_after_the_work(kafka_broker):
    """close_connection_before: the request is never carried out (the client reconnects and asks
    again); close_connection_after: it is, and its answer is lost with the connection."""
    topic = uniq("fault-close")
    before = kafka_broker.faults.add("close_connection_before", api="CreateTopics", count=1)
    admin = AdminClient({"bootstrap.servers": kafka_broker.bootstrap})
    with pytest.raises(KafkaException):  # librdkafka reports the lost connection, it does not resend
        admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(30)
    assert kafka_broker.faults.get(before["id"])["fired"] == 1
    assert topic not in admin.list_topics(timeout=30).topics  # never carried out
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(30)
    after = kafka_broker.faults.add("close_connection_after", api="Produce", topic=topic, partition=0, count=1)
    p = Producer({"bootstrap.servers": kafka_broker.bootstrap, "enable.idempotence": True, "linger.ms": 20})
    for i in range(20):
        p.produce(topic, str(i).encode(), partition=0)
    assert p.flush(60) == 0
    assert kafka_broker.faults.get(after["id"])["fired"] == 1
    values = [r[4] for r in read_to_eof(kafka_broker.bootstrap, [(topic, 0)], "read_uncommitted")]
    assert values == [str(i).encode() for i in range(20)]


def test_delay_holds_the_answer_back(kafka_broker):
    topic = uniq("fault-delay")
    create_topic(kafka_broker.bootstrap, topic)
    rule = kafka_broker.faults.scenario("slow_list_offsets", delay_ms=600, count=1)[0]
    assert rule["delay_ms"] == 600 and rule["api"] == "ListOffsets"
    started = time.monotonic()
    assert end_position(kafka_broker.bootstrap, topic, 0, "read_uncommitted") == 0
    assert time.monotonic() - started >= 0.6  # a lower bound: the answer waited at least this long
    assert kafka_broker.faults.get(rule["id"])["fired"] == 1


def test_stalled_markers_hold_the_last_stable_offset(kafka_broker):
    """While markers are held the committed transaction stays in PrepareCommit: read_committed
    readers stop at its first offset; once the rule is removed the markers go out and the
    records become visible."""
    topic = uniq("fault-markers")
    create_topic(kafka_broker.bootstrap, topic)
    rule = kafka_broker.faults.scenario("stalled_markers", topic=topic)[0]
    p = txn_producer(kafka_broker.bootstrap, uniq("t"))
    p.begin_transaction()
    p.produce(topic, b"held")
    p.commit_transaction(30)  # EndTxn answers once PrepareCommit is in the log
    assert end_position(kafka_broker.bootstrap, topic, 0, "read_uncommitted") == 1
    assert end_position(kafka_broker.bootstrap, topic, 0, "read_committed") == 0
    wait_until(lambda: kafka_broker.faults.get(rule["id"])["fired"] >= 2, 10, "the coordinator retried the marker")
    kafka_broker.faults.remove(rule["id"])
    wait_until(lambda: end_position(kafka_broker.bootstrap, topic, 0, "read_committed") == 2, 30,
               "the marker written once the rule is gone")
    assert committed(kafka_broker.bootstrap, topic) == [b"held"]


@pytest.mark.parametrize("coordinator_error", ["coordinator_loading", "not_coordinator"])
def test_failing_transaction_log_and_coordinator_errors_are_retried(kafka_broker, coordinator_error):
    """fail_txn_log_append: the coordinator cannot persist; coordinator_loading / not_coordinator:
    it answers COORDINATOR_LOAD_IN_PROGRESS / NOT_COORDINATOR (the client backs off, or looks the
    coordinator up again). The producer retries through both and commits once."""
    topic = uniq("fault-txnlog")
    create_topic(kafka_broker.bootstrap, topic)
    txn_id = uniq("t")
    failing = kafka_broker.faults.scenario("txn_log_unavailable", count=2)[0]
    loading = kafka_broker.faults.scenario(coordinator_error, transactional_id=txn_id, count=1)
    assert {r["api"] for r in loading} == {"InitProducerId", "AddPartitionsToTxn", "AddOffsetsToTxn", "EndTxn",
                                          "TxnOffsetCommit"}
    p = txn_producer(kafka_broker.bootstrap, txn_id)
    p.begin_transaction()
    p.produce(topic, b"through")
    p.commit_transaction(30)
    fired = {r["id"]: r["fired"] for r in kafka_broker.faults.list()}
    assert fired[failing["id"]] == 2
    assert [fired[r["id"]] for r in loading if r["api"] in ("InitProducerId", "EndTxn")] == [1, 1]
    assert committed(kafka_broker.bootstrap, topic) == [b"through"]


def test_crash_at_a_step_set_on_the_running_broker(broker_factory):
    """crash_at through the endpoint, as MINIKAFKA_CRASH_AT at start: the broker exits (137) after
    PrepareCommit; restarted, it completes the commit, and a new producer of the id proceeds."""
    broker = broker_factory()
    topic = uniq("fault-crash")
    create_topic(broker.bootstrap, topic, 2)
    txn_id = uniq("t")
    broker.faults.scenario("crash_after_prepare_commit")
    p = txn_producer(broker.bootstrap, txn_id, **{"socket.timeout.ms": 2000})
    p.begin_transaction()
    p.produce(topic, b"a", partition=0)
    p.produce(topic, b"b", partition=1)
    assert p.flush(10) == 0
    with pytest.raises(KafkaException):
        p.commit_transaction(3)
    assert broker.proc is not None and broker.proc.wait(30) == 137
    broker.restart()
    txn_producer(broker.bootstrap, txn_id)  # fences the old producer; the commit was decided
    assert sorted(committed(broker.bootstrap, topic, 2)) == [b"a", b"b"]


def _http(port: int, method: str, path: str, body: object | None = None) -> tuple[int, object]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.request(method, path, body=None if body is None else json.dumps(body))
        r = conn.getresponse()
        return r.status, json.loads(r.read())
    finally:
        conn.close()


@pytest.mark.minikafka_in_process
def test_the_control_endpoint_speaks_plain_http(kafka_broker):
    """Any language can drive it: JSON over HTTP, clear refusals, rules listed with their counts."""
    port = kafka_broker.control_port
    status, answer = _http(port, "POST", "/faults", [{"action": "delay", "delay_ms": 5, "api": "Fetch"},
                                                     {"action": "explode"}])
    assert status == 400 and "action must be one of" in answer["error"]
    assert _http(port, "GET", "/faults") == (200, {"rules": []})  # all or none
    status, answer = _http(port, "POST", "/faults", {"action": "error", "api": 22, "error_code": 51, "count": 1})
    assert status == 201
    rule = answer["rules"][0]
    assert (rule["api"], rule["error_code"], rule["count"]) == ("InitProducerId", "CONCURRENT_TRANSACTIONS", 1)
    assert _http(port, "GET", "/faults")[1]["rules"][0]["fired"] == 0
    assert _http(port, "DELETE", f"/faults/{rule['id']}") == (200, {"removed": rule["id"]})
    assert _http(port, "DELETE", f"/faults/{rule['id']}")[0] == 404
    status, answer = _http(port, "POST", "/faults", {"scenario": "no_such_thing"})
    assert status == 400 and "lost_end_txn_response" in answer["error"]
    names = {s["name"] for s in _http(port, "GET", "/scenarios")[1]["scenarios"]}
    assert {"lost_end_txn_response", "lost_produce_ack", "stalled_markers", "slow_list_offsets"} <= names
    assert _http(port, "DELETE", "/faults") == (200, {"cleared": 0})
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:  # not HTTP at all
        s.sendall(b"hello\r\n\r\n")
        assert s.recv(4096).startswith(b"HTTP/1.1 400 ")
    status, answer = _http(port, "POST", "/clock", {"advance_ms": -1})
    assert status == 400 and "forward only" in answer["error"]


def test_the_control_endpoint_refuses_a_non_loopback_address(tmp_path):
    done = subprocess.run([sys.executable, "-m", "minikafka", "serve", "--port", str(free_port()),
                           "--data-dir", str(tmp_path / "d"), "--control-port", "0", "--control-host", "0.0.0.0"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert "loopback addresses only" in done.stderr
    assert not (tmp_path / "d").exists()  # refused before anything was made


def test_a_fenced_producer_gets_a_fatal_error_and_a_new_instance_goes_on(kafka_broker):
    """producer_fenced: what a zombie meets. The error is fatal (the instance must close); once the
    rules are cleared, a new instance of the same transactional id commits. librdkafka meets it at
    AddPartitionsToTxn (answered per partition: the versions it speaks have no other error)."""
    topic, txn_id = uniq("fault-fenced"), uniq("t")
    create_topic(kafka_broker.bootstrap, topic)
    rules = kafka_broker.faults.scenario("producer_fenced", transactional_id=txn_id)
    zombie = txn_producer(kafka_broker.bootstrap, txn_id)
    zombie.begin_transaction()
    zombie.produce(topic, b"zombie")
    with pytest.raises(KafkaException) as exc:
        zombie.commit_transaction(30)
    assert exc.value.args[0].fatal(), exc.value.args[0]
    close_quietly(zombie)
    refused = next(r for r in rules if r["api"] == "AddPartitionsToTxn")
    assert kafka_broker.faults.get(refused["id"])["fired"] >= 1
    assert kafka_broker.faults.clear() == 4
    fresh = txn_producer(kafka_broker.bootstrap, txn_id)
    fresh.begin_transaction()
    fresh.produce(topic, b"fresh")
    fresh.commit_transaction(30)
    assert committed(kafka_broker.bootstrap, topic) == [b"fresh"]


def test_a_rebalance_during_the_transaction_aborts_it(kafka_broker):
    """rebalance_during_transaction: the offsets of the transaction are refused (ILLEGAL_GENERATION);
    the application aborts and does the work again, and only the second attempt is visible."""
    src, dst, group = uniq("fault-in"), uniq("fault-out"), uniq("g")
    create_topic(kafka_broker.bootstrap, src)
    create_topic(kafka_broker.bootstrap, dst)
    rule = kafka_broker.faults.scenario("rebalance_during_transaction", group_id=group)[0]
    p = txn_producer(kafka_broker.bootstrap, uniq("t"))
    offsets = [TopicPartition(src, 0, 5)]
    c = Consumer({"bootstrap.servers": kafka_broker.bootstrap, "group.id": group, "enable.auto.commit": False})
    meta = c.consumer_group_metadata()
    p.begin_transaction()
    p.produce(dst, b"first try")
    with pytest.raises(KafkaException) as exc:
        p.send_offsets_to_transaction(offsets, meta, 30)
    assert exc.value.args[0].txn_requires_abort(), exc.value.args[0]
    p.abort_transaction(30)
    p.begin_transaction()
    p.produce(dst, b"second try")
    p.send_offsets_to_transaction(offsets, meta, 30)
    p.commit_transaction(30)
    assert kafka_broker.faults.get(rule["id"])["fired"] == 1
    assert committed(kafka_broker.bootstrap, dst) == [b"second try"]
    try:
        assert c.committed([TopicPartition(src, 0)], timeout=10)[0].offset == 5
    finally:
        c.close()


def test_concurrent_transactions_are_retried_by_the_client(kafka_broker):
    """concurrent_transactions: CONCURRENT_TRANSACTIONS, as while a previous transaction's markers
    are being written; librdkafka backs off and retries InitProducerId and AddPartitionsToTxn."""
    topic, txn_id = uniq("fault-concurrent"), uniq("t")
    create_topic(kafka_broker.bootstrap, topic)
    rules = kafka_broker.faults.scenario("concurrent_transactions", transactional_id=txn_id, count=2)
    p = txn_producer(kafka_broker.bootstrap, txn_id)
    p.begin_transaction()
    p.produce(topic, b"after the retries")
    p.commit_transaction(30)
    fired = {r["id"]: r["fired"] for r in kafka_broker.faults.list()}
    assert {r["api"]: fired[r["id"]] for r in rules if r["api"] != "AddOffsetsToTxn"} == {
        "InitProducerId": 2, "AddPartitionsToTxn": 2}
    assert committed(kafka_broker.bootstrap, topic) == [b"after the retries"]
