"""Client workloads of the benchmark harness, one role per process.

Run as ``python bench/harness/workloads.py ROLE 'JSON-ARGS'``. A role may print ``MARK start`` and
``MARK end`` lines around its measured window (the harness samples the broker's CPU time when it
reads them) and ``READY`` when it is set up (the e2e consumer); its last stdout line is one JSON
object with the result. Every loop is bounded by a record count and a deadline.

Payloads are 1 KiB by default: bytes 0..7 hold a big-endian u64 (the sequence number, or for the
e2e roles the intended send time in ns), bytes 8..15 the sequence number for e2e, the rest comes
from a pool of random payloads drawn with a fixed seed, so both brokers get the same bytes.
"""

from __future__ import annotations

import json
import math
import os
import random
import struct
import sys
import time
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, Producer, TopicPartition

U64 = struct.Struct(">Q")
TWO_U64 = struct.Struct(">QQ")
POOL = 256

# The librdkafka settings of benchmark-plan.md section 1, pinned for every broker.
PRODUCER_BASE = {
    "acks": "all",
    "linger.ms": 5,
    "batch.size": 1_000_000,
    "batch.num.messages": 10_000,
    "enable.idempotence": False,
    "socket.nagle.disable": True,
    "compression.type": "none",
    "log_level": 3,
}
CONSUMER_BASE = {
    "fetch.wait.max.ms": 500,
    # librdkafka stops fetching for fetch.queue.backoff.ms (default 1000) once its queue holds
    # queued.max.messages.kbytes (64 MB): a catch-up read then alternates a burst with a pause of up
    # to a second, whatever the broker. At the default, C1 (full profile, 1 MB batches) read
    # 193k msg/s on minikafka with broker and client mostly idle, and Kafka moved between 0.33 M
    # and 0.96 M across repetitions; at 10 ms minikafka read 679k (2026-11-25). Both brokers get it.
    "fetch.queue.backoff.ms": 10,
    "fetch.min.bytes": 1,
    "queued.min.messages": 100_000,
    "socket.nagle.disable": True,
    "enable.auto.commit": False,
    "auto.offset.reset": "earliest",
    "enable.partition.eof": False,
    "log_level": 3,
}


def mark(what: str) -> None:
    print(f"MARK {what}", flush=True)


def cpu_now() -> float:
    t = os.times()
    return t.user + t.system


def payload_pool(size: int, seed: int) -> list[bytes]:
    rnd = random.Random(seed)
    return [rnd.randbytes(size) for _ in range(POOL)]


def hist_us(values_s: list[float]) -> dict[str, int]:
    """Log histogram (1 % buckets) of latencies in seconds; keys are bucket numbers of µs."""
    h: dict[str, int] = {}
    for v in values_s:
        us = max(v * 1e6, 1.0)
        b = str(int(math.log(us) / math.log(1.01)))
        h[b] = h.get(b, 0) + 1
    return h


def pct_ms(values_s: list[float], qs: tuple[float, ...]) -> dict[str, float | None]:
    if not values_s:
        return {f"p{q:g}": None for q in qs}
    s = sorted(values_s)
    out = {}
    for q in qs:
        i = min(len(s) - 1, max(0, math.ceil(q / 100.0 * len(s)) - 1))
        out[f"p{q:g}"] = s[i] * 1e3
    return out


# --------------------------------------------------------------------------------------------------
# producers


