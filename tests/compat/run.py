"""`make compat`: every client program of clients/ runs every scenario of scenario.py against a
minikafka broker and against Apache Kafka 4.3.1 from the bench/kafka recipe (--no-kafka: not), and
the results are written as a Markdown table (tests/compat/RESULTS.md, linked from the README).

    .venv/bin/python tests/compat/run.py [--no-kafka] [--clients confluent-kafka,franz-go] [--out FILE]

A cell is `ok`, `FAILED` (with the program's one line in the notes), or `n/a` where the client has
no API for the scenario (the program says so and exits 3). Each program gets 180 s per scenario.
Programs whose toolchain is missing are reported as skipped with the reason, never silently left out.
"""

from __future__ import annotations

import argparse
import datetime
import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path[:0] = [str(REPO), str(REPO / "tests"), str(HERE)]

from scenario import SCENARIOS  # noqa: E402

PYTHON = sys.executable
TIMEOUT_S = 180
# Cells known to fail on minikafka until a later issue lands: (client, scenario) -> why. They show
# as "FAILED (issue N)" with the reason in the notes, and do not fail `make compat`; any other
# failure does, and so does a known one that starts to pass (the entry is then stale).
KNOWN_ON_MINIKAFKA: dict[tuple[str, str], str] = {}  # none since Fetch v13+ (issue 18): @platformatic/kafka consumes


@dataclass(frozen=True)
class Client:
    name: str          # the column of the table
    library: str       # what it is and where it comes from
    command: list[str]  # argv before <scenario> <bootstrap> <prefix>
    needs: str | None = None  # a file that must exist (a built binary), else the reason to skip


KAFKA_LIBS = Path(os.environ.get("KAFKA_CACHE", REPO / ".cache" / "kafka")) / "4.3.1"


def clients() -> list[Client]:
    py = HERE / "clients"
    go_bin = HERE / "go" / "bin"
    node = HERE / "node"
    java = ["java", "-Xmx256M", f"-Dlog4j2.configurationFile={REPO / 'bench' / 'kafka' / 'tools-log4j2.properties'}",
            "-cp", str(KAFKA_LIBS / "tools" / "*"), str(HERE / "java" / "JavaClients.java")]
    return [
        Client("confluent-kafka", "confluent-kafka (librdkafka), PyPI", [PYTHON, str(py / "py_confluent.py")]),
        Client("aiokafka", "aiokafka, PyPI", [PYTHON, str(py / "py_aiokafka.py")]),
        Client("kafka-python", "kafka-python, PyPI", [PYTHON, str(py / "py_kafka_python.py")]),
        Client("franz-go", "franz-go kgo + kadm, Go module proxy", [str(go_bin / "franz")], str(go_bin / "franz")),
        Client("sarama", "IBM/sarama, Go module proxy", [str(go_bin / "sarama")], str(go_bin / "sarama")),
        Client("kafkajs", "KafkaJS, npm", ["node", str(node / "kafkajs.js")], str(node / "node_modules" / "kafkajs")),
        Client("platformatic", "@platformatic/kafka, npm", ["node", str(node / "platformatic.js")],
               str(node / "node_modules" / "@platformatic" / "kafka")),
        Client("java", "Apache Kafka kafka-clients 4.3.1, Maven Central", java,
               str(KAFKA_LIBS / "tools" / "kafka-clients-4.3.1.jar")),
        Client("kafka-cli", "Apache Kafka 4.3.1 command-line tools, Maven Central", [PYTHON, str(py / "kafka_cli.py")],
               str(KAFKA_LIBS / "broker" / "kafka_2.13-4.3.1.jar")),
        Client("kcat", "kcat, Debian", [PYTHON, str(py / "kcat.py")], shutil.which("kcat") or "/nonexistent/kcat"),
    ]


def run_cell(client: Client, scenario: str, bootstrap: str) -> tuple[str, str, float]:
    prefix = f"c{uuid.uuid4().hex[:8]}"
    start = time.monotonic()
    env = {**os.environ, "PYTHONPATH": str(HERE / "clients")}
    try:
        proc = subprocess.run([*client.command, scenario, bootstrap, prefix], capture_output=True, text=True,
                              timeout=TIMEOUT_S, env=env, cwd=HERE / "clients")
    except subprocess.TimeoutExpired:
        return "FAILED", f"no answer in {TIMEOUT_S} s", time.monotonic() - start
    elapsed = time.monotonic() - start
    lines = [ln for ln in proc.stdout.splitlines() if ln.strip()]
    last = lines[-1] if lines else (proc.stderr.strip().splitlines() or ["(no output)"])[-1]
    if proc.returncode == 0:
        return "ok", "", elapsed
    if proc.returncode == 3:
        return "n/a", last.removeprefix("n/a: "), elapsed
    return "FAILED", last[:300], elapsed


def run_matrix(bootstrap: str, chosen: list[Client]) -> dict[tuple[str, str], tuple[str, str, float]]:
    results = {}
    for client in chosen:
        for scenario in SCENARIOS:
            cell = run_cell(client, scenario, bootstrap)
            results[(client.name, scenario)] = cell
            print(f"{client.name:16} {scenario:16} {cell[0]:6} {cell[2]:6.1f}s {cell[1]}", flush=True)
    return results


