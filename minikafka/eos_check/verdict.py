"""The exactly-once verdict (pure): an input topic against an output topic, record by record.

Each record is known by an identity taken from it (`key_by`: its key, its value, both, or a
function of the record), the same on both sides: a copier that keeps keys can be checked by key,
one that transforms values needs a function that finds the input's identity in its output.

| finding          | meaning                                                                      |
|------------------|------------------------------------------------------------------------------|
| lost             | an input record delivered (committed or not transactional) with no delivered output |
| duplicated       | more than one delivered output record with the same identity                 |
| aborted_visible  | an output record of an aborted transaction that a read_committed consumer gets |
| reordered        | records of one input key delivered in another order than they were read      |
| open             | output records of a transaction with no marker yet (it holds the LSO: a hanging transaction if it stays) |

`open` is reported, not counted as a violation: it is what any transaction is until its end.
Each finding names the output offsets and producer ids (and transactional ids where the broker
still knows them) involved.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from minikafka.eos_check.history import ABORTED, OPEN, LoggedRecord

VIOLATIONS = ("lost", "duplicated", "aborted_visible", "reordered")
KEY_BY = ("key", "value", "key+value")


@dataclass(frozen=True, slots=True)
class Finding:
    kind: str
    identity: str
    records: tuple[dict[str, Any], ...]  # where: topic, partition, offset, producer_id, transactional_id


@dataclass
class EosReport:
    input_topic: str
    output_topic: str
    inputs: int = 0  # input records delivered
    outputs: int = 0  # output records delivered
    findings: list[Finding] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not any(f.kind in VIOLATIONS for f in self.findings)

    def count(self, kind: str) -> int:
        return sum(1 for f in self.findings if f.kind == kind)

    def summary(self) -> str:
        counts = ", ".join(f"{k} {self.count(k)}" for k in (*VIOLATIONS, "open"))
        verdict = "exactly once" if self.ok else "NOT exactly once"
        return f"{self.input_topic} -> {self.output_topic}: {verdict} ({self.inputs} in, {self.outputs} out; {counts})"

    def text(self, limit: int = 20) -> str:
        lines = [self.summary()]
        for f in self.findings[:limit]:
            where = "; ".join(_where(r) for r in f.records)
            lines.append(f"  {f.kind:<15} {f.identity}: {where}")
        if len(self.findings) > limit:
            lines.append(f"  ... {len(self.findings) - limit} more")
        return "\n".join(lines)

    def as_json(self) -> str:
        return json.dumps({"input": self.input_topic, "output": self.output_topic, "ok": self.ok,
                           "inputs": self.inputs, "outputs": self.outputs,
                           "counts": {k: self.count(k) for k in (*VIOLATIONS, "open")},
                           "findings": [{"kind": f.kind, "identity": f.identity, "records": list(f.records)}
                                        for f in self.findings]})


Identity = Callable[[LoggedRecord], Any]


def identity_of(key_by: str | Identity) -> Identity:
    if callable(key_by):
        return key_by
    if key_by == "key":
        return lambda r: r.key
    if key_by == "value":
        return lambda r: r.value
    if key_by == "key+value":
        return lambda r: (r.key, r.value)
    raise ValueError(f"key_by is one of {', '.join(KEY_BY)} or a function of the record, not {key_by!r}")


def judge(input_topic: str, inputs: list[LoggedRecord], output_topic: str, outputs: list[LoggedRecord],
          visible: set[tuple[int, int]], *, key_by: str | Identity = "key",
          transactional_ids: Mapping[int, str] | None = None) -> EosReport:
    """The verdict on one copy. `inputs`/`outputs`: every record of each topic with its outcome
    (history.reconstruct); `visible`: the output's (partition, offset) a read_committed consumer
    gets (history.client_view); `transactional_ids`: producer id -> transactional id, where known."""
    ident = identity_of(key_by)
    names = transactional_ids or {}
    report = EosReport(input_topic, output_topic)
    delivered_in = [r for r in inputs if r.delivered]
    delivered_out = [r for r in outputs if r.delivered]
    report.inputs, report.outputs = len(delivered_in), len(delivered_out)

    by_identity: dict[Any, list[LoggedRecord]] = defaultdict(list)
    for r in delivered_out:
        by_identity[ident(r)].append(r)
    for r in delivered_in:
        if ident(r) not in by_identity:
            report.findings.append(Finding("lost", _show(ident(r)), (_at(r, names),)))
    for identity, found in by_identity.items():
        if len(found) > 1:
            report.findings.append(Finding("duplicated", _show(identity), tuple(_at(r, names) for r in found)))
    for r in outputs:
        if r.outcome == ABORTED and (r.partition, r.offset) in visible:
            report.findings.append(Finding("aborted_visible", _show(ident(r)), (_at(r, names),)))
    open_by_producer: dict[int, list[LoggedRecord]] = defaultdict(list)
    for r in outputs:
        if r.outcome == OPEN:
            open_by_producer[r.producer_id].append(r)
    for pid, found in open_by_producer.items():
        report.findings.append(Finding("open", f"producer {pid}: {len(found)} record(s)", (_at(found[0], names),)))
    report.findings.extend(_reordered(delivered_in, by_identity, ident, names))
    return report


def _reordered(delivered_in: list[LoggedRecord], by_identity: Mapping[Any, list[LoggedRecord]],
               ident: Identity, names: Mapping[int, str]) -> list[Finding]:
    """Per input key (within its partition): the first delivered output of each of its records
    must come in the order the records were read."""
    findings = []
    per_key: dict[tuple[int, bytes | None], list[LoggedRecord]] = defaultdict(list)
    for r in delivered_in:
        per_key[(r.partition, r.key)].append(r)
    for (_, key), records in per_key.items():
        firsts = [min(by_identity[ident(r)], key=lambda o: (o.partition, o.offset))
                  for r in records if ident(r) in by_identity]
        if len({o.partition for o in firsts}) > 1:
            continue  # spread over partitions: no order is promised between them
        for before, after in zip(firsts, firsts[1:]):
            if after.offset < before.offset:
                findings.append(Finding("reordered", f"key {_show(key)}", (_at(before, names), _at(after, names))))
                break
    return findings


def _at(r: LoggedRecord, names: Mapping[int, str]) -> dict[str, Any]:
    where: dict[str, Any] = {"topic": r.topic, "partition": r.partition, "offset": r.offset,
                             "producer_id": r.producer_id, "outcome": r.outcome}
    if r.producer_id in names:
        where["transactional_id"] = names[r.producer_id]
    return where


def _where(w: Mapping[str, Any]) -> str:
    txn = f" ({w['transactional_id']})" if "transactional_id" in w else ""
    return f"{w['topic']}-{w['partition']}@{w['offset']} producer {w['producer_id']}{txn} {w['outcome']}"


def _show(identity: Any) -> str:
    if isinstance(identity, bytes):
        return identity.decode("utf-8", errors="replace")
    if isinstance(identity, tuple):
        return "/".join(_show(x) for x in identity)
    return repr(identity)
