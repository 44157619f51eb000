"""report.md and chart.png from results.json (can be rerun on stored raw samples)."""

from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Any

from . import workloads

BROKER_ORDER = ("minikafka", "minikafka-novalidate", "kafka", "tansu")
LABEL = {"minikafka": "minikafka", "minikafka-novalidate": "minikafka (no record walk)", "kafka": "Kafka",
         "tansu": "Tansu"}

# (section, scenario, point, key, label, unit, target) ; target = (op, value) on the ratio minikafka/Kafka
Row = tuple[str, str, str, str, str, str, "tuple[str, float] | None"]


def rows_for(meta: dict[str, Any]) -> list[Row]:
    p = meta["params"]
    rows: list[Row] = []
    for t in p["p2_topics"]:
        rows += [
            ("P2", "P2", t, "records_per_s", f"P2 produce 1 KiB acks=all, {t}: throughput", "msg/s", (">=", 1.0)),
            ("P2", "P2", t, "mb_per_s", f"P2 {t}: throughput", "MB/s", None),
            ("P2", "P2", t, "ack_p50_ms", f"P2 {t}: ack latency p50", "ms", None),
            ("P2", "P2", t, "ack_p99_ms", f"P2 {t}: ack latency p99", "ms", None),
        ]
    for t in p["p2_topics"]:
        rows += [
            ("P5", "P5", t, "records_per_s", f"P5 Java producer (ProducerPerformance), 1 KiB acks=all, {t}: throughput",
             "msg/s", (">=", 1.0)),
            ("P5", "P5", t, "p99_ms", f"P5 {t}: latency p99", "ms", None),
            ("P5", "P5", t, "broker_cpu_s_per_gb", f"P5 {t}: broker CPU-s per GB", "CPU-s/GB", None),
        ]
    rows += [
        ("P3", "P3", "p1", "records_per_s", "P3 idempotent, p1: throughput", "msg/s", (">=", 1.0)),
        ("P3", "P3", "p1", "ack_p99_ms", "P3 p1: ack latency p99", "ms", None),
        ("P3", "P3", "dupcheck", "duplicates", "P3 duplicates (must be 0)", "records", None),
        ("P4", "P4", "p1", "txn_per_s", "P4 transactional (commit every 100 rec / 100 ms): transactions", "txn/s",
         (">=", 1.0)),
        ("P4", "P4", "p1", "committed_records_per_s", "P4: committed records", "msg/s", None),
        ("P4", "P4", "p1", "commit_p50_ms", "P4: commit latency p50", "ms", None),
        ("P4", "P4", "p1", "commit_p99_ms", "P4: commit latency p99", "ms", None),
        ("C1", "C1", "read_uncommitted", "records_per_s", "C1 catch-up (P2 p1 data), read_uncommitted", "msg/s",
         (">=", 1.0)),
        ("C1", "C1", "read_uncommitted", "mb_per_s", "C1 read_uncommitted", "MB/s", None),
        ("C1", "C1", "read_committed", "records_per_s", "C1 catch-up, read_committed (LSO path)", "msg/s",
         (">=", 1.0)),
        ("C2", "C2", "aborted0", "records_per_s", "C2 read_committed over P4 data, 0 % aborted", "msg/s", None),
        ("C2", "C2", "aborted10", "records_per_s", "C2 read_committed, 10 % of transactions aborted", "msg/s", None),
        ("C2", "C2", "aborted10", "extra", "C2 10 %: records beyond the committed count (must be 0)", "records",
         None),
        ("C3", "C3", "java_read_committed", "records_per_s",
         "C3 Java consumer (Kafka's ConsumerPerformance) read_committed over P4 data, fetch-only", "msg/s",
         (">=", 1.0)),
        ("C4", "C4", "java_partitions", "records_per_s",
         f"C4 Java consumer (ConsumerPerformance) across {p.get('c4_partitions', 1000)} partitions, fetch-only",
         "msg/s", (">=", 1.0)),
    ]
    rows += [
        ("L1", "L1", "clean", "clean_mb_per_s", "L1 log cleaner: dirty log cleaned (compacted topic, 1 KiB keyed records)",
         "MB/s", (">=", 1.0)),
        ("L1", "L1", "clean", "broker_cpu_s", "L1: broker CPU-s of the cleaning pass", "s", None),
        ("L1", "L1", "clean", "segments_mb_after", "L1: segments after cleaning", "MB", None),
        ("L1", "L1", "clean", "ack_p99_before_ms", f"L1 produce ack p99 at {p.get('l1_rate', 0)} msg/s, no cleaning",
         "ms", None),
        ("L1", "L1", "clean", "ack_p99_during_ms", "L1 produce ack p99 while the cleaner runs", "ms", ("<=", 1.0)),
    ]
    rows += [
        ("S1", "S1", "produce_plaintext", "records_per_s", "S1 produce over PLAINTEXT (1 KiB, P2's producer)", "msg/s",
         None),
        ("S1", "S1", "produce_sasl_ssl", "records_per_s", "S1 produce over SASL_SSL (SCRAM-SHA-512, TLS)", "msg/s",
         (">=", 1.0)),
        ("S1", "S1", "produce_tls_cost", "ratio", "S1 produce: SASL_SSL / PLAINTEXT throughput (the TLS cost)", "x",
         None),
        ("S1", "S1", "consume_plaintext", "records_per_s", "S1 catch-up consume over PLAINTEXT", "msg/s", None),
        ("S1", "S1", "consume_sasl_ssl", "records_per_s", "S1 catch-up consume over SASL_SSL", "msg/s", (">=", 1.0)),
        ("S1", "S1", "consume_tls_cost", "ratio", "S1 consume: SASL_SSL / PLAINTEXT throughput", "x", None),
    ]
    # M1 compares minikafka with itself: its targets apply to the on/off ratio (SELF_TARGETS)
    rows += [
        ("M1", "M1", "produce_off", "records_per_s", "M1 produce (P2's producer, 1 partition), metrics + console OFF",
         "msg/s", None),
        ("M1", "M1", "produce_on", "records_per_s",
         "M1 produce, metrics + console ON, /metrics scraped every 1 s, console / every 2 s", "msg/s", None),
        ("M1", "M1", "produce_cost", "ratio", "M1 produce: ON / OFF throughput (the observability cost)", "x",
         (">=", 0.95)),
        ("M1", "M1", "produce_cost_quiet", "ratio",
         "M1 produce: ON / OFF, repetitions where other processes used < 25 % CPU in both windows", "x", None),
        ("M1", "M1", "produce_cost", "broker_cpu_per_gb_ratio", "M1 produce: ON / OFF broker CPU-s per GB", "x",
         None),
        ("M1", "M1", "produce_off", "ack_p99_ms", "M1 produce OFF: ack latency p99", "ms", None),
        ("M1", "M1", "produce_on", "ack_p99_ms", "M1 produce ON: ack latency p99", "ms", None),
        ("M1", "M1", "consume_off", "records_per_s", "M1 catch-up consume (C1, read_uncommitted), OFF", "msg/s",
         None),
        ("M1", "M1", "consume_on", "records_per_s", "M1 catch-up consume, ON and scraped", "msg/s", None),
        ("M1", "M1", "consume_cost", "ratio", "M1 consume: ON / OFF throughput", "x", (">=", 0.95)),
        ("M1", "M1", "consume_cost_quiet", "ratio",
         "M1 consume: ON / OFF, repetitions where other processes used < 25 % CPU in both windows", "x", None),
        ("M1", "M1", "consume_cost", "broker_cpu_per_gb_ratio", "M1 consume: ON / OFF broker CPU-s per GB", "x",
         None),
        ("M1", "M1", "scrapes", "metrics_ok", "M1 /metrics scrapes answered per ON start", "scrapes", None),
        ("M1", "M1", "scrapes", "metrics_p50_ms", "M1 /metrics answer time p50 (under load)", "ms", None),
        ("M1", "M1", "scrapes", "metrics_max_ms", "M1 /metrics answer time, slowest of an ON start", "ms", None),
        ("M1", "M1", "scrapes", "console_ok", "M1 console pages (/) answered per ON start", "pages", None),
        ("M1", "M1", "scrapes", "console_p50_ms", "M1 console / answer time p50 (under load)", "ms", None),
        ("M1", "M1", "scrapes", "failed", "M1 scrapes and pages failed (must be 0)", "requests", None),
        ("M1", "M1", "produce_off", "other_cpu_pct", "M1 produce OFF: CPU used by other processes (noise)", "%",
         None),
        ("M1", "M1", "produce_on", "other_cpu_pct", "M1 produce ON: CPU used by other processes (noise)", "%",
         None),
    ]
    for r in p["e1_rates"]:
        rows += [
            ("E1", "E1", str(r), "e2e_p50_ms", f"E1 e2e latency at {r} msg/s: p50", "ms", None),
            ("E1", "E1", str(r), "e2e_p99_ms", f"E1 {r} msg/s: p99", "ms", ("<=", 1.0)),
            ("E1", "E1", str(r), "e2e_p99.9_ms", f"E1 {r} msg/s: p99.9", "ms", None),
            ("E1", "E1", str(r), "lost", f"E1 {r} msg/s: records not received (must be 0)", "records", None),
        ]
    rows += [
        ("T2", "T2", "tv2", "txn_per_s", "T2 Java producer, transactions v2 (KIP-890): transactions", "txn/s",
         (">=", 1.0)),
        ("T2", "T2", "tv2", "commit_p99_ms", "T2 transactions v2: commit latency p99", "ms", None),
        ("T2", "T2", "tv1", "txn_per_s", "T2 Java producer, transactions v1: transactions", "txn/s", None),
        ("T2", "T2", "tv1", "commit_p99_ms", "T2 transactions v1: commit latency p99", "ms", None),
        ("G1", "G1", "classic", "join_s", "G1 classic group, 3 members: two joins settle", "s", None),
        ("G1", "G1", "classic", "leave_s", "G1 classic: a leave settles", "s", None),
        ("G1", "G1", "consumer", "join_s", "G1 KIP-848 group, 3 members: two joins settle", "s", None),
        ("G1", "G1", "consumer", "leave_s", "G1 KIP-848: a leave settles", "s", None),
        ("O1", "O1", "empty", "spawn_to_ready_s", "O1 start-up, empty data dir (spawn -> ApiVersions + CreateTopics OK)",
         "s", ("<=", 0.1)),
        ("O1", "O1", "empty", "spawn_to_api_s", "O1 spawn -> first ApiVersions answer", "s", None),
        ("O1", "O1", "empty", "format_s", "O1 Kafka storage format (done before the spawn)", "s", None),
        ("O2", "O2", "idle", "vmrss_mb", f"O2 idle RSS ({p['idle_s']} s after ready)", "MB", ("<=", 0.15)),
        ("O2", "O2", "idle", "pss_mb", "O2 idle PSS", "MB", None),
        ("O2", "O2", "loaded", "vmhwm_mb", "O2 peak RSS (VmHWM) over warm-up + P2..E1", "MB", None),
        ("O3", "O3", "kill9", "spawn_to_ready_s",
         f"O3 recovery after kill -9, {p['recovery_bytes'] / 1e9:g} GB in the active segment", "s", ("<=", 1.0)),
        ("O3", "O3", "kill9", "spawn_to_api_s", "O3 restart -> first ApiVersions answer", "s", None),
        ("O3", "O3", "kill9", "fill_mb_per_s", "O3 fill rate (idempotent, acks=all; context only)", "MB/s", None),
        ("O3", "O3", "kill9", "verified", "O3 acked ⊆ consumed, no duplicates, no gaps (runs passing)", "runs",
         None),
    ]
    return rows


