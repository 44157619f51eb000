"""F-9: the protocol fuzzer, with a well-behaved client working beside it.

A fixed seed drives a few thousand hostile requests (tests/fuzzing.py: random frames, truncated,
oversized and negative frames, garbage bodies for every served API key and version, mutations of
valid requests, and every field-level corruption of a Produce batch) at a fresh broker, eight
connections at a time, while a confluent-kafka idempotent producer makes acks=all round trips
on another topic. Asserted:
- every answer carries the request's correlation id (or the connection closes);
- every case of the Produce corruption table gets its error code, and nothing is appended;
- every other Produce that was acknowledged can be read back whole (no acknowledged batch that
  does not decode);
- only a Fetch (a legal long poll) may stay unanswered for the 3 s a case waits;
- the good client never fails, and every record it had acknowledged is there, unchanged;
- the broker stays up and answers a fresh connection between rounds, and its log holds no
  traceback and no failed request or connection.
`make test` runs FUZZ_CASES (1,500: about 20 s); `make soak` runs 20,000 with another seed.
"""

from __future__ import annotations

import asyncio
import struct
import threading
import time
import uuid
from collections import Counter
from typing import Any

import fuzzing
import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from rawclient import RawClient, fetch_records, high_watermark, wait_for_topic

from minikafka.protocol import codec, versions
from minikafka.protocol.records import iter_records, split_batches

pytestmark = [pytest.mark.reliability]

FUZZ_CASES = 1500
SOAK_CASES = 20000
# How long a case waits for an answer or a close: short where silence is legitimate (an incomplete
# frame, a long poll, acks=0), long where it is not, so a busy machine's stall is not a failure.
CASE_WAIT_S = 3.0
ANSWER_WAIT_S = 30.0
CONCURRENCY = 8
ROUND = 250


