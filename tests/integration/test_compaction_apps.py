"""What Kafka Streams and Kafka Connect need from compaction (issue 19, item 4), with the real
applications from Maven Central (Kafka 4.3.1, bench/kafka/fetch-jars.sh apps), as the compat
matrix runs them.

- Kafka Streams: the exactly_once_v2 word count (tests/compat/apps/StreamsWordCount.java) with its
  record cache off, so every count update goes to the changelog topic, and 1 MiB changelog
  segments. Its changelog is created compacted and is cleaned while the app runs; then the app is
  killed with -9, its local state deleted, and it restores the counts from the compacted
  changelog alone: the counts stay exact.
- Kafka Connect: a distributed worker (its config, offsets and status topics are created
  compacted) copies a file through the FileStream source and sink connectors, is stopped,
  more lines are appended, and once started again both connectors resume from their stored
  offsets: the output file is the input, each line once.

Both run against Apache Kafka 4.3.1 in conformance mode as well.
"""

from __future__ import annotations

import collections
import shutil
import signal
import struct
import tempfile
from pathlib import Path
from typing import Any

import pytest
from clients import admin, create_topic, read_to_eof, uniq, wait_until
from confluent_kafka import ConsumerGroupTopicPartitions, Producer, TopicPartition
from confluent_kafka.admin import ConfigResource

pytestmark = [pytest.mark.integration, pytest.mark.kafka_reference, pytest.mark.timeout(420)]

BROKER = {"log.cleaner.backoff.ms": "100"}


@pytest.fixture(scope="module")
def apps(streams_app: Any) -> Any:
    """The Streams test's fixture (Java, Kafka's application jars fetched once), plus Connect's helpers."""
    streams_eos, app_support, _ = streams_app
    import connect_eos

    return app_support, streams_eos, connect_eos


def cleanup_policy(bootstrap: str, topic: str) -> str:
    res = ConfigResource(ConfigResource.Type.TOPIC, topic)
    a = admin(bootstrap)  # alive until the future resolves
    return a.describe_configs([res])[res].result(30)["cleanup.policy"].value


# Long words: 24,000 count updates of ~90 bytes fill more than one 1 MiB changelog segment (Kafka's
# smallest), so the first is closed and cleaned while the app runs.
WORD = "w" * 72


def produce_lines(bootstrap: str, topic: str, start: int, n: int, counts: collections.Counter) -> None:
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "log_level": 3})
    for i in range(start, start + n):
        line = f"{WORD}{i % 7} {WORD}{i % 11}"
        counts.update(line.split())
        p.produce(topic, key=str(i).encode(), value=line.encode())
        if i % 1000 == 0:
            p.poll(0)
    assert p.flush(60) == 0


def test_streams_changelog_is_compacted_and_restores_exact_counts(configured_broker, apps, tmp_path):
    app_support, streams_eos, _ = apps
    broker = configured_broker(overrides=BROKER)
    b = broker.bootstrap
    prefix = uniq("wc")
    create_topic(b, f"{prefix}-text", 1)
    create_topic(b, f"{prefix}-counts", 1)
    expected: collections.Counter = collections.Counter()
    produce_lines(b, f"{prefix}-text", 0, 12_000, expected)  # 24,000 count updates over 18 words
    # A 6 s session (the broker's minimum): the instance started after the kill -9 rejoins once the
    # killed member's session ends, not after Streams' default 45 s.
    configs = ("statestore.cache.max.bytes=0", "topic.segment.bytes=1048576", "topic.min.cleanable.dirty.ratio=0.01",
               "consumer.session.timeout.ms=6000")
    log = tmp_path / "streams.log"
    state = tmp_path / "state"
    app = streams_eos.start_app(b, prefix, str(state), "classic", *configs, log=log)
    try:
        got = streams_eos.committed_counts(b, f"{prefix}-counts", expected, 240)
        assert got == dict(expected), log.read_text()[-3000:]
        changelogs = [t for t in admin(b).list_topics(timeout=10).topics
                      if t.startswith(f"{prefix}-wc-") and t.endswith("-changelog")]
        assert len(changelogs) == 1, changelogs
        changelog = changelogs[0]
        assert cleanup_policy(b, changelog) == "compact"

        def changelog_rows() -> list[tuple[Any, ...]]:
            return read_to_eof(b, [(changelog, 0)], "read_committed", timeout=120)

        # cleaned while the app runs: far fewer records than the 24,000 updates written to it
        wait_until(lambda: len(changelog_rows()) < 14_000, 120, "the changelog to be compacted", interval=1)
        last = {k.decode(): struct.unpack(">q", v)[0] for *_, k, v in changelog_rows()}
        assert last == dict(expected)

        # kill -9, lose the local state: the counts come back from the compacted changelog alone
        app.send_signal(signal.SIGKILL)
        app.wait(30)
        shutil.rmtree(state)
        produce_lines(b, f"{prefix}-text", 12_000, 2_000, expected)
        app = streams_eos.start_app(b, prefix, str(state), "classic", *configs, log=log)
        got = streams_eos.committed_counts(b, f"{prefix}-counts", expected, 240)
        assert got == dict(expected), log.read_text()[-3000:]
    finally:
        app_support.stop(app)


