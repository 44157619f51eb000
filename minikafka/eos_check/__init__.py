"""The exactly-once checker (issue 20, item 3): does a pipeline's output hold each input record
once, nothing aborted visible, per-key order kept? Run on the topics of your own pipeline:

    report = check_eos("127.0.0.1:9092", "orders", "orders-copy", key_by="value")
    assert report.ok, report.text()

or `minikafka check-eos --input orders --output orders-copy --key-by value`. It reads both topics
whole (history.py: every record's fate from the markers in the log; the output once more as a
read_committed consumer gets it) and compares them (verdict.py). It reads with minikafka's own
protocol codec, so it works against any Kafka broker.
"""

from __future__ import annotations

from minikafka.eos_check.history import LoggedRecord, client_view, reconstruct
from minikafka.eos_check.verdict import KEY_BY, EosReport, Finding, Identity, judge
from minikafka.eos_check.wire import READ_COMMITTED, READ_UNCOMMITTED, CheckError, Wire

__all__ = ["KEY_BY", "CheckError", "EosReport", "Finding", "check_eos", "read_topic"]


def read_topic(wire: Wire, topic: str) -> tuple[list[LoggedRecord], set[tuple[int, int]]]:
    """Every record of the topic with its outcome, and the (partition, offset)s a read_committed
    consumer gets from the broker's read_committed answers."""
    records: list[LoggedRecord] = []
    visible: set[tuple[int, int]] = set()
    for partition in range(wire.partitions(topic)):
        records += reconstruct(topic, partition, (data for data, _ in wire.fetch_all(topic, partition, READ_UNCOMMITTED)))
        visible |= {(partition, o) for o in client_view(wire.fetch_all(topic, partition, READ_COMMITTED))}
    return records, visible


def check_eos(bootstrap: str, input_topic: str, output_topic: str, *, key_by: str | Identity = "key",
              timeout: float = 60.0) -> EosReport:
    """The verdict on input_topic -> output_topic as they stand now (see verdict.py for what each
    finding means). Raises CheckError when a topic cannot be read."""
    with Wire(bootstrap, timeout) as wire:
        inputs, _ = read_topic(wire, input_topic)
        outputs, visible = read_topic(wire, output_topic)
        names = wire.transactional_ids()
    return judge(input_topic, inputs, output_topic, outputs, visible, key_by=key_by, transactional_ids=names)
