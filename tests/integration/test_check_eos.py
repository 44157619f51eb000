"""The exactly-once checker (issue 20, item 3) on real pipelines: a consume-transform-produce
copier with confluent-kafka, run correctly and run broken, each stopped half-way as if killed and
started again. The checker must pass the correct one and name what the broken ones did.

The checker reads with minikafka's own codec, so these run against Apache Kafka too
(MINIKAFKA_TARGET=kafka): the verdicts must be the same.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from clients import create_topic, produce_all, uniq
from confluent_kafka import Consumer, Producer, TopicPartition

from minikafka.eos_check import check_eos
from minikafka.testing import assert_exactly_once

pytestmark = pytest.mark.integration

RECORDS = 60


def fill(bootstrap: str, topic: str) -> None:
    create_topic(bootstrap, topic)
    produce_all(Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True}), topic,
                ({"key": b"k%d" % (i % 3), "value": b"%03d" % i} for i in range(RECORDS)))


def copier(bootstrap: str, src: str, dst: str, group: str, txn_id: str, *, mode: str = "correct",
           stop_after: int | None = None) -> None:
    """Copy src-0 to dst in transactions of up to 10 records, upper-casing nothing: the output is
    the input. mode "correct": the offsets go into each transaction (send_offsets_to_transaction);
    "commit_after": the consumer commits them itself after each transaction, outside it; "commit_before":
    before it. stop_after: stop after that many transactions, as if killed at the worst moment
    (after a commit_after copier's transaction, before its offsets; inside a commit_before
    copier's transaction, after its offsets)."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False,
                  "auto.offset.reset": "earliest", "isolation.level": "read_committed"})
    p = Producer({"bootstrap.servers": bootstrap, "transactional.id": txn_id, "linger.ms": 5})
    try:
        p.init_transactions(30)
        c.assign([TopicPartition(src, 0)])
        done, idle = 0, 0
        while idle < 3:
            msgs = [m for m in c.consume(10, timeout=1.0) if m.error() is None]
            if not msgs:
                idle += 1
                continue
            idle = 0
            if mode == "commit_before":
                c.commit(asynchronous=False)
            p.begin_transaction()
            for m in msgs:
                p.produce(dst, key=m.key(), value=m.value())
            if mode == "correct":
                p.send_offsets_to_transaction(c.position(c.assignment()), c.consumer_group_metadata(), 30)
            if stop_after is not None and done + 1 == stop_after and mode == "commit_before":
                p.flush(10)
                return  # killed inside the transaction: its records are never committed
            p.commit_transaction(30)
            done += 1
            if stop_after is not None and done == stop_after:
                return  # killed before a commit_after copier's offsets
            if mode == "commit_after":
                c.commit(asynchronous=False)
    finally:
        c.close()


def run_twice(bootstrap: str, mode: str) -> tuple[str, str]:
    src, dst, group, txn_id = uniq("eos-in"), uniq("eos-out"), uniq("copier"), uniq("copier")
    fill(bootstrap, src)
    create_topic(bootstrap, dst)
    copier(bootstrap, src, dst, group, txn_id, mode=mode, stop_after=3)
    copier(bootstrap, src, dst, group, txn_id, mode=mode)  # started again: init_transactions fences the first
    return src, dst


def test_a_correct_copier_stopped_half_way_is_exactly_once(kafka_broker):
    src, dst = run_twice(kafka_broker.bootstrap, "correct")
    report = assert_exactly_once(kafka_broker.bootstrap, src, dst, key_by="value")
    assert (report.inputs, report.outputs) == (RECORDS, RECORDS)
    assert report.count("open") == 0


def test_offsets_committed_after_the_transaction_duplicate_a_batch(kafka_broker):
    """Stopped between its transaction and its own offset commit, the copier reads those ten
    records again and copies them again, in a new committed transaction."""
    src, dst = run_twice(kafka_broker.bootstrap, "commit_after")
    report = check_eos(kafka_broker.bootstrap, src, dst, key_by="value")
    assert not report.ok
    assert report.count("duplicated") == 10 and report.count("lost") == 0
    dup = next(f for f in report.findings if f.kind == "duplicated")
    assert len(dup.records) == 2 and all(r["outcome"] == "committed" for r in dup.records)
    with pytest.raises(AssertionError, match="NOT exactly once"):
        assert_exactly_once(kafka_broker.bootstrap, src, dst, key_by="value")


def test_offsets_committed_before_the_transaction_lose_a_batch(kafka_broker):
    """Stopped inside its transaction after committing the offsets, the copier never copies those
    ten records: the restart aborts the open transaction (init_transactions) and reads on."""
    src, dst = run_twice(kafka_broker.bootstrap, "commit_before")
    report = check_eos(kafka_broker.bootstrap, src, dst, key_by="value")
    assert report.count("lost") == 10 and report.count("duplicated") == 0
    assert report.count("aborted_visible") == 0 and report.count("open") == 0
    done = subprocess.run([sys.executable, "-m", "minikafka", "check-eos", "--bootstrap", kafka_broker.bootstrap,
                           "--input", src, "--output", dst, "--key-by", "value", "--json"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 1, done.stderr
    answer = json.loads(done.stdout)
    assert answer["ok"] is False and answer["counts"]["lost"] == 10
    assert {r["topic"] for f in answer["findings"] for r in f["records"]} == {src}  # a lost record is an input's


def test_an_open_transaction_is_reported_not_failed(kafka_broker):
    src, dst = uniq("eos-in"), uniq("eos-out")
    fill(kafka_broker.bootstrap, src)
    create_topic(kafka_broker.bootstrap, dst)
    p = Producer({"bootstrap.servers": kafka_broker.bootstrap, "transactional.id": uniq("hang")})
    p.init_transactions(30)
    p.begin_transaction()
    p.produce(dst, key=b"k0", value=b"000")
    assert p.flush(10) == 0
    report = check_eos(kafka_broker.bootstrap, src, dst, key_by="value")
    assert report.count("open") == 1 and report.count("lost") == RECORDS
    p.abort_transaction(30)
