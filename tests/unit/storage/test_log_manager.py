"""LogManager on a real data directory: Kafka's files, checkpoints, clean and unclean startup."""

from __future__ import annotations

import json
import os
import re
import shutil
import uuid
from pathlib import Path

import pytest

from minikafka.config import BrokerConfig
from minikafka.protocol import records
from minikafka.protocol.errors import ErrorCode
from minikafka.protocol.types import TopicPartition
from minikafka.storage import files, recovery_check
from minikafka.storage.errors import StartupError
from minikafka.storage.log_manager import LogManager, NewTopic, TopicError, TopicInfo
from minikafka.topic_config import parse_topic_config, topic_defaults

pytestmark = pytest.mark.unit

T0 = 1_700_000_000_000


def manager(data_dir: Path, *, node_id: int = 1, **broker_props: str) -> LogManager:
    config = BrokerConfig.build(broker_props)
    lm = LogManager(data_dir, node_id=node_id, topic_defaults=topic_defaults(config),
                    topic_config_parser=parse_topic_config,
                    recovery_threads=config["num.recovery.threads.per.data.dir"])
    lm.startup(T0)
    return lm


def produce(lm: LogManager, topic: str, partition: int, n: int = 1, *, ts: int = T0, value_size: int = 30) -> int:
    batch = records.build_batch([(f"k{i}".encode(), b"v" * value_size) for i in range(n)], timestamp_ms=ts)
    return lm.get(TopicPartition(topic, partition)).append(batch, now_ms=ts).base_offset


def crash(lm: LogManager) -> None:
    """Close file descriptors only: no flush, checkpoint or marker (kill -9)."""
    lm.maker.close()  # the process's threads die with it (here: after the partition being made)
    lm.open_files.close_all()  # every segment and index descriptor: nothing is written
    lm.lock.release()  # the process is gone, and its flock with it


def test_create_topic_writes_partition_metadata(tmp_path):
    lm = manager(tmp_path)
    info = lm.create_topic("orders", 3, {}, now_ms=T0)
    lm.maker.wait_idle()  # made off the caller's thread (PartitionMaker)
    for p in range(3):
        d = tmp_path / f"orders-{p}"
        assert d.is_dir()
        text = (d / "partition.metadata").read_text()
        m = re.fullmatch(r"version: 0\ntopic_id: ([A-Za-z0-9_-]{22})\n", text)
        assert m, text
        assert files.parse_kafka_uuid(m.group(1)) == info.topic_id
        assert (d / f"{0:020d}.log").exists()
    lm.shutdown()


def test_kafka_uuid_string_form():
    u = uuid.UUID("c3a0e1a4-9b5e-4a6c-8f62-1d2e3f405162")
    s = files.kafka_uuid_str(u)
    assert len(s) == 22 and "=" not in s and "+" not in s and "/" not in s
    assert files.parse_kafka_uuid(s) == u
    assert not files.kafka_uuid_str(files.new_kafka_uuid()).startswith("-")


def test_meta_properties(tmp_path):
    lm = manager(tmp_path, node_id=3, **{"node.id": "3"})
    props = files.read_meta_properties(tmp_path)
    assert props["node.id"] == "3"
    assert props["version"] == "1"
    assert re.fullmatch(r"[A-Za-z0-9_-]{22}", props["cluster.id"])
    assert re.fullmatch(r"[A-Za-z0-9_-]{22}", props["directory.id"])
    cluster = lm.cluster_id
    lm.shutdown()
    # The cluster id survives restarts; another node id is refused.
    again = manager(tmp_path, node_id=3)
    assert again.cluster_id == cluster
    again.shutdown()
    with pytest.raises(StartupError, match="node.id=3"):
        manager(tmp_path, node_id=4)


