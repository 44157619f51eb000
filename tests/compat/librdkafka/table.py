"""Markdown table of two runs of librdkafka's test suite by run.sh: minikafka and Apache Kafka.

Usage: python tests/compat/librdkafka/table.py /tmp/rdk-minikafka/reports /tmp/rdk-kafka/reports
Prints the counts per broker and one row per test that failed on either broker or whose outcome differs.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from collections import Counter


def outcomes(reports: str) -> dict[str, str]:
    """Each test's state in its own runner's report; a runner killed by a timeout wrote none: FAILED."""
    out = {}
    for path in sorted(Path(reports).glob("*.json")):
        out[path.stem] = json.loads(path.read_text())["tests"].get(path.stem, {}).get("state", "FAILED")
    return out


def main() -> None:
    mk, ak = outcomes(sys.argv[1]), outcomes(sys.argv[2])
    names = sorted(set(mk) | set(ak))
    ran = [n for n in names if mk.get(n) != "SKIPPED" or ak.get(n) != "SKIPPED"]
    print(f"{len(ran)} test ids ran on at least one broker ({len(names) - len(ran)} skipped on both: "
          "local-only, multi-broker, sockem or filtered by the suite itself).\n")
    print("| broker | passed | failed | skipped |")
    print("|---|---|---|---|")
    for label, o in (("minikafka", mk), ("Apache Kafka 4.3.1", ak)):
        c = Counter(o.get(n, "SKIPPED") for n in ran)
        print(f"| {label} | {c['PASSED']} | {c['FAILED']} | {c['SKIPPED']} |")
    odd = [n for n in ran if "FAILED" in (mk.get(n), ak.get(n)) or mk.get(n) != ak.get(n)]
    if odd:
        print("\n| test | minikafka | Apache Kafka 4.3.1 |")
        print("|---|---|---|")
        for n in odd:
            print(f"| {n} | {mk.get(n, '-')} | {ak.get(n, '-')} |")


if __name__ == "__main__":
    main()
