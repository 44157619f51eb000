"""A copier restarted after kill -9 over its predecessor's open transaction (issue 17: the soak
tier's `test_soak_eos_copy[unordered-clients-hard]` failed this way).

The predecessor sent its consumer's offsets with the transaction (TxnOffsetCommit), so they are
pending at the group coordinator until the transaction ends. A read_committed consumer asks for
its committed offsets with RequireStable (KIP-447), and the broker answers UNSTABLE_OFFSET_COMMIT
while they are pending, as Kafka does. The copier used to ask before init_transactions(): it then
waited for the old transaction to time out (40 s in the soak tier), and its committed() call gave
up after 30 s. init_transactions() first fences the predecessor and aborts its transaction, so
the offsets are settled at once (Kafka's TransactionalMessageCopier initialises transactions
first too).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from clients import create_topic, produce_all, producer, read_to_eof

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

COPIER = Path(__file__).with_name("copier.py")
N = 50
TXN_TIMEOUT_MS = 40000  # the soak tier's: longer than the copier's 30 s committed() call

# The predecessor: a copier's first transaction, its offsets sent, killed before the commit.
PREDECESSOR = """
import sys
from confluent_kafka import Consumer, Producer, TopicPartition
bootstrap, txn_timeout_ms = sys.argv[1], int(sys.argv[2])
c = Consumer({"bootstrap.servers": bootstrap, "group.id": "eos-group", "enable.auto.commit": False})
p = Producer({"bootstrap.servers": bootstrap, "transactional.id": "copier-0",
              "transaction.timeout.ms": txn_timeout_ms})
p.init_transactions(30)
p.begin_transaction()
p.produce("output", b"from the predecessor", partition=0)
p.send_offsets_to_transaction([TopicPartition("input", 0, 10)], c.consumer_group_metadata(), 30)
p.flush(30)
print("OPEN", flush=True)
sys.stdin.read()  # until killed
"""


def test_a_restarted_copier_does_not_wait_for_its_predecessors_open_transaction(broker_factory) -> None:
    broker = broker_factory()
    create_topic(broker.bootstrap, "input", 1)
    create_topic(broker.bootstrap, "output", 1)
    seed = producer(broker.bootstrap, **{"enable.idempotence": True, "acks": "all"})
    try:
        produce_all(seed, "input", [{"value": str(i).encode(), "partition": 0} for i in range(N)], timeout=60)
    finally:
        seed.close()

    predecessor = subprocess.Popen([sys.executable, "-c", PREDECESSOR, broker.bootstrap, str(TXN_TIMEOUT_MS)],
                                   stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert predecessor.stdout is not None
        assert predecessor.stdout.readline().strip() == "OPEN"
    finally:
        predecessor.kill()  # its transaction stays open, its offsets pending
        predecessor.wait(30)

    # The copier's committed() call gives up after 30 s, before the predecessor's transaction would
    # time out (40 s): a copier that waited for that timeout exits 1.
    copier = subprocess.run([sys.executable, str(COPIER), broker.bootstrap, "copier-0", "input", "output",
                             "eos-group", "--partition", "0", "--txn-timeout-ms", str(TXN_TIMEOUT_MS),
                             "--deadline-s", "60", "--seed", "1"],
                            capture_output=True, text=True, timeout=90)
    assert copier.returncode == 0, copier.stdout[-2000:] + copier.stderr[-2000:]

    # Every input record once, from the start (the predecessor's offsets were aborted with it),
    # and nothing of the predecessor's transaction.
    values = [r[4] for r in read_to_eof(broker.bootstrap, [("output", 0)], "read_committed")]
    assert values == [str(i).encode() for i in range(N)]
