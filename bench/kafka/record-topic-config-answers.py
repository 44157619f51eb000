"""Record what Apache Kafka answers to CreateTopics(validate_only) for every topic config set to
each of a fixed list of values, into tests/data/kafka-4.3.1-topic-config-answers.json (which
tests/unit/test_kafka_topic_configs.py holds minikafka's validators to).

    .venv/bin/python bench/kafka/record-topic-config-answers.py          # Apache Kafka (the jars)
    .venv/bin/python bench/kafka/record-topic-config-answers.py --minikafka  # print differences
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(REPO), str(REPO / "tests")]

from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

RECORD = REPO / "tests" / "data" / "kafka-4.3.1-topic-config-answers.json"
CONFIGS = REPO / "tests" / "data" / "kafka-4.3.1-configs.json"
VALUES = ["-3", "-2", "-1", "0", "1", "1.5", "abc", "", "1048575", "1048576", "23", "18", "10", "true",
          "2147483648", "9223372036854775808", "*", "0:1", "0:1,1:2", "x:1", "compact,delete", "zzz",
          "CreateTime", "LogAppendTime", "gzip", "zstd", "producer", "uncompressed", "snappy", "lz4", "none"]


def answers(bootstrap: str) -> dict[str, list | None]:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    out: dict[str, list | None] = {}
    for name in sorted(json.loads(CONFIGS.read_text())["topic"]):
        for value in VALUES:
            futures = admin.create_topics([NewTopic("probe-topic", 1, 1, config={name: value})],
                                          validate_only=True, request_timeout=15)
            try:
                futures["probe-topic"].result()
                out[f"{name}={value}"] = None
            except Exception as exc:  # noqa: BLE001 - a KafkaException carries the KafkaError
                err = exc.args[0]
                out[f"{name}={value}"] = [err.code(), err.str()]
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--minikafka", action="store_true", help="compare minikafka with the record")
    args = ap.parse_args()
    if args.minikafka:
        from minikafka.testing import BrokerProcess
        broker = BrokerProcess(Path(tempfile.mkdtemp())).start()
        try:
            got = answers(broker.bootstrap)
        finally:
            broker.term()
        want = json.loads(RECORD.read_text())["answers"]
        diff = {k: (want.get(k), got[k]) for k in got if want.get(k) != got[k]}
        print(json.dumps(diff, indent=1))
        print(f"{len(got) - len(diff)} of {len(got)} answers match Kafka")
        return
    from kafka_ref import ApacheKafka
    kafka = ApacheKafka().start(Path(tempfile.mkdtemp()))
    try:
        got = answers(kafka.bootstrap)
    finally:
        kafka.stop()
    doc = {"about": "CreateTopics(validate_only) on Apache Kafka 4.3.1 with one topic config set to each value: "
                    "null where Kafka accepted it, else [error code, message]. Recorded by "
                    "bench/kafka/record-topic-config-answers.py.", "answers": got}
    RECORD.write_text(json.dumps(doc, indent=0, sort_keys=True))
    print(f"{len(got)} answers recorded in {RECORD}")


if __name__ == "__main__":
    main()