def role_produce(a: dict[str, Any]) -> dict[str, Any]:
    """plain / idem / txn producer; txn commits every `txn_records` records or `txn_ms` ms."""
    mode = a["mode"]
    n, size = int(a["records"]), int(a.get("size", 1024))
    conf = {**PRODUCER_BASE, "bootstrap.servers": a["bootstrap"], **a.get("conf", {})}
    if mode == "idem":
        conf["enable.idempotence"] = True
    elif mode == "txn":
        conf.pop("enable.idempotence")
        conf["transactional.id"] = a["txn_id"]
    p = Producer(conf)
    topics = a.get("topics") or [a["topic"]]  # several: record i goes to topics[i % nt]
    topic, nt = topics[0], len(topics)
    deadline = time.monotonic() + float(a.get("timeout_s", 300))
    state = {"acked": 0, "errors": 0, "first_error": None}
    lat: list[float] = []
    acked_map = bytearray(n) if a.get("acked_file") else None

    def on_delivery(err, msg):  # noqa: ANN001
        if err is None:
            state["acked"] += 1
            if acked_map is not None:
                acked_map[U64.unpack_from(msg.value(), 0)[0]] = 1
        else:
            state["errors"] += 1
            if state["first_error"] is None:
                state["first_error"] = str(err)

    def sampled(t0: float):  # noqa: ANN202
        def cb(err, msg):  # noqa: ANN001
            on_delivery(err, msg)
            if err is None:
                lat.append(time.perf_counter() - t0)
        return cb

    pool = payload_pool(size - 8, int(a.get("seed", 42)))
    sample_every = int(a.get("lat_sample_every", 16))
    p.list_topics(topic if nt == 1 else None, timeout=30)
    if mode == "txn":
        p.init_transactions(60)
    elif a.get("warm_topic"):
        # one untimed record to another topic: connections up and, for idempotence, the producer id
        # acquired before the window (librdkafka otherwise may wait for its 500 ms PID timer when the
        # broker connection is not up yet: "No brokers available for Idempotent producer")
        p.produce(a["warm_topic"], b"warm")
        p.flush(30)
    txn_records, txn_ms = int(a.get("txn_records", 100)), float(a.get("txn_ms", 100)) / 1e3
    abort_every = int(a.get("abort_every", 0))
    commit_lat: list[float] = []
    commits = aborts = committed_records = 0
    fill_bytes = int(a.get("fill_bytes", 0))  # O3: print MARK filled once this many bytes are acked
    filled = False

    mark("start")
    c0, t0 = cpu_now(), time.perf_counter()
    i = 0
    in_txn = 0
    txn_start = 0.0
    while i < n and time.monotonic() < deadline:
        if mode == "txn" and in_txn == 0:
            p.begin_transaction()
            txn_start = time.perf_counter()
        value = U64.pack(i) + pool[i % POOL]
        if nt > 1:
            topic = topics[i % nt]
        while True:
            try:
                if i % sample_every == 0:
                    p.produce(topic, value, on_delivery=sampled(time.perf_counter()))
                else:
                    p.produce(topic, value, on_delivery=on_delivery)
                break
            except BufferError:
                p.poll(0.001)
                if time.monotonic() > deadline:
                    break
        i += 1
        if i % 1000 == 0:
            p.poll(0)
            if fill_bytes and not filled and state["acked"] * size >= fill_bytes:
                filled = True
                mark("filled")
        if mode == "txn":
            in_txn += 1
            if in_txn >= txn_records or time.perf_counter() - txn_start >= txn_ms or i >= n:
                tc = time.perf_counter()
                if abort_every and (commits + aborts + 1) % abort_every == 0:
                    p.abort_transaction(60)
                    aborts += 1
                else:
                    p.commit_transaction(60)
                    commits += 1
                    committed_records += in_txn
                    commit_lat.append(time.perf_counter() - tc)
                in_txn = 0
    left = p.flush(max(1.0, min(120.0, deadline - time.monotonic())))
    dt = time.perf_counter() - t0
    cpu = cpu_now() - c0
    mark("end")
    if acked_map is not None:
        with open(a["acked_file"], "wb") as f:
            f.write(acked_map)
    res = {
        "records": i, "acked": state["acked"], "errors": state["errors"], "first_error": state["first_error"],
        "undelivered": left, "seconds": dt, "records_per_s": state["acked"] / dt,
        "mb_per_s": state["acked"] * size / dt / 1e6, "bytes": state["acked"] * size,
        "client_cpu_s": cpu, "client_cpu_pct": 100.0 * cpu / dt,
        **{f"ack_{k}_ms": v for k, v in pct_ms(lat, (50, 99)).items()},
        "ack_hist_us": hist_us(lat),
    }
    if mode == "txn":
        res.update({"commits": commits, "aborts": aborts, "committed_records": committed_records,
                    "txn_per_s": commits / dt, "committed_records_per_s": committed_records / dt,
                    **{f"commit_{k}_ms": v for k, v in pct_ms(commit_lat, (50, 99)).items()}})
    return res


