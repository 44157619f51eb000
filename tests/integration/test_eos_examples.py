"""The worked example (issue 20, item 4): examples/eos_copier.py under named fault scenarios, each
checked by the exactly-once checker, and its broken variant, which the checker catches."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from clients import create_topic, produce_all, uniq
from confluent_kafka import Producer

from minikafka.eos_check import check_eos
from minikafka.testing import assert_exactly_once

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
import eos_copier  # noqa: E402

pytestmark = pytest.mark.integration

RECORDS = 300


def topics(bootstrap: str) -> tuple[str, str]:
    src, dst = uniq("orders"), uniq("orders-copy")
    create_topic(bootstrap, src, 3)
    create_topic(bootstrap, dst, 3)
    produce_all(Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True}), src,
                ({"key": b"customer-%d" % (i % 7), "value": b"order-%04d" % i} for i in range(RECORDS)))
    return src, dst


@pytest.mark.parametrize("scenario", ["lost_produce_ack", "lost_end_txn_response", "coordinator_loading",
                                      "slow_list_offsets"])
def test_the_copier_stays_exactly_once_under(broker_factory, scenario):
    """The broker runs its invariant monitor too: no scenario may make it break one."""
    kafka_broker = broker_factory(invariants=True)
    src, dst = topics(kafka_broker.bootstrap)
    txn_id = uniq("copier")
    aim = {"topic": dst} if scenario == "lost_produce_ack" else {} if scenario == "slow_list_offsets" else {
        "transactional_id": txn_id}
    rules = kafka_broker.faults.scenario(scenario, count=2, **aim)
    # half the input, stopped as if killed; then a new run of the same transactional id finishes it;
    # late offset answers (slow_list_offsets: 2 s each) must not pass for the end of the input
    idle = 6 if scenario == "slow_list_offsets" else 2
    eos_copier.copy(kafka_broker.bootstrap, src, dst, "copier", txn_id, stop_after=2,
                    client_config={"socket.timeout.ms": 3000}, idle_polls=idle)
    eos_copier.copy(kafka_broker.bootstrap, src, dst, "copier", txn_id, client_config={"socket.timeout.ms": 3000},
                    idle_polls=idle)
    fired = {r["id"]: r["fired"] for r in kafka_broker.faults.list()}
    assert sum(fired[r["id"]] for r in rules) >= 1, f"{scenario} never struck: {kafka_broker.faults.list()}"
    report = assert_exactly_once(kafka_broker.bootstrap, src, dst, key_by="value")
    assert (report.inputs, report.outputs) == (RECORDS, RECORDS)
    inv = kafka_broker.faults.invariants()
    assert sum(inv["violations"].values()) == 0, [v["detail"] for v in inv["recent"]]


def test_the_broken_copier_is_caught(kafka_broker):
    """Offsets committed outside the transaction, and a stop between the transaction and them:
    the checker names the duplicated records and the transactional id that wrote them."""
    src, dst = topics(kafka_broker.bootstrap)
    txn_id = uniq("broken")
    eos_copier.copy(kafka_broker.bootstrap, src, dst, "broken", txn_id, mode="commit-after", stop_after=2, idle_polls=2)
    eos_copier.copy(kafka_broker.bootstrap, src, dst, "broken", txn_id, mode="commit-after", idle_polls=2)
    report = check_eos(kafka_broker.bootstrap, src, dst, key_by="value")
    assert not report.ok and report.count("lost") == 0
    dups = [f for f in report.findings if f.kind == "duplicated"]
    assert dups and all(len(f.records) == 2 for f in dups)
    assert {r.get("transactional_id") for f in dups for r in f.records} == {txn_id}

