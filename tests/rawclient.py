"""A small blocking raw Kafka client for tests, built on minikafka's own codec.

It speaks the wire protocol directly (size prefix, request header, kio bodies), so tests can send
exactly the bytes they want, including broken ones, and read exactly what comes back:

    with RawClient.connect(broker.bootstrap) as c:
        resp = c.request(ApiVersionsRequest(...), api_version=3)
        c.send_bytes(b"\\xff\\xff\\xff\\xff")
        assert c.is_closed(timeout=2)
"""

from __future__ import annotations

import datetime
import itertools
import socket
import struct
import time
from types import SimpleNamespace
from typing import Any

from kio.schema.api_versions.v3.request import (
    ApiVersionsRequest as ApiVersionsRequestV3,
)
from kio.schema.create_topics.v7.request import (
    CreatableTopic,
    CreatableTopicConfig,
    CreateTopicsRequest,
)
from kio.schema.describe_producers.v0.request import DescribeProducersRequest
from kio.schema.describe_producers.v0.request import (
    TopicRequest as DescribeProducersTopic,
)
from kio.schema.describe_transactions.v0.request import DescribeTransactionsRequest
from kio.schema.fetch.v12.request import FetchPartition, FetchRequest, FetchTopic
from kio.schema.init_producer_id.v4.request import InitProducerIdRequest
from kio.schema.list_offsets.v7.request import (
    ListOffsetsPartition,
    ListOffsetsRequest,
    ListOffsetsTopic,
)
from kio.schema.metadata.v12.request import MetadataRequest, MetadataRequestTopic
from kio.schema.produce.v9.request import (
    PartitionProduceData,
    ProduceRequest,
    TopicProduceData,
)
from kio.static.primitive import i8, i16, i32, i32Timedelta, i64

from minikafka.protocol import codec
from minikafka.protocol.records import build_batch

_SIZE = struct.Struct(">i")
_REQ_PREFIX = struct.Struct(">hhi")


class ConnectionClosed(Exception):
    """The broker closed the connection."""


class RawClient:
    """One blocking TCP connection to a Kafka broker."""

    def __init__(self, host: str, port: int, *, timeout: float = 10.0, client_id: str | None = "rawclient") -> None:
        self.host = host
        self.port = port
        self.client_id = client_id
        self.timeout = timeout
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._corr = itertools.count(1)
        self._pending = b""

    @classmethod
    def connect(cls, bootstrap: str, **kw: Any) -> RawClient:
        host, _, port = bootstrap.rpartition(":")
        return cls(host, int(port), **kw)

    # -- context manager ------------------------------------------------------------------------

    def __enter__(self) -> RawClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass

    # -- requests -------------------------------------------------------------------------------

    def next_correlation_id(self) -> int:
        return next(self._corr)

    def encode(self, body: Any, api_version: int, correlation_id: int | None = None) -> tuple[int, bytes]:
        """(correlation id, size-prefixed request bytes) for a kio request entity."""
        corr = self.next_correlation_id() if correlation_id is None else correlation_id
        return corr, codec.encode_request(api_version, corr, self.client_id, body)

    def send(self, body: Any, api_version: int) -> int:
        """Send one request without waiting; returns its correlation id."""
        corr, data = self.encode(body, api_version)
        self.send_bytes(data)
        return corr

    def receive(self, api_key: int, api_version: int, timeout: float | None = None) -> tuple[int, Any]:
        """Read one response frame and decode it as (correlation id, body)."""
        frame = self.recv_frame(timeout)
        return codec.decode_response(api_key, api_version, frame)

    def request(self, body: Any, api_version: int, timeout: float | None = None) -> Any:
        """Send a request and return the decoded response body (checks the correlation id)."""
        corr = self.send(body, api_version)
        got, resp = self.receive(type(body).__api_key__, api_version, timeout)
        if got != corr:
            raise AssertionError(f"correlation id {got} in the response, {corr} expected")
        return resp

    # -- raw bytes ------------------------------------------------------------------------------

    def send_bytes(self, raw: bytes) -> None:
        self.sock.sendall(raw)

    def send_frame(self, payload: bytes) -> None:
        """Send payload with a correct size prefix."""
        self.send_bytes(_SIZE.pack(len(payload)) + payload)

    def _recv_exactly(self, n: int, deadline: float) -> bytes:
        buf = bytearray(self._pending[:n])
        self._pending = self._pending[n:]
        while len(buf) < n:
            left = deadline - time.monotonic()
            if left <= 0:
                self._pending = bytes(buf) + self._pending
                raise TimeoutError(f"no complete response within the deadline ({len(buf)}/{n} bytes)")
            self.sock.settimeout(left)
            try:
                chunk = self.sock.recv(max(n - len(buf), 65536))
            except TimeoutError:
                continue
            except (ConnectionResetError, BrokenPipeError) as exc:
                raise ConnectionClosed(str(exc)) from exc
            if not chunk:
                raise ConnectionClosed("the broker closed the connection")
            buf += chunk
            if len(buf) > n:
                self._pending = bytes(buf[n:]) + self._pending
                del buf[n:]
        return bytes(buf)

    def recv_frame(self, timeout: float | None = None) -> bytes:
        """The next response frame without its size prefix. Raises ConnectionClosed, TimeoutError."""
        deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
        (size,) = _SIZE.unpack(self._recv_exactly(4, deadline))
        if size < 4:
            raise AssertionError(f"response size {size}")
        return self._recv_exactly(size, deadline)

    def is_closed(self, timeout: float = 5.0) -> bool:
        """True if the peer closes the connection within timeout without sending anything.

        Raises AssertionError if bytes arrive instead (a response where none was expected).
        """
        if self._pending:
            raise AssertionError(f"unexpected bytes from the broker: {self._pending[:64]!r}")
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            self.sock.settimeout(left)
            try:
                chunk = self.sock.recv(65536)
            except TimeoutError:
                return False
            except (ConnectionResetError, BrokenPipeError):
                return True
            if not chunk:
                return True
            raise AssertionError(f"unexpected bytes from the broker: {chunk[:64]!r}")