def test_checkpoint_files_format(tmp_path):
    lm = manager(tmp_path)
    lm.create_topic("a", 2, {}, now_ms=T0)
    lm.create_topic("b c".replace(" ", "_"), 1, {}, now_ms=T0)
    for _ in range(3):
        produce(lm, "a", 1, 2)
    lm.shutdown()
    text = (tmp_path / "recovery-point-offset-checkpoint").read_text()
    lines = text.splitlines()
    assert lines[0] == "0"
    assert int(lines[1]) == len(lines) - 2 == 3
    assert sorted(lines[2:]) == ["a 0 0", "a 1 6", "b_c 0 0"]
    assert files.read_offset_checkpoint(tmp_path / "recovery-point-offset-checkpoint") == {
        TopicPartition("a", 0): 0, TopicPartition("a", 1): 6, TopicPartition("b_c", 0): 0}
    # Kafka writes only partitions whose log start offset moved.
    assert (tmp_path / "log-start-offset-checkpoint").read_text() == "0\n0\n"


def test_checkpoint_reader_rejects_malformed(tmp_path):
    p = tmp_path / "cp"
    p.write_text("1\n0\n")
    with pytest.raises(ValueError):
        files.read_offset_checkpoint(p)
    p.write_text("0\n2\nt 0 5\n")
    with pytest.raises(ValueError):
        files.read_offset_checkpoint(p)
    assert files.read_offset_checkpoint(tmp_path / "missing") == {}


def test_log_start_offset_checkpoint_after_retention(tmp_path):
    lm = manager(tmp_path)
    lm.create_topic("r", 1, {"internal.segment.bytes": "400", "retention.bytes": "500"}, now_ms=T0)
    for _ in range(20):
        produce(lm, "r", 0, 2)
    assert lm.delete_retained(T0) > 0
    start = lm.get(TopicPartition("r", 0)).log_start_offset
    assert start > 0
    lm.checkpoint()
    assert files.read_offset_checkpoint(tmp_path / "log-start-offset-checkpoint") == {TopicPartition("r", 0): start}
    lm.shutdown()
    again = manager(tmp_path)
    assert again.get(TopicPartition("r", 0)).log_start_offset == start
    again.shutdown()


def test_clean_shutdown_marker_skips_recovery(tmp_path):
    lm = manager(tmp_path)
    lm.create_topic("t", 2, {"internal.segment.bytes": "500"}, now_ms=T0)
    for i in range(30):
        produce(lm, "t", i % 2, 2)
    ends = {tp: pl.log_end_offset for tp, pl in lm.logs.items()}
    lm.shutdown()
    marker = tmp_path / ".kafka_cleanshutdown"
    assert marker.exists()
    assert json.loads(marker.read_text())["version"] == 0
    again = manager(tmp_path)
    assert again.clean_startup
    assert not marker.exists(), "the marker is consumed at startup"
    assert all(pl.recovered_segments == 0 for pl in again.logs.values())
    assert {tp: pl.log_end_offset for tp, pl in again.logs.items()} == ends
    again.shutdown()


def test_a_finished_background_flush_reaches_the_checkpoint_at_once(tmp_path):
    lm = manager(tmp_path)
    lm.create_topic("t", 1, {"internal.segment.bytes": "500"}, now_ms=T0)
    lm.checkpoint()
    for _ in range(15):
        produce(lm, "t", 0, 2)
    plog = lm.get(TopicPartition("t", 0))
    assert len(plog.segments) > 2
    lm.flusher.close()  # waits for the background fsyncs
    assert lm.checkpoint_flushed_rolls() is True
    points = files.read_offset_checkpoint(tmp_path / files.RECOVERY_POINT_CHECKPOINT)
    assert points[TopicPartition("t", 0)] == plog.active.base_offset
    assert lm.checkpoint_flushed_rolls() is False  # nothing moved since: no write
    assert not lm.flusher.waiting
    lm.shutdown()


