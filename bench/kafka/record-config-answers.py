"""Record what Apache Kafka answers when each topic config (CreateTopics, validate_only) and each
group config (IncrementalAlterConfigs on a GROUP resource) is set to each of a fixed list of
values, into tests/data/kafka-4.3.1-{topic,group}-config-answers.json, which
tests/unit/test_kafka_topic_configs.py and test_kafka_group_configs.py hold minikafka's validators to.

    .venv/bin/python bench/kafka/record-config-answers.py              # Apache Kafka (the jars)
    .venv/bin/python bench/kafka/record-config-answers.py --minikafka  # print minikafka's differences
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(REPO), str(REPO / "tests")]

from kafka_ref import scratch_broker  # noqa: E402
from confluent_kafka.admin import (  # noqa: E402
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewTopic,
    ResourceType,
)

RECORD = REPO / "tests" / "data" / "kafka-4.3.1-topic-config-answers.json"
GROUP_RECORD = REPO / "tests" / "data" / "kafka-4.3.1-group-config-answers.json"
CONFIGS = REPO / "tests" / "data" / "kafka-4.3.1-configs.json"
VALUES = ["-3", "-2", "-1", "0", "1", "1.5", "abc", "", "1048575", "1048576", "23", "18", "10", "true",
          "2147483648", "9223372036854775808", "*", "0:1", "0:1,1:2", "x:1", "compact,delete", "zzz",
          "CreateTime", "LogAppendTime", "gzip", "zstd", "producer", "uncompressed", "snappy", "lz4", "none"]


GROUP_VALUES = ["-1", "0", "1", "2", "3", "4", "5", "6", "9", "10", "11", "100", "999", "1000", "1500", "2000",
                "2500", "3000", "4000", "4999", "5000", "9999", "10000", "10001", "14999", "15000", "15001", "29999",
                "30000", "44999", "45000", "60000", "60001", "100000", "300000", "3600001", "abc", "", "true",
                "false", "latest", "earliest", " latest", "Earliest", "LATEST", "read_committed", "read_uncommitted",
                "by_duration:PT1H", "by_duration:xx", "by_duration:P1D", "by_duration:PT0S", "by_duration:-PT1H",
                "by_duration:PT1.5S", "by_duration:p1d", "BY_DURATION:PT1H", "2147483648", "1.5"]


def group_answers(bootstrap: str) -> dict[str, list | None]:
    """SET each group config of group g1 to each value; an accepted value is deleted again."""
    from minikafka.group_config import GROUP_CONFIGS
    admin = AdminClient({"bootstrap.servers": bootstrap})

    def alter(name: str, value: str | None, op: AlterConfigOpType) -> list | None:
        resource = ConfigResource(ResourceType.GROUP, "g1", incremental_configs=[
            ConfigEntry(name, value, incremental_operation=op)])
        try:
            next(iter(admin.incremental_alter_configs([resource]).values())).result(30)
            return None
        except Exception as exc:  # noqa: BLE001 - a KafkaException carries the KafkaError
            return [exc.args[0].code(), exc.args[0].str()]

    out: dict[str, list | None] = {}
    for name in sorted(GROUP_CONFIGS):
        for value in GROUP_VALUES:
            out[f"{name}={value}"] = alter(name, value, AlterConfigOpType.SET)
            if out[f"{name}={value}"] is None:
                alter(name, None, AlterConfigOpType.DELETE)
    return out


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
        with scratch_broker(kafka=False) as broker:
            got = {RECORD: answers(broker.bootstrap), GROUP_RECORD: group_answers(broker.bootstrap)}
        for record, mine in got.items():
            want = json.loads(record.read_text())["answers"]
            diff = {k: (want.get(k), mine[k]) for k in mine if want.get(k) != mine[k]}
            print(json.dumps(diff, indent=1))
            print(f"{record.name}: {len(mine) - len(diff)} of {len(mine)} answers match Kafka")
        return
    with scratch_broker(kafka=True) as kafka:
        topics, groups = answers(kafka.bootstrap), group_answers(kafka.bootstrap)
    about = {RECORD: "CreateTopics(validate_only) on Apache Kafka 4.3.1 with one topic config set to each value",
             GROUP_RECORD: "IncrementalAlterConfigs SET on GROUP resource g1 on Apache Kafka 4.3.1, one group "
                           "config at a time (reset after each success)"}
    for record, got in ((RECORD, topics), (GROUP_RECORD, groups)):
        doc = {"about": about[record] + ": null where Kafka accepted the value, else [error code, message]. "
                                        "Recorded by bench/kafka/record-config-answers.py.", "answers": got}
        record.write_text(json.dumps(doc, indent=0, sort_keys=True))
        print(f"{len(got)} answers recorded in {record}")


if __name__ == "__main__":
    main()