# -- request builders ---------------------------------------------------------------------------


def ms(n: int) -> i32Timedelta:
    return i32Timedelta.parse(datetime.timedelta(milliseconds=n))


def api_versions_v3() -> ApiVersionsRequestV3:
    return ApiVersionsRequestV3(client_software_name="rawclient", client_software_version="1.0")


def metadata_v12(*topics: str, auto_create: bool = True) -> MetadataRequest:
    return MetadataRequest(
        topics=tuple(MetadataRequestTopic(topic_id=None, name=t) for t in topics),
        allow_auto_topic_creation=auto_create,
        include_topic_authorized_operations=False,
    )


def create_topics_v7(topic: str, partitions: int = 1, configs: dict[str, str] | None = None,
                     timeout_ms: int = 10_000) -> CreateTopicsRequest:
    return CreateTopicsRequest(
        topics=(CreatableTopic(
            name=topic, num_partitions=i32(partitions), replication_factor=i16(1), assignments=(),
            configs=tuple(CreatableTopicConfig(name=k, value=v) for k, v in (configs or {}).items()),
        ),),
        timeout=ms(timeout_ms),
    )


def produce_v9(topic: str, partition: int, batch: bytes, *, acks: int = -1, timeout_ms: int = 10_000,
               transactional_id: str | None = None) -> ProduceRequest:
    """A Produce v9 request carrying one record batch for one partition."""
    return ProduceRequest(
        transactional_id=transactional_id, acks=i16(acks), timeout=ms(timeout_ms),
        topic_data=(TopicProduceData(name=topic, partition_data=(
            PartitionProduceData(index=i32(partition), records=bytes(batch)),)),),
    )


def fetch_v12(topic: str, partition: int, offset: int, *, max_wait_ms: int = 0, min_bytes: int = 1,
              partition_max_bytes: int = 1 << 20) -> FetchRequest:
    return FetchRequest(
        max_wait=ms(max_wait_ms), min_bytes=i32(min_bytes),
        topics=(FetchTopic(topic=topic, partitions=(FetchPartition(
            partition=i32(partition), fetch_offset=i64(offset), partition_max_bytes=i32(partition_max_bytes)),)),),
        forgotten_topics_data=(),
    )


def list_offsets_v7(topic: str, partition: int, timestamp: int = -1, isolation: int = 0) -> ListOffsetsRequest:
    """timestamp -1 asks for the latest offset (the high watermark, or the last stable offset at
    isolation 1), -2 for the earliest."""
    return ListOffsetsRequest(
        replica_id=i32(-1), isolation_level=i8(isolation),
        topics=(ListOffsetsTopic(name=topic, partitions=(
            ListOffsetsPartition(partition_index=i32(partition), timestamp=i64(timestamp)),)),),
    )


def valid_batch(n: int = 1, *, prefix: bytes = b"v", timestamp_ms: int | None = None) -> bytearray:
    """An uncompressed, non-idempotent record batch of n records (keys k0.., values prefix0..)."""
    ts = int(time.time() * 1000) if timestamp_ms is None else timestamp_ms
    return build_batch([(b"k%d" % i, prefix + b"%d" % i) for i in range(n)], timestamp_ms=ts)


# -- convenience round trips --------------------------------------------------------------------