def role_fill(a: dict[str, Any]) -> dict[str, Any]:
    """O3: an idempotent producer with sequence numbers; the harness kills the broker once
    `fill_bytes` are acked and the producer keeps sending until it fails or finishes."""
    conf = {"message.timeout.ms": int(a.get("message_timeout_ms", 10000)), **a.get("conf", {})}
    return role_produce({**a, "mode": "idem", "conf": conf, "lat_sample_every": 1 << 30})


# --------------------------------------------------------------------------------------------------
# consumers


OFFSET_TAIL_BASE = -2000  # librdkafka's logical offset RD_KAFKA_OFFSET_TAIL(n) = -2000 - n


def _assign_all(c: Consumer, topics: list[str], tail: int = 0) -> list[TopicPartition]:
    """Every partition of the topics, from the beginning, or from `tail` records before its end."""
    md = c.list_topics(topics[0] if len(topics) == 1 else None, timeout=30)
    start = OFFSET_TAIL_BASE - tail if tail else OFFSET_BEGINNING
    tps = [TopicPartition(t, p, start) for t in topics for p in sorted(md.topics[t].partitions)]
    c.assign(tps)
    return tps


def role_consume(a: dict[str, Any]) -> dict[str, Any]:
    """Catch-up read of a whole topic (or of every one of `topics`) from the beginning (or, with
    `tail`, from that many records before each partition's end). `expected`: a record count, or
    "hwm" (non-transactional topics: read up to the high watermarks seen at the start)."""
    conf = {**CONSUMER_BASE, "bootstrap.servers": a["bootstrap"], "group.id": a.get("group", f"bench-{os.getpid()}"),
            "isolation.level": a.get("isolation", "read_uncommitted"), **a.get("conf", {})}
    c = Consumer(conf)
    tps = _assign_all(c, a.get("topics") or [a["topic"]], int(a.get("tail", 0)))
    expected = a["expected"]
    if expected == "hwm":
        expected = sum(c.get_watermark_offsets(TopicPartition(tp.topic, tp.partition), timeout=30)[1] for tp in tps)
    expected = int(expected)
    check_seq = bool(a.get("check_seq"))
    seen = bytearray(int(a.get("seq_space", expected)) + 1) if check_seq else None
    dups = out_of_range = 0
    count = nbytes = 0
    errors: list[str] = []
    deadline = time.monotonic() + float(a.get("timeout_s", 300))
    mark("start")
    c0, t0 = cpu_now(), time.perf_counter()
    t_last = t0
    t_first = None  # the steady window starts when the first batch arrived (after connect + ListOffsets)
    first_n = 0
    while count < expected and time.monotonic() < deadline:
        # consume() returns early only with num_messages in hand: never ask for more than is left
        msgs = c.consume(num_messages=max(1, min(10_000, expected - count)), timeout=0.5)
        if msgs and t_first is None:
            t_first = time.perf_counter()
            first_n = len(msgs)
        for m in msgs:
            if m.error() is not None:
                if len(errors) < 5:
                    errors.append(str(m.error()))
                continue
            count += 1
            nbytes += len(m)
            if seen is not None:
                s = U64.unpack_from(m.value(), 0)[0]
                if s >= len(seen):
                    out_of_range += 1
                elif seen[s]:
                    dups += 1
                else:
                    seen[s] = 1
        if msgs:
            t_last = time.perf_counter()
    dt = t_last - t0
    cpu = cpu_now() - c0
    mark("end")
    extra = 0  # records beyond `expected` (e.g. aborted records leaking into read_committed)
    linger_end = time.monotonic() + float(a.get("linger_s", 0))
    while count >= expected and time.monotonic() < linger_end:
        extra += sum(1 for m in c.consume(num_messages=10_000, timeout=0.1) if m.error() is None)
    steady = (t_last - t_first) if t_first is not None else 0.0
    steady_n = count - first_n
    rps = steady_n / steady if steady > 0 and steady_n > 0 else (count / dt if dt > 0 else 0.0)
    res: dict[str, Any] = {
        "extra": extra,
        "consumed": count, "expected": expected, "complete": count == expected, "bytes": nbytes,
        "seconds": dt, "records_per_s": rps, "mb_per_s": rps * (nbytes / count if count else 0) / 1e6,
        "records_per_s_incl_setup": count / dt if dt > 0 else 0.0,
        "first_batch_ms": (t_first - t0) * 1e3 if t_first is not None else None,
        "client_cpu_s": cpu, "client_cpu_pct": 100.0 * cpu / dt if dt > 0 else 0.0, "errors": errors,
    }
    if seen is not None:
        distinct = sum(seen)
        top = max((i for i in range(len(seen) - 1, -1, -1) if seen[i]), default=-1)
        gaps = (top + 1 - distinct) if top >= 0 else 0
        res.update({"duplicates": dups, "distinct": distinct, "gaps": gaps, "out_of_range": out_of_range})
        if a.get("acked_file"):
            with open(a["acked_file"], "rb") as f:
                acked = f.read()
            missing = sum(1 for i, x in enumerate(acked) if x and (i >= len(seen) or not seen[i]))
            res.update({"acked": sum(acked), "acked_missing": missing})
    c.close()
    return res


