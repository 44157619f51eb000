"""One client connection: read frames, handle them one at a time, answer strictly in order.

Theory of operation
- Kafka processes a connection's requests one at a time and answers in request order (it mutes
  the channel while a request is in flight). Pipelined requests are therefore queued in the
  frame decoder and handled sequentially; a parked Fetch blocks only its own connection.
- Any framing or decoding problem closes this connection and no other. The frame size is
  checked before anything is buffered for it.
- A connection with no traffic for `connections.max.idle.ms` is closed by the server's sweeper
  (also one that stopped half-way through a frame).
- Quotas: an answer that carries a throttle time mutes the connection for that long
  (broker/throttling.py decides; nothing is read or handled meanwhile).
- Memory: a frame's bytes are read only once the request memory pool (queued.max.request.bytes)
  granted its size; the grant is returned when the request was handled or the connection closed.
- Security: the connection's session (security/session.py) says whether a request may pass
  before it is decoded (on a SASL listener, only the authentication sequence until it succeeds);
  a failed authentication is answered after connection.failed.authentication.delay.ms, then the
  connection closes. After a SaslHandshake v0 the client's tokens come as bare frames.
"""

from __future__ import annotations

import asyncio
import itertools
import struct
import time
from collections.abc import Callable

import structlog

from minikafka.broker.client_info import ClientInfo
from minikafka.broker.dispatch import Answer, CloseConnection, HandlerRegistry, dispatch, refusal
from minikafka.broker.fault_door import FaultDoor
from minikafka.broker.request_memory import RequestMemoryPool
from minikafka.broker.throttling import Throttler
from minikafka.observe.meters import Meters
from minikafka.protocol.errors import ErrorCode, FramingError
from minikafka.protocol.framing import FrameDecoder, encode_frame
from minikafka.protocol.wire_write import Gathered
from minikafka.security.sasl import SaslFailure
from minikafka.security.session import Session

log = structlog.get_logger("minikafka.broker")
_conn_ids = itertools.count(1)
READ_CHUNK = 256 * 1024
_API_KEY_AND_VERSION = struct.Struct(">hh")  # the first two fields of every request header


PASS, REFUSE, CLOSE = "pass", "refuse", "close"  # the session's verdicts on a request (Connection._admit)