def test_unclean_startup_recovers_from_recovery_point(tmp_path):
    lm = manager(tmp_path)
    lm.create_topic("t", 1, {"internal.segment.bytes": "500"}, now_ms=T0)
    for _ in range(15):
        produce(lm, "t", 0, 2)
    lm.flusher.close()  # waits for the rolled segments' background fsyncs
    lm.checkpoint()  # the recovery point checkpoint: the last roll
    plog = lm.get(TopicPartition("t", 0))
    rp = plog.recovery_point
    assert 0 < rp == plog.active.base_offset
    for _ in range(15):
        produce(lm, "t", 0, 2)  # more segments, after the checkpointed recovery point
    n_segments = len(plog.segments)
    bases = [s.base_offset for s in plog.segments]
    leo = plog.log_end_offset
    crash(lm)
    again = manager(tmp_path)
    assert not again.clean_startup
    plog2 = again.get(TopicPartition("t", 0))
    assert plog2.log_end_offset == leo
    assert plog2.recovered_segments == n_segments - bases.index(rp)
    assert 0 < plog2.recovered_segments < n_segments
    # Start-up does not wait for the recovered segments' fsync: until the flusher's thread has done
    # it the checkpoint keeps the old recovery point, and a crash then re-validates them again.
    checkpoint = tmp_path / "recovery-point-offset-checkpoint"
    assert files.read_offset_checkpoint(checkpoint)[TopicPartition("t", 0)] == rp
    again.flusher.close()  # waits for the background flush of the recovered segments
    assert again.checkpoint_flushed_rolls()  # the recovery point moved: checkpointed at once
    assert files.read_offset_checkpoint(checkpoint)[TopicPartition("t", 0)] == leo
    crash(again)
    third = manager(tmp_path)
    assert third.get(TopicPartition("t", 0)).recovered_segments == 1  # only the active segment
    third.shutdown()


def test_unclean_startup_checks_large_segments_on_threads_with_the_same_outcome(tmp_path, monkeypatch):
    """num.recovery.threads.per.data.dir: after a crash, segments of large batches are checked on
    that many threads (storage/recovery_check.py) while partitions open in order; the logs end
    where the same start-up with one thread (every check inline) ends them."""
    lm = manager(tmp_path / "a")
    lm.create_topic("t", 3, {}, now_ms=T0)
    lm.maker.wait_idle()
    for p in range(3):
        for _ in range(30):
            produce(lm, "t", p, 20, value_size=2000)  # ~40 KB batches, ~1.2 MB per partition
    crash(lm)
    log1 = tmp_path / "a" / "t-1" / f"{0:020d}.log"
    data = bytearray(log1.read_bytes())
    assert len(data) >= recovery_check.MIN_CHECKED_BYTES
    pos = 0
    for _ in range(17):  # the 18th batch of partition 1 gets a flipped byte in a record
        pos += records.read_header(data, pos).size
    damaged_base = records.read_header(data, pos).base_offset
    data[pos + 900] ^= 0x01
    log1.write_bytes(bytes(data))
    shutil.copytree(tmp_path / "a", tmp_path / "b")

    checked: dict[str, recovery_check.Checked | None] = {}
    real = recovery_check.check_segment

    def spy(path: str, buffer: recovery_check.ReadBuffer | None = None) -> recovery_check.Checked | None:
        checked[Path(path).parent.name] = result = real(path, buffer)
        return result

    monkeypatch.setattr(recovery_check, "check_segment", spy)
    two = manager(tmp_path / "a", **{"num.recovery.threads.per.data.dir": "2"})
    one = manager(tmp_path / "b", **{"num.recovery.threads.per.data.dir": "1"})
    assert sorted(checked) == ["t-0", "t-1", "t-2"]  # on the pool (only with two threads)
    assert checked["t-1"] is not None and checked["t-1"].reason == "CRC mismatch"
    assert checked["t-0"] is not None and checked["t-0"].reason is None
    for started in (two, one):
        ends = [started.get(TopicPartition("t", p)).log_end_offset for p in range(3)]
        assert ends == [600, damaged_base, 600]
        assert started.get(TopicPartition("t", 1)).active.size == pos
    assert (tmp_path / "a" / "t-1" / f"{0:020d}.index").read_bytes() == \
        (tmp_path / "b" / "t-1" / f"{0:020d}.index").read_bytes()
    two.shutdown()
    one.shutdown()


def test_unclean_startup_without_checkpoint_recovers_everything(tmp_path):
    lm = manager(tmp_path)
    lm.create_topic("t", 1, {"internal.segment.bytes": "500"}, now_ms=T0)
    for _ in range(20):
        produce(lm, "t", 0, 2)
    n = len(lm.get(TopicPartition("t", 0)).segments)
    crash(lm)
    os.unlink(tmp_path / "recovery-point-offset-checkpoint")
    again = manager(tmp_path)
    assert again.get(TopicPartition("t", 0)).recovered_segments == n
    again.shutdown()