CPU_POINTS = [("P2", "p1"), ("P2", "p6"), ("P3", "p1"), ("P4", "p1"), ("C1", "read_uncommitted"),
              ("C1", "read_committed"), ("C2", "aborted0"), ("C2", "aborted10"), ("M1", "produce_off"),
              ("M1", "produce_on"), ("M1", "consume_off"), ("M1", "consume_on")]

# scenarios that compare minikafka with itself: the target applies to minikafka's own value (a ratio
# of two of its points), not to the ratio minikafka/Kafka
SELF_TARGETS = {"M1"}


def values(samples: list[dict[str, Any]], broker: str, scenario: str, point: str, key: str) -> list[float]:
    out = []
    for s in samples:
        if s["broker"] == broker and s["scenario"] == scenario and s["point"] == point and "error" not in s:
            v = s.get(key)
            if isinstance(v, bool):
                v = 1.0 if v else 0.0
            if isinstance(v, (int, float)):
                out.append(float(v))
    return out


def errors(samples: list[dict[str, Any]], broker: str, scenario: str, point: str) -> int:
    return sum(1 for s in samples if s["broker"] == broker and s["scenario"] == scenario and s["point"] == point
               and "error" in s)


def fmt(v: float | None) -> str:
    if v is None:
        return "–"
    a = abs(v)
    if a >= 1000:
        return f"{v:,.0f}"
    if a >= 100:
        return f"{v:.0f}"
    if a >= 10:
        return f"{v:.1f}"
    if a >= 1:
        return f"{v:.2f}"
    if a == 0:
        return "0"
    return f"{v:.3g}"