def test_connect_file_source_and_sink_resume_from_stored_offsets(configured_broker, apps):
    app_support, _, connect_eos = apps
    broker = configured_broker(overrides=BROKER)
    b = broker.bootstrap
    prefix = uniq("cx")
    topic = f"{prefix}-lines"
    create_topic(b, topic, 1)
    n = 2000
    with tempfile.TemporaryDirectory(prefix="connect-") as tmp:
        work = Path(tmp)
        source, sink = work / "input.txt", work / "output.txt"
        source.write_text("".join(f"line-{i}\n" for i in range(n // 2)))
        port = connect_eos.free_port()
        props = connect_eos.worker_properties(work, b, prefix, port)
        log = work / "worker.log"
        worker = app_support.java("org.apache.kafka.connect.cli.ConnectDistributed", str(props), log=log)
        try:
            connect_eos.wait_rest(port, worker, 120)
            connect_eos.rest(port, "PUT", f"/connectors/{prefix}-src/config", {
                "connector.class": "org.apache.kafka.connect.file.FileStreamSourceConnector",
                "tasks.max": "1", "file": str(source), "topic": topic})
            connect_eos.rest(port, "PUT", f"/connectors/{prefix}-sink/config", {
                "connector.class": "org.apache.kafka.connect.file.FileStreamSinkConnector",
                "tasks.max": "1", "file": str(sink), "topics": topic})

            def lines_out() -> list[str]:
                return sink.read_text().splitlines() if sink.exists() else []

            def sink_committed() -> int:
                req = ConsumerGroupTopicPartitions(f"connect-{prefix}-sink", [TopicPartition(topic, 0)])
                a = admin(b)  # alive until the future resolves
                got = a.list_consumer_group_offsets([req])[req.group_id].result(30)
                return got.topic_partitions[0].offset

            wait_until(lambda: len(lines_out()) >= n // 2, 120, "the first half copied", interval=0.5)
            for t in ("configs", "offsets", "status"):  # Connect's own topics, created compacted
                assert cleanup_policy(b, f"{prefix}-{t}") == "compact"
            # both connectors' offsets are stored: the sink's committed group offset, the source's
            # file position in the offsets topic
            wait_until(lambda: sink_committed() == n // 2, 60, "the sink's offsets", interval=0.5)
            size = source.stat().st_size
            wait_until(lambda: f'"position":{size}' in "".join(
                (v or b"").decode() for *_, v in read_to_eof(b, [(f"{prefix}-offsets", p) for p in range(25)],
                                                             "read_uncommitted")), 60, "the source's offsets")
            worker.send_signal(signal.SIGTERM)
            assert worker.wait(60) is not None
            with source.open("a") as f:
                f.write("".join(f"line-{i}\n" for i in range(n // 2, n)))
            worker = app_support.java("org.apache.kafka.connect.cli.ConnectDistributed", str(props), log=log)
            connect_eos.wait_rest(port, worker, 120)
            wait_until(lambda: sink_committed() == n, 120, "the second half copied", interval=0.5)
            assert lines_out() == [f"line-{i}" for i in range(n)], log.read_text()[-3000:]
            assert len(read_to_eof(b, [(topic, 0)], "read_uncommitted")) == n  # the source resumed too
        finally:
            app_support.stop(worker)
