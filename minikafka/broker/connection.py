"""One client connection: read frames, handle them one at a time, answer strictly in order.

Theory of operation
- Kafka processes a connection's requests one at a time and answers in request order (it mutes
  the channel while a request is in flight). Pipelined requests are therefore queued in the
  frame decoder and handled sequentially; a parked Fetch blocks only its own connection.
- Two lanes, one order. Most requests finish without waiting for anything, so they are handled
  in the socket's read callback (`received`, the fast lane): no StreamReader and no task wake-up
  per request, which was about a tenth of the loop's time per small Produce. A request whose
  handler waits, a throttled answer, or a full send queue moves the rest of that read to a task
  (the lane); bytes that arrive meanwhile go to the StreamReader, and run() handles them after
  the lane. Anything unusual (authentication, an expiring session) is run()'s alone.
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
import types
from collections.abc import Awaitable, Callable, Coroutine, Generator
from typing import Any

import structlog

from minikafka.broker.client_info import ClientInfo
from minikafka.broker.dispatch import Answer, CloseConnection, HandlerRegistry, dispatch, refusal
from minikafka.broker.fault_door import FaultDoor
from minikafka.broker.request_memory import RequestMemoryPool
from minikafka.broker.throttling import Throttler
from minikafka.broker.usual_produce import UsualProduce
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
                 session: Session, meters: Meters | None = None, usual_produce: UsualProduce | None = None) -> None:
        self.reader = reader
        self.usual_produce = usual_produce
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
        self._reading = False  # run() waits in reader.read() with nothing buffered
        self._reserved = 0  # bytes of the request memory pool granted to the frame being read
        self.transport: asyncio.BaseTransport | None = None  # set by the server with the fast lane
        self._lane: asyncio.Task[None] | None = None  # requests finishing outside the read callback
        self._lane_held = 0  # the memory pool's grant for a request in the lane

    async def run(self) -> None:
        try:
            while not self.closing:
                pending = self.decoder.pending_size
                if pending > 0 and self._reserved == 0 and self.memory is not None:
                    # Kafka's queued.max.request.bytes: no more bytes of this request are read
                    # until the pool grants its size (the socket's bytes wait in the kernel).
                    self._reserved = await self.memory.reserve(pending + 4)
                self._reading = True
                data = await self.reader.read(READ_CHUNK)
                self._reading = False
                if self._lane is not None:  # requests read before these bytes finish first
                    await self._lane
                    if self.closing:
                        break
                if not data:
                    break
                self.last_active_ms = self._monotonic_ms()
                try:
                    frames = self.decoder.feed(data)
                except FramingError as exc:
                    log.warning("bad_frame", conn_id=self.conn_id, peer=self.peer, reason=str(exc))
                    break
                held = self._take_reserved(frames)
                try:
                    for frame in frames:
                        if not await self._handle(frame) or self.closing:
                            return
                    del frames
                finally:
                    self._release(held)
                await self.writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        except Exception:
            log.exception("connection_failed", conn_id=self.conn_id, peer=self.peer)
        finally:
            self._reading = False
            if self._lane is not None and not self._lane.done():
                self._lane.cancel()  # a lane cancelled before it started never runs its finally:
            self._release(self._lane_held)  # what it holds is returned here
            self._lane_held = 0
            self._release(self._reserved)
            self._reserved = 0
            self.decoder.release_buffer()
            self.close()

    async def _handle(self, frame: bytes) -> bool:
        """One request, read by run(): False when the connection is to close."""
        session = self.session
        self.busy = True
        try:
            gated = not session.passes_all  # authenticating, or a session that expires
            if gated:
                if session.raw_tokens:  # after SaslHandshake v0: bare tokens
                    self._raw_sasl_token(frame)
                    return True
                verdict = self._admit(frame)
                if verdict is REFUSE:
                    await self._fail_authentication(
                        refusal(self.registry, frame, ErrorCode.illegal_sasl_state))
                if verdict is not PASS:
                    return False
            started = time.perf_counter()
            answer = await dispatch(self.registry, frame, self.conn_id, self.peer,
                                    self._now_ms(), self.client, self.throttler, self.faults,
                                    session)
            if gated and not session.failed:  # authenticated now: frames up to socket.request.max.bytes again
                self.decoder.max_frame_size = session.max_frame_size or self.max_frame_size
            return await self._answer(frame, started, answer)
        except CloseConnection:
            return False
        finally:
            self.busy = False
            self.last_active_ms = self._monotonic_ms()

    def _answer_at_once(self, frame: bytes, started: float, answer: Answer) -> bool:
        """Send and meter an answer that needs no wait; False for one that does (a failed
        authentication, a quota's mute): _answer sends those."""
        if self.session.failed or answer.throttle_ms > 0:
            return False
        if answer.data is not None:
            self._write(answer.data)
        self._meter(frame, started)
        return True

    async def _answer(self, frame: bytes, started: float, answer: Answer) -> bool:
        """Send the answer; False when the connection is to close."""
        if self._answer_at_once(frame, started, answer):
            return True
        if self.session.failed:
            await self._fail_authentication(answer)
            return False
        self._meter(frame, started)  # a quota's mute is not the request's time
        await self._throttle(answer)
        return True

    # ------------------------------------------------------------------------ the fast lane
    def received(self, data: bytes) -> bool:
        """Bytes from the socket, offered before the StreamReader sees them (ConnectionProtocol).

        While run() waits for bytes with nothing buffered and no request is in flight, the
        requests in `data` are handled here, in the loop's read callback: no StreamReader, no
        wake-up of run()'s task. A request whose handler must wait (a parked Fetch, a delay) goes
        on in a task of its own, the lane, with the requests read after it; until the lane is done,
        bytes go to the StreamReader and run() handles them after it, so answers keep request
        order. Returns False when run() is to read `data` itself."""
        session = self.session
        if not self._reading or self._lane is not None or self.closing or not session.passes_all:
            self._reading = False  # run() is woken with these bytes: nothing may overtake them
            return False
        self.last_active_ms = self._monotonic_ms()
        try:
            frames = self.decoder.feed(data)
        except FramingError as exc:
            log.warning("bad_frame", conn_id=self.conn_id, peer=self.peer, reason=str(exc))
            self.close()
            return True
        held = self._take_reserved(frames)
        for i, frame in enumerate(frames):
            if not session.passes_all:  # an earlier request of this read changed the session
                self._start_lane(self._lane_run(None, b"", 0.0, frames[i:]), held)
                return True
            self.busy = True
            started = time.perf_counter()
            if frame[:2] == b"\x00\x00" and self._usual_produce_open():  # api key 0: Produce
                try:
                    data = self.usual_produce.answer(frame, self._now_ms(), self.client, self.conn_id)  # type: ignore[union-attr]
                except Exception:  # as for dispatch below: logged, and this connection closes
                    log.exception("connection_failed", conn_id=self.conn_id, peer=self.peer)
                    self.close()
                    break
                if data is not None:
                    self._write(data)
                    self._meter(frame, started)
                    self.busy = False
                    if self.closing:
                        break
                    continue
            handling = dispatch(self.registry, frame, self.conn_id, self.peer, self._now_ms(), self.client,
                                self.throttler, self.faults, session)
            try:
                waits_on = handling.send(None)
            except StopIteration as done:
                answer: Answer = done.value
            except CloseConnection:
                self.close()
                break
            except Exception:
                log.exception("connection_failed", conn_id=self.conn_id, peer=self.peer)
                self.close()
                break
            else:  # the handler waits: it goes on in the lane
                self._start_lane(self._lane_run(_resume(handling, waits_on), frame, started, frames[i + 1:]), held)
                return True
            if not self._answer_at_once(frame, started, answer):  # it waits: in the lane
                self._start_lane(self._lane_run(_ready(answer), frame, started, frames[i + 1:]), held)
                return True
            self.busy = False
            if self.closing:
                break
        self.busy = False
        self.last_active_ms = self._monotonic_ms()
        if not self.closing and _needs_drain(self.writer):
            self._start_lane(self._lane_run(None, b"", 0.0, []), held)
            return True
        self._release(held)
        self._reserve_next()
        return True

    def _usual_produce_open(self) -> bool:
        """UsualProduce (broker/usual_produce.py) may answer a Produce: there is one, and no quota
        or fault rule has a say in this connection's requests."""
        return (self.usual_produce is not None and not (self.throttler is not None and self.throttler.active)
                and not (self.faults is not None and self.faults.active))

    def _start_lane(self, work: Coroutine[Any, Any, None], held: int = 0) -> None:
        """`held`: the memory pool's grant for a request in the lane, returned when it is done."""
        self._lane_held = held
        self._lane = asyncio.get_running_loop().create_task(work)

    async def _lane_run(self, first: Awaitable[Answer] | None, frame: bytes, started: float,
                        rest: list[bytes]) -> None:
        """The rest of a fast-lane read: its request that waited (or was throttled), the requests
        read with it, then the drain run() would have awaited."""
        ok = True
        try:
            if first is not None:
                self.busy = True
                try:
                    ok = await self._answer(frame, started, await first)
                except CloseConnection:
                    ok = False
                finally:
                    self.busy = False
                    self.last_active_ms = self._monotonic_ms()
            for f in rest:
                if not ok or self.closing:
                    break
                ok = await self._handle(f)
            if ok and not self.closing:
                await self.writer.drain()
        except (ConnectionError, asyncio.CancelledError):
            ok = False
        except Exception:
            log.exception("connection_failed", conn_id=self.conn_id, peer=self.peer)
            ok = False
        finally:
            self._lane = None
            self._release(self._lane_held)
            self._lane_held = 0
            # A stop_reading() while the lane was busy left the closing to it: run() waits in a
            # read that only the close ends (else a clean stop waited out its grace period).
            if not ok or self.closing:
                self.close()
            else:
                self._reserve_next()

    def _take_reserved(self, frames: list[bytes]) -> int:
        """The reserved frame is the first one completed; its grant is returned once handled."""
        held = self._reserved if frames else 0
        if held:
            self._reserved = 0
        return held

    def _release(self, granted: int) -> None:
        if granted and self.memory is not None:
            self.memory.release(granted)

    def _reserve_next(self) -> None:
        """A request read in part has its size granted before more of it is read (as run() does);
        when the pool cannot grant it now, reading stops until it can."""
        pending = self.decoder.pending_size
        if pending <= 0 or self._reserved or self.memory is None or self.closing or self.transport is None:
            return
        if not self._reading:  # run() was woken with more bytes: it reserves before it reads on
            return
        self._reserved = self.memory.try_reserve(pending + 4)
        if not self._reserved:
            self._start_lane(self._wait_for_memory(pending + 4))

    async def _wait_for_memory(self, n: int) -> None:
        assert self.memory is not None and self.transport is not None
        self.transport.pause_reading()
        try:
            self._reserved = await self.memory.reserve(n)
        finally:
            self._lane = None
            if not self.closing:
                self.transport.resume_reading()

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
            answer = self.session.raw_token(bytes(frame))  # a frame over 64 KiB comes as a bytearray
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
        outlet takes them one by one (a large records buffer is queued without a copy); a
        StreamWriter (TLS, or no send thread) gets them joined, as uvloop's writelines stalled on
        ~1 MB parts."""
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


class ConnectionProtocol(asyncio.StreamReaderProtocol):
    """The server's protocol: a StreamReaderProtocol whose Connection is offered each read first
    (Connection.received, the fast lane); what it leaves goes to the StreamReader as before."""

    connection: Connection | None = None

    def data_received(self, data: bytes) -> None:
        conn = self.connection
        if conn is not None and conn.received(data):
            return
        super().data_received(data)


@types.coroutine
def _resume(coro: Coroutine[Any, Any, Any], waits_on: Any) -> Generator[Any, Any, Any]:
    """Go on with a coroutine started by hand that yielded `waits_on` (the future it awaits): the
    task running this sees that future, and the coroutine gets what the task sends or throws, as
    if the task had run it from the start."""
    while True:
        try:
            sent = yield waits_on
        except GeneratorExit:
            coro.close()
            raise
        except BaseException as exc:  # noqa: BLE001 - handed on: the coroutine decides
            try:
                waits_on = coro.throw(exc)
            except StopIteration as done:
                return done.value
        else:
            try:
                waits_on = coro.send(sent)
            except StopIteration as done:
                return done.value


async def _ready(answer: Answer) -> Answer:
    return answer


def _needs_drain(writer: Any) -> bool:
    """Would drain() wait? (the send thread's outlet: over its high water; a transport: writing
    is paused, over asyncio's)."""
    needs = getattr(writer, "needs_drain", None)
    if needs is not None:
        return bool(needs())
    transport = writer.transport
    return transport.get_write_buffer_size() > transport.get_write_buffer_limits()[1]