# --------------------------------------------------------------------------------------------------
# end-to-end latency (open loop)


def role_e2e_consume(a: dict[str, Any]) -> dict[str, Any]:
    conf = {**CONSUMER_BASE, "bootstrap.servers": a["bootstrap"], "group.id": f"e2e-{os.getpid()}",
            "isolation.level": a.get("isolation", "read_uncommitted")}
    c = Consumer(conf)
    _assign_all(c, [a["topic"]])
    c.consume(num_messages=1, timeout=0.5)  # fetch session up before the producer starts
    print("READY", flush=True)
    expected, drop = int(a["expected"]), int(a["drop"])
    deadline = time.monotonic() + float(a.get("timeout_s", 120))
    lat: list[float] = []
    count = 0
    seen = bytearray(expected)
    while count < expected and time.monotonic() < deadline:
        # poll(), not consume(n, timeout): consume() holds messages until n arrived or the timeout
        m = c.poll(0.1)
        if m is None or m.error() is not None:
            continue
        now = time.time_ns()
        sent, seq = TWO_U64.unpack_from(m.value(), 0)
        count += 1
        if seq < expected:
            seen[seq] = 1
        if seq >= drop:
            lat.append((now - sent) / 1e9)
    c.close()
    return {"received": count, "expected": expected, "lost": expected - sum(seen), "samples": len(lat),
            **{f"e2e_{k}_ms": v for k, v in pct_ms(lat, (50, 99, 99.9)).items()},
            "e2e_max_ms": max(lat) * 1e3 if lat else None, "e2e_hist_us": hist_us(lat)}


def role_e2e_produce(a: dict[str, Any]) -> dict[str, Any]:
    """Token bucket at `rate` msg/s for `seconds`; each payload carries its intended send time, so
    a stalled broker does not hide latency (no coordinated omission)."""
    conf = {**PRODUCER_BASE, "bootstrap.servers": a["bootstrap"]}
    p = Producer(conf)
    topic, rate, total = a["topic"], float(a["rate"]), int(a["records"])
    size = int(a.get("size", 1024))
    pool = payload_pool(size - 16, int(a.get("seed", 42)))
    errors = [0]

    def cb(err, _msg):  # noqa: ANN001
        if err is not None:
            errors[0] += 1

    p.list_topics(topic, timeout=30)
    start_ns = time.time_ns() + 20_000_000
    step = 1e9 / rate
    deadline = time.monotonic() + total / rate + 60
    late_max = 0.0
    c0 = cpu_now()
    i = 0
    while i < total and time.monotonic() < deadline:
        now = time.time_ns()
        due = min(total, int((now - start_ns) / step) + 1) if now >= start_ns else 0
        while i < due:
            intended = start_ns + int(i * step)
            late_max = max(late_max, (now - intended) / 1e9)
            try:
                p.produce(topic, TWO_U64.pack(intended, i) + pool[i % POOL], on_delivery=cb)
            except BufferError:
                p.poll(0.001)
                continue
            i += 1
        p.poll(0)
        nxt = start_ns + int(i * step)
        wait = (nxt - time.time_ns()) / 1e9
        if wait > 0:
            time.sleep(min(wait, 0.001))
    left = p.flush(30)
    dt = (time.time_ns() - start_ns) / 1e9
    cpu = cpu_now() - c0
    return {"sent": i, "errors": errors[0], "undelivered": left, "seconds": dt, "max_send_lag_ms": late_max * 1e3,
            "client_cpu_pct": 100.0 * cpu / dt if dt > 0 else 0.0}


