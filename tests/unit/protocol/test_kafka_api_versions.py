"""minikafka's ApiVersions next to Apache Kafka 4.3.1's (issue 16, item 3).

tests/data/kafka-4.3.1-api-versions.json is what Kafka 4.3.1 answered; every API where minikafka
advertises something else must be in the README's table with its reason, and the table must not
list an API that no longer differs (so serving a new version means updating the table). In
conformance mode the record itself is checked against a live Kafka.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from minikafka.broker.dispatch import HandlerRegistry
from minikafka.broker.handlers import default_handlers

REPO = Path(__file__).resolve().parents[3]
RECORD = REPO / "tests" / "data" / "kafka-4.3.1-api-versions.json"


def kafka_versions() -> dict[int, tuple[int, int]]:
    doc = json.loads(RECORD.read_text())
    return {int(k): (v[0], v[1]) for k, v in doc["api_keys"].items()}


def minikafka_versions() -> dict[int, tuple[int, int]]:
    served = HandlerRegistry(default_handlers(None)).served  # type: ignore[arg-type]
    return {k: (r.min, r.max) for k, r in served.items()}


def readme_rows() -> list[tuple[set[int], str, str]]:
    """(api keys, Kafka column, minikafka column) of the README's API versions table."""
    text = (REPO / "README.md").read_text()
    section = text.split("### API versions next to Kafka 4.3.1", 1)[1].split("\n## ", 1)[0]
    rows = []
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 4 or cells[0].startswith(("API", "---")):
            continue
        keys: set[int] = set()
        for group in re.findall(r"\(([\d, -]+)\)", cells[0]):
            for part in group.split(","):
                lo, _, hi = part.strip().partition("-")
                keys.update(range(int(lo), int(hi or lo) + 1))
        rows.append((keys, cells[1], cells[2]))
    return rows


def _render(r: tuple[int, int] | None) -> str:
    return "none" if r is None else f"{r[0]}-{r[1]}"


@pytest.mark.unit
def test_every_difference_is_in_the_readme_with_a_reason() -> None:
    kafka, ours = kafka_versions(), minikafka_versions()
    differing = {k for k in kafka.keys() | ours.keys() if kafka.get(k) != ours.get(k)}
    rows = readme_rows()
    listed = set().union(*(keys for keys, _, _ in rows))
    assert differing - listed == set(), f"differences missing from the README table: {sorted(differing - listed)}"
    assert listed - differing == set(), f"README lists APIs that no longer differ: {sorted(listed - differing)}"
    for keys, kafka_col, ours_col in rows:
        if len(keys) == 1:
            (k,) = keys
            assert (kafka_col, ours_col) == (_render(kafka.get(k)), _render(ours.get(k))), f"README row for API {k}"
        else:
            assert ours_col == "none" or all(ours.get(k) for k in keys), keys


@pytest.mark.unit
def test_minikafka_never_advertises_beyond_kafka() -> None:
    kafka = kafka_versions()
    for key, (lo, hi) in minikafka_versions().items():
        assert key in kafka, f"API {key} is not served by Kafka 4.3.1"
        assert kafka[key][0] <= lo and hi <= kafka[key][1], f"API {key}: {lo}-{hi} outside Kafka's {kafka[key]}"


@pytest.mark.kafka_reference
@pytest.mark.skipif(os.environ.get("MINIKAFKA_TARGET", "minikafka").lower() != "kafka", reason="only against Apache Kafka (make conformance)")
def test_the_record_matches_a_live_kafka(kafka_broker) -> None:
    from rawclient import RawClient, api_versions_v3

    with RawClient.connect(kafka_broker.bootstrap) as c:
        live = {int(a.api_key): (int(a.min_version), int(a.max_version)) for a in c.request(api_versions_v3(), 3).api_keys}
    assert live == kafka_versions()