def produce(c: RawClient, topic: str, partition: int, batch: bytes, **kw: Any) -> Any:
    """Produce one batch; returns the PartitionProduceResponse."""
    resp = c.request(produce_v9(topic, partition, batch, **kw), 9)
    return resp.responses[0].partition_responses[0]


def high_watermark(c: RawClient, topic: str, partition: int = 0) -> int:
    return latest(c, topic, partition, 0)


def latest(c: RawClient, topic: str, partition: int, isolation: int) -> int:
    """ListOffsets(-1): the HWM at isolation 0, the LSO at isolation 1."""
    resp = c.request(list_offsets_v7(topic, partition, -1, isolation), 7)
    p = resp.topics[0].partitions[0]
    if p.error_code != 0:
        raise AssertionError(f"ListOffsets error {p.error_code}")
    return int(p.offset)


def wait_stable(c: RawClient, topic: str, partition: int, timeout: float = 10.0) -> int:
    """Poll until LSO == HWM (every open transaction on the partition ended); returns it."""
    deadline = time.monotonic() + timeout
    while True:
        hwm, lso = latest(c, topic, partition, 0), latest(c, topic, partition, 1)
        if hwm == lso:
            return hwm
        if time.monotonic() > deadline:
            raise AssertionError(f"{topic}/{partition}: LSO {lso} != HWM {hwm} after {timeout}s (hanging transaction)")
        time.sleep(0.05)


def fetch_records(c: RawClient, topic: str, partition: int, offset: int) -> list[Any]:
    """Records (minikafka.protocol.records.Record) returned by one Fetch from offset."""
    from minikafka.protocol.records import iter_records, split_batches

    resp = c.request(fetch_v12(topic, partition, offset), 12)
    p = resp.responses[0].partitions[0]
    if p.error_code != 0:
        raise AssertionError(f"Fetch error {p.error_code}")
    data = bytes(p.records or b"")
    out = []
    pos = 0
    # A fetch may end with a partial batch; keep only the complete ones.
    while pos + 12 <= len(data):
        (length,) = struct.unpack_from(">i", data, pos + 8)
        if pos + 12 + length > len(data):
            break
        for _pos, _h in split_batches(data[pos : pos + 12 + length]):
            out.extend(iter_records(data, pos))
        pos += 12 + length
    return out


def describe_producers(c: RawClient, topic: str, partition: int) -> list[Any]:
    """The partition's active producers (DescribeProducers v0, KIP-664): entries with producer_id,
    producer_epoch, last_sequence, last_timestamp, current_txn_start_offset."""
    resp = c.request(DescribeProducersRequest(topics=(
        DescribeProducersTopic(name=topic, partition_indexes=(i32(partition),)),)), 0)
    p = resp.topics[0].partitions[0]
    if p.error_code != 0:
        raise AssertionError(f"DescribeProducers error {p.error_code}: {p.error_message}")
    return list(p.active_producers)


def describe_transaction(c: RawClient, transactional_id: str) -> SimpleNamespace:
    """DescribeTransactions v0 (KIP-664) for one id: error_code (105 TRANSACTIONAL_ID_NOT_FOUND once
    it expired), transaction_state (Kafka's names), transaction_timeout_ms,
    transaction_start_time_ms, producer_id, producer_epoch, topics {name: [partitions]}.

    Decoded by hand: TransactionStartTimeMs is -1 when no transaction has started (Empty, unknown
    id), and kio's reader for that field refuses negative timestamps."""
    corr = c.send(DescribeTransactionsRequest(transactional_ids=(transactional_id,)), 0)
    r = _Reader(c.recv_frame())
    assert r.i32() == corr, "correlation id mismatch"
    r.tags()          # response header v1
    r.i32()           # throttle_time_ms
    count = r.uvarint() - 1
    assert count == 1, f"{count} transaction states for one id"
    state = SimpleNamespace(
        error_code=r.i16(), transactional_id=r.string(), transaction_state=r.string(),
        transaction_timeout_ms=r.i32(), transaction_start_time_ms=r.i64(), producer_id=r.i64(),
        producer_epoch=r.i16(), topics={})
    for _ in range(r.uvarint() - 1):
        name = r.string()
        state.topics[name] = [r.i32() for _ in range(r.uvarint() - 1)]
        r.tags()
    r.tags()
    return state


