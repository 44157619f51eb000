"""What a broker's process loads to serve its first clients (issue 17: start-up time).

Each module below was imported at every start once and cost the first answer some milliseconds;
each is now imported by the first thing that uses it. A broker without SASL, TLS, a control
endpoint, the invariant monitor, groups or a dirty compacted log, taken through the start-up
benchmark's requests by confluent-kafka (ApiVersions, Metadata, CreateTopics) and a produce, has
loaded none of them. The broker runs with PYTHONPROFILEIMPORTTIME, which makes the interpreter list
in its own process every module an import statement brings in (importlib.import_module, which the
handler table uses, is not listed; every import named here is a statement).
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from confluent_kafka import Producer

from clients import create_topic

from minikafka.broker import allocator

pytestmark = pytest.mark.integration

# What only some brokers need, with what brings it in.
DEFERRED = {
    "encodings.idna": "a listener on a host name (getaddrinfo)",
    "minikafka.scram.credentials": "SCRAM credentials, a SCRAM listener",
    "minikafka.security.sasl.plain": "a SASL listener with PLAIN",
    "minikafka.security.sasl.scram": "a SASL listener with SCRAM",
    "minikafka.security.sasl.oauthbearer": "a SASL listener",
    "minikafka.security.jwks": "a SASL listener with OAUTHBEARER",
    "minikafka.security.tls": "a TLS listener",
    "minikafka.broker.control_server": "--control-port",
    "minikafka.control.invariants": "--check-invariants",
    "minikafka.storage.cleaner.cleaning": "a compacted log to clean",
    "minikafka.coordinator.group.coordinator": "a group, or a data dir with __consumer_offsets",
    "urllib.request": "a SASL listener with OAUTHBEARER (security/jwks.py)",
}
if allocator._compiled is not None:  # else the allocator's tuning calls glibc through ctypes
    DEFERRED["ctypes"] = "the allocator's ctypes fallback (broker/_malloc.c not built)"


def _imported(broker: Any) -> set[str]:
    # Not anchored to a line's start: the broker's own log lines share the file.
    return set(re.findall(r"import time:\s+\d+ \|\s+\d+ \|\s*(\S+)", broker.log_path.read_text()))


def test_a_plain_broker_serves_its_first_clients_without_the_rooms_it_does_not_use(broker_factory) -> None:
    broker = broker_factory(env={"PYTHONPROFILEIMPORTTIME": "1"}, control=False)
    create_topic(broker.bootstrap, "first", 1)
    p = Producer({"bootstrap.servers": broker.bootstrap})
    try:
        p.produce("first", b"v")
        assert p.flush(30) == 0
    finally:
        p.close()
    imported = _imported(broker)
    # The listing is there: what every start imports, and what these requests needed.
    assert "minikafka.broker.app" in imported
    assert {"kio.schema.create_topics", "kio.schema.produce"} <= {m.rsplit(".", 2)[0] for m in imported}
    assert {m: why for m, why in DEFERRED.items() if m in imported} == {}


def test_a_scram_listener_loads_scram_at_start_and_not_the_other_mechanisms(broker_factory) -> None:
    # At start, not at the first client's handshake (it would wait on the event loop for it).
    broker = broker_factory(env={"PYTHONPROFILEIMPORTTIME": "1"}, control=False, overrides={
        "listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
        "sasl.enabled.mechanisms": "SCRAM-SHA-256"})
    imported = _imported(broker)
    assert {"minikafka.security.sasl.scram", "minikafka.scram.credentials"} <= imported
    assert not {"minikafka.security.sasl.plain", "minikafka.security.jwks"} & imported