class Connection:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                 registry: HandlerRegistry, *, max_frame_size: int, now_ms: Callable[[], int],
                 monotonic_ms: Callable[[], int], memory: RequestMemoryPool | None = None,
                 throttler: Throttler | None = None, faults: FaultDoor | None = None,
                 session: Session, meters: Meters | None = None) -> None:
        self.reader = reader
        self.meters = meters or Meters()
        self.session = session
        self.faults = faults
        self.throttler = throttler
        self.memory = memory
        self.writer = writer
        self.registry = registry
        self.max_frame_size = max_frame_size
        self.decoder = FrameDecoder(session.max_frame_size or max_frame_size)
        self.conn_id = next(_conn_ids)
        peer = writer.get_extra_info("peername")
        self.peer = f"{peer[0]}:{peer[1]}" if isinstance(peer, tuple) else str(peer)
        self._now_ms = now_ms
        self._monotonic_ms = monotonic_ms
        self.last_active_ms = monotonic_ms()
        self.busy = False  # a request is being handled (not idle, even if no bytes move)
        self.closing = False
        self.client = ClientInfo()

    async def run(self) -> None:
        reserved = 0  # bytes of the request memory pool granted to the frame being read
        try:
            while not self.closing:
                pending = self.decoder.pending_size
                if pending > 0 and reserved == 0 and self.memory is not None:
                    # Kafka's queued.max.request.bytes: no more bytes of this request are read
                    # until the pool grants its size (the socket's bytes wait in the kernel).
                    reserved = await self.memory.reserve(pending + 4)
                data = await self.reader.read(READ_CHUNK)
                if not data:
                    break
                self.last_active_ms = self._monotonic_ms()
                try:
                    frames = self.decoder.feed(data)
                except FramingError as exc:
                    log.warning("bad_frame", conn_id=self.conn_id, peer=self.peer, reason=str(exc))
                    break
                # The reserved frame is the first one completed; it is released once handled.
                held, reserved = (reserved, 0) if frames and reserved else (0, reserved)
                try:
                    session = self.session
                    for frame in frames:
                        self.busy = True
                        try:
                            gated = not session.passes_all  # authenticating, or a session that expires
                            if gated:
                                if session.raw_tokens:  # after SaslHandshake v0: bare tokens
                                    self._raw_sasl_token(frame)
                                    continue
                                verdict = self._admit(frame)
                                if verdict is REFUSE:
                                    await self._fail_authentication(
                                        refusal(self.registry, frame, ErrorCode.illegal_sasl_state))
                                if verdict is not PASS:
                                    return
                            started = time.perf_counter()
                            answer = await dispatch(self.registry, frame, self.conn_id, self.peer,
                                                    self._now_ms(), self.client, self.throttler, self.faults,
                                                    session)
                            if session.failed:
                                await self._fail_authentication(answer)
                                return
                            if gated:  # authenticated now: frames up to socket.request.max.bytes again
                                self.decoder.max_frame_size = session.max_frame_size or self.max_frame_size
                            if answer.throttle_ms > 0:
                                self._meter(frame, started)  # a quota's mute is not the request's time
                                await self._throttle(answer)
                            else:
                                if answer.data is not None:
                                    self._write(answer.data)
                                self._meter(frame, started)
                        except CloseConnection:
                            return
                        finally:
                            self.busy = False
                            self.last_active_ms = self._monotonic_ms()
                        if self.closing:
                            break
                    del frames
                finally:
                    if held and self.memory is not None:
                        self.memory.release(held)
                await self.writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        except Exception:
            log.exception("connection_failed", conn_id=self.conn_id, peer=self.peer)
        finally:
            if reserved and self.memory is not None:
                self.memory.release(reserved)
            self.decoder.release_buffer()
            self.close()

    def _meter(self, frame: bytes, started: float) -> None:
        """Kafka's RequestMetrics: per API and version, the time from the request read to its
        answer handed to the socket (TotalTimeMs). A version the broker does not serve (answered
        only for ApiVersions) is counted as -1, so clients cannot grow the label set at will."""
        api_key, api_version = _API_KEY_AND_VERSION.unpack_from(frame)
        served = self.registry.served.get(api_key)
        if served is None or not served.min <= api_version <= served.max:
            api_version = -1
        self.meters.request(api_key, api_version, (time.perf_counter() - started) * 1000)

    def _admit(self, frame: bytes) -> str:
        """The session's word on a request before it is decoded: PASS; REFUSE (after the SASL
        handshake, Kafka answers it with its API's error, then closes); CLOSE (before the
        handshake, or on an expired session, Kafka only closes)."""
        session = self.session
        api_key = int.from_bytes(frame[:2], "big", signed=True) if len(frame) >= 2 else -1
        if session.admit(api_key, self._now_ms()):
            return PASS
        if session.refusal(api_key):
            return REFUSE
        log.warning("request_before_authentication" if not session.authenticated else "session_expired",
                    conn_id=self.conn_id, peer=self.peer, listener=session.listener.name, api_key=api_key,
                    state=session.state)
        return CLOSE

    def _raw_sasl_token(self, frame: bytes) -> None:
        """SaslHandshake v0: a bare token in, a bare token out; a failure closes the connection."""
        try:
            answer = self.session.raw_token(frame)
        except SaslFailure as exc:
            log.info("authentication_failed", conn_id=self.conn_id, peer=self.peer,
                     listener=self.session.listener.name, reason=exc.message)
            raise CloseConnection(exc.message) from None
        self.writer.write(encode_frame(answer))
        if self.session.authenticated:
            self.decoder.max_frame_size = self.max_frame_size

    async def _fail_authentication(self, answer: Answer) -> None:
        """Kafka holds the answer to a failed authentication back for a while (against password
        guessing), sends it, then closes the connection."""
        log.info("authentication_failed", conn_id=self.conn_id, peer=self.peer, listener=self.session.listener.name,
                 mechanism=self.session.mechanism_name)
        await asyncio.sleep(self.session.failed_delay_ms / 1000)
        if answer.data is not None and not self.writer.is_closing():
            self._write(answer.data)
            await self.writer.drain()

    async def _throttle(self, answer: Answer) -> None:
        """A quota was exceeded: the connection reads (and handles) nothing for the throttle time,
        as Kafka mutes the channel; clients too old to wait get the answer only afterwards."""
        if answer.data is not None and not answer.delay_first:
            self._write(answer.data)
            await self.writer.drain()
        await asyncio.sleep(answer.throttle_ms / 1000)
        if answer.data is not None and answer.delay_first:
            self._write(answer.data)

    def _write(self, data: bytes | Gathered) -> None:
        """An answer to the socket. A large Fetch answer comes as its parts: the send thread's
        outlet takes them one by one (each is copied once into its queue); a StreamWriter (TLS,
        or no send thread) gets them joined, as uvloop's writelines stalled on ~1 MB parts."""
        if type(data) is not Gathered:
            self.writer.write(data)
        elif hasattr(self.writer, "write_parts"):
            self.writer.write_parts(data.parts)
        else:
            self.writer.write(data.joined())

    def close(self) -> None:
        self.closing = True
        if not self.writer.is_closing():
            self.writer.close()

    def stop_reading(self) -> None:
        """Graceful shutdown: finish the request in hand, then close."""
        self.closing = True
        if not self.busy:
            self.close()
