"""The log cleaner's task (broker/log_cleaner.py) over a real LogManager, without sockets: which
log it cleans, the cleaner-offset-checkpoint file, logs it must not touch, and a topic deleted and
created again under the same name."""

from __future__ import annotations

from pathlib import Path

import pytest

from minikafka.broker.log_cleaner import LogCleaner, throttle_delay
from minikafka.config import BrokerConfig
from minikafka.protocol import records
from minikafka.protocol.types import TopicPartition
from minikafka.storage import files
from minikafka.storage.log_manager import LogManager
from minikafka.topic_config import parse_topic_config, topic_defaults

pytestmark = pytest.mark.unit

T0 = 1_700_000_000_000
COMPACT = {"cleanup.policy": "compact", "min.cleanable.dirty.ratio": "0.01"}


def setup(tmp_path: Path) -> tuple[LogManager, LogCleaner]:
    config = BrokerConfig.build({})
    lm = LogManager(tmp_path, node_id=1, topic_defaults=topic_defaults(config), topic_config_parser=parse_topic_config)
    lm.startup(T0)
    cleaner = LogCleaner(lm, lambda: config, lambda: T0, frozenset({"__consumer_offsets"}))
    cleaner.load()
    return lm, cleaner


def fill(lm: LogManager, topic: str, rounds: int = 3) -> None:
    plog = lm.get(TopicPartition(topic, 0))
    for r in range(rounds):
        plog.append(records.build_batch([(b"k%d" % i, b"v%d" % r) for i in range(5)], timestamp_ms=T0), now_ms=T0)
        plog.roll(T0)


async def test_cleans_the_compacted_log_and_writes_the_checkpoint(tmp_path):
    lm, cleaner = setup(tmp_path)
    lm.create_topic("plain", 1, {}, now_ms=T0)
    lm.create_topic("c", 1, COMPACT, now_ms=T0)
    lm.create_topic("__consumer_offsets", 1, COMPACT, now_ms=T0, internal=True)
    for t in ("plain", "c", "__consumer_offsets"):
        fill(lm, t)
    assert await cleaner.clean_filthiest()
    assert files.read_offset_checkpoint(tmp_path / "cleaner-offset-checkpoint") == {TopicPartition("c", 0): 15}
    assert not await cleaner.clean_filthiest()  # nothing dirty is left; the others are not its to clean
    assert lm.get(TopicPartition("plain", 0)).size_in_bytes > lm.get(TopicPartition("c", 0)).size_in_bytes
    assert lm.get(TopicPartition("__consumer_offsets", 0)).size_in_bytes == lm.get(TopicPartition("plain", 0)).size_in_bytes


async def test_a_topic_created_again_starts_from_its_log_start(tmp_path):
    lm, cleaner = setup(tmp_path)
    lm.create_topic("c", 1, COMPACT, now_ms=T0)
    fill(lm, "c")
    assert await cleaner.clean_filthiest()
    lm.delete_topic("c")
    lm.create_topic("c", 1, COMPACT, now_ms=T0)
    fill(lm, "c", rounds=4)  # the old checkpoint (15) would skip most of the new log
    found = cleaner.grab_filthiest(T0)
    assert found is not None and found[1].first_dirty == 0
    assert await cleaner.clean_filthiest()
    assert cleaner.checkpoints[TopicPartition("c", 0)] == 20
    # after a restart the checkpoint file is read back for the same log
    again = LogCleaner(lm, lambda: BrokerConfig.build({}), lambda: T0, frozenset())
    again.load()
    assert again.grab_filthiest(T0) is None


def test_the_throttle_keeps_the_pass_at_the_configured_rate():
    mb = 1_000_000
    assert throttle_delay(5 * mb, 1.0, 10 * mb) == 0.0      # under the rate: only a yield
    assert throttle_delay(15 * mb, 1.0, 10 * mb) == pytest.approx(0.5)  # 15 MB by 1 s at 10 MB/s
    assert throttle_delay(100 * mb, 1.0, 10 * mb) == 1.0    # at most a second, then it checks again
    assert throttle_delay(100 * mb, 0.1, 1.7976931348623157e308) == 0.0  # Kafka's default: no limit
