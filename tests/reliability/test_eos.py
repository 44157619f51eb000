"""T-EOS-1 and T-EOS-2 (test-plan.md): transactional copies under broker and client bounces.

Copiers are separate processes (copier.py) so they can be killed like Kafka's system tests do.
Pass criteria: no duplicates in `output`, output == input as sets (and in order with
check_order), the concurrent read_committed consumer saw exactly the output, LSO == HWM on every
output partition once the copiers are done, and the group's committed offsets equal the end of
`input`.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from clients import consumer, create_topic, produce_all, producer
from confluent_kafka import Consumer, TopicPartition

pytestmark = [pytest.mark.reliability, pytest.mark.integration]

COPIER = Path(__file__).with_name("copier.py")
COPIER_DEADLINE_S = 120  # test-plan.md: copiers finish within 120 s (CI) / 240 s (soak)


@dataclass
class CopierProc:
    args: list[str]
    stderr_base: str
    proc: subprocess.Popen[str] | None = None
    consumed: int = 0
    lines: list[dict] = field(default_factory=list)
    reader: threading.Thread | None = None

    def start(self) -> None:
        # Each copier's stderr (librdkafka's log; its transaction states, COPIER_DEBUG=eos unless
        # the environment says otherwise) goes to <stderr_base>.<transactional id>, appended
        # across its restarts: a failed run prints the ends of these files (_show_logs).
        stderr = open(f"{self.stderr_base}.{self.args[1]}", "a")  # noqa: SIM115 - the child's
        env = {**os.environ, "COPIER_DEBUG": os.environ.get("COPIER_DEBUG", "eos")}
        self.proc = subprocess.Popen([sys.executable, str(COPIER), *self.args], stdout=subprocess.PIPE,
                                     stderr=stderr, text=True, env=env)
        stderr.close()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        assert self.proc is not None and self.proc.stdout is not None
        for line in self.proc.stdout:
            try:
                status = json.loads(line)
            except ValueError:
                continue
            self.lines.append(status)
            self.consumed = max(self.consumed, int(status.get("consumed", 0)))

    def bounce(self, hard: bool) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL if hard else signal.SIGTERM)
        self.proc.wait(30)
        self.start()

    def wait(self, timeout: float) -> int:
        assert self.proc is not None
        return self.proc.wait(timeout)


class ConcurrentReader(threading.Thread):
    """A read_committed consumer reading `output` for the whole run."""

    def __init__(self, bootstrap: str, topic: str, partitions: int) -> None:
        super().__init__(daemon=True)
        self.bootstrap, self.topic, self.partitions = bootstrap, topic, partitions
        self.values: dict[int, list[int]] = {p: [] for p in range(partitions)}
        self.stop = threading.Event()

    def run(self) -> None:
        c: Consumer = consumer(self.bootstrap, **{"isolation.level": "read_committed", "group.id": "concurrent"})
        c.assign([TopicPartition(self.topic, p, 0) for p in range(self.partitions)])
        while not self.stop.is_set():
            for m in c.consume(500, timeout=0.2):
                if not m.error():
                    self.values[m.partition()].append(int(m.value()))
        c.close()


def _read_partitioned(bootstrap: str, topic: str, partitions: int, total: int, timeout: float = 60) -> dict[int, list[int]]:
    c = consumer(bootstrap, **{"isolation.level": "read_committed", "group.id": "verifier"})
    c.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    out: dict[int, list[int]] = {p: [] for p in range(partitions)}
    n = 0
    deadline = time.monotonic() + timeout
    quiet_since = time.monotonic()
    while time.monotonic() < deadline:
        msgs = [m for m in c.consume(1000, timeout=0.3) if not m.error()]
        for m in msgs:
            out[m.partition()].append(int(m.value()))
        n += len(msgs)
        if msgs:
            quiet_since = time.monotonic()
        elif n >= total and time.monotonic() - quiet_since > 1.0:
            break
    c.close()
    return out


def _wait_lso_eq_hwm(bootstrap: str, topic: str, partitions: int, timeout: float) -> None:
    rc = consumer(bootstrap, **{"isolation.level": "read_committed"})
    ru = consumer(bootstrap, **{"isolation.level": "read_uncommitted"})
    try:
        deadline = time.monotonic() + timeout
        while True:
            lagging = []
            for p in range(partitions):
                tp = TopicPartition(topic, p)
                lso = rc.get_watermark_offsets(tp, timeout=10, cached=False)[1]
                hwm = ru.get_watermark_offsets(tp, timeout=10, cached=False)[1]
                if lso != hwm:
                    lagging.append((p, lso, hwm))
            if not lagging:
                return
            assert time.monotonic() < deadline, f"LSO behind HWM: {lagging}"
            time.sleep(0.2)
    finally:
        rc.close()
        ru.close()


def _run_eos(broker, *, n: int, partitions: int, target: str, hard: bool, group_mode: bool, seed: int,
             max_per_txn: int = 200, txn_timeout_ms: int = 10000, deadline_s: int = COPIER_DEADLINE_S) -> None:
    print(f"seed={seed} n={n} partitions={partitions} target={target} hard={hard} group_mode={group_mode}")
    rng = random.Random(seed)
    bootstrap = broker.bootstrap
    create_topic(bootstrap, "input", partitions)
    create_topic(bootstrap, "output", partitions)
    seed_producer = producer(bootstrap, **{"enable.idempotence": True, "acks": "all"})
    try:
        delivered = produce_all(seed_producer, "input", [{"value": str(i).encode(), "partition": i % partitions}
                                                          for i in range(n)], timeout=120)
    finally:
        seed_producer.close()  # seeded; a failure later must not leave it open beside a dead broker
    seeded: dict[int, list[int]] = {p: [] for p in range(partitions)}
    for m in sorted(delivered, key=lambda m: (m.partition(), m.offset())):
        seeded[m.partition()].append(int(m.value()))

    reader = ConcurrentReader(bootstrap, "output", partitions)
    reader.start()
    # COPIER_STDERR=path keeps the copiers' logs in path.<transactional id> (with COPIER_DEBUG set:
    # librdkafka's debug contexts); by default beside the broker's data directory.
    stderr_base = os.environ.get("COPIER_STDERR") or str(broker.data_dir.parent / "copier")
    try:
        _copy_and_check(broker, reader, n=n, partitions=partitions, target=target, hard=hard,
                        group_mode=group_mode, seed=seed, rng=rng, seeded=seeded, max_per_txn=max_per_txn,
                        txn_timeout_ms=txn_timeout_ms, deadline_s=deadline_s, stderr_base=stderr_base)
    except AssertionError:
        _show_logs(broker, stderr_base)
        raise
    finally:
        reader.stop.set()  # also when the copy failed: the reader's client must not outlive the broker
        reader.join(30)


def _show_logs(broker, stderr_base: str, lines: int = 80) -> None:
    """The ends of the copiers' logs (librdkafka's warnings and transaction state changes) and of
    the broker's, into the failed test's captured output: a failure seen once under load (a
    transaction held open past its timeout after two broker restarts, 2026-11-30) left nothing to
    read."""
    base = Path(stderr_base)
    for path in [*sorted(base.parent.glob(base.name + ".*")), broker.log_path]:
        if path.exists():
            kept = [line for line in path.read_text(errors="replace").splitlines()
                    if not line.startswith("%7|") or "state change" in line]
            print(f"----- last {min(lines, len(kept))} lines of {path}", *kept[-lines:], sep="\n")


def _copy_and_check(broker, reader: ConcurrentReader, *, n: int, partitions: int, target: str, hard: bool,
                    group_mode: bool, seed: int, rng: random.Random, seeded: dict[int, list[int]],
                    max_per_txn: int, txn_timeout_ms: int, deadline_s: int, stderr_base: str) -> None:
    bootstrap = broker.bootstrap
    common = ["--seed", str(seed), "--txn-timeout-ms", str(txn_timeout_ms), "--deadline-s", str(deadline_s),
              "--max-per-txn", str(max_per_txn)]
    if group_mode:
        copiers = [CopierProc([bootstrap, f"copier-{i}", "input", "output", "eos-group", "--subscribe",
                               *common[:1], str(seed + i), *common[2:]], stderr_base) for i in range(3)]
    else:
        copiers = [CopierProc([bootstrap, f"copier-{p}", "input", "output", "eos-group", "--partition", str(p),
                               *common[:1], str(seed + p), *common[2:]], stderr_base) for p in range(partitions)]
    for c in copiers:
        c.start()

    def progress() -> float:
        return sum(c.consumed for c in copiers) / n

    try:
        for milestone in (0.2, 0.4, 0.6):
            deadline = time.monotonic() + 60
            while progress() < milestone and time.monotonic() < deadline:
                if all(c.proc is not None and c.proc.poll() is not None for c in copiers):
                    break
                time.sleep(0.05)
            if target == "broker":
                broker.restart(hard=hard)
            else:
                victim = copiers[rng.randrange(len(copiers))]
                victim.bounce(hard)
        codes = []
        for c in copiers:
            try:
                codes.append(c.wait(deadline_s))
            except subprocess.TimeoutExpired:
                raise AssertionError(f"copier did not finish in {deadline_s}s: {c.lines[-5:]}") from None
        assert codes == [0] * len(copiers), f"copier exit codes {codes}: {[c.lines[-3:] for c in copiers]}"
    finally:
        for c in copiers:
            if c.proc is not None and c.proc.poll() is None:
                c.proc.kill()

    _wait_lso_eq_hwm(bootstrap, "output", partitions, timeout=txn_timeout_ms / 1000 + 5)
    output = _read_partitioned(bootstrap, "output", partitions, n)
    reader.stop.set()
    reader.join(30)
    assert not reader.is_alive(), "the concurrent read_committed consumer did not stop"
    for p in range(partitions):
        assert len(output[p]) == len(set(output[p])), f"duplicates in output partition {p}"
        assert len(reader.values[p]) == len(set(reader.values[p])), f"concurrent consumer saw duplicates in {p}"
        assert sorted(output[p]) == sorted(seeded[p]), f"output partition {p} differs from input"
        assert output[p] == seeded[p], f"order differs in partition {p}"
        assert reader.values[p] == output[p], f"concurrent consumer differs in partition {p}"
    c = consumer(bootstrap, **{"group.id": "eos-group"})
    try:
        committed = c.committed([TopicPartition("input", p) for p in range(partitions)], timeout=30)
        assert {tp.partition: tp.offset for tp in committed} == {p: len(seeded[p]) for p in range(partitions)}
    finally:
        c.close()


def _seed() -> int:
    return int(os.environ.get("MINIKAFKA_TEST_SEED", random.randrange(1 << 30)))


@pytest.mark.parametrize("target", ["broker", "clients"])
@pytest.mark.parametrize("check_order", [True, False], ids=["ordered", "unordered"])
def test_eos_copy_with_hard_bounces(broker_factory, target, check_order):
    """T-EOS-1, CI tier: hard bounces of the broker or of the copiers, 20k records (1/3 with order check)."""
    broker = broker_factory()
    partitions = 1 if check_order else 2
    n = 20000 // 3 if check_order else 20000
    _run_eos(broker, n=n, partitions=partitions, target=target, hard=True, group_mode=False, seed=_seed())


def test_eos_group_mode_client_bounces(broker_factory):
    """T-EOS-2, CI tier: three copiers in one group over 6 partitions, copiers hard-bounced."""
    broker = broker_factory()
    _run_eos(broker, n=20000, partitions=6, target="clients", hard=True, group_mode=True, seed=_seed())


# ---------------------------------------------------------------------------------------------
# Soak tier (`make soak`): the full fault matrices with N = 100,000, 750 records per transaction and
# a 40 s transaction timeout (test-plan.md sections 1-2). group_metadata=False is not expressible with
# confluent-kafka (no group-id-only ConsumerGroupMetadata), so only the consumer's metadata is used.


@pytest.mark.soak
@pytest.mark.timeout(1200)
@pytest.mark.parametrize("failure", ["clean", "hard"])
@pytest.mark.parametrize("target", ["broker", "clients"])
@pytest.mark.parametrize("check_order", [True, False], ids=["ordered", "unordered"])
def test_soak_eos_copy(broker_factory, failure, target, check_order):
    broker = broker_factory()
    partitions = 1 if check_order else 2
    n = 100_000 // 3 if check_order else 100_000
    _run_eos(broker, n=n, partitions=partitions, target=target, hard=failure == "hard", group_mode=False,
             seed=_seed(), max_per_txn=750, txn_timeout_ms=40000, deadline_s=240)


@pytest.mark.soak
@pytest.mark.timeout(1200)
@pytest.mark.parametrize("failure", ["clean", "hard"])
@pytest.mark.parametrize("target", ["broker", "clients"])
def test_soak_eos_group_mode(broker_factory, failure, target):
    broker = broker_factory()
    _run_eos(broker, n=100_000, partitions=9, target=target, hard=failure == "hard", group_mode=True,
             seed=_seed(), max_per_txn=750, txn_timeout_ms=40000, deadline_s=240)
