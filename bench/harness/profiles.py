"""Sizes of a benchmark run. `full` is what `make bench` runs (about 20-30 min on 2 cores)."""

from __future__ import annotations

from typing import Any

PROFILES: dict[str, dict[str, Any]] = {
    # what `make bench` runs
    "full": {
        "reps": 3,
        "record_size": 1024,
        "warmup_records": 1_000_000,    # JVM JIT (~1 M records, plan rule 3) + internal topics
        "p2_records": 500_000,          # P2 per topic (p1, p6)
        "p2_topics": ["p1", "p6"],
        "p3_records": 500_000,
        "p4_records": 200_000,          # commit every 100 records or 100 ms
        "c2_records": 200_000,          # C2 prefill, 10 % of transactions aborted
        "c4_partitions": 1000,          # C4: the Java consumer across this many partitions
        "c4_records": 200_000,
        "e1_rates": [1000, 5000],       # msg/s, open loop
        "e1_seconds": 20,
        "e1_warmup_s": 5,
        "startup_reps": 5,              # O1 (all brokers), then O2 idle RSS on the last start
        "idle_s": 60,                   # O2: RSS this long after ready
        "recovery_bytes": 1_000_000_000,  # O3: ~1 GB in the active segment
        "recovery_reps": 3,
        "p5_warmup": 200_000,           # P5: Kafka's Java producer, not timed (JIT, connections)
        "p5_records": 1_000_000,
        "t2_warmup": 200,               # T2: Java transactions, not timed (JIT, connections)
        "t2_transactions": 3000,
        "t2_records": 10,
        "l1_records": 200_000,          # L1: keyed 1 KiB records to clean (~200 MB)
        "l1_keys": 10_000,
        "l1_rate": 1000,                # L1: msg/s of the producer timed while cleaning
        "l1_load_s": 30,
        "l1_baseline_s": 5,
        "s1_records": 500_000,          # S1: per listener (PLAINTEXT, SASL_SSL): warm-up, produce, consume
        "m1_records": 1_500_000,        # M1: per start (endpoints off / on): P2 produce, then C1 reads them
        "m1_reps": 7,                   # M1: repetitions of the pair off, on (~3 min in all on 2 cores)
    },
    # harness validation on a busy machine: minutes, not numbers to quote
    "quick": {
        "reps": 1,
        "record_size": 1024,
        "warmup_records": 20_000,
        "p2_records": 20_000,
        "p2_topics": ["p1", "p6"],
        "p3_records": 20_000,
        "p4_records": 20_000,
        "c2_records": 20_000,
        "c4_partitions": 100,
        "c4_records": 20_000,
        "e1_rates": [1000],
        "e1_seconds": 5,
        "e1_warmup_s": 1,
        "startup_reps": 2,
        "idle_s": 5,
        "recovery_bytes": 50_000_000,
        "recovery_reps": 1,
        "p5_warmup": 50_000,
        "p5_records": 300_000,
        "t2_warmup": 50,
        "t2_transactions": 500,
        "t2_records": 10,
        "l1_records": 50_000,
        "l1_keys": 5_000,
        "l1_rate": 1000,
        "l1_load_s": 15,
        "l1_baseline_s": 3,
        "s1_records": 20_000,
        "m1_records": 500_000,
        "m1_reps": 2,
    },
    # the pytest smoke test: seconds
    "smoke": {
        "reps": 1,
        "record_size": 1024,
        "warmup_records": 500,
        "p2_records": 2000,
        "p2_topics": ["p1"],
        "p3_records": 2000,
        "p4_records": 1000,
        "c2_records": 1000,
        "c4_partitions": 10,
        "c4_records": 1000,
        "e1_rates": [500],
        "e1_seconds": 1,
        "e1_warmup_s": 0.2,
        "startup_reps": 1,
        "idle_s": 0.5,
        "recovery_bytes": 2_000_000,
        "recovery_reps": 1,
        "p5_warmup": 500,
        "p5_records": 2000,
        "t2_warmup": 5,
        "t2_transactions": 20,
        "t2_records": 2,
        "l1_records": 3000,
        "l1_keys": 100,
        "l1_rate": 200,
        "l1_load_s": 3,
        "l1_baseline_s": 0.5,
        "s1_records": 1000,
        "m1_records": 2000,
        "m1_reps": 1,
        # G1 with 500 ms heartbeats (the members' for classic, the brokers' for KIP-848) instead of
        # the defaults (3 s, 5 s): the smoke checks that G1 runs, and saves ~10 s of waiting.
        "g1_heartbeat_ms": 500,
    },
}

SCENARIOS = ("P2", "P3", "P4", "P5", "C1", "C2", "C3", "C4", "E1", "G1", "T2", "L1", "S1", "M1", "O1", "O2", "O3")
