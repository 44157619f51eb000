"""Record Apache Kafka 4.3.1's broker configs as DescribeConfigs(BROKER, synonyms) answers them:
for every config its ConfigDef type, its default (the DEFAULT_CONFIG synonym), whether it can be
changed dynamically (read_only false), and whether it is sensitive. Writes
minikafka/kafka_broker_configs.json, from which minikafka describes its broker (facts about
Kafka's configuration, no documentation text), and prints what minikafka answers differently
with --minikafka.

    .venv/bin/python bench/kafka/record-broker-configs.py              # Apache Kafka (the jars)
    .venv/bin/python bench/kafka/record-broker-configs.py --minikafka  # compare minikafka
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(REPO), str(REPO / "tests")]

from kio.schema.describe_configs.v4.request import DescribeConfigsRequest, DescribeConfigsResource  # noqa: E402
from kafka_ref import scratch_broker  # noqa: E402
from rawclient import RawClient  # noqa: E402

TABLE = REPO / "minikafka" / "kafka_broker_configs.json"
DEFAULT_CONFIG = 5


def describe_broker(bootstrap: str, node_id: str) -> list:
    req = DescribeConfigsRequest(resources=(DescribeConfigsResource(
        resource_type=4, resource_name=node_id, configuration_keys=None),),
        include_synonyms=True, include_documentation=False)
    with RawClient.connect(bootstrap) as c:
        (result,) = c.request(req, api_version=4).results
    assert result.error_code == 0, result
    return list(result.configs)


def table_of(configs: list) -> dict[str, list]:
    """name -> [type code, default value or null, read_only, sensitive]. (Kafka 4.3.1 lists a
    broker config's own name only among its synonyms, so there are no synonym names to keep.)"""
    out = {}
    for e in configs:
        default = next((s.value for s in e.synonyms if s.source == DEFAULT_CONFIG), None)
        out[e.name] = [int(e.config_type), default, bool(e.read_only), bool(e.is_sensitive)]
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--minikafka", action="store_true", help="compare minikafka with the record")
    args = ap.parse_args()
    if args.minikafka:
        with scratch_broker(kafka=False) as broker:
            mine = {e.name: e for e in describe_broker(broker.bootstrap, "1")}
        want = json.loads(TABLE.read_text())["configs"]
        missing = sorted(set(want) - set(mine))
        extra = sorted(set(mine) - set(want))
        typed = sorted(n for n in set(want) & set(mine) if int(mine[n].config_type) != want[n][0])
        ro = sorted(n for n in set(want) & set(mine) if bool(mine[n].read_only) != want[n][2])
        print(json.dumps({"missing": missing, "extra": extra, "type differs": typed, "read_only differs": ro},
                         indent=1))
        return
    with scratch_broker(kafka=True) as kafka:
        configs = describe_broker(kafka.bootstrap, "1")
    doc = {"about": "Apache Kafka 4.3.1's broker configs as DescribeConfigs(BROKER 1, include_synonyms) "
                    "answers them: name -> [ConfigType code, default (the DEFAULT_CONFIG synonym) or null, "
                    "read_only (not dynamically updatable), sensitive]. "
                    "Recorded by bench/kafka/record-broker-configs.py.",
           "configs": dict(sorted(table_of(configs).items()))}
    TABLE.write_text(json.dumps(doc, indent=0) + "\n")
    print(f"{len(configs)} broker configs recorded in {TABLE}")


if __name__ == "__main__":
    main()
