"""HandlerRegistry and request dispatch.

The registry is the single source of truth: what is advertised in ApiVersions is the set of
registered handlers intersected with protocol.versions.SUPPORTED, so the two cannot drift.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import Awaitable, Iterable
from typing import Any, ClassVar, NamedTuple, Protocol

import structlog
from kio.schema.api_versions.v0.response import ApiVersion as ApiVersionV0
from kio.schema.api_versions.v0.response import ApiVersionsResponse as ApiVersionsResponseV0

from minikafka.broker.client_info import ClientInfo
from minikafka.broker.context import RequestContext
from minikafka.broker.fault_door import FaultDoor
from minikafka.broker.throttling import Throttler, client_throttles
from minikafka.control.rules import Rule
from minikafka.protocol import codec, versions
from minikafka.protocol.errors import ErrorCode, FramingError, UnsupportedVersion
from minikafka.protocol.wire_write import Gathered

log = structlog.get_logger("minikafka.broker")


class Handler(Protocol):
    api_key: ClassVar[int]

    def __call__(self, ctx: RequestContext, req: Any) -> Awaitable[Any | None]: ...


class CloseConnection(Exception):
    """The request cannot be answered; Kafka closes the connection in these cases."""


class HandlerRegistry:
    def __init__(self, handlers: Iterable[Handler]) -> None:
        self._handlers: dict[int, Handler] = {}
        for h in handlers:
            if h.api_key in self._handlers:
                raise ValueError(f"two handlers for api_key {h.api_key}")
            if h.api_key not in versions.SUPPORTED:
                raise ValueError(f"api_key {h.api_key} has no entry in protocol.versions.SUPPORTED")
            self._handlers[h.api_key] = h
        self.served: dict[int, versions.VersionRange] = {
            k: versions.SUPPORTED[k] for k in sorted(self._handlers)
        }

    def __getitem__(self, api_key: int) -> Handler:
        return self._handlers[api_key]

    def __contains__(self, api_key: object) -> bool:
        return api_key in self._handlers


def unsupported_api_versions_response(correlation_id: int) -> bytes:
    """KIP-511: an ApiVersions request of an unknown version gets a v0 reply with error 35 and
    only key 18's range, so the client can retry with a version we know."""
    rng = versions.SUPPORTED[codec.API_VERSIONS_KEY]
    body = ApiVersionsResponseV0(
        error_code=ErrorCode.unsupported_version,
        api_keys=(ApiVersionV0(api_key=codec.API_VERSIONS_KEY, min_version=rng.min, max_version=rng.max),),
    )
    return codec.encode_response(codec.API_VERSIONS_KEY, 0, correlation_id, body)


class Answer(NamedTuple):
    """One request's encoded response (None: none is sent, acks=0) and the time its connection
    stays muted for a quota (delay_first: hold the response itself back for that long, for
    clients too old to wait on their own)."""

    data: bytes | Gathered | None  # Gathered: a large Fetch answer, written part by part
    throttle_ms: int = 0
    delay_first: bool = False


async def dispatch(registry: HandlerRegistry, frame: bytes, conn_id: int, peer: str,
                   now_ms: int, client: ClientInfo, throttler: Throttler | None = None,
                   faults: FaultDoor | None = None, session: Any = None) -> Answer:
    """Decode, handle, encode one request. Raises CloseConnection when Kafka would close, or when
    a fault rule (control/rules.py) closes the connection."""
    try:
        req = codec.decode_request(frame, registry.served)
    except UnsupportedVersion as exc:
        if exc.api_key == codec.API_VERSIONS_KEY:
            return Answer(unsupported_api_versions_response(exc.correlation_id))  # KIP-511: negotiation
        _warn_unsupported(registry, client, exc, conn_id, peer, codec.peek_client_id(frame))
        raise CloseConnection(str(exc)) from None
    except FramingError as exc:
        log.warning("malformed_request", conn_id=conn_id, peer=peer, reason=str(exc))
        raise CloseConnection(str(exc)) from None

    client.saw_request(req.api_key, req.client_id, req.body)
    handler = registry[req.api_key]
    ctx = RequestContext(conn_id, peer, req.api_key, req.api_version, req.correlation_id,
                         req.client_id, now_ms, req.body, session)
    body = versions.upgrade(req.body)
    fault = None
    if faults is not None and faults.active:
        fault = faults.for_request(req.api_key, req.api_version, req.client_id, body)
        if fault is not None:
            early = await _fault_before(fault, handler, req, body)
            if early is not None:
                return early
    throttling = throttler is not None and throttler.active
    busy_ns = 0
    try:
        if throttling:
            assert throttler is not None
            body = throttler.prepare(req.api_key, req.client_id, body)
            response, busy_ns = await throttler.run(handler(ctx, body))
        else:
            response = await handler(ctx, body)
    except CloseConnection:
        raise
    except Exception:
        log.exception("request_failed", conn_id=conn_id, api=req.api_key, api_version=req.api_version,
                      correlation_id=req.correlation_id, client_id=req.client_id)
        response = error_response(handler, body, ErrorCode.unknown_server_error)
        if response is None:
            raise CloseConnection("handler failed and the API has no top-level error code") from None
    throttle_ms = 0
    if throttling:
        assert throttler is not None
        started = time.perf_counter_ns()
        data = _encode(req, response)
        done = throttler.finish(req.api_key, req.client_id, len(frame), response, len(data or b""),
                                busy_ns + time.perf_counter_ns() - started)
        throttle_ms = done.throttle_ms
        if done.response is not response:
            data = _encode(req, done.response)
    else:
        data = _encode(req, response)
    if fault is not None and fault.action == "drop_response":
        return Answer(None)  # the work is done; its answer is lost
    if fault is not None and fault.action == "close_connection_after":
        raise CloseConnection(f"fault rule {fault.id}: close the connection after {versions.api_name(req.api_key)}")
    return Answer(data, throttle_ms, throttle_ms > 0 and not client_throttles(req.api_key, req.api_version))


