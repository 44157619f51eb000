"""Answers leave through the send thread (broker/send_thread.py): over real sockets, with many
connections at once, with readers that stall, and with clients that vanish while answers are
still queued for them.

The first test also runs against Apache Kafka (`MINIKAFKA_TARGET=kafka`): it checks only what a
client sees. The second looks at the broker process's open descriptors, so it is minikafka's own.
"""

from __future__ import annotations

import socket
import struct
import threading
import time

import pytest
from confluent_kafka import Consumer

from clients import create_topic, wait_until
from rawclient import RawClient, fetch_v12, produce, produce_v9, valid_batch

pytestmark = pytest.mark.integration


def _pipeline(client: RawClient, topic: str, partition: int, n: int, out: list[str]) -> None:
    """n Produce requests sent before any answer is read; the answers must come back in order.
    One produce first, retried while the partition is not ready (Kafka answers
    NOT_LEADER_OR_FOLLOWER for a moment after CreateTopics; minikafka never does)."""
    deadline = time.monotonic() + 30
    while True:
        first = produce(client, topic, partition, valid_batch(2, prefix=b"p%d-" % partition), acks=1)
        if int(first.error_code) == 0:
            break
        if int(first.error_code) not in (3, 6) or time.monotonic() > deadline:
            out.append(f"partition {partition}: error {int(first.error_code)} on the first produce")
            return
        time.sleep(0.1)  # a client's retry backoff
    start = int(first.base_offset) + 2
    sent = [client.send(produce_v9(topic, partition, valid_batch(2, prefix=b"p%d-" % partition), acks=1), 9)
            for _ in range(n)]
    offsets = []
    for corr in sent:
        got, resp = client.receive(0, 9, timeout=30)
        if got != corr:
            out.append(f"partition {partition}: correlation id {got}, {corr} expected")
            return
        p = resp.responses[0].partition_responses[0]
        if int(p.error_code) != 0:
            out.append(f"partition {partition}: error {int(p.error_code)}")
            return
        offsets.append(int(p.base_offset))
    if offsets != list(range(start, start + 2 * n, 2)):
        out.append(f"partition {partition}: offsets {offsets[:5]}...")


def test_many_connections_pipelining_get_every_answer_in_order(kafka_broker) -> None:
    bootstrap = kafka_broker.bootstrap
    topic = "send-many"
    connections, per_connection = 40, 50
    create_topic(bootstrap, topic, connections)
    clients = [RawClient.connect(bootstrap, timeout=30) for _ in range(connections)]
    faults: list[str] = []
    try:
        threads = [threading.Thread(target=_pipeline, args=(c, topic, i, per_connection, faults))
                   for i, c in enumerate(clients)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        assert not any(t.is_alive() for t in threads)
    finally:
        for c in clients:
            c.close()
    assert faults == []

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "send-many-check",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    try:
        consumer.subscribe([topic])
        seen = 0
        deadline = time.monotonic() + 60
        while seen < connections * (per_connection + 1) * 2 and time.monotonic() < deadline:
            for m in consumer.consume(1000, 1.0):
                assert m.error() is None, m.error()
                assert m.value().startswith(b"p%d-" % m.partition())
                seen += 1
        assert seen == connections * (per_connection + 1) * 2
    finally:
        consumer.close()


def _reset(sock: socket.socket) -> None:
    """Close with RST (SO_LINGER 0): the broker's pending answers can no longer be delivered."""
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    sock.close()


def test_clients_that_vanish_with_answers_queued_release_their_sockets(broker_factory) -> None:
    broker = broker_factory()
    bootstrap = broker.bootstrap
    topic = "send-vanish"
    create_topic(bootstrap, topic)
    with RawClient.connect(bootstrap, timeout=30) as c:
        for _ in range(8):  # ~1 MiB to fetch
            corr = c.send(produce_v9(topic, 0, valid_batch(100, prefix=b"x" * 1300), acks=1), 9)
            got, _ = c.receive(0, 9, timeout=30)
            assert got == corr
    # The probe connection stays open, and has fetched once (so the log's read side is open too).
    probe = RawClient.connect(bootstrap, timeout=30)
    corr = probe.send(fetch_v12(topic, 0, 0), 12)
    assert probe.receive(1, 12, timeout=30)[0] == corr
    baseline = broker.open_fds()

    # Each client asks for 30 x 1 MiB and reads none of it: far more than the socket buffers hold,
    # so answers wait in the send thread. Half reset their connection, half close it normally.
    for round_ in range(3):
        vanishing = []
        for _ in range(20):
            s = RawClient.connect(bootstrap, timeout=30)
            s.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            for _ in range(30):
                s.send(fetch_v12(topic, 0, 0, partition_max_bytes=1 << 20), 12)
            vanishing.append(s)
        time.sleep(0.2 * (round_ + 1))  # vary how far the broker got (not a synchronisation)
        for i, s in enumerate(vanishing):
            if i % 2:
                _reset(s.sock)
            else:
                s.close()

    # Every connection's descriptors (the event loop's and the send thread's duplicate) are
    # released: the count comes back to the baseline.
    wait_until(lambda: broker.open_fds() <= baseline, 30, f"the broker back to {baseline} descriptors")

    # Nothing else was disturbed: the probe connection still gets its answers, and a client reads
    # everything.
    corr = probe.send(fetch_v12(topic, 0, 0), 12)
    got, resp = probe.receive(1, 12, timeout=30)
    assert got == corr and int(resp.responses[0].partitions[0].error_code) == 0
    probe.close()
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "send-vanish-check",
                         "auto.offset.reset": "earliest"})
    try:
        consumer.subscribe([topic])
        seen = 0
        deadline = time.monotonic() + 30
        while seen < 800 and time.monotonic() < deadline:
            seen += sum(1 for m in consumer.consume(1000, 1.0) if m.error() is None)
        assert seen == 800
    finally:
        consumer.close()