def cell(vals: list[float], n_err: int = 0, summed: bool = False) -> str:
    if not vals:
        return "error" if n_err else "n/a"
    if summed:
        return f"{sum(vals):.0f}/{len(vals)}"
    med = statistics.median(vals)
    s = fmt(med)
    if len(vals) > 1:
        s += f" ({fmt(min(vals))}–{fmt(max(vals))})"
    if n_err:
        s += f" [{n_err} failed]"
    return s


def median(vals: list[float]) -> float | None:
    return statistics.median(vals) if vals else None


def build_table(doc: dict[str, Any]) -> tuple[list[str], list[dict[str, Any]]]:
    meta, samples = doc["meta"], doc["samples"]
    brokers = [b for b in BROKER_ORDER if b in meta["brokers"] or b in meta.get("skipped", {})]
    scen = set(meta["scenarios"])
    lines = ["| scenario | metric | unit | " + " | ".join(f"{LABEL[b]} median (min–max)" for b in brokers)
             + " | ratio minikafka/Kafka | target | met? |",
             "|---|---|---|" + "---|" * len(brokers) + "---|---|---|"]
    table: list[dict[str, Any]] = []
    for section, sc, pt, key, label, unit, target in rows_for(meta):
        if sc not in scen:
            continue
        summed = key == "verified"
        cells, meds = [], {}
        for b in brokers:
            if b in meta.get("skipped", {}):
                cells.append("n/a")
                continue
            vals = values(samples, b, sc, pt, key)
            nerr = errors(samples, b, sc, pt)
            if b == "tansu" and sc == "O3":
                cells.append("n/a (memory-only)")
                continue
            if b != "kafka" and key == "format_s":
                cells.append("–")
                continue
            cells.append(cell(vals, nerr, summed))
            meds[b] = median(vals)
        ratio = None
        if not summed and meds.get("minikafka") is not None and meds.get("kafka"):
            ratio = meds["minikafka"] / meds["kafka"]
        met = ""
        checked = meds.get("minikafka") if sc in SELF_TARGETS else ratio
        if target and checked is not None:
            op, tv = target
            met = "yes" if (checked >= tv if op == ">=" else checked <= tv) else "**no**"
        elif target:
            met = "n/a"
        goal = (target[0] + " " + fmt(target[1]) + (" (this value)" if sc in SELF_TARGETS else "")) if target else ""
        lines.append(f"| {section} | {label} | {unit} | " + " | ".join(cells)
                     + f" | {fmt(ratio) if ratio is not None else '–'} | {goal}"
                     + f" | {met} |")
        table.append({"section": section, "scenario": sc, "point": pt, "key": key, "label": label, "unit": unit,
                      "medians": meds, "ratio": ratio, "target": target, "met": met})
    return lines, table


