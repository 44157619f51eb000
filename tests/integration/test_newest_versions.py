"""The newest versions of four APIs, as Kafka 4.3.1 answers them (issue 18, item 3), over
the raw protocol; the same assertions pass against Apache Kafka in conformance mode:

- DescribeGroups v6 (KIP-1043): a group that does not exist, the empty id too, is Dead with
  GROUP_ID_NOT_FOUND and "Group <id> not found."; up to v5 it is Dead with no error;
- DescribeCluster v2: include_fenced_brokers, and the one broker is not fenced;
- ListTransactions v2 (KIP-1152): a Java regular expression that must match the whole
  transactional id; one that does not compile is INVALID_REGULAR_EXPRESSION;
- FindCoordinator v5-6: v4's shape; a share-group key before v6 is INVALID_REQUEST.
"""

from __future__ import annotations

import time
from typing import Any

import pytest
from clients import consumer, create_topic, producer, uniq
from rawclient import RawClient

from minikafka.protocol import versions

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

GROUP_ID_NOT_FOUND, INVALID_REGULAR_EXPRESSION = 69, 128


def _request(api_key: int, version: int, **fields: Any) -> Any:
    return versions.request_class(api_key, version)(**fields)


def test_describe_groups_v6_says_a_missing_group_is_not_found(kafka_broker) -> None:
    topic, group, missing = uniq("dg6"), uniq("dg6-live"), uniq("dg6-missing")
    create_topic(kafka_broker.bootstrap, topic)
    c = consumer(kafka_broker.bootstrap, **{"group.id": group})
    try:
        c.subscribe([topic])
        deadline = time.monotonic() + 60
        while not c.assignment() and time.monotonic() < deadline:
            c.poll(0.2)
        assert c.assignment()
        with RawClient.connect(kafka_broker.bootstrap) as rc:
            v6 = rc.request(_request(15, 6, groups=(missing, "", group), include_authorized_operations=False), 6)
            got = {g.group_id: g for g in v6.groups}
            for gid in (missing, ""):
                g = got[gid]
                assert (int(g.error_code), g.error_message, g.group_state) == (
                    GROUP_ID_NOT_FOUND, f"Group {gid} not found.", "Dead")
                assert g.members == () and g.protocol_type == ""
            live = got[group]
            assert (int(live.error_code), live.error_message, live.group_state) == (0, None, "Stable")
            assert len(live.members) == 1

            v5 = rc.request(_request(15, 5, groups=(missing, ""), include_authorized_operations=False), 5)
            assert [(g.group_id, int(g.error_code), g.group_state) for g in v5.groups] == [
                (missing, 0, "Dead"), ("", 0, "Dead")]
    finally:
        c.close()


def test_describe_cluster_v2_lists_the_broker_unfenced(kafka_broker) -> None:
    with RawClient.connect(kafka_broker.bootstrap) as rc:
        for fenced_too in (False, True):
            resp = rc.request(_request(60, 2, include_cluster_authorized_operations=False, endpoint_type=1,
                                       include_fenced_brokers=fenced_too), 2)
            assert int(resp.error_code) == 0
            host = kafka_broker.bootstrap.rsplit(":", 1)[0]  # "broker" under docker-compose
            assert [(b.host, b.is_fenced) for b in resp.brokers] == [(host, False)]


def test_list_transactions_v2_filters_by_a_whole_id_pattern(kafka_broker) -> None:
    txn_id = uniq("ltx2-Tx")
    p = producer(kafka_broker.bootstrap, **{"transactional.id": txn_id})
    p.init_transactions(60)
    p.begin_transaction()
    p.produce(uniq("ltx2-topic"), b"x")
    p.flush(60)
    try:
        with RawClient.connect(kafka_broker.bootstrap) as rc:
            def listed(pattern: str | None) -> tuple[int, bool]:
                """(error code, whether this test's transaction is listed): other tests' transactions
                may be listed too on a shared broker."""
                resp = rc.request(_request(66, 2, state_filters=(), producer_id_filters=(), duration_filter=-1,
                                           transactional_id_pattern=pattern), 2)
                return int(resp.error_code), txn_id in {t.transactional_id for t in resp.transaction_states}

            assert listed(None) == (0, True)
            assert listed("") == (0, True)
            assert listed(txn_id) == (0, True)
            assert listed("ltx2") == (0, False)  # a prefix alone does not match the whole id
            assert listed("ltx2-.*") == (0, True)
            assert listed(txn_id.upper()) == (0, False)
            assert listed("(?i)" + txn_id.upper()) == (0, True)
            assert listed("(") == (INVALID_REGULAR_EXPRESSION, False)
    finally:
        p.abort_transaction(60)


def test_find_coordinator_v5_v6_find_groups_and_transactions(kafka_broker) -> None:
    """FindCoordinator v5 (KIP-890) and v6 (KIP-932) keep v4's shape: a group or transactional id
    finds this node; a share-group key (type 2) before v6 is INVALID_REQUEST, as Kafka checks."""
    with RawClient.connect(kafka_broker.bootstrap) as c:
        for version in (5, 6):
            for key_type, key in ((0, uniq("fc-group")), (1, uniq("fc-txn"))):
                def find() -> Any:
                    return c.request(_request(10, version, key_type=key_type, coordinator_keys=(key,)), version)
                deadline = time.monotonic() + 30
                got = find().coordinators[0]
                while int(got.error_code) == 15 and time.monotonic() < deadline:   # the topic is being made
                    time.sleep(0.2)
                    got = find().coordinators[0]
                assert (got.key, int(got.error_code), got.port) == (key, 0, kafka_broker.port), (version, got)
        early = c.request(_request(10, 5, key_type=2, coordinator_keys=("g:t:0",)), 5).coordinators[0]
        assert int(early.error_code) == 42   # INVALID_REQUEST
        if not getattr(kafka_broker, "external", False):
            # No share coordinator until share groups are served (issue 23); Kafka 4.3 has one.
            share = c.request(_request(10, 6, key_type=2, coordinator_keys=("g:t:0",)), 6).coordinators[0]
            assert int(share.error_code) == 15   # COORDINATOR_NOT_AVAILABLE
