"""L1: the log cleaner, minikafka vs Kafka (issue 19, "Benchmark").

Per broker: a compacted topic (1 MiB segments) is filled with `l1_records` keyed 1 KiB records over
`l1_keys` keys while its min.cleanable.dirty.ratio is 1.0 (no pass can start), a record stamped a
minute ahead rolls the active segment, and a producer starts writing 1 KiB records to another
topic at `l1_rate` msg/s (acks=all, every ack timed). After `l1_baseline_s` the ratio is lowered to
0.01 (IncrementalAlterConfigs, as an operator would) and the time until the broker's
`cleaner-offset-checkpoint` names the topic is the cleaning time (one pass: the offset map holds
every key). Reported: MB/s of dirty log cleaned, broker CPU-s of the pass, the segments' size
before and after, and the producer's ack latency p50/p99 before and while cleaning. Both brokers
run with log.cleaner.backoff.ms=100 (ApacheKafka.EXTRA_PROPS, MiniKafka.OVERRIDES).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any


def _pct(values: list[float], q: float) -> float | None:
    if not values:
        return None
    v = sorted(values)
    return v[min(len(v) - 1, int(q / 100 * len(v)))] * 1e3


def _partition_dir(b: Any, topic: str) -> Path:
    base = b.data_dir / "kafka-logs" if (b.data_dir / "kafka-logs").is_dir() else b.data_dir
    return base / f"{topic}-0"


def _checkpoint(b: Any, topic: str) -> int | None:
    base = _partition_dir(b, topic).parent
    try:
        lines = (base / "cleaner-offset-checkpoint").read_text().splitlines()
    except OSError:
        return None
    for line in lines[2:]:
        parts = line.split()
        if len(parts) == 3 and parts[0] == topic and parts[1] == "0":
            return int(parts[2])
    return None


def _segments(d: Path) -> list[Path]:
    return sorted(d.glob("*.log"))


def measure(runner: Any, b: Any, rep: int) -> dict[str, Any]:
    from confluent_kafka import Producer

    from .runner import BackgroundClient, ClientError, create_topics, log, set_topic_config

    p = runner.p
    topic, load_topic = "l1", "l1-load"
    create_topics(b.bootstrap, {topic: 1}, config={"cleanup.policy": "compact", "segment.bytes": "1048576",
                                                    "segment.ms": "30000", "min.cleanable.dirty.ratio": "1.0"})
    create_topics(b.bootstrap, {load_topic: 1})
    fill = runner.client("keyed-produce", {"bootstrap": b.bootstrap, "topic": topic, "records": p["l1_records"],
                                           "keys": p["l1_keys"], "size": p["record_size"], "seed": runner.seed}, b)
    if fill["errors"] or fill["undelivered"]:
        raise ClientError(f"fill: {fill['errors']} errors, {fill['undelivered']} undelivered")
    roll = Producer({"bootstrap.servers": b.bootstrap, "log_level": 3})
    roll.produce(topic, b"roll", b"roll", timestamp=int(time.time() * 1000) + 60_000)
    roll.flush(30)
    d = _partition_dir(b, topic)
    segs = _segments(d)
    dirty = sum(f.stat().st_size for f in segs[:-1])
    before_total = sum(f.stat().st_size for f in segs)

    load = BackgroundClient(runner, "keyed-produce", {
        "bootstrap": b.bootstrap, "topic": load_topic, "keys": 1000, "size": p["record_size"], "rate": p["l1_rate"],
        "seconds": p["l1_load_s"], "seed": runner.seed, "conf": {"linger.ms": 0}}, timeout=p["l1_load_s"] + 180)
    load.started("the load producer")
    time.sleep(p["l1_baseline_s"])  # the ack latency without cleaning, for comparison
    cpu0 = b.cpu_seconds()
    t_alter = time.time()
    set_topic_config(b.bootstrap, topic, "min.cleanable.dirty.ratio", "0.01")
    deadline = time.monotonic() + 600
    while _checkpoint(b, topic) is None:
        if time.monotonic() > deadline:
            raise ClientError("the cleaner did not finish within 600 s")
        time.sleep(0.02)
    t_done = time.time()
    cpu1 = b.cpu_seconds()
    loaded = load.result("the load producer")
    samples = loaded["samples"]
    before = [lat for ts, lat in samples if ts < t_alter]
    during = [lat for ts, lat in samples if t_alter <= ts <= t_done]
    after_total = sum(f.stat().st_size for f in _segments(d))
    clean_s = t_done - t_alter
    r = {"clean_s": clean_s, "dirty_mb": dirty / 1e6, "clean_mb_per_s": dirty / 1e6 / clean_s,
         "segments_mb_before": before_total / 1e6, "segments_mb_after": after_total / 1e6,
         "broker_cpu_s": cpu1 - cpu0, "fill_records_per_s": fill["records_per_s"],
         "ack_p50_before_ms": _pct(before, 50), "ack_p99_before_ms": _pct(before, 99),
         "ack_p50_during_ms": _pct(during, 50), "ack_p99_during_ms": _pct(during, 99),
         "acks_during": len(during), "load_errors": loaded["errors"]}
    log(f"  {b.name} L1: {dirty / 1e6:.0f} MB cleaned in {clean_s:.2f} s ({r['clean_mb_per_s']:.0f} MB/s), "
        f"{before_total / 1e6:.0f} -> {after_total / 1e6:.1f} MB; ack p99 {r['ack_p99_before_ms']} ms before, "
        f"{r['ack_p99_during_ms']} ms during ({len(during)} acks)")
    return r
