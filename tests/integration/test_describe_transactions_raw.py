"""DescribeTransactions (API 65, KIP-664) over the raw protocol, for the states a transactional id
has before any transaction ran: unknown (never seen, or expired) and Empty (after InitProducerId).

TransactionStartTimeMs is a non-nullable int64: Kafka sends -1 for Empty and leaves every field
but the error code at its default (0) for an unknown id; the broker used to fail encoding both
answers and close the connection. Runs against Apache Kafka in
conformance mode too.
"""

from __future__ import annotations

import pytest
from clients import uniq
from rawclient import RawClient, describe_transaction, init_producer_id

pytestmark = [pytest.mark.integration]

TRANSACTIONAL_ID_NOT_FOUND = 105


def test_describe_unknown_transactional_id(kafka_broker) -> None:
    tid = uniq("never-used")
    with RawClient.connect(kafka_broker.bootstrap) as c:
        state = describe_transaction(c, tid)
        assert int(state.error_code) == TRANSACTIONAL_ID_NOT_FOUND, state
        assert state.transactional_id == tid
        # Kafka sets only the error code; the other fields keep their schema defaults.
        assert (state.transaction_state, state.transaction_timeout_ms, state.transaction_start_time_ms,
                state.producer_id, state.producer_epoch, state.topics) == ("", 0, 0, 0, 0, {}), state
        # The connection is still usable: the answer was encoded and sent.
        again = describe_transaction(c, tid)
        assert int(again.error_code) == TRANSACTIONAL_ID_NOT_FOUND


def test_describe_empty_transaction_has_no_start_time(kafka_broker) -> None:
    tid = uniq("empty-txn")
    with RawClient.connect(kafka_broker.bootstrap) as c:
        init = init_producer_id(c, tid, timeout_ms=30_000)
        assert int(init.error_code) == 0, init
        state = describe_transaction(c, tid)
        assert int(state.error_code) == 0, state
        assert state.transaction_state == "Empty"
        assert (state.producer_id, state.producer_epoch) == (int(init.producer_id), int(init.producer_epoch))
        assert state.transaction_start_time_ms == -1
        assert state.topics == {}
        assert state.transaction_timeout_ms == 30_000
