"""OpenFiles: a bounded LRU of descriptors; segments and indexes reopen what was evicted."""

from __future__ import annotations

import os

import pytest

from minikafka.config import BrokerConfig
from minikafka.protocol import records
from minikafka.protocol.types import TopicPartition
from minikafka.storage.log_manager import LogManager
from minikafka.storage.open_files import OpenFiles, default_capacity
from minikafka.topic_config import parse_topic_config, topic_defaults

pytestmark = pytest.mark.unit

T0 = 1_700_000_000_000


def test_least_recently_used_is_closed_first(tmp_path):
    cache = OpenFiles(2)
    paths = [str(tmp_path / f"f{i}") for i in range(3)]
    a = cache.fd(paths[0], os.O_RDWR | os.O_CREAT)
    cache.fd(paths[1], os.O_RDWR | os.O_CREAT)
    assert cache.fd(paths[0], os.O_RDWR) == a  # a hit; f1 is now the oldest
    cache.fd(paths[2], os.O_RDWR | os.O_CREAT)
    assert len(cache) == 2 and cache.is_open(paths[0]) and not cache.is_open(paths[1])
    assert cache.opens == 3
    cache.close(paths[0])
    assert not cache.is_open(paths[0])
    cache.close_all()
    assert len(cache) == 0


def test_default_capacity_leaves_room_for_sockets():
    assert default_capacity(1024) == 480
    assert default_capacity(10) == 16


def test_many_partitions_with_few_descriptors(tmp_path):
    lm = LogManager(tmp_path, node_id=1, topic_defaults=topic_defaults(BrokerConfig.build({})),
                    topic_config_parser=parse_topic_config, open_files_capacity=8)
    lm.startup(T0)
    lm.create_topic("wide", 300, {"internal.segment.bytes": "2000"}, now_ms=T0)
    for round_ in range(3):
        for p in range(300):
            batch = records.build_batch([(b"k", b"r%d-p%d-" % (round_, p) + b"x" * 400)], timestamp_ms=T0)
            lm.get(TopicPartition("wide", p)).append(batch, now_ms=T0)
            assert len(lm.open_files) <= 8
    for p in range(0, 300, 7):
        data = lm.get(TopicPartition("wide", p)).read(0, 1 << 20)
        values = [r.value[:8] for _, h in records.split_batches(data) for r in records.iter_records(data, _)]
        assert [v.split(b"-")[0] for v in values] == [b"r0", b"r1", b"r2"]
    lm.shutdown()
    again = LogManager(tmp_path, node_id=1, topic_defaults=topic_defaults(BrokerConfig.build({})),
                       topic_config_parser=parse_topic_config, open_files_capacity=8)
    again.startup(T0)
    assert len(again.open_files) <= 8
    assert again.get(TopicPartition("wide", 299)).log_end_offset == 3
    again.shutdown()