class _Reader:
    """Just enough of the flexible-version encoding to decode one response by hand."""

    def __init__(self, data: bytes) -> None:
        self.data, self.pos = data, 0

    def _unpack(self, fmt: str) -> int:
        (v,) = struct.unpack_from(fmt, self.data, self.pos)
        self.pos += struct.calcsize(fmt)
        return int(v)

    def i16(self) -> int:
        return self._unpack(">h")

    def i32(self) -> int:
        return self._unpack(">i")

    def i64(self) -> int:
        return self._unpack(">q")

    def uvarint(self) -> int:
        shift = value = 0
        while True:
            b = self.data[self.pos]
            self.pos += 1
            value |= (b & 0x7F) << shift
            if not b & 0x80:
                return value
            shift += 7

    def string(self) -> str:
        n = self.uvarint() - 1
        out = self.data[self.pos:self.pos + n].decode()
        self.pos += n
        return out

    def tags(self) -> None:
        for _ in range(self.uvarint()):
            self.uvarint()
            self.pos += self.uvarint()


# Answers a client retries: the coordinator is loading or moving, or finishing a previous transition.
RETRIABLE_INIT_PRODUCER_ID = {14, 15, 16, 51}


def init_producer_id(c: RawClient, transactional_id: str | None, *, timeout_ms: int = 60_000,
                     expected: tuple[int, int] = (-1, -1), retry_s: float = 30.0) -> Any:
    """InitProducerId v4, repeated (bounded by retry_s) while the answer is one a client retries;
    `expected` is the (producer id, epoch) a KIP-360 client already holds."""
    deadline = time.monotonic() + retry_s
    while True:
        resp = c.request(InitProducerIdRequest(
            transactional_id=transactional_id, transaction_timeout=ms(timeout_ms),
            producer_id=i64(expected[0]), producer_epoch=i16(expected[1])), 4)
        if int(resp.error_code) not in RETRIABLE_INIT_PRODUCER_ID or time.monotonic() > deadline:
            return resp
        time.sleep(0.1)  # the retry backoff a client uses


def wait_for_topic(c: RawClient, topic: str, timeout: float = 10.0, partitions: int = 1) -> None:
    """Metadata (auto-creating) until the topic's first `partitions` partitions have a leader that
    serves them (Apache Kafka answers NOT_LEADER_OR_FOLLOWER for a moment after Metadata names the
    leader)."""
    deadline = time.monotonic() + timeout
    while True:
        resp = c.request(metadata_v12(topic), 12)
        t = resp.topics[0]
        if t.error_code == 0 and len(t.partitions) >= partitions and all(p.leader_id >= 0 for p in t.partitions):
            if all(c.request(list_offsets_v7(topic, p, -1), 7).topics[0].partitions[0].error_code == 0
                   for p in range(partitions)):
                return
        if time.monotonic() > deadline:
            raise TimeoutError(f"topic {topic} not ready: error {t.error_code}")
        time.sleep(0.05)


def request_header(api_key: int, api_version: int, correlation_id: int, client_id: bytes | None = b"raw",
                   flexible: bool = False) -> bytes:
    """Raw request header bytes (v1, or v2 with an empty tagged-field section when flexible)."""
    out = _REQ_PREFIX.pack(api_key, api_version, correlation_id)
    out += struct.pack(">h", -1) if client_id is None else struct.pack(">h", len(client_id)) + client_id
    if flexible:
        out += b"\x00"
    return out


def default_entity(cls: type[Any], *, nulls: bool = True) -> Any:
    """An instance of a kio entity class with every field at its schema (or implicit) default.

    With nulls=False, nullable fields without a schema default get the non-null implicit default
    ("" / () / 0 / a default entity) instead of None, as handlers fill them for old versions.
    """
    import dataclasses

    from kio.schema.errors import ErrorCode
    from kio.serial._implicit_defaults import get_implicit_default
    from kio.serial._introspect import (
        EntityField,
        EntityTupleField,
        PrimitiveTupleField,
        classify_field,
        is_optional,
    )

    kwargs = {}
    for f in dataclasses.fields(cls):
        if f.default is not dataclasses.MISSING:
            continue
        kind = classify_field(f)
        if is_optional(f) and nulls:
            value: Any = None
        elif isinstance(kind, EntityTupleField | PrimitiveTupleField):
            value = ()
        elif isinstance(kind, EntityField):
            value = default_entity(kind.type_, nulls=nulls)
        elif kind.type_ is ErrorCode:
            value = ErrorCode.none
        elif kind.type_ is bool:
            value = False
        else:
            value = get_implicit_default(kind.type_)
        kwargs[f.name] = value
    return cls(**kwargs)


def retry_while(call: Any, what: str, retriable: set[int] | frozenset[int], timeout: float = 20.0) -> tuple[Any, int]:
    """Repeat `call` (-> (response, error code)) while it answers a code in `retriable`, as a client
    retries it (50 ms apart, bounded by `timeout`)."""
    deadline = time.monotonic() + timeout
    while True:
        resp, code = call()
        if code not in retriable:
            return resp, code
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: still error {code} after {timeout}s")
        time.sleep(0.05)
