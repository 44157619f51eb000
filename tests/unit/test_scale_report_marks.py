"""The scale report's marks on a point: a client process at a whole core (client-bound), or broker
and client together at every core of the machine (machine saturated): both say the point measures
CPU per unit of work, not what the broker would do with more of the machine."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.harness.scale_report import render

pytestmark = pytest.mark.unit


def _sample(broker: str, point: int, value: float, broker_pct: float, client_pct: float) -> dict:
    return {"curve": "connections_active", "broker": broker, "point": point, "value": value,
            "broker_cpu_pct": broker_pct, "client_cpu_pct": client_pct}


def _row(text: str, point: str) -> str:
    return next(line for line in text.splitlines() if line.startswith(f"| {point}"))


def test_points_are_marked_by_who_used_the_cpu(tmp_path: Path) -> None:
    doc = {"meta": {"brokers": ["minikafka", "kafka"], "machine": {"cpus": 2, "cpu_model": "test"}},
           "samples": [
               _sample("minikafka", 1, 6000.0, 60.0, 40.0),     # half the machine idle: no mark
               _sample("kafka", 1, 6000.0, 50.0, 45.0),
               _sample("minikafka", 100, 15000.0, 117.0, 65.0),  # 182 % of 200: saturated
               _sample("kafka", 100, 40000.0, 124.0, 95.0),      # the client at a whole core
           ]}
    text = render(doc, tmp_path)
    assert "saturated" not in _row(text, "1 ") and "client-bound" not in _row(text, "1 ")
    row = _row(text, "100")
    assert "(client-bound: kafka)" in row
    assert "(machine saturated: minikafka)" in row


def test_no_saturation_mark_without_the_machine_size(tmp_path: Path) -> None:
    doc = {"meta": {"brokers": ["minikafka"], "machine": {}},
           "samples": [_sample("minikafka", 1, 6000.0, 117.0, 80.0)]}
    assert "saturated" not in render(doc, tmp_path)
