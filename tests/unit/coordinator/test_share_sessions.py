"""Share sessions (issue 23): the epochs ShareFetch and ShareAcknowledge carry, Kafka's errors."""

from __future__ import annotations

import pytest

from minikafka.coordinator.share_group.sessions import MAX_EPOCH, ShareSessions, next_epoch
from minikafka.protocol.errors import ErrorCode

pytestmark = pytest.mark.unit

G, M = "group", "member"
T0, T1 = ("topic-id", 0), ("topic-id", 1)


def fetch(s: ShareSessions, epoch: int, *, parts=(), forgotten=(), acks=False, fetches=True):
    return s.share_fetch(G, M, epoch, partitions=parts, forgotten=forgotten, acknowledges=acks, fetches=fetches)


def test_epoch_zero_opens_a_session_and_each_request_moves_it_on():
    s = ShareSessions()
    opened = fetch(s, 0, parts=[T0])
    assert (opened.error, opened.session.epoch, opened.session.partitions) == (ErrorCode.none, 1, {T0})
    assert fetch(s, 1, parts=[T1]).session.partitions == {T0, T1}
    assert s.share_acknowledge(G, M, 2).error is ErrorCode.none  # both requests share the epoch
    assert fetch(s, 3, forgotten=[T0]).session.partitions == {T1}
    assert fetch(s, 3).error is ErrorCode.invalid_share_session_epoch  # a repeat is refused
    assert fetch(s, 4).error is ErrorCode.none


def test_the_errors_of_a_wrong_epoch_or_no_session():
    s = ShareSessions()
    assert fetch(s, 1).error is ErrorCode.share_session_not_found
    assert fetch(s, -1, fetches=False).error is ErrorCode.share_session_not_found
    assert s.share_acknowledge(G, M, 1).error is ErrorCode.share_session_not_found
    fetch(s, 0, parts=[T0])
    assert fetch(s, 7).error is ErrorCode.invalid_share_session_epoch
    assert s.share_acknowledge(G, M, 0).error is ErrorCode.invalid_share_session_epoch
    assert s.share_acknowledge(G, M, 9).error is ErrorCode.invalid_share_session_epoch


def test_a_new_session_cannot_acknowledge_and_a_closing_one_cannot_fetch():
    s = ShareSessions()
    assert fetch(s, 0, acks=True).error is ErrorCode.invalid_request
    fetch(s, 0, parts=[T0])
    assert fetch(s, -1, fetches=True).error is ErrorCode.invalid_request
    closing = fetch(s, -1, acks=True, fetches=False)
    assert (closing.error, closing.closes) == (ErrorCode.none, True)
    assert s.close(G, M) is closing.session
    assert fetch(s, 2).error is ErrorCode.share_session_not_found


def test_epoch_zero_replaces_the_members_session_whose_records_must_go_back():
    s = ShareSessions()
    first = fetch(s, 0, parts=[T0]).session
    again = fetch(s, 0, parts=[T1])
    assert again.replaced is first and again.session.partitions == {T1}
    assert s.share_acknowledge(G, M, -1).closes


def test_the_session_limit_and_the_epoch_wrap():
    s = ShareSessions(max_sessions=1)
    fetch(s, 0)
    assert s.share_fetch(G, "other", 0, partitions=(), forgotten=(), acknowledges=False,
                         fetches=True).error is ErrorCode.share_session_not_found
    assert (next_epoch(MAX_EPOCH), next_epoch(0), next_epoch(41)) == (1, 1, 42)
