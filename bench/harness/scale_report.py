"""scale.md and one chart per curve from scale.json (bench/harness/scale.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .scale import CURVES


def _points(doc: dict[str, Any], curve: str, broker: str) -> dict[int, dict[str, Any]]:
    return {s["point"]: s for s in doc["samples"] if s["curve"] == curve and s["broker"] == broker}


def _fmt(v: Any) -> str:
    if v is None:
        return "–"
    if isinstance(v, float):
        return f"{v:,.3g}" if abs(v) < 100 else f"{v:,.0f}"
    return f"{v:,}" if isinstance(v, int) else str(v)


def _cost(value: float | None, higher_better: bool) -> float | None:
    """Cost per unit of work: the inverse of a throughput, a latency or size as it is."""
    if value is None or value <= 0:
        return None
    return 1.0 / value if higher_better else value


# Curves whose work grows with the point itself (creating or recovering N things, answering for N
# partitions, assigning N members): their cost is compared per item.
PER_ITEM = {"partitions_create", "partitions_restart", "partitions_metadata", "topics_create", "topics_restart",
            "topics_metadata", "txn_recovery", "group_members"}


def verdicts(doc: dict[str, Any], curve: str) -> tuple[str, str, str]:
    """(cost growth goal, ratio-to-Kafka goal) for minikafka on this curve, as 'met' / 'not met (...)',
    and the points where minikafka is behind Kafka (ratio below 1), with their ratios: the second
    goal compares each point with the first, so a curve 14x ahead at its first point and 10x
    ahead later misses it while one behind everywhere by the same margin meets it."""
    _, _, higher = CURVES[curve]
    mk, kf = _points(doc, curve, "minikafka"), _points(doc, curve, "kafka")
    pts = sorted(p for p in mk if "value" in mk[p])
    if not pts:
        return "no data", "no data", "no data"
    ratios = {}
    for p in pts:
        if p in kf and "value" in kf[p] and kf[p]["value"] and mk[p]["value"]:
            r = mk[p]["value"] / kf[p]["value"]
            ratios[p] = r if higher else 1.0 / r  # > 1: minikafka better
    behind = ", ".join(f"{p:,} ({_fmt(r)}x)" for p, r in sorted(ratios.items()) if r < 1.0) or "none"
    if len(pts) < 2:  # retention is measured at the largest size only: nothing to compare along it
        return "one point: no growth to judge", "one point: no growth to judge", behind if ratios else "no Kafka data"
    c0, c1 = _cost(mk[pts[0]]["value"], higher), _cost(mk[pts[-1]]["value"], higher)
    if curve in PER_ITEM:
        # these grow with the work itself: per partition (id, member) is the cost to compare
        c0 = c0 / pts[0] if c0 else None
        c1 = c1 / pts[-1] if c1 else None
    growth = (c1 / c0) if c0 and c1 else None
    g = "met" if growth is not None and growth <= 2.0 else f"not met ({_fmt(growth)}x)"
    if len(ratios) < 2:
        return g, "no Kafka data", "no Kafka data"
    first = ratios[min(ratios)]
    worse = [p for p, r in ratios.items() if r < first * 0.9]  # 10 % noise allowance
    return g, "met" if not worse else f"not met at {', '.join(map(str, worse))}", behind


def merge(docs: list[dict[str, Any]]) -> dict[str, Any]:
    """One document from runs of different curves: samples keyed by (curve, broker, point), a
    later run's replacing an earlier one's; the meta of the first run, with every run's points
    (the settings merged, a later run's winning) and its elapsed time summed."""
    samples: dict[tuple[str, str, int], dict[str, Any]] = {}
    for d in docs:
        for s in d["samples"]:
            samples[(s["curve"], s["broker"], s["point"])] = s
    meta = dict(docs[0]["meta"])
    # The settings in force: a later run's (a curve run again with new point sizes) override the
    # first's, so the report's Points line says how the merged samples were made.
    meta["points"] = {k: v for d in docs for k, v in (d["meta"].get("points") or {}).items()}
    meta["elapsed_s"] = sum(d["meta"].get("elapsed_s", 0) for d in docs)
    meta["brokers"] = list(dict.fromkeys(b for d in docs for b in d["meta"].get("brokers", [])))
    meta["runs"] = [{"points": d["meta"].get("points"), "elapsed_s": d["meta"].get("elapsed_s")} for d in docs]
    return {"meta": meta, "samples": list(samples.values())}


def render(doc: dict[str, Any], out: Path) -> str:
    brokers = doc["meta"]["brokers"]
    cpus = doc["meta"].get("machine", {}).get("cpus")
    lines = [f"# Scale curves ({doc['meta'].get('elapsed_s', 0) / 60:.0f} min run)", "",
             f"Machine: {doc['meta'].get('machine', {}).get('cpu_model', '?')}, "
             f"{doc['meta'].get('machine', {}).get('cpus', '?')} CPUs. Points: `{doc['meta'].get('points')}`.", "",
             "Ratio to Kafka: > 1 means minikafka is better (faster, or lower latency / memory). "
             "Goals: the cost per unit of work at the largest point within 2x of the smallest point "
             "(per item where the work grows with the point: " + ", ".join(sorted(PER_ITEM)) + "), and the ratio to Kafka at every point "
             "at least as good as at the smallest (10 % noise allowed).", ""]
    for curve, (what, unit, higher) in CURVES.items():
        if not any(s["curve"] == curve for s in doc["samples"]):
            continue
        growth, vs, behind = verdicts(doc, curve)
        lines += [f"## {curve}: {what} ({unit})", "",
                  f"Cost growth goal: **{growth}**. Ratio-to-Kafka goal: **{vs}**. Behind Kafka at: {behind}.", "",
                  "| point | " + " | ".join(f"{b} {unit}" for b in brokers)
                  + " | " + " | ".join(f"{b} vs first" for b in brokers)
                  + " | ratio to Kafka | " + " | ".join(f"{b} p99 ms | {b} RSS MB | {b} CPU-s/GB" for b in brokers)
                  + " |",
                  "|---" * (2 + 5 * len(brokers)) + "|"]
        per = {b: _points(doc, curve, b) for b in brokers}
        pts = sorted(set().union(*(set(p) for p in per.values())))
        for p in pts:
            row = [f"{p:,}"]
            row += [_fmt(per[b].get(p, {}).get("value")) if "error" not in per[b].get(p, {})
                    else "FAILED" for b in brokers]
            for b in brokers:
                first = per[b].get(min(per[b]) if per[b] else p, {}).get("value")
                v = per[b].get(p, {}).get("value")
                row.append(_fmt(v / first) if v and first else "–")
            mk, kf = per.get("minikafka", {}).get(p, {}).get("value"), per.get("kafka", {}).get(p, {}).get("value")
            row.append(_fmt((mk / kf if higher else kf / mk)) if mk and kf else "–")
            for b in brokers:
                s = per[b].get(p, {})
                row += [_fmt(s.get("p99_ms")), _fmt(s.get("rss_mb")), _fmt(s.get("cpu_s_per_gb"))]
            bound = [b for b in brokers if (per[b].get(p, {}).get("client_cpu_pct") or 0) >= 90]
            if bound:  # the client process used a whole core: the point measures the client too
                row[0] += " (client-bound: " + ", ".join(bound) + ")"
            full = [b for b in brokers if b not in bound and _saturated(per[b].get(p, {}), cpus)]
            if full:  # broker and client together used the machine: more cores were not to be had
                row[0] += " (machine saturated: " + ", ".join(full) + ")"
            lines.append("| " + " | ".join(row) + " |")
        errors = [f"- {b} @{p}: {per[b][p]['error']}" for b in brokers for p in sorted(per[b]) if "error" in per[b][p]]
        lines += [""] + errors + ([""] if errors else []) + [f"![{curve}]({curve}.png)", ""]
        _chart(curve, what, unit, per, out)
    text = "\n".join(lines)
    (out / "scale.md").write_text(text)
    return text


def _saturated(sample: dict[str, Any], cpus: int | None) -> bool:
    """Broker and client together at 90 % or more of every core the machine has."""
    broker, client = sample.get("broker_cpu_pct"), sample.get("client_cpu_pct")
    return bool(cpus) and broker is not None and client is not None and broker + client >= 90 * cpus


def _chart(curve: str, what: str, unit: str, per: dict[str, dict[int, dict[str, Any]]], out: Path) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return
    fig, ax = plt.subplots(figsize=(6, 3.6))
    for b, pts in per.items():
        xs = [p for p in sorted(pts) if pts[p].get("value")]
        if xs:
            ax.plot(xs, [pts[p]["value"] for p in xs], marker="o", label=b)
    ax.set_xscale("log")
    ax.set_xlabel(curve.split("_")[0])
    ax.set_ylabel(unit)
    ax.set_title(what, fontsize=9)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(out / f"{curve}.png", dpi=100)
    plt.close(fig)
