"""Named fault scenarios: the well-known ways an exactly-once application meets trouble, each a
few rules of control/rules.py. POST /faults {"scenario": NAME, ...} adds them; every scenario
takes `count` (how many times it strikes, its default below) and the matching fields its rules
use (`transactional_id`, `topic`, `client_id`, ...) to aim it at one application.

What a client should do in each is Kafka's contract, the same against Apache Kafka:
- lost_end_txn_response: the commit's answer never comes; the producer times out and retries
  EndTxn, which the coordinator answers as the same commit (committed once, never twice).
- lost_produce_ack: a batch is appended and its answer lost; the idempotent producer retries it
  and the broker answers the duplicate without appending it again (no duplicates downstream).
- coordinator_loading: COORDINATOR_LOAD_IN_PROGRESS from the transaction coordinator's APIs; the
  client backs off and retries.
- not_coordinator: NOT_COORDINATOR from them; the client looks the coordinator up again.
- concurrent_transactions: CONCURRENT_TRANSACTIONS on AddPartitionsToTxn / AddOffsetsToTxn /
  InitProducerId, as while a previous transaction's markers are written; the client retries.
- stalled_markers: the markers of committing or aborting transactions are held back, so the
  transaction stays in PrepareCommit / PrepareAbort and read_committed consumers wait at its LSO.
- hanging_transaction: a marker is lost between the coordinator and the partition; the
  transaction is complete for the coordinator and open on the partition, whose last stable offset
  stays behind it until an operator finds it (kafka-transactions.sh find-hanging) and aborts it.
- txn_log_unavailable: appends to __transaction_state fail: the coordinator answers
  NOT_ENOUGH_REPLICAS / COORDINATOR_NOT_AVAILABLE-class errors and the client retries.
- producer_fenced: PRODUCER_FENCED, what a zombie instance meets once a newer instance of its
  transactional id initialised; the client's error is fatal: the instance must close, not retry.
- rebalance_during_transaction: ILLEGAL_GENERATION on TxnOffsetCommit, as when the group
  rebalanced while the transaction was open (KIP-447); the transaction must be aborted and its
  records read again from the last committed offsets.
- crash_after_prepare_commit: the broker dies between the PrepareCommit record and the markers
  (a coordinator failover on one node); the test restarts it and the commit completes.
- slow_list_offsets: ListOffsets answers late; librdkafka's pending offset query after a seek to
  OFFSET_BEGINNING can then reset the consumer's position (a copier that re-reads and duplicates
  when it relies on it: this project's own EOS copier did, on a loaded machine, on Kafka too).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from minikafka.control.rules import RuleError

TXN_APIS = ("InitProducerId", "AddPartitionsToTxn", "AddOffsetsToTxn", "EndTxn", "TxnOffsetCommit")
_AIM = ("transactional_id", "topic", "partition", "client_id", "group_id")


def _error(code: str, apis: tuple[str, ...], default_count: int | None) -> Callable[[Mapping[str, Any]], list[dict[str, Any]]]:
    def build(p: Mapping[str, Any]) -> list[dict[str, Any]]:
        # each API its own rule, each striking `count` times (None: until cleared)
        count = p.get("count", default_count)
        return [{"action": "error", "error_code": code, "api": api, **({} if count is None else {"count": count}),
                 **_aim(p)} for api in apis]
    return build


def _one(action: str, default_count: int | None, **defaults: Any) -> Callable[[Mapping[str, Any]], list[dict[str, Any]]]:
    """One rule; `defaults` are its fixed fields, of which delay_ms can be given."""
    def build(p: Mapping[str, Any]) -> list[dict[str, Any]]:
        rule = {"action": action, **defaults, **_aim(p)}
        if "delay_ms" in defaults and p.get("delay_ms") is not None:
            rule["delay_ms"] = p["delay_ms"]
        count = p.get("count", default_count)
        if count is not None:
            rule["count"] = count
        if p.get("after") is not None:
            rule["after"] = p["after"]
        return [rule]
    return build


def _aim(p: Mapping[str, Any]) -> dict[str, Any]:
    return {k: p[k] for k in _AIM if p.get(k) is not None}


SCENARIOS: dict[str, tuple[str, Callable[[Mapping[str, Any]], list[dict[str, Any]]]]] = {
    "lost_end_txn_response": ("EndTxn is carried out and its answer dropped", _one("drop_response", 1, api="EndTxn")),
    "lost_produce_ack": ("a Produce is appended and its answer dropped", _one("drop_response", 1, api="Produce")),
    "coordinator_loading": ("COORDINATOR_LOAD_IN_PROGRESS from the transaction APIs",
                            _error("COORDINATOR_LOAD_IN_PROGRESS", TXN_APIS, 3)),
    "not_coordinator": ("NOT_COORDINATOR from the transaction APIs", _error("NOT_COORDINATOR", TXN_APIS, 3)),
    "concurrent_transactions": ("CONCURRENT_TRANSACTIONS from AddPartitionsToTxn, AddOffsetsToTxn, InitProducerId",
                                _error("CONCURRENT_TRANSACTIONS",
                                       ("AddPartitionsToTxn", "AddOffsetsToTxn", "InitProducerId"), 3)),
    "producer_fenced": ("PRODUCER_FENCED from the transaction APIs, as a zombie instance gets once a newer "
                        "one of its transactional id initialised (count: none, until cleared)",
                        _error("PRODUCER_FENCED", ("AddPartitionsToTxn", "AddOffsetsToTxn", "TxnOffsetCommit",
                                                   "EndTxn"), None)),
    "rebalance_during_transaction": ("ILLEGAL_GENERATION from TxnOffsetCommit: the group moved on while the "
                                     "transaction was open (KIP-447)",
                                     _error("ILLEGAL_GENERATION", ("TxnOffsetCommit",), 1)),
    "stalled_markers": ("transaction markers held back (count: marker writes; none: until cleared)",
                        _one("stall_markers", None)),
    "hanging_transaction": ("the next transaction marker (aim it with topic/partition) is lost: the coordinator "
                            "completes the transaction, the partition keeps it open (KIP-664)",
                            _one("drop_markers", 1)),
    "txn_log_unavailable": ("appends to __transaction_state fail", _one("fail_txn_log_append", 3)),
    "crash_after_prepare_commit": ("the broker exits (137) after PrepareCommit, before any marker",
                                   _one("crash_at", 1, point="txn.after_prepare_commit")),
    "slow_list_offsets": ("ListOffsets answered after delay_ms (default 2000)",
                          _one("delay", None, api="ListOffsets", delay_ms=2000)),
}

_PARAMS = frozenset({"scenario", "count", "delay_ms", "after", *_AIM})


def rules_for(spec: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The rules of {"scenario": NAME, ...params}. Raises RuleError."""
    name = spec.get("scenario")
    if name not in SCENARIOS:
        raise RuleError(f"no scenario {name!r}; scenarios: {', '.join(sorted(SCENARIOS))}")
    unknown = set(spec) - _PARAMS
    if unknown:
        raise RuleError(f"scenario {name} takes {', '.join(sorted(_PARAMS - {'scenario'}))}, "
                        f"not {', '.join(sorted(unknown))}")
    return [{**rule, "name": name} for rule in SCENARIOS[name][1](spec)]


def describe() -> list[dict[str, str]]:
    return [{"name": name, "what": what} for name, (what, _) in SCENARIOS.items()]
