"""The idempotent producer end to end: confluent-kafka with enable.idempotence=true."""

from __future__ import annotations

import pytest
from clients import create_topic, produce_all, producer, read_all

pytestmark = pytest.mark.integration


def test_idempotent_producer_roundtrip(kafka_broker):
    create_topic(kafka_broker.bootstrap, "idem", 2)
    p = producer(kafka_broker.bootstrap, **{"enable.idempotence": True, "acks": "all",
                                             "batch.num.messages": 20})
    sent = [{"key": str(i).encode(), "value": f"v{i}".encode(), "partition": i % 2} for i in range(1000)]
    delivered = produce_all(p, "idem", sent)
    assert len(delivered) == 1000
    got = read_all(kafka_broker.bootstrap, "idem", 2, 1000)
    assert sorted(m.value() for m in got) == sorted(s["value"] for s in sent)
    for part in (0, 1):
        values = [int(m.key()) for m in got if m.partition() == part]
        assert values == sorted(values)  # order kept per partition