class GoodClient(threading.Thread):
    """Idempotent acks=all round trips, one record at a time, until stopped."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        super().__init__(daemon=True)
        self.topic = topic
        self.stop = threading.Event()
        self.acked: dict[int, bytes] = {}
        self.errors: list[str] = []
        self.producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "acks": "all",
                                  "linger.ms": 0, "error_cb": lambda e: self.errors.append(f"error_cb {e}")})

    def run(self) -> None:
        i = 0
        while not self.stop.is_set() and i < 100_000:
            value = b"good-%d-%s" % (i, uuid.uuid4().hex.encode())

            def on_delivery(err: Any, msg: Any, value: bytes = value) -> None:
                if err is not None:
                    self.errors.append(f"delivery {err}")
                else:
                    self.acked[msg.offset()] = value

            self.producer.produce(self.topic, value, partition=0, on_delivery=on_delivery)
            if self.producer.flush(30) != 0:
                self.errors.append("flush timed out")
            i += 1
        self.producer.flush(30)


async def _run_case(host: str, port: int, case: fuzzing.Case) -> tuple[str, Any]:
    """'answered' with the response frame, 'closed', or 'timeout'."""
    try:
        reader, writer = await asyncio.open_connection(host, port)
    except OSError as exc:
        return "refused", repr(exc)
    try:
        writer.write(case.data)
        await writer.drain()
        wait = CASE_WAIT_S if _may_stay_unanswered(case) else ANSWER_WAIT_S
        head = await asyncio.wait_for(reader.readexactly(4), wait)
        (size,) = struct.unpack(">i", head)
        return "answered", await asyncio.wait_for(reader.readexactly(size), wait)
    except (asyncio.IncompleteReadError, ConnectionError):
        return "closed", None
    except TimeoutError:
        return "timeout", None
    finally:
        writer.close()


def _may_stay_unanswered(case: fuzzing.Case) -> bool:
    """An incomplete frame (the broker waits for the rest), a Fetch (a long poll) or an acks=0
    Produce (no response at all) is legitimately unanswered; nothing else is."""
    if case.kind in ("frame:truncated", "frame:short-prefix"):
        return True
    try:
        decoded = codec.decode_request(case.data[4:], versions.SUPPORTED)
    except Exception:
        return False
    return decoded.api_key == 1 or (decoded.api_key == 0 and decoded.body.acks == 0)


async def _healthy(host: str, port: int) -> bool:
    frame = codec.encode_request(3, 77, "health", _api_versions_v3())
    try:
        reader, writer = await asyncio.wait_for(asyncio.open_connection(host, port), 5)
        writer.write(frame)
        head = await asyncio.wait_for(reader.readexactly(8), 5)
        writer.close()
        return struct.unpack(">ii", head)[1] == 77
    except (OSError, TimeoutError, asyncio.IncompleteReadError):
        return False


def _api_versions_v3() -> Any:
    from rawclient import api_versions_v3

    return api_versions_v3()


def _produce_result(frame: bytes, version: int = 9) -> Any:
    _corr, body = codec.decode_response(0, version, frame)
    return body.responses[0].partition_responses[0]


async def _fuzz(host: str, port: int, cases: list[fuzzing.Case]) -> tuple[Counter, list[str], list[tuple[int, int]]]:
    outcomes: Counter = Counter()
    failures: list[str] = []
    accepted: list[tuple[int, int]] = []  # (base offset, record count) of acknowledged fuzz Produces
    sem = asyncio.Semaphore(CONCURRENCY)

    async def one(case: fuzzing.Case) -> None:
        async with sem:
            outcome, frame = await _run_case(host, port, case)
        outcomes[outcome] += 1
        if outcome == "refused":
            failures.append(f"{case.kind}: connection refused ({frame})")
        elif outcome == "timeout" and not _may_stay_unanswered(case):
            failures.append(f"{case.kind}: no answer and no close within {ANSWER_WAIT_S}s")
        elif outcome == "answered" and case.correlation_id >= 0:
            (corr,) = struct.unpack_from(">i", frame, 0)
            if corr != case.correlation_id:
                failures.append(f"{case.kind}: correlation id {corr}, sent {case.correlation_id}")
            elif case.kind.startswith("produce:"):
                p = _produce_result(frame)
                if case.expected is not None and p.error_code != case.expected:
                    failures.append(f"{case.kind}: error {int(p.error_code)}, expected {case.expected}")
                elif p.error_code == 0:
                    accepted.append((int(p.base_offset), _records_count(case.data)))
        elif case.expected is not None:
            failures.append(f"{case.kind}: {outcome}, expected error {case.expected}")

    for start in range(0, len(cases), ROUND):
        await asyncio.gather(*(one(c) for c in cases[start:start + ROUND]))
        if not await _healthy(host, port):
            failures.append(f"broker did not answer a fresh connection after case {start + ROUND}")
            break
    return outcomes, failures, accepted


def _read_back(bootstrap: str, topic: str, end: int) -> dict[int, bytes]:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"fuzz-{uuid.uuid4().hex[:6]}",
                  "enable.auto.commit": False, "log_level": 3})
    c.assign([TopicPartition(topic, 0, 0)])
    out: dict[int, bytes] = {}
    deadline = time.monotonic() + 60
    try:
        while len(out) < end and time.monotonic() < deadline:
            m = c.poll(1.0)
            if m is not None and m.error() is None:
                out[m.offset()] = m.value()
    finally:
        c.close()
    return out


def _records_count(frame: bytes) -> int:
    """The record count of the batch a one-partition Produce frame carries."""
    body = codec.decode_request(frame[4:], versions.SUPPORTED).body
    [(_pos, h)] = split_batches(body.topic_data[0].partition_data[0].records)
    return h.records_count


def _check_accepted_read_back(c: RawClient, topic: str, accepted: list[tuple[int, int]]) -> list[str]:
    """Every acknowledged fuzz batch decodes whole at its offsets."""
    problems = []
    for base, count in accepted:
        offsets = [r.offset for r in fetch_records(c, topic, 0, base)][:count]
        if offsets != list(range(base, base + count)):
            problems.append(f"acknowledged batch at {base} ({count} records) reads back as offsets {offsets[:5]}")
    return problems


def fuzz_run(broker: Any, n: int, seed: int) -> None:
    host, port = broker.bootstrap.split(":")
    good_topic, corrupt_topic = f"fuzz-good-{seed}", f"fuzz-target-{seed}"
    with RawClient.connect(broker.bootstrap, timeout=10.0) as c:
        wait_for_topic(c, good_topic)
        wait_for_topic(c, corrupt_topic)
    cases = list(fuzzing.cases(seed, n, versions.SUPPORTED, corrupt_topic, int(time.time() * 1000)))
    good = GoodClient(broker.bootstrap, good_topic)
    good.start()
    try:
        outcomes, failures, accepted = asyncio.run(_fuzz(host, int(port), cases))
    finally:
        good.stop.set()
        good.join(60)
    assert broker.proc.poll() is None, f"broker exited; log:\n{broker.log_tail()}"
    assert failures == [], f"{len(failures)} failures, e.g. {failures[:10]}; outcomes {dict(outcomes)}"
    assert good.errors == [], good.errors[:5]
    assert len(good.acked) > 10, "the good client made almost no round trips"

    with RawClient.connect(broker.bootstrap, timeout=10.0) as c:
        assert high_watermark(c, good_topic) == max(good.acked) + 1
        problems = _check_accepted_read_back(c, corrupt_topic, accepted)
        assert problems == [], problems[:5]
        # Nothing but the acknowledged fuzz Produces is in the target topic.
        assert high_watermark(c, corrupt_topic) == sum(count for _b, count in accepted)
    assert _read_back(broker.bootstrap, good_topic, len(good.acked)) == good.acked

    log = broker.log_path.read_text(errors="replace")
    for bad in ("Traceback", "request_failed", "connection_failed"):
        assert bad not in log, f"{bad!r} in the broker log:\n" + log[log.index(bad) - 2000: log.index(bad) + 2000]


def test_f9_protocol_fuzzer(broker_factory) -> None:
    broker = broker_factory(overrides={"connections.max.idle.ms": "5000"})
    fuzz_run(broker, FUZZ_CASES, seed=20261124)


@pytest.mark.soak
def test_f9_protocol_fuzzer_long(broker_factory) -> None:
    broker = broker_factory(overrides={"connections.max.idle.ms": "5000"})
    fuzz_run(broker, SOAK_CASES, seed=7)


def test_fuzzer_cases_are_deterministic() -> None:
    a = [c.data for c in fuzzing.cases(5, 300, versions.SUPPORTED, "t", 1_700_000_000_000)]
    b = [c.data for c in fuzzing.cases(5, 300, versions.SUPPORTED, "t", 1_700_000_000_000)]
    assert a == b
    kinds = Counter(c.kind.split(":")[0] for c in fuzzing.cases(5, 2000, versions.SUPPORTED, "t", 0))
    assert set(kinds) >= {"produce", "random-frame", "frame", "garbage", "mutated"}, kinds


def test_every_fuzz_produce_batch_is_decodable_when_valid() -> None:
    """Guard for the read-back check: iter_records decodes the table's one valid-looking batch."""
    recs = list(iter_records(fuzzing.batch(fuzzing.records_area(3), 3, base_ts=0)))
    assert [r.value for r in recs] == [b"r0", b"r1", b"r2"]