def test_corrupt_checkpoint_is_ignored(tmp_path):
    lm = manager(tmp_path)
    lm.create_topic("t", 1, {}, now_ms=T0)
    produce(lm, "t", 0, 3)
    crash(lm)
    (tmp_path / "recovery-point-offset-checkpoint").write_text("garbage")
    again = manager(tmp_path)
    assert again.get(TopicPartition("t", 0)).log_end_offset == 3
    again.shutdown()


def test_topics_and_configs_survive_restart(tmp_path):
    lm = manager(tmp_path)
    info = lm.create_topic("cfg", 2, {"retention.ms": "12345", "cleanup.policy": "compact"}, now_ms=T0)
    lm.shutdown()
    again = manager(tmp_path)
    assert again.topics["cfg"].topic_id == info.topic_id
    assert again.topics["cfg"].partitions == 2
    assert again.topic_config("cfg")["retention.ms"] == 12345
    assert again.topic_config("cfg")["cleanup.policy"] == "compact"
    again.shutdown()


def test_topic_rebuilt_from_directory_when_topics_file_lost(tmp_path):
    lm = manager(tmp_path)
    info = lm.create_topic("lost", 2, {}, now_ms=T0)
    produce(lm, "lost", 1, 4)
    lm.shutdown()
    os.unlink(tmp_path / "minikafka-topics.json")
    again = manager(tmp_path)
    assert again.topics["lost"].topic_id == info.topic_id  # from partition.metadata
    assert again.topics["lost"].partitions == 2
    assert again.get(TopicPartition("lost", 1)).log_end_offset == 4
    again.shutdown()


def test_delete_topic_removes_directories(tmp_path):
    lm = manager(tmp_path)
    lm.create_topic("gone", 3, {}, now_ms=T0)
    lm.create_topic("kept", 1, {}, now_ms=T0)
    produce(lm, "gone", 0, 2)
    lm.delete_topic("gone")
    assert not any(n.startswith("gone-") for n in os.listdir(tmp_path))
    assert "gone" not in lm.topics
    assert TopicPartition("gone", 0) not in lm.logs
    cp = files.read_offset_checkpoint(tmp_path / "recovery-point-offset-checkpoint")
    assert all(tp.topic != "gone" for tp in cp)
    with pytest.raises(TopicError) as e:
        lm.delete_topic("gone")
    assert e.value.error_code == ErrorCode.unknown_topic_or_partition
    lm.shutdown()
    again = manager(tmp_path)
    assert "gone" not in again.topics and "kept" in again.topics
    again.shutdown()


@pytest.mark.parametrize("name", ["", ".", "..", "a" * 250, "bad/name", "sp ace", "ü"])
def test_create_topic_rejects_illegal_names(tmp_path, name):
    lm = manager(tmp_path)
    with pytest.raises(TopicError) as e:
        lm.create_topic(name, 1, {}, now_ms=T0)
    assert e.value.error_code == ErrorCode.invalid_topic_exception
    lm.shutdown()


def test_create_topic_errors(tmp_path):
    lm = manager(tmp_path)
    lm.create_topic("x", 1, {}, now_ms=T0)
    with pytest.raises(TopicError) as e:
        lm.create_topic("x", 1, {}, now_ms=T0)
    assert e.value.error_code == ErrorCode.topic_already_exists
    with pytest.raises(TopicError) as e:
        lm.create_topic("y", 0, {}, now_ms=T0)
    assert e.value.error_code == ErrorCode.invalid_partitions
    with pytest.raises(TopicError) as e:
        lm.create_topic("z", 1, {"retention.ms": "soon"}, now_ms=T0)
    assert e.value.error_code == ErrorCode.invalid_config
    assert not (tmp_path / "z-0").exists()
    lm.shutdown()