def table(broker: str, results: dict[tuple[str, str], tuple[str, str, float]], chosen: list[Client],
          known: dict[tuple[str, str], str], problems: list[str]) -> list[str]:
    """The broker's matrix; every cell that should fail `make compat` is added to `problems`."""
    out = [f"### {broker}", "", "| client | " + " | ".join(SCENARIOS) + " |",
           "|---|" + "---|" * len(SCENARIOS)]
    notes = []
    for client in chosen:
        cells = []
        for scenario in SCENARIOS:
            status, note, elapsed = results[(client.name, scenario)]
            why = known.get((client.name, scenario))
            issue = why.split(":")[0] if why else ""
            if why and status == "FAILED":
                cells.append(f"FAILED ({issue})")
                notes.append(f"- {client.name} / {scenario}: known, {why}. {note}")
                continue
            stale = bool(why) and status == "ok"
            if stale:
                note = f"STALE: listed as known to fail ({issue}) but passes; drop the entry"
            if status == "FAILED" or stale:
                problems.append(f"{broker}: {client.name} / {scenario}")
            cells.append(f"{status} ({elapsed:.1f} s)" if status == "ok" else status)
            if note:
                notes.append(f"- {client.name} / {scenario}: {note}")
        out.append(f"| {client.name} | " + " | ".join(cells) + " |")
    return out + [""] + notes + [""]


APPS = HERE / "apps"
APP_TIMEOUT_S = 420
# Applications, each run once per broker: (row, program, its extra arguments). MirrorMaker 2 needs
# both brokers at once.
SINGLE_BROKER_APPS = (
    ("Kafka Streams exactly_once_v2 word count, kill -9 and restart", "streams_eos.py", ()),
    ("Kafka Streams exactly_once_v2 word count, streams protocol (KIP-1071), kill -9 and restart",
     "streams_eos.py", ("streams",)),
    ("Kafka Connect distributed worker, exactly-once file source, kill -9 and restart", "connect_eos.py", ()),
)


def run_app(argv: list[str]) -> tuple[str, str, float]:
    start = time.monotonic()
    try:
        proc = subprocess.run([PYTHON, *argv], capture_output=True, text=True, timeout=APP_TIMEOUT_S, cwd=APPS)
    except subprocess.TimeoutExpired:
        return "FAILED", f"no answer in {APP_TIMEOUT_S} s", time.monotonic() - start
    lines = [ln for ln in proc.stdout.splitlines() if ln.strip()]
    last = lines[-1] if lines else (proc.stderr.strip().splitlines() or ["(no output)"])[-1]
    return ("ok", "", time.monotonic() - start) if proc.returncode == 0 else \
        ("FAILED", last[:300], time.monotonic() - start)


def run_apps(bootstrap: str) -> dict[str, tuple[str, str, float]]:
    out = {}
    for row, program, extra in SINGLE_BROKER_APPS:
        out[row] = cell = run_app([str(APPS / program), bootstrap, f"a{uuid.uuid4().hex[:8]}", *extra])
        print(f"{row[:40]:40} {cell[0]:6} {cell[2]:6.1f}s {cell[1]}", flush=True)
    return out


def run_mirrors(minikafka: str, kafka: str) -> dict[str, tuple[str, str, float]]:
    out = {}
    for row, src, dst in (("MirrorMaker 2, minikafka to Apache Kafka", minikafka, kafka),
                          ("MirrorMaker 2, Apache Kafka to minikafka", kafka, minikafka)):
        out[row] = cell = run_app([str(APPS / "mm2.py"), src, dst, f"m{uuid.uuid4().hex[:8]}"])
        print(f"{row[:40]:40} {cell[0]:6} {cell[2]:6.1f}s {cell[1]}", flush=True)
    return out


def apps_table(on_minikafka: dict, on_kafka: dict, mirrors: dict, problems: list[str]) -> list[str]:
    def show(cell: tuple[str, str, float] | None) -> str:
        if cell is None:
            return "not run"
        return f"{cell[0]} ({cell[2]:.0f} s)" if cell[0] == "ok" else cell[0]

    out = ["### Applications", "", "| application | minikafka | Apache Kafka 4.3.1 |", "|---|---|---|"]
    notes = []
    for row, _program, _extra in SINGLE_BROKER_APPS:
        out.append(f"| {row} | {show(on_minikafka.get(row))} | {show(on_kafka.get(row))} |")
    for row, cell in mirrors.items():
        out.append(f"| {row} | {show(cell)} (both brokers) | |")
    for where, cells in (("minikafka", on_minikafka), ("Apache Kafka", on_kafka), ("both", mirrors)):
        notes += [f"- {row} ({where}): {cell[1]}" for row, cell in cells.items() if cell[1]]
        problems += [f"{where}: {row}" for row, cell in cells.items() if cell[0] != "ok"]
    return out + [""] + notes + [""]


