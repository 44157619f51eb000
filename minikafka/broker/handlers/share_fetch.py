"""ShareFetch (API 78, KIP-932): acknowledge what the last fetch delivered and acquire more records
of a share group's partitions, long-polled until something is acquired or max_wait passes.

Kafka: KafkaApis.handleShareFetchRequest, SharePartitionManager.fetchMessages / acknowledge,
DelayedShareFetch. The share session (sessions.py) decides the partitions: a request at epoch 0
opens one with the partitions it names (it may not acknowledge anything: INVALID_REQUEST), later
requests add to it and forget from it; a wrong epoch is INVALID_SHARE_SESSION_EPOCH, an unknown
session SHARE_SESSION_NOT_FOUND, both for the whole request. Acknowledgements piggybacked here
are answered per partition in AcknowledgeErrorCode; the fetch itself in ErrorCode. MaxRecords is
shared by the session's partitions in order (a soft limit: log batches are acquired whole).
An answer lists every partition of a new session, later only those with records, an error or an
acknowledgement outcome (Kafka's ShareSessionContext).
"""

from __future__ import annotations

import asyncio
import uuid
from dataclasses import dataclass
from typing import Any, ClassVar

from minikafka.broker.context import RequestContext
from minikafka.broker.handlers.share_group_heartbeat import share_groups_enabled
from minikafka.broker.services import BrokerServices
from minikafka.broker.share_partitions import Acquired, SharePartitionManager
from minikafka.coordinator.share_group.sessions import INITIAL_EPOCH
from minikafka.coordinator.share_group.share_partition import AckBatch, AcknowledgeType, validate_ack_batches
from minikafka.protocol import messages
from minikafka.protocol.errors import ErrorCode
from minikafka.protocol.types import ZERO_MS, TopicPartition, ms

Wanted = tuple[uuid.UUID, int, TopicPartition | None]   # topic id, partition, and by name (None: gone)
DEFAULT_MAX_RECORDS = 500
RENEW_SINCE = 2   # ShareFetch / ShareAcknowledge v2 (KIP-1222) brought the RENEW acknowledgement   # a client that sends 0 gets the Java consumer's max.poll.records


def ack_batches(batches: Any) -> tuple[AckBatch, ...]:
    return tuple(AckBatch(b.first_offset, b.last_offset, tuple(int(t) for t in b.acknowledge_types)) for b in batches)


def leader(svc: BrokerServices) -> Any:
    return messages.ShareFetchLeaderIdAndEpoch(leader_id=svc.node_id, leader_epoch=0)


async def acknowledge_all(share: SharePartitionManager, svc: BrokerServices, group_id: str, member_id: str,
                          topics: Any, api_version: int) -> dict[tuple[uuid.UUID, int], ErrorCode]:
    """The acknowledgements of a ShareFetch or ShareAcknowledge, partition by partition: all of a
    partition's batches or none (INVALID_REQUEST for a malformed list, a RENEW before v2 or with
    the group's share.renew.acknowledge.enable off; INVALID_RECORD_STATE for a record the member
    does not hold)."""
    renew_allowed = api_version >= RENEW_SINCE and share.config_of(group_id).renew_acknowledge_enable
    out: dict[tuple[uuid.UUID, int], ErrorCode] = {}
    for t in topics:
        info = svc.logs.topic_by_id(t.topic_id)
        for p in t.partitions:
            batches = ack_batches(p.acknowledgement_batches)
            if not batches:
                continue
            key = (t.topic_id, p.partition_index)
            if info is None:
                out[key] = ErrorCode.unknown_topic_id
            elif not validate_ack_batches(batches) or (
                    not renew_allowed and any(AcknowledgeType.RENEW in b.types for b in batches)):
                out[key] = ErrorCode.invalid_request
            else:
                out[key] = await share.acknowledge(group_id, member_id, TopicPartition(info.name, p.partition_index),
                                                   batches)
    return out