# --------------------------------------------------------------------------------------------------
# warm-up: JVM/JIT and internal topics (__consumer_offsets, __transaction_state) before measuring


def role_warmup(a: dict[str, Any]) -> dict[str, Any]:
    t0 = time.perf_counter()
    b, topic = a["bootstrap"], a["topic"]
    steps: dict[str, float] = {}
    out = {"plain": role_produce({"bootstrap": b, "topic": topic, "records": a["records"], "mode": "plain"})}
    steps["plain_s"] = time.perf_counter() - t0
    out["idem"] = role_produce({"bootstrap": b, "topic": topic, "records": 2000, "mode": "idem"})
    steps["idem_s"] = time.perf_counter() - t0 - sum(steps.values())
    out["txn"] = role_produce({"bootstrap": b, "topic": topic, "records": 1000, "mode": "txn",
                               "txn_id": f"warm-{os.getpid()}"})
    steps["txn_s"] = time.perf_counter() - t0 - sum(steps.values())
    out["consume"] = role_consume({"bootstrap": b, "topic": topic, "expected": 1, "timeout_s": 60})
    steps["consume_s"] = time.perf_counter() - t0 - sum(steps.values())
    # a consumer group with an offset commit creates __consumer_offsets
    c = Consumer({**CONSUMER_BASE, "bootstrap.servers": b, "group.id": "warmup-group"})
    c.subscribe([topic])
    got = None
    end = time.monotonic() + 60
    while got is None and time.monotonic() < end:
        m = c.poll(0.5)
        if m is not None and m.error() is None:
            got = m
    committed = False
    if got is not None:
        for _ in range(20):
            try:
                c.commit(message=got, asynchronous=False)
                committed = True
                break
            except KafkaException as exc:
                if exc.args[0].code() not in (KafkaError.COORDINATOR_LOAD_IN_PROGRESS, KafkaError.NOT_COORDINATOR,
                                              KafkaError.COORDINATOR_NOT_AVAILABLE):
                    raise
                time.sleep(0.2)
    c.close()
    steps["group_s"] = time.perf_counter() - t0 - sum(steps.values())
    return {"seconds": time.perf_counter() - t0, "group_committed": committed, **steps,
            "ok": all(out[k]["errors"] == 0 and out[k]["undelivered"] == 0 for k in ("plain", "idem", "txn")),
            "plain_records_per_s": out["plain"]["records_per_s"]}


