"""The fast part of the compatibility matrix (issue 16, item 5) in `make test`: the clients installed
with the test extras (confluent-kafka, aiokafka, kafka-python) run two scenarios each against a
broker started here, through the same programs `make compat` runs (tests/compat/clients/), plus kcat
where the machine has it. The whole matrix (nine client stacks, five scenarios, minikafka and
Apache Kafka 4.3.1) is `make compat`."""

from __future__ import annotations

import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]

CLIENTS = Path(__file__).resolve().parents[1] / "compat" / "clients"
PROGRAMS = {"confluent-kafka": "py_confluent.py", "aiokafka": "py_aiokafka.py", "kafka-python": "py_kafka_python.py",
            "kcat": "kcat.py"}


# kcat has no transactions: its transactional cell is n/a in the matrix.
CASES = [(c, s) for c in sorted(PROGRAMS) for s in ("produce_consume", "transactional")
         if (c, s) != ("kcat", "transactional")]


@pytest.mark.parametrize(("client", "scenario"), CASES)
def test_client_scenario(kafka_broker, client: str, scenario: str) -> None:
    if client == "kcat" and shutil.which("kcat") is None:
        pytest.skip("kcat is not installed (make compat installs it)")
    proc = subprocess.run([sys.executable, str(CLIENTS / PROGRAMS[client]), scenario, kafka_broker.bootstrap,
                           f"s{uuid.uuid4().hex[:8]}"], capture_output=True, text=True, timeout=200, cwd=CLIENTS)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