def refusal(registry: HandlerRegistry, frame: bytes, code: ErrorCode) -> Answer:
    """The request's API answering `code` to all of it, without running its handler (a request
    out of the SASL sequence); raises CloseConnection when it cannot be decoded or has no error."""
    try:
        req = codec.decode_request(frame, registry.served)
    except FramingError as exc:
        raise CloseConnection(str(exc)) from None
    handler = registry[req.api_key]
    response = error_response(handler, versions.upgrade(req.body), code)
    if response is None:
        raise CloseConnection(f"{versions.api_name(req.api_key)} has no error code")
    return Answer(_encode(req, response))


async def _fault_before(fault: Rule, handler: Handler, req: Any, body: Any) -> Answer | None:
    """What a fault rule does before the handler runs: the answer that replaces it (error), a
    closed connection, or a wait (delay; None: the handler runs)."""
    if fault.action == "close_connection_before":
        raise CloseConnection(f"fault rule {fault.id}: close the connection before {versions.api_name(req.api_key)}")
    if fault.action == "delay":
        await asyncio.sleep(fault.delay_ms / 1000)
    if fault.action == "error":
        assert fault.error_code is not None
        response = error_response(handler, body, fault.error_code)
        if response is None:  # the API has no error code to answer with: the client sees a closed connection
            raise CloseConnection(f"fault rule {fault.id}: {versions.api_name(req.api_key)} has no error code")
        return Answer(_encode(req, response))
    return None


def _encode(req: Any, response: Any) -> bytes | Gathered | None:
    if response is None:
        return None
    return codec.encode_answer(req.api_key, req.api_version, req.correlation_id, response)


def _warn_unsupported(registry: HandlerRegistry, client: ClientInfo, exc: UnsupportedVersion, conn_id: int,
                      peer: str, client_id: str | None) -> None:
    """One warning per connection, naming the client: users otherwise learn of it only from the
    client's side (or not at all)."""
    if client_id is not None:
        client.client_id = client_id
    if client.warned_unsupported:
        return
    client.warned_unsupported = True
    served = registry.served.get(exc.api_key)
    log.warning("unsupported_api", conn_id=conn_id, peer=peer, api=versions.api_name(exc.api_key),
                api_key=exc.api_key, api_version=exc.api_version,
                served=f"{served.min}-{served.max}" if served else "not served",
                client_id=client.client_id, client_software_name=client.software_name,
                client_software_version=client.software_version)


def error_response(handler: Handler, body: Any, code: ErrorCode) -> Any | None:
    """The API's answer of `code` to the whole request (the handler's own error_response, or the
    response with only its top-level error code set); None when the API has no error code."""
    make = getattr(handler, "error_response", None)
    if make is not None:
        return make(body, code)
    cls = versions.canonical_response(handler.api_key)
    names = {f.name for f in dataclasses.fields(cls)}
    if "error_code" not in names:
        return None
    return versions.convert(_EmptyWithError(code), cls)


@dataclasses.dataclass
class _EmptyWithError:
    error_code: ErrorCode
