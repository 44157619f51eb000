"""Share sessions (KIP-932): the partitions a member's ShareFetch requests name, and the epoch each
request must carry. Pure; the broker asks it before fetching or acknowledging, and releases a
member's acquired records when its session ends (closed, replaced, or its connection gone).

Kafka 4.3's rules (SharePartitionManager, ShareSessionCache; one session per group and member):
- ShareFetch with epoch 0 opens a session (replacing any the member had) with the partitions it
  names; it may not carry acknowledgements (INVALID_REQUEST: there is nothing to acknowledge yet).
  The next request must carry epoch 1.
- ShareFetch with epoch n > 0 must find the session (SHARE_SESSION_NOT_FOUND) at epoch n
  (INVALID_SHARE_SESSION_EPOCH); it adds its partitions, drops its forgotten ones, and the epoch
  moves to n + 1 (after 2^31 - 1 it wraps to 1, never 0).
- Epoch -1 closes the session after its acknowledgements; a closing ShareFetch may not ask for
  records (INVALID_REQUEST).
- ShareAcknowledge follows the same epochs, except that epoch 0 is INVALID_SHARE_SESSION_EPOCH.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from minikafka.protocol.errors import ErrorCode

INITIAL_EPOCH = 0
FINAL_EPOCH = -1
MAX_EPOCH = 2**31 - 1

Partition = tuple[str, int]  # (topic id as text, partition): what a session names


def next_epoch(epoch: int) -> int:
    return 1 if epoch >= MAX_EPOCH else epoch + 1


@dataclass(slots=True)
class ShareSession:
    group_id: str
    member_id: str
    epoch: int
    partitions: set[Partition] = field(default_factory=set)
    conn_id: int = -1   # the connection that opened it: the session ends with it (the broker's)


@dataclass(frozen=True, slots=True)
class SessionVerdict:
    error: ErrorCode
    session: ShareSession | None = None   # the session to use (None for an error)
    closes: bool = False                  # release the member's records and forget the session after
    replaced: ShareSession | None = None  # a session epoch 0 replaced: release its records first


class ShareSessions:
    def __init__(self, max_sessions: int = 2000) -> None:
        """`max_sessions`: group.share.max.share.sessions."""
        self.max_sessions = max_sessions
        self.sessions: dict[tuple[str, str], ShareSession] = {}

    def share_fetch(self, group_id: str, member_id: str, epoch: int, *, partitions: Iterable[Partition],
                    forgotten: Iterable[Partition], acknowledges: bool, fetches: bool) -> SessionVerdict:
        """What a ShareFetch's session rules say (`acknowledges`: it carries acknowledgement batches;
        `fetches`: it asks for records)."""
        key = (group_id, member_id)
        if epoch == INITIAL_EPOCH:
            if acknowledges:
                return SessionVerdict(ErrorCode.invalid_request)
            replaced = self.sessions.pop(key, None)
            if len(self.sessions) >= self.max_sessions:
                return SessionVerdict(ErrorCode.share_session_not_found, replaced=replaced)
            session = ShareSession(group_id, member_id, next_epoch(INITIAL_EPOCH), set(partitions))
            self.sessions[key] = session
            return SessionVerdict(ErrorCode.none, session, replaced=replaced)
        session = self.sessions.get(key)
        if session is None:
            return SessionVerdict(ErrorCode.share_session_not_found)
        if epoch == FINAL_EPOCH:
            if fetches:
                return SessionVerdict(ErrorCode.invalid_request)
            return SessionVerdict(ErrorCode.none, session, closes=True)
        if epoch != session.epoch:
            return SessionVerdict(ErrorCode.invalid_share_session_epoch)
        session.partitions.update(partitions)
        session.partitions.difference_update(forgotten)
        session.epoch = next_epoch(epoch)
        return SessionVerdict(ErrorCode.none, session)

    def share_acknowledge(self, group_id: str, member_id: str, epoch: int) -> SessionVerdict:
        if epoch == INITIAL_EPOCH:
            return SessionVerdict(ErrorCode.invalid_share_session_epoch)
        session = self.sessions.get((group_id, member_id))
        if session is None:
            return SessionVerdict(ErrorCode.share_session_not_found)
        if epoch == FINAL_EPOCH:
            return SessionVerdict(ErrorCode.none, session, closes=True)
        if epoch != session.epoch:
            return SessionVerdict(ErrorCode.invalid_share_session_epoch)
        session.epoch = next_epoch(epoch)
        return SessionVerdict(ErrorCode.none, session)

    def close(self, group_id: str, member_id: str) -> ShareSession | None:
        """Forget a session (after its closing request, or its member's connection went): the
        caller releases the member's acquired records."""
        return self.sessions.pop((group_id, member_id), None)
