"""Hold a config parser to Apache Kafka's recorded answers (tests/data/kafka-4.3.1-*-config-answers.json,
recorded by bench/kafka/record-config-answers.py): {"name=value": null or [error code, message]}."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from minikafka.config import ConfigError

DATA = Path(__file__).resolve().parent / "data"
INVALID_CONFIG = 40


def recorded(name: str) -> dict[str, list | None]:
    return json.loads((DATA / name).read_text())["answers"]


def differences(answers: dict[str, list | None], parse: Callable[[str, str], Any]) -> dict[str, tuple]:
    """The answers `parse` gives differently: {key: (Kafka's, ours)}; a ConfigError is INVALID_CONFIG
    with its message, as the broker answers it."""
    wrong = {}
    for key, want in answers.items():
        name, _, value = key.partition("=")
        try:
            parse(name, value)
            got = None
        except ConfigError as exc:
            got = [INVALID_CONFIG, str(exc)]
        if got != want:
            wrong[key] = (want, got)
    return wrong