def test_create_topics_answers_each_topic_of_a_batch(tmp_path):
    lm = manager(tmp_path)
    lm.create_topic("old", 1, {}, now_ms=T0)
    answers = lm.create_topics([NewTopic("a", 3, {}), NewTopic("old", 1, {}), NewTopic("b", 0, {}),
                                NewTopic("a", 1, {}), NewTopic("c", 2, {"cleanup.policy": "compact"})], now_ms=T0)
    assert [a.name if isinstance(a, TopicInfo) else a.error_code for a in answers] == [
        "a", ErrorCode.topic_already_exists, ErrorCode.invalid_partitions, ErrorCode.topic_already_exists, "c"]
    assert lm.topics["a"].partitions == 3 and "b" not in lm.topics
    assert not (tmp_path / "b-0").exists()
    ids = {n: lm.topics[n].topic_id for n in ("a", "c")}
    crash(lm)  # the request's one durability step covered every topic of it
    again = manager(tmp_path)
    assert {n: again.topics[n].topic_id for n in ("a", "c")} == ids
    assert again.topics["a"].partitions == 3 and again.topic_config("c")["cleanup.policy"] == "compact"
    again.maker.wait_idle()  # start-up makes what the crash left unmade (PartitionMaker)
    assert all(files.read_partition_metadata(tmp_path / f"a-{p}") == ids["a"] for p in range(3))
    again.shutdown()


def test_create_topics_validate_only_makes_nothing(tmp_path):
    lm = manager(tmp_path)
    answers = lm.create_topics([NewTopic("v", 2, {}), NewTopic("w", 1, {"retention.ms": "soon"})], now_ms=T0,
                               validate_only=True)
    assert isinstance(answers[0], TopicInfo) and answers[0].partitions == 2
    assert isinstance(answers[1], TopicError) and answers[1].error_code == ErrorCode.invalid_config
    assert not lm.topics.get("v") and not (tmp_path / "v-0").exists()
    lm.shutdown()


