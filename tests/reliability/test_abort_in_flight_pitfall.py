"""librdkafka's abort with a Produce in flight when the broker dies, and the copier setting that
survives it (issue 17: the cause of the hard-bounce EOS test's rare fatal fencing).

librdkafka 2.16 sends a transactional producer's messages only in the InTransaction and
BeginCommit states. abort_transaction() purges the queued messages and waits for those in flight.
If the broker dies then, the in-flight ones go back to the partition's queue to be retried, and in
BeginAbort they never leave it: the abort waits until they time out. message.timeout.ms defaults to
transaction.timeout.ms, and by that time the coordinator has aborted the transaction for its
timeout and bumped the epoch (it looks every 200 ms in the tests, as in Kafka's own), so the
abort's EndTxn is fenced and the producer is dead (a fatal error). Seen in the copier's debug log:
"Need transaction abort before beginning partition drain ... 33 message(s) timed out", then
"EndTxn returned INVALID_PRODUCER_EPOCH".

The broker's `delay` rule holds the Produce, so the abort starts with it in flight every time. With
the copier's settings (message.timeout.ms at half the transaction timeout) the messages time out
while the transaction is still the producer's: the abort completes, the producer goes on, and a
read_committed reader sees only what it committed afterwards.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable

import pytest
from clients import create_topic, read_to_eof, wait_until
from confluent_kafka import KafkaException, Producer
from copier import producer_config

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

TXN_ID = "abort-pitfall"
# The steps before the kill must fit in the Produce's hold (DELAY_MS), and the restart before the
# coordinator's timeout: wide enough for a busy machine, the messages' timeout at half of it.
TXN_TIMEOUT_MS = 12000
DELAY_MS = 10000


def _serving(p: Producer, condition: Callable[[], bool]) -> Callable[[], bool]:
    """`condition`, looked at after serving the producer's callbacks (its statistics among them)."""
    def check() -> bool:
        p.poll(0.02)
        return condition()
    return check


def _abort(p: Producer, outcome: list[str]) -> None:
    """abort_transaction() until it succeeds, as the copier does: a retriable or abortable error is
    tried again, a fatal one is the outcome."""
    for _ in range(5):
        try:
            p.abort_transaction(30)
            outcome.append("aborted")
            return
        except KafkaException as exc:
            err = exc.args[0]
            if err.fatal() or not (err.retriable() or err.txn_requires_abort()):
                outcome.append(f"failed: {err}")
                return
    outcome.append("failed: abort never succeeded")


def test_an_abort_whose_produce_is_in_flight_when_the_broker_dies_completes(broker_factory) -> None:
    broker = broker_factory()
    create_topic(broker.bootstrap, "out", 1)
    states: list[str] = []
    p = Producer({**producer_config(broker.bootstrap, TXN_ID, TXN_TIMEOUT_MS), "statistics.interval.ms": 50,
                  "stats_cb": lambda s: states.append(json.loads(s)["eos"]["txn_state"])})
    try:
        p.init_transactions(30)
        held = broker.faults.add("delay", api="Produce", transactional_id=TXN_ID, delay_ms=DELAY_MS, count=1)
        p.begin_transaction()
        p.produce("out", b"aborted", partition=0)
        wait_until(_serving(p, lambda: broker.faults.get(held["id"])["fired"] == 1), 10,
                   "the Produce to reach the broker", interval=0)

        outcome: list[str] = []
        aborting = threading.Thread(target=_abort, args=(p, outcome))
        aborting.start()
        wait_until(_serving(p, lambda: states[-1:] == ["BeginAbort"]), 10, "the abort to start", interval=0)
        broker.restart(hard=True)  # the held Produce dies with the broker
        wait_until(_serving(p, lambda: not aborting.is_alive()), 3 * TXN_TIMEOUT_MS / 1000,
                   "abort_transaction() to return", interval=0)
        assert outcome == ["aborted"], outcome

        p.begin_transaction()
        p.produce("out", b"committed", partition=0)
        p.commit_transaction(30)
    finally:
        p.flush(5)

    assert [r[4] for r in read_to_eof(broker.bootstrap, [("out", 0)], "read_committed")] == [b"committed"]
