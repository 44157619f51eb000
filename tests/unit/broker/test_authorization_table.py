"""The authorization door covers every API the broker serves: each has its checks in
broker/authorization.py's table, or is one anyone may call, as in Kafka."""

from __future__ import annotations

import pytest

from minikafka.broker.authorization import POLICIES
from minikafka.broker.dispatch import HandlerRegistry
from minikafka.broker.handlers import default_handlers
from minikafka.protocol import versions

pytestmark = pytest.mark.unit

OPEN_TO_ANYONE = {17, 18, 36}  # SaslHandshake, ApiVersions, SaslAuthenticate


def test_every_served_api_is_checked_or_open_to_anyone() -> None:
    served = set(HandlerRegistry(default_handlers(None)).served)  # type: ignore[arg-type]
    unchecked = served - set(POLICIES) - OPEN_TO_ANYONE
    assert unchecked == set(), [versions.api_name(k) for k in sorted(unchecked)]
    assert set(POLICIES) <= served
