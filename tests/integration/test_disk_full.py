"""A full disk (issue 14, item 2): a 30 MB tmpfs as the data directory.

Appends that do not fit are answered KAFKA_STORAGE_ERROR (56) and leave nothing behind; reads go on;
`__consumer_offsets` is created whole (offsets.topic.num.partitions of them) or not at all; when
space returns the broker heals without a restart, and after kill -9 every acknowledged record is
there, once, in order. Needs to mount a tmpfs (root, as in CI's machine); skipped otherwise.
"""

from __future__ import annotations

import os
import subprocess
import time

import pytest
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient
from kio.schema.find_coordinator.v4.request import FindCoordinatorRequest
from kio.static.primitive import i8
from rawclient import RawClient, produce, wait_for_topic

from minikafka.protocol.records import build_batch
from minikafka.testing import BrokerProcess

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]

KAFKA_STORAGE_ERROR = 56
COORDINATOR_NOT_AVAILABLE = 15
OFFSETS_PARTITIONS = 50
VALUE = 64 * 1024
PER_BATCH = 4


@pytest.fixture
def small_disk(tmp_path):
    mnt = tmp_path / "data"  # the data dir itself; the broker's log file stays outside it
    mnt.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=30m", "tmpfs", str(mnt)], capture_output=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {(done.stderr.decode().strip().splitlines() or [done.returncode])[0]}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


def _batch(first: int) -> bytes:
    return bytes(build_batch([(b"k%d" % (first + i), b"%08d" % (first + i) + b"x" * (VALUE - 8))
                              for i in range(PER_BATCH)], timestamp_ms=int(time.time() * 1000)))


def _fill_rest(path) -> None:
    """Take every byte left (the broker's appends then fail whatever their size)."""
    with open(path, "wb") as f:
        try:
            while True:
                f.write(b"\0" * 65536)
                f.flush()
        except OSError:
            pass


def _read_values(bootstrap: str, topic: str, expect: int) -> list[int]:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "reader", "enable.auto.commit": False,
                  "fetch.max.bytes": 4 << 20})
    try:
        c.assign([TopicPartition(topic, 0, 0)])
        out: list[int] = []
        deadline = time.monotonic() + 60
        while len(out) < expect and time.monotonic() < deadline:
            out += [int(m.value()[:8]) for m in c.consume(200, timeout=0.5) if m.error() is None]
        return out
    finally:
        c.close()


def _offsets_topic_partitions(bootstrap: str) -> int | None:
    md = AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=10)
    t = md.topics.get("__consumer_offsets")
    return None if t is None or t.error is not None else len(t.partitions)


def test_disk_full_is_storage_error_then_heals(small_disk):
    broker = BrokerProcess(small_disk, overrides={
        "offsets.topic.num.partitions": str(OFFSETS_PARTITIONS), "log.segment.bytes": str(4 << 20)}).start()
    # 8 MB set aside now and given back later: what "space returns" means in this test.
    (small_disk / "reserve").write_bytes(b"\0" * (8 << 20))
    try:
        acked: list[int] = []  # first value of each acknowledged batch, in offset order
        with RawClient.connect(broker.bootstrap) as c:
            wait_for_topic(c, "fill")
            first_error = None
            for _ in range(200):
                r = produce(c, "fill", 0, _batch(len(acked) * PER_BATCH))
                if r.error_code != 0:
                    first_error = r
                    break
                assert r.base_offset == len(acked) * PER_BATCH  # no gap, no reuse
                acked.append(len(acked) * PER_BATCH)
            assert first_error is not None, "30 MB never filled up"
            assert first_error.error_code == KAFKA_STORAGE_ERROR, first_error
            _fill_rest(small_disk / "filler")
            for _ in range(3):  # and stays so: nothing is half-written
                assert produce(c, "fill", 0, _batch(len(acked) * PER_BATCH)).error_code == KAFKA_STORAGE_ERROR
            # The offsets topic cannot be created now: FindCoordinator says so, Metadata shows no half.
            found = c.request(FindCoordinatorRequest(key_type=i8(0), coordinator_keys=("grp",)), 4)
            assert found.coordinators[0].error_code == COORDINATOR_NOT_AVAILABLE
        assert _offsets_topic_partitions(broker.bootstrap) is None
        assert not [n for n in os.listdir(broker.data_dir) if n.startswith("__consumer_offsets")]
        # Reads are served while the disk is full.
        n = len(acked) * PER_BATCH
        assert _read_values(broker.bootstrap, "fill", n) == list(range(n))

        # Space returns: no restart, the next append continues right after the last acknowledged.
        os.unlink(small_disk / "filler")
        os.unlink(small_disk / "reserve")
        with RawClient.connect(broker.bootstrap) as c:
            r = produce(c, "fill", 0, _batch(n))
            assert (r.error_code, r.base_offset) == (0, n)
        n += PER_BATCH
        consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "grp", "enable.auto.commit": False})
        try:
            consumer.commit(offsets=[TopicPartition("fill", 0, n)], asynchronous=False)
            assert consumer.committed([TopicPartition("fill", 0)], timeout=30)[0].offset == n
        finally:
            consumer.close()
        assert _offsets_topic_partitions(broker.bootstrap) == OFFSETS_PARTITIONS
        # One warning for the partition while it failed, and no traceback anywhere.
        text = broker.log_tail(1 << 20)
        assert text.count("storage_error ") == 1 and "Traceback" not in text

        # kill -9: every acknowledged record is there once, and the group's offset too.
        broker.kill9()
        broker.start()
        assert _read_values(broker.bootstrap, "fill", n) == list(range(n))
        assert _offsets_topic_partitions(broker.bootstrap) == OFFSETS_PARTITIONS
        consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "grp"})
        try:
            assert consumer.committed([TopicPartition("fill", 0)], timeout=30)[0].offset == n
        finally:
            consumer.close()
    finally:
        broker.stop()