def role_rebalance(a: dict[str, Any]) -> dict[str, Any]:
    """G1: a consumer group of 3 members on a topic of `partitions`, under `protocol` (classic or
    KIP-848's consumer). One member is alone and has everything; at t0 two more subscribe; `join_s`
    is t0 until the three own all partitions between them, each some, none twice (as the clients
    see it). Then one member closes: `leave_s` until the other two own everything."""
    b, topic, n = a["bootstrap"], a["topic"], int(a["partitions"])
    conf = {**CONSUMER_BASE, "bootstrap.servers": b, "group.id": a["group"], "group.protocol": a["protocol"],
            "enable.auto.commit": False}
    if a.get("heartbeat_ms") and a["protocol"] == "classic":  # KIP-848's interval is the broker's
        conf["heartbeat.interval.ms"] = int(a["heartbeat_ms"])
    timeout = float(a.get("timeout_s", 120))

    def settle(members: list[Consumer], what: str) -> float:
        t0 = time.perf_counter()
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            for c in members:
                c.poll(0.02)
            owned = [{(tp.topic, tp.partition) for tp in c.assignment()} for c in members]
            if all(owned) and sum(map(len, owned)) == n and len(set().union(*owned)) == n:
                return time.perf_counter() - t0
        raise TimeoutError(f"{what}: not settled in {timeout}s")

    members = [Consumer(conf)]
    members[0].subscribe([topic])
    first_s = settle(members, "first member")
    for _ in range(2):
        c = Consumer(conf)
        c.subscribe([topic])
        members.append(c)
    join_s = settle(members, "three members")
    members.pop().close()
    leave_s = settle(members, "two members after a leave")
    for c in members:
        c.close()
    return {"protocol": a["protocol"], "first_s": first_s, "join_s": join_s, "leave_s": leave_s}


def role_keyed_produce(a: dict[str, Any]) -> dict[str, Any]:
    """L1: keyed records (`keys` distinct keys, round robin) to a compacted topic, as fast as the
    client goes, or at `rate` msg/s for `seconds` with every record's ack latency and send time
    (wall clock), so the runner can split them into a window with and without cleaning."""
    conf = {**PRODUCER_BASE, "bootstrap.servers": a["bootstrap"], **a.get("conf", {})}
    p = Producer(conf)
    topic, size, keys = a["topic"], int(a.get("size", 1024)), int(a["keys"])
    rate = float(a.get("rate", 0))
    n = int(a["records"]) if not rate else int(rate * float(a["seconds"]))
    pool = payload_pool(size, int(a.get("seed", 42)))
    state = {"acked": 0, "errors": 0}
    samples: list[tuple[float, float]] = []  # (send wall time, ack latency s)

    def timed(t_wall: float, t0: float):  # noqa: ANN202
        def cb(err, _msg):  # noqa: ANN001
            if err is None:
                state["acked"] += 1
                samples.append((t_wall, time.perf_counter() - t0))
            else:
                state["errors"] += 1
        return cb

    def cb(err, _msg):  # noqa: ANN001
        state["acked" if err is None else "errors"] += 1

    p.list_topics(topic, timeout=30)
    print("READY", flush=True)
    mark("start")
    c0, t0 = cpu_now(), time.perf_counter()
    step = 1.0 / rate if rate else 0.0
    for i in range(n):
        if rate:
            due = t0 + i * step
            while time.perf_counter() < due:
                p.poll(0)
                time.sleep(min(0.001, max(0.0, due - time.perf_counter())))
        key = b"key-%06d" % (i % keys)
        while True:
            try:
                if rate:
                    p.produce(topic, pool[i % POOL], key, on_delivery=timed(time.time(), time.perf_counter()))
                else:
                    p.produce(topic, pool[i % POOL], key, on_delivery=cb)
                break
            except BufferError:
                p.poll(0.001)
        if i % 1000 == 0:
            p.poll(0)
    left = p.flush(120)
    dt = time.perf_counter() - t0
    cpu = cpu_now() - c0
    mark("end")
    return {"records": n, "acked": state["acked"], "errors": state["errors"], "undelivered": left, "seconds": dt,
            "records_per_s": state["acked"] / dt, "bytes": state["acked"] * size,
            "mb_per_s": state["acked"] * size / dt / 1e6, "client_cpu_pct": 100.0 * cpu / dt,
            "samples": samples}


ROLES = {"keyed-produce": role_keyed_produce, "produce": role_produce, "rebalance": role_rebalance, "fill": role_fill, "consume": role_consume, "e2e-consume": role_e2e_consume,
         "e2e-produce": role_e2e_produce, "warmup": role_warmup}


def main() -> None:
    role, args = sys.argv[1], json.loads(sys.argv[2])
    res = ROLES[role](args)
    print(json.dumps(res), flush=True)


if __name__ == "__main__":
    main()
