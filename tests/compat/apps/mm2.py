"""Application row of the compatibility matrix: MirrorMaker 2 (Kafka 4.3.1's dedicated
org.apache.kafka.connect.mirror.MirrorMaker, from Maven Central) copying a topic from one broker to
another. Holds when the target gets `src.<topic>` with every record in order and the topic's
retention.ms (topic configs are synced with IncrementalAlterConfigs), and MirrorMaker's ACL sync
against the source did not fail (a broker without an authorizer answers SECURITY_DISABLED).

    python mm2.py <source bootstrap> <target bootstrap> <prefix>   exits 0, or one line and 1
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

from app_support import LIBS, check, java, stop, verdict
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic, ResourceType

N = 500


def retention(admin: AdminClient, topic: str) -> str | None:
    res = ConfigResource(ResourceType.TOPIC, topic)
    entries = next(iter(admin.describe_configs([res]).values())).result(30)
    return entries["retention.ms"].value


def main(source: str, target: str, prefix: str) -> None:
    check((LIBS / "connect-mirror-4.3.1.jar").exists(), f"MirrorMaker 2 jars missing in {LIBS}")
    topic = f"{prefix}-data"
    src_admin, dst_admin = AdminClient({"bootstrap.servers": source}), AdminClient({"bootstrap.servers": target})
    next(iter(src_admin.create_topics([NewTopic(topic, 1, 1, config={"retention.ms": "123456789"})]).values())) \
        .result(30)
    p = Producer({"bootstrap.servers": source})
    for i in range(N):
        p.produce(topic, key=f"k{i}".encode(), value=f"v{i}".encode())
    check(p.flush(30) == 0, "source records not produced")
    with tempfile.TemporaryDirectory(prefix="mm2-") as tmp:
        props = Path(tmp) / "mm2.properties"
        props.write_text("\n".join([
            "clusters=src,dst", f"src.bootstrap.servers={source}", f"dst.bootstrap.servers={target}",
            "src->dst.enabled=true", f"src->dst.topics={topic}", "dst->src.enabled=false",
            "replication.factor=1", "checkpoints.topic.replication.factor=1",
            "heartbeats.topic.replication.factor=1", "offset-syncs.topic.replication.factor=1",
            "offset.storage.replication.factor=1", "status.storage.replication.factor=1",
            "config.storage.replication.factor=1", "tasks.max=1", "refresh.topics.interval.seconds=2",
            "sync.topic.configs.interval.seconds=2", "sync.topic.acls.interval.seconds=2", ""]))
        log = Path(tmp) / "mm2.log"
        mm2 = java("org.apache.kafka.connect.mirror.MirrorMaker", str(props), log=log)
        try:
            mirrored = f"src.{topic}"
            c = Consumer({"bootstrap.servers": target, "group.id": f"{prefix}-check", "auto.offset.reset": "earliest"})
            seen: list[str] = []
            end = time.monotonic() + 150
            try:
                while not any(t == mirrored for t in dst_admin.list_topics(timeout=10).topics):
                    check(time.monotonic() < end and mm2.poll() is None, f"{mirrored} never appeared on the target")
                    time.sleep(0.5)
                c.assign([TopicPartition(mirrored, 0, 0)])
                while len(seen) < N and time.monotonic() < end:
                    m = c.poll(0.5)
                    if m is not None and not m.error():
                        seen.append(m.value().decode())
            finally:
                c.close()
            check(seen == [f"v{i}" for i in range(N)], f"target read {len(seen)} of {N} records in order")
            while retention(dst_admin, mirrored) != "123456789":
                check(time.monotonic() < end, f"retention.ms of {mirrored} never synced "
                                              f"({retention(dst_admin, mirrored)})")
                time.sleep(0.5)
            # MirrorSourceConnector runs its first ACL sync before its first topic-config sync, on one
            # scheduler thread: the synced retention.ms means the ACL sync has run and said its say.
            errors = [ln for ln in log.read_text(errors="replace").splitlines() if " ERROR " in ln]
            check(not errors, f"MirrorMaker logged errors: {errors[:1]}")
        finally:
            stop(mm2)


if __name__ == "__main__":
    verdict(main, *sys.argv[1:4])
