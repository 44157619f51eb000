"""Limits of the machine (issue 14, items 4 and 5): file descriptors, connections, request memory.

- 2,000 partitions under `ulimit -n 1024`: created, written, read, and read again after a restart
  (segment files are opened on demand through a bounded cache; the broker raises its soft limit to
  the hard one, here both are 1024).
- max.connections / max.connections.per.ip: a connection over a limit is accepted and closed at
  once, the others keep working, one warning per episode.
- queued.max.request.bytes: five connections each sending 95 MiB of a frame they never finish are
  held under the configured bound; the memory comes back when they close.
"""

from __future__ import annotations

import socket
import struct
import sys
import threading
import time

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from minikafka.testing import BrokerProcess, api_versions_probe

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]


class LimitedBroker(BrokerProcess):
    """A broker whose soft and hard RLIMIT_NOFILE are both `nofile`."""

    nofile = 1024

    def command(self) -> list[str]:
        launcher = ("import os, resource, sys; hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]; "
                    f"n = {self.nofile} if hard == resource.RLIM_INFINITY else min({self.nofile}, hard); "
                    "resource.setrlimit(resource.RLIMIT_NOFILE, (n, n)); "
                    "os.execv(sys.executable, [sys.executable] + sys.argv[1:])")
        return [sys.executable, "-c", launcher] + super().command()[1:]


def _consume_all(bootstrap: str, topic: str, partitions: int, expect: int) -> dict[int, bytes]:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "all", "enable.auto.commit": False})
    try:
        c.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
        got: dict[int, bytes] = {}
        deadline = time.monotonic() + 120
        while len(got) < expect and time.monotonic() < deadline:
            for m in c.consume(1000, timeout=0.5):
                if m.error() is None:
                    got[m.partition()] = m.value()
        return got
    finally:
        c.close()


def test_two_thousand_partitions_under_ulimit_1024(tmp_path):
    n = 2000
    broker = LimitedBroker(tmp_path / "data").start()
    try:
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        admin.create_topics([NewTopic("wide", n, 1)])["wide"].result(120)
        md = admin.list_topics("wide", timeout=30)
        assert len(md.topics["wide"].partitions) == n
        p = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 20, "acks": "all"})
        for i in range(n):
            p.produce("wide", b"value-%d" % i, partition=i)
        assert p.flush(120) == 0
        assert broker.open_fds() < 1024
        got = _consume_all(broker.bootstrap, "wide", n, n)
        assert got == {i: b"value-%d" % i for i in range(n)}
        assert broker.term() == 0
        broker.start()
        assert api_versions_probe(broker.host, broker.port)
        again = _consume_all(broker.bootstrap, "wide", n, n)
        assert again == got
        assert broker.open_fds() < 1024
    finally:
        broker.stop()


def _connect_probe(host: str, port: int) -> socket.socket | None:
    """A connection that answered an ApiVersions request, or None when the broker closed it."""
    s = socket.create_connection((host, port), timeout=10)
    if _api_versions_answered(s):
        return s
    s.close()
    return None


def _api_versions_answered(s: socket.socket) -> bool:
    """One ApiVersions v0 round trip, read whole; False when the broker closed the connection. A
    close reaches the client as an end of stream, or as a reset when the request had arrived
    unread before the broker closed (the kernel then answers with RST): both are a refusal."""
    request = struct.pack(">hhih", 18, 0, 7, 1) + b"t"
    try:
        s.sendall(struct.pack(">i", len(request)) + request)
        head = b""
        while len(head) < 4:
            chunk = s.recv(4 - len(head))
            if not chunk:
                return False
            head += chunk
        left = struct.unpack(">i", head)[0]
        while left > 0:
            chunk = s.recv(left)
            if not chunk:
                return False
            left -= len(chunk)
        return True
    except (ConnectionResetError, BrokenPipeError):
        return False


