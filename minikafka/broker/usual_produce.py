"""UsualProduce: the usual Produce request answered straight from its frame, without the general
dispatch around it.

Why: a small Produce is the request a broker answers most, and at 100 connections in closed loops
(the scale profile's connections curve) the event loop's thread was the limit. Decoding, the
append and encoding had each been made direct already; what was left around them was the general
path every API takes: a coroutine for dispatch and one for the handler, started and finished by
hand, the request context, the canonical-version upgrade, the registry's doors, the Answer. Taking
the usual request past them served 100 connections at 41-46k requests/s where the general path
served 31-36k, in alternated runs on the 2-core VM (issue 17).

What it takes, and only when the connection has no quota, fault rule or SASL step in the way
(Connection.received decides that): Produce v3-v12 (topics by name), acks 1 or -1, a request
header without tagged fields, and a body the compiled reader reads; with a transactional id only
below v12 (from v12 on, transactions v2, the request adds its partitions to the transaction, which
waits on the coordinator: the handler's __call__ does that). The broker
builds none when an authorizer or the invariant monitor is on: both watch every request. It runs
the Produce handler's own `answer` (the same appends, checks and error answers) and writes the
answer with the handler's direct writer. Everything else gets None, and the general path answers
it; nothing has been done for it by then. tests/integration/test_usual_produce.py answers the
same requests both ways, on two brokers, and compares the answers and the log files.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any

import structlog

from minikafka.broker import txn_enrollment
from minikafka.protocol import codec, produce_request, produce_response, versions
from minikafka.protocol.errors import ErrorCode

log = structlog.get_logger("minikafka.broker")

API_KEY = 0
_PREFIX = struct.Struct(">hhih")  # api key, api version, correlation id, client id length
_CLIENT_ID_AT = _PREFIX.size
_ACKS = frozenset((1, -1))  # acks=0 answers nothing and closes on a failure: the general path


class UsualProduce:
    def __init__(self, services: Any) -> None:
        self.services = services
        self._handler: Any = None  # the Produce handler, built at the first request it takes
        # version -> (the compiled reader of its body, or None: not taken; whether its header is
        # flexible), made at the version's first request: making all ten at start-up imported
        # their kio classes, 44 ms of a start-up whose goal is under 150 ms (issue 17)
        self._readers: dict[int, tuple[Callable[[bytes, int], Any] | None, bool]] = {}
        self.taken = 0  # requests answered here since start (tests look)

    def answer(self, frame: bytes, now_ms: int, client: Any, conn_id: int) -> bytes | None:
        """The encoded answer to a Produce `frame`, or None when it is not the usual request (then
        nothing has been done for it). `client`: the connection's ClientInfo, told the client id
        as dispatch tells it."""
        if len(frame) < _PREFIX.size:
            return None
        _, version, correlation_id, n = _PREFIX.unpack_from(frame)
        shape = self._readers.get(version)
        if shape is None:
            if not produce_request.FIRST_VERSION <= version <= produce_request.LAST_VERSION:
                return None
            shape = self._readers[version] = (produce_request.reader(version),
                                              bool(versions.request_class(API_KEY, version).__flexible__))
        read, flexible = shape
        if read is None:  # no compiled reader (no C compiler where it was installed)
            return None
        pos = codec.usual_header_end(frame, flexible)
        if pos is None:  # header tagged fields, a bad client id length: codec's walk decides
            return None
        req = read(frame, pos)
        if req is None or req.acks not in _ACKS:
            return None
        if req.transactional_id is not None and version >= txn_enrollment.PRODUCE_SINCE:
            return None  # its partitions are enrolled first, an await on the coordinator
        client_id = None
        if n >= 0:
            try:
                client_id = client.client_id = frame[_CLIENT_ID_AT:_CLIENT_ID_AT + n].decode()
            except UnicodeDecodeError:
                return None  # the general path refuses it as malformed
        handler = self._handler
        if handler is None:
            from minikafka.broker.handlers.produce import ProduceHandler

            handler = self._handler = ProduceHandler(self.services)
        self.taken += 1
        try:
            response = handler.answer(req, now_ms)
        except Exception:  # as dispatch: logged, and the request answered UNKNOWN_SERVER_ERROR
            log.exception("request_failed", conn_id=conn_id, api=API_KEY, api_version=version,
                          correlation_id=correlation_id, client_id=client_id)
            response = handler.error_response(req, ErrorCode.unknown_server_error)
        data = produce_response.encode_produce_response(version, correlation_id, response)
        if data is None:  # an answer the direct writer leaves to kio's (record errors, say)
            data = codec.encode_answer(API_KEY, version, correlation_id, response)
        return data  # type: ignore[return-value]  # a Produce answer is never Gathered