@dataclass(frozen=True, slots=True)
class ShareFetchHandler:
    api_key: ClassVar[int] = 78
    svc: BrokerServices

    async def __call__(self, ctx: RequestContext, req: Any) -> messages.ShareFetchResponse:
        share = self.svc.share
        if not share_groups_enabled(self.svc) or share is None:
            return self.error_response(req, ErrorCode.unsupported_version)
        gid, mid, epoch = req.group_id or "", req.member_id or "", req.share_session_epoch
        if not gid or not mid:
            return self.error_response(req, ErrorCode.invalid_request)
        named = [(str(t.topic_id), p.partition_index) for t in req.topics for p in t.partitions]
        forgotten = [(str(t.topic_id), p) for t in req.forgotten_topics_data for p in t.partitions]
        acknowledges = any(p.acknowledgement_batches for t in req.topics for p in t.partitions)
        verdict = share.sessions.share_fetch(gid, mid, epoch, partitions=named, forgotten=forgotten,
                                             acknowledges=acknowledges, fetches=False)
        if verdict.replaced is not None:
            await share.release_member(gid, mid)   # what the old session held goes back
        if verdict.error is not ErrorCode.none or verdict.session is None:
            return self.error_response(req, verdict.error)
        if epoch == INITIAL_EPOCH:
            verdict.session.conn_id = ctx.conn_id   # it ends with this connection
        acks = await acknowledge_all(share, self.svc, gid, mid, req.topics, ctx.api_version)
        if verdict.closes:
            await share.close_session(gid, mid)
            return self._answer(gid, acks, {}, full=False)
        fetched: dict[tuple[uuid.UUID, int], Acquired] = {}
        if not getattr(req, "is_renew_ack", False):
            wanted = self._wanted(verdict.session.partitions)
            fetched = await self._fetch(share, gid, mid, wanted, req)
        return self._answer(gid, acks, fetched, full=epoch == INITIAL_EPOCH)

    def _wanted(self, partitions: set[tuple[str, int]]) -> list[Wanted]:
        """The session's partitions, each with its topic partition (None: the topic is gone)."""
        out: list[Wanted] = []
        for tid_text, p in sorted(partitions):
            tid = uuid.UUID(tid_text)
            info = self.svc.logs.topic_by_id(tid)
            out.append((tid, p, None if info is None or p >= info.partitions else TopicPartition(info.name, p)))
        return out

    async def _fetch(self, share: SharePartitionManager, gid: str, mid: str,
                     wanted: list[Wanted], req: Any
                     ) -> dict[tuple[uuid.UUID, int], Acquired]:
        max_wait_ms = ms(req.max_wait)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + max(max_wait_ms, 0) / 1000
        tps = [tp for _tid, _p, tp in wanted if tp is not None]
        while True:
            fetched = await self._acquire(share, gid, mid, wanted, req)
            remaining = deadline - loop.time()
            if any(a.ranges or a.error is not ErrorCode.none for a in fetched.values()) or remaining <= 0 or not tps:
                return fetched
            if not await self.svc.purgatory.wait(tps, remaining):  # max_wait passed, or the broker stops
                return await self._acquire(share, gid, mid, wanted, req)

    async def _acquire(self, share: SharePartitionManager, gid: str, mid: str,
                       wanted: list[Wanted], req: Any
                       ) -> dict[tuple[uuid.UUID, int], Acquired]:
        records_left = req.max_records if req.max_records > 0 else DEFAULT_MAX_RECORDS
        bytes_left = req.max_bytes   # 0 fetches nothing (Kafka 4.3.1 acquires no record then)
        out: dict[tuple[uuid.UUID, int], Acquired] = {}
        for tid, p, tp in wanted:
            if tp is None:
                out[(tid, p)] = Acquired(ErrorCode.unknown_topic_or_partition)
                continue
            if records_left <= 0 or bytes_left <= 0:
                break
            got = await share.acquire(gid, mid, tp, max_records=records_left, max_bytes=bytes_left)
            out[(tid, tp.partition)] = got
            records_left -= sum(r.last_offset - r.first_offset + 1 for r in got.ranges)
            bytes_left -= len(got.data)
        return out

    def _answer(self, gid: str, acks: dict[tuple[uuid.UUID, int], ErrorCode],
                fetched: dict[tuple[uuid.UUID, int], Acquired], *, full: bool) -> messages.ShareFetchResponse:
        keys = sorted(set(acks) | {k for k, a in fetched.items() if full or a.ranges or a.error is not ErrorCode.none})
        by_topic: dict[uuid.UUID, list[Any]] = {}
        for tid, p in keys:
            got = fetched.get((tid, p), Acquired())
            ack = acks.get((tid, p))
            by_topic.setdefault(tid, []).append(messages.ShareFetchPartitionData(
                partition_index=p, error_code=got.error, error_message=None,
                acknowledge_error_code=0 if ack is None else int(ack), acknowledge_error_message=None,
                current_leader=leader(self.svc), records=got.data,
                acquired_records=tuple(messages.ShareFetchAcquiredRecords(
                    first_offset=r.first_offset, last_offset=r.last_offset, delivery_count=r.delivery_count)
                    for r in got.ranges)))
        share = self.svc.share
        lock = share.lock_duration(gid) if share is not None else ZERO_MS
        return messages.ShareFetchResponse(
            throttle_time=ZERO_MS, error_code=ErrorCode.none, error_message=None, acquisition_lock_timeout=lock,
            responses=tuple(messages.ShareFetchTopicResponse(topic_id=tid, partitions=tuple(parts))
                            for tid, parts in by_topic.items()), node_endpoints=())

    def error_response(self, req: Any, code: ErrorCode) -> messages.ShareFetchResponse:
        return messages.ShareFetchResponse(throttle_time=ZERO_MS, error_code=code, error_message=None,
                                           acquisition_lock_timeout=ZERO_MS, responses=(), node_endpoints=())