def cpu_table(doc: dict[str, Any]) -> list[str]:
    meta, samples = doc["meta"], doc["samples"]
    brokers = [b for b in BROKER_ORDER if b in meta["brokers"]]
    head = ("| point | " + " | ".join(f"broker CPU-s/GB {LABEL[b]}" for b in brokers) + " | "
            + " | ".join(f"broker CPU % {LABEL[b]}" for b in brokers) + " | "
            + " | ".join(f"client CPU % {LABEL[b]}" for b in brokers) + " |")
    lines = [head, "|---|" + "---|" * (3 * len(brokers))]
    for sc, pt in CPU_POINTS:
        if not any(values(samples, b, sc, pt, "broker_cpu_s") for b in brokers):
            continue
        row = [cell(values(samples, b, sc, pt, "broker_cpu_s_per_gb")) for b in brokers]
        row += [cell(values(samples, b, sc, pt, "broker_cpu_pct")) for b in brokers]
        row += [cell(values(samples, b, sc, pt, "client_cpu_pct")) for b in brokers]
        lines.append(f"| {sc} {pt} | " + " | ".join(row) + " |")
    return lines


def render(doc: dict[str, Any], out_dir: Path) -> str:
    meta, samples = doc["meta"], doc["samples"]
    m = meta.get("machine", {})
    p = meta["params"]
    lines, table = build_table(doc)
    md = [f"# minikafka vs Apache Kafka{' vs Tansu' if 'tansu' in meta['brokers'] else ''} — benchmark report",
          "",
          f"Profile **{meta['profile']}**, {p['reps']} repetition(s) per point, median (min–max); ratio = ratio of "
          f"medians minikafka/Kafka. Pinned pass: **{'yes (broker taskset -c 1, clients -c 0)' if meta['pinned'] else 'no'}**. "
          f"Run took {meta.get('elapsed_s', 0) / 60:.1f} min. Raw samples: `results.json`; chart: `chart.png`.",
          ""]
    if "M1" in meta["scenarios"]:
        m1 = p.get("m1_reps", p["reps"])
        md += [f"M1 compares minikafka with itself ({m1} repetition(s) of the pair endpoints OFF, then ON, "
               f"{p.get('m1_records', 0):,} records per workload): its ON / OFF rows are the median (min–max) of "
               "each repetition's own ratio, and their target applies to that value.", ""]
    if meta.get("skipped"):
        for b, why in meta["skipped"].items():
            md.append(f"- **{LABEL.get(b, b)} not run**: {why}")
        md.append("")
    md += ["## Results", ""] + lines + [""]
    failed = [s for s in samples if "error" in s]
    if failed:
        md += ["### Failed points", ""]
        for s in failed:
            md.append(f"- {s['broker']} {s['scenario']}/{s['point']} rep {s['rep']}: `{s['error'][:300]}`")
        md.append("")
    md += ["## Broker and client CPU", "",
           "Broker CPU = utime+stime of the broker process (all threads) between the client's start and end "
           "marks; CPU-s/GB per GB of payload moved; CPU % of one core over the window. Client CPU % near 100 "
           "means the point is client-bound, not broker-bound.", ""] + cpu_table(doc) + [""]
    md += ["## Machine", "",
           "| item | value |", "|---|---|"]
    for k in ("host", "cpu_model", "cpus", "mem_gb", "kernel", "os", "filesystem", "python", "uvloop",
              "confluent_kafka", "librdkafka", "java", "kafka", "tansu", "git", "loadavg_at_start"):
        md.append(f"| {k} | {m.get(k)} |")
    md += ["", "## Sizes (profile parameters)", "", "```json", json.dumps(p, indent=1), "```", ""]
    d = m.get("minikafka_defaults", {})
    md += ["## minikafka design choices (benchmark-plan.md rule 6)", "",
           f"- fsync policy: Kafka's default — no fsync per append (`log.flush.interval.messages` = "
           f"{d.get('log.flush.interval.messages')}, `log.flush.interval.ms` = {d.get('log.flush.interval.ms')}); "
           "a segment is fsynced when it rolls. Both brokers therefore run with page-cache durability.",
           "- validation on produce: pass-through — batch header and CRC-32C checked once per batch, offsets "
           "patched in place, no per-record decoding (Kafka's LogValidator iterates every record of an "
           "uncompressed batch).",
           f"- index interval: `log.index.interval.bytes` = {d.get('log.index.interval.bytes')}; "
           f"segment size: `log.segment.bytes` = {d.get('log.segment.bytes')}.",
           "- Tansu runs with its `memory://` storage engine (nothing on disk), so it has no recovery figure and "
           "its produce path does no file I/O at all.",
           ""]
    md += ["## Broker configurations", ""]
    for b, info in meta.get("broker_config", {}).items():
        md += [f"### {LABEL.get(b, b)}", "", "```", json.dumps({k: v for k, v in info.items()
                                                                  if k != "server.properties"}, indent=1)]
        if info.get("server.properties"):
            md += ["--- server.properties (verbatim) ---", info["server.properties"].rstrip()]
        md += ["```", ""]
    md += ["## Client configuration (identical for every broker)", "", "```",
           f"producer: {json.dumps(workloads.PRODUCER_BASE)}",
           "  idempotent: enable.idempotence=true; transactional: transactional.id set, commit every 100 records "
           "or 100 ms, whichever first",
           f"consumer: {json.dumps(workloads.CONSUMER_BASE)} + isolation.level explicit per point",
           "```", "",
           "Each client role runs in its own process (`bench/harness/workloads.py`); payloads are random bytes "
           f"from a fixed seed ({meta.get('seed')}) with a sequence number (or, for E1, the intended send time) "
           "in the first bytes.", ""]
    text = "\n".join(md)
    (out_dir / "report.md").write_text(text)
    (out_dir / "table.json").write_text(json.dumps(table, indent=1))
    try:
        chart(doc, table, out_dir / "chart.png")
    except ImportError as exc:
        (out_dir / "chart.txt").write_text(f"no chart: {exc}\n")
    return text