def test_as_many_connections_as_accepted_and_a_full_file_cache_under_ulimit_256(tmp_path):
    """Each connection costs two descriptors with the send thread (the loop's socket and the
    thread's duplicate); the connection budget counts both, so connections up to the budget and
    a segment-file cache filled by 150 partitions never run out of descriptors. Connections over
    the budget are closed at accept, as max.connections closes them."""
    broker = LimitedBroker(tmp_path / "data")
    broker.nofile = 256
    broker.start()
    accepted: list[socket.socket] = []
    try:
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        admin.create_topics([NewTopic("wide", 150, 1)])["wide"].result(60)
        for _ in range(120):
            s = _connect_probe(broker.host, broker.port)
            if s is not None:
                accepted.append(s)
        assert 20 <= len(accepted) < 120  # the budget was reached
        for s in accepted[-4:]:  # room for the producer's connections
            s.close()
        del accepted[-4:]
        p = Producer({"bootstrap.servers": broker.bootstrap, "acks": "1", "linger.ms": 0})
        errors: list[str] = []
        for i in range(150):
            p.produce("wide", b"v%d" % i, partition=i,
                      on_delivery=lambda err, msg: errors.append(str(err)) if err else None)
        assert p.flush(60) == 0
        assert errors == []
        assert all(_api_versions_answered(s) for s in accepted)  # and every accepted one still answers
    finally:
        for s in accepted:
            s.close()
        broker.stop()


def test_connection_limits(broker_factory):
    broker = broker_factory(overrides={"max.connections": "8", "max.connections.per.ip": "5"})
    held = [_connect_probe(broker.host, broker.port) for _ in range(5)]
    assert all(held)
    for _ in range(3):  # the sixth from this address is closed at once, every time
        assert _connect_probe(broker.host, broker.port) is None
    held.pop().close()
    deadline = time.monotonic() + 10
    replacement = None
    while replacement is None and time.monotonic() < deadline:
        replacement = _connect_probe(broker.host, broker.port)  # the freed slot is taken again
    assert replacement is not None
    for s in held + [replacement]:
        s.close()
    text = broker.log_tail(1 << 20)
    assert text.count("connection_rejected") == 1  # one warning for the episode, not three


def test_half_frames_are_held_under_queued_max_request_bytes(broker_factory):
    bound = 200 << 20
    broker = broker_factory(overrides={"queued.max.request.bytes": str(bound)})
    assert api_versions_probe(broker.host, broker.port)
    base_kb = broker.rss_kb()
    size = 95 << 20
    body = b"\x00" * (size - 1)
    sent = [threading.Event() for _ in range(5)]
    socks = [socket.create_connection((broker.host, broker.port), timeout=60) for _ in range(5)]

    def send(i: int) -> None:
        try:
            socks[i].sendall(struct.pack(">i", size) + body)  # one byte short: never completes
            sent[i].set()
        except OSError:
            pass

    threads = [threading.Thread(target=send, args=(i,), daemon=True) for i in range(5)]
    for t in threads:
        t.start()
    # Two frames fit in the pool; the other three senders block (their bytes wait in the kernel).
    deadline = time.monotonic() + 60
    while sum(e.is_set() for e in sent) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert sum(e.is_set() for e in sent) >= 2
    peak = max(broker.rss_kb() for _ in range(10) if time.sleep(0.1) is None)
    grown_mb = (peak - base_kb) / 1024
    assert grown_mb < bound / (1 << 20) + 40, f"broker grew by {grown_mb:.0f} MiB"
    assert sum(e.is_set() for e in sent) <= 3  # most is still refused (some fits kernel buffers)
    # Meanwhile the broker serves other clients.
    assert api_versions_probe(broker.host, broker.port)
    for s in socks:
        s.close()
    for t in threads:
        t.join(30)
    deadline = time.monotonic() + 30
    while (broker.rss_kb() - base_kb) / 1024 > 60 and time.monotonic() < deadline:
        time.sleep(0.2)
    assert (broker.rss_kb() - base_kb) / 1024 <= 60, "memory not returned after the connections closed"