def run_kgo(bootstrap: str, problems: list[str]) -> list[str]:
    """franz-go's own kgo test suite (its module from the Go proxy ships the tests) against the broker:
    the counts, and every test that did not pass by name (a failed one is a problem)."""
    if shutil.which("go") is None:
        return ["### franz-go's kgo tests", "", "Not run: no Go toolchain.", ""]
    env = {**os.environ, "KGO_SEEDS": bootstrap, "KGO_TEST_RF": "1"}
    proc = subprocess.run(["go", "test", "-count=1", "-timeout", "20m", "-v", "github.com/twmb/franz-go/pkg/kgo"],
                          cwd=HERE / "go", env=env, capture_output=True, text=True, timeout=1500)
    lines = proc.stdout.splitlines()
    passed = [ln.split()[2] for ln in lines if ln.startswith("--- PASS")]
    failed = [ln.split()[2] for ln in lines if ln.startswith("--- FAIL")]
    skipped = [ln.split()[2] for ln in lines if ln.startswith("--- SKIP")]
    version = next((ln.split()[1] for ln in (HERE / "go" / "go.mod").read_text().splitlines()
                    if "twmb/franz-go " in ln), "?")
    print(f"kgo tests: {len(passed)} passed, {len(failed)} failed, {len(skipped)} skipped", flush=True)
    problems += [f"kgo: {t}" for t in failed] or ([f"kgo: go test exited {proc.returncode}"] if proc.returncode else [])
    return ["### franz-go's kgo tests against minikafka", "",
            f"`go test github.com/twmb/franz-go/pkg/kgo` ({version}, KGO_SEEDS at the broker): "
            f"{len(passed)} top-level tests passed, {len(failed)} failed, {len(skipped)} skipped"
            + (f" (exit {proc.returncode})" if proc.returncode else "") + ".", "",
            *(f"- failed: {t}" for t in failed), *(f"- skipped: {t}" for t in skipped), ""]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--no-kafka", dest="kafka", action="store_false",
                    help="run against minikafka only (default: also Apache Kafka 4.3.1)")
    ap.add_argument("--clients", default="", help="comma-separated client names (default: all)")
    ap.add_argument("--no-kgo", dest="kgo", action="store_false", help="skip franz-go's own kgo test suite")
    ap.add_argument("--no-apps", dest="apps", action="store_false",
                    help="skip the applications (Kafka Streams, Kafka Connect, MirrorMaker 2)")
    ap.add_argument("--out", default=str(HERE / "RESULTS.md"))
    args = ap.parse_args()
    wanted = set(filter(None, args.clients.split(",")))
    chosen, skipped = [], []
    for c in clients():
        if wanted and c.name not in wanted:
            continue
        if c.needs and not Path(c.needs).exists():
            skipped.append(f"- {c.name}: not installed ({c.needs} missing; `make compat` installs it)")
        else:
            chosen.append(c)
    sections = []
    problems: list[str] = []  # what makes `make compat` fail
    apps: dict = {"minikafka": {}, "kafka": {}, "mirrors": {}}
    from minikafka.testing import BrokerProcess
    broker = BrokerProcess(Path(tempfile.mkdtemp(prefix="compat-"))).start()  # the suite's settings
    try:
        sections += table("minikafka", run_matrix(broker.bootstrap, chosen), chosen, KNOWN_ON_MINIKAFKA, problems)
        if args.apps:
            apps["minikafka"] = run_apps(broker.bootstrap)
        if args.kgo:
            sections += run_kgo(broker.bootstrap, problems)
    finally:
        broker.term()
        shutil.rmtree(broker.data_dir, ignore_errors=True)
    if args.kafka:
        from kafka_ref import ApacheKafka, ensure_kafka_jars
        ensure_kafka_jars()
        data = Path(tempfile.mkdtemp(prefix="compat-kafka-"))
        kafka = ApacheKafka().start(data)
        try:
            sections += table("Apache Kafka 4.3.1", run_matrix(kafka.bootstrap, chosen), chosen, {}, problems)
            if args.apps:
                apps["kafka"] = run_apps(kafka.bootstrap)
                mk = BrokerProcess(Path(tempfile.mkdtemp(prefix="compat-mm2-"))).start()
                try:
                    apps["mirrors"] = run_mirrors(mk.bootstrap, kafka.bootstrap)
                finally:
                    mk.term()
                    shutil.rmtree(mk.data_dir, ignore_errors=True)
        finally:
            kafka.stop()
            shutil.rmtree(data, ignore_errors=True)
    if args.apps:
        sections += apps_table(apps["minikafka"], apps["kafka"], apps["mirrors"], problems)
    head = ["# Compatibility matrix", "",
            f"Written by `make compat` (tests/compat/run.py) on {datetime.date.today()}; the scenarios are "
            "described in tests/compat/scenario.py. Each cell: ok with its wall time, FAILED (note below), "
            "or n/a where the client has no API for it.", "",
            "| client | library and source |", "|---|---|"]
    head += [f"| {c.name} | {c.library} |" for c in chosen] + [""]
    if skipped:
        head += ["Not run:", *skipped, ""]
    Path(args.out).write_text("\n".join(head + sections))
    print(f"written {args.out}")
    for problem in problems:
        print(f"problem: {problem}")
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