def chart(doc: dict[str, Any], table: list[dict[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    meta, samples = doc["meta"], doc["samples"]
    brokers = [b for b in BROKER_ORDER if b in meta["brokers"]]
    targeted = [r for r in table if r["target"] and r["ratio"] is not None]
    fig, axes = plt.subplots(1, 2, figsize=(15, max(4.5, 0.45 * len(targeted) + 1.5)))
    ax = axes[0]
    if targeted:
        ys = list(range(len(targeted)))
        ratios = [r["ratio"] for r in targeted]
        ok = [r["met"] == "yes" for r in targeted]
        ax.barh(ys, ratios, color=["tab:green" if o else "tab:red" for o in ok])
        for y, r in zip(ys, targeted):
            ax.plot([r["target"][1]] * 2, [y - 0.4, y + 0.4], color="black", lw=2)
        ax.set_yticks(ys, [f"{r['section']} {r['point']} {r['key']}" for r in targeted], fontsize=8)
        ax.set_xscale("log")
        ax.axvline(1.0, color="gray", ls=":")
        ax.invert_yaxis()
    ax.set_title("ratio minikafka / Kafka (black tick = target)")
    ax = axes[1]
    points = [(r["section"], r["point"]) for r in table if r["unit"] == "msg/s"]
    if points:
        width = 0.8 / max(1, len(brokers))
        for i, b in enumerate(brokers):
            meds = []
            for sc, pt in points:
                key = next(r["key"] for r in table if (r["section"], r["point"]) == (sc, pt) and r["unit"] == "msg/s")
                v = values(samples, b, sc, pt, key)
                meds.append(statistics.median(v) if v else 0)
            ax.bar([j + i * width for j in range(len(points))], meds, width, label=LABEL[b])
        ax.set_xticks([j + width * (len(brokers) - 1) / 2 for j in range(len(points))],
                      [f"{sc} {pt.replace('read_', 'r_')}" for sc, pt in points], fontsize=7, rotation=30,
                      ha="right")
        ax.set_ylabel("msg/s (P4: committed records)")
        ax.legend()
    ax.set_title(f"throughput, median of {meta['params']['reps']} (profile {meta['profile']})")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