def test_create_topics_disk_error_fails_the_batch_and_leaves_nothing(tmp_path, monkeypatch):
    lm = manager(tmp_path)

    def full_disk(path, data, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(files, "atomic_write", full_disk)  # the topics file cannot be written
    answers = lm.create_topics([NewTopic("d1", 2, {}), NewTopic("bad name", 1, {}), NewTopic("d2", 1, {})],
                               now_ms=T0)
    assert [a.error_code for a in answers] == [ErrorCode.kafka_storage_error, ErrorCode.invalid_topic_exception,
                                               ErrorCode.kafka_storage_error]
    assert "No space left" in str(answers[0])
    lm.maker.wait_idle()
    assert not lm.topics and not lm.logs and not lm.maker.pending
    assert not [n for n in os.listdir(tmp_path) if n.startswith("d")]
    monkeypatch.undo()
    lm.shutdown()
    again = manager(tmp_path)
    assert not again.topics
    again.shutdown()


class GatedMaker:
    """files.make_partition_files held at a gate in the PartitionMaker's thread (not in the
    caller's): what the broker does between its CreateTopics answer and the partitions' files."""

    def __init__(self, monkeypatch) -> None:
        import threading

        self.gate = threading.Event()
        self.abandon = False
        self.made: list[str] = []
        real = files.make_partition_files

        def make(path, topic_id):
            if threading.current_thread().name.startswith("partition-maker"):
                self.gate.wait(30)
                if self.abandon:
                    raise OSError(5, "the process is gone")
            real(path, topic_id)
            self.made.append(path.name)

        monkeypatch.setattr(files, "make_partition_files", make)


def test_new_partitions_are_made_after_the_answer_and_on_first_use(tmp_path, monkeypatch):
    lm = manager(tmp_path)
    gated = GatedMaker(monkeypatch)
    lm.create_topic("orders", 3, {}, now_ms=T0)
    assert lm.topics["orders"].partitions == 3
    assert not (tmp_path / "orders-2").exists()  # not made before the answer
    assert json.loads((tmp_path / "minikafka-topics.json").read_text())  # but named, durably
    assert produce(lm, "orders", 2, 3) == 0  # first use makes and opens it here
    assert (tmp_path / "orders-2" / "partition.metadata").exists()
    assert TopicPartition("orders", 0) not in lm.logs
    gated.gate.set()
    lm.maker.wait_idle()
    assert sorted(gated.made) == ["orders-0", "orders-1", "orders-2"]  # none made twice
    assert sorted(tp.partition for tp in lm.maker.pending) == [0, 1]  # made, opened on first use
    assert [pl.tp.partition for pl in lm] == [2]  # iteration: the open ones only
    assert lm.get(TopicPartition("orders", 2)).log_end_offset == 3
    lm.shutdown()
    again = manager(tmp_path)
    assert again.get(TopicPartition("orders", 2)).log_end_offset == 3
    again.shutdown()


def test_delete_topic_cancels_partitions_not_made(tmp_path, monkeypatch):
    lm = manager(tmp_path)
    gated = GatedMaker(monkeypatch)
    lm.create_topic("first", 1, {}, now_ms=T0)  # the thread waits at the gate making first-0
    lm.create_topic("gone", 3, {}, now_ms=T0)  # queued behind it
    produce(lm, "gone", 1, 1)  # made and opened here
    lm.delete_topic("gone")
    gated.gate.set()
    lm.maker.wait_idle()
    assert gated.made == ["gone-1", "first-0"]
    assert not [n for n in os.listdir(tmp_path) if n.startswith("gone")]
    assert list(lm.maker.pending) == [TopicPartition("first", 0)] and "gone" not in lm.topics
    lm.shutdown()


def test_crash_before_partitions_are_made_start_up_makes_them(tmp_path, monkeypatch):
    lm = manager(tmp_path)
    gated = GatedMaker(monkeypatch)
    info = lm.create_topic("early", 4, {}, now_ms=T0)
    gated.abandon = True  # the thread makes nothing from here: as if the process died at once
    gated.gate.set()
    crash(lm)  # kill -9 after the answer, before the thread made anything
    assert not [n for n in os.listdir(tmp_path) if n.startswith("early")]
    monkeypatch.undo()
    again = manager(tmp_path)
    again.maker.wait_idle()
    for p in range(4):
        assert files.read_partition_metadata(tmp_path / f"early-{p}") == info.topic_id
    assert produce(again, "early", 3, 2) == 0
    again.shutdown()


def test_partition_files_the_disk_refuses_fail_its_use_until_it_heals(tmp_path, monkeypatch):
    lm = manager(tmp_path)
    real = files.make_partition_files

    def refused(path, topic_id):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(files, "make_partition_files", refused)
    lm.create_topic("later", 1, {}, now_ms=T0)  # answered: the topics file was written
    lm.maker.wait_idle()
    with pytest.raises(OSError, match="No space left"):
        lm.get(TopicPartition("later", 0))
    monkeypatch.setattr(files, "make_partition_files", real)
    assert produce(lm, "later", 0, 2) == 0
    lm.shutdown()


def test_create_partitions_adds_directories(tmp_path):
    lm = manager(tmp_path)
    info = lm.create_topic("grow", 1, {}, now_ms=T0)
    lm.create_partitions("grow", 3, now_ms=T0)
    assert produce(lm, "grow", 2, 1) == 0
    lm.maker.wait_idle()
    for p in range(3):
        assert files.read_partition_metadata(tmp_path / f"grow-{p}") == info.topic_id
    lm.shutdown()
    assert manager(tmp_path).topics["grow"].partitions == 3


def test_stats_file_reports_recovery(tmp_path, monkeypatch):
    stats = tmp_path / "stats.json"
    monkeypatch.setenv("MINIKAFKA_STATS_FILE", str(stats))
    data = tmp_path / "data"
    lm = manager(data)
    lm.create_topic("s", 1, {}, now_ms=T0)
    produce(lm, "s", 0, 2)
    lm.shutdown()
    manager(data).shutdown()
    doc = json.loads(stats.read_text())
    assert doc["clean"] is True and doc["recovered_segments"] == 0
    lm = manager(data)
    produce(lm, "s", 0, 2)
    crash(lm)
    manager(data)
    doc = json.loads(stats.read_text())
    assert doc["clean"] is False and doc["partitions"]["s-0"] == 1
