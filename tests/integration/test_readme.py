"""Every code block in README.md that claims to run does, as-is (issue 15, item 4).

Python blocks run in README order as separate programs against one broker started here, with only
the address 127.0.0.1:9092 replaced by that broker's; a block that defines `test_` functions runs
under pytest (the installed `kafka_broker` plugin). A bash block must be preceded by a
`<!-- not run here: reason -->` comment naming where it is exercised, and `make run`'s own command
(from `make -n run`) is started here on a free port. Unlabelled blocks (usage synopses) are text.
"""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from minikafka.healthcheck import check
from minikafka.testing import free_port

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"
DEFAULT = "127.0.0.1:9092"


@dataclass(frozen=True)
class Block:
    lang: str
    code: str
    line: int
    not_run: str | None  # the reason given in a preceding <!-- not run here: ... --> comment


def readme_blocks(text: str) -> list[Block]:
    blocks: list[Block] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        m = re.match(r"^```(\w*)\s*$", lines[i])
        if not m:
            i += 1
            continue
        start = i
        j = i + 1
        while j < len(lines) and lines[j].rstrip() != "```":
            j += 1
        before = lines[start - 1] if start else ""
        note = re.match(r"^<!--\s*not run here:\s*(.+?)\s*-->$", before)
        blocks.append(Block(m.group(1), "\n".join(lines[start + 1:j]) + "\n", start + 1,
                            note.group(1) if note else None))
        i = j + 1
    return blocks


BLOCKS = readme_blocks(README.read_text())


@pytest.mark.unit
def test_the_parser_sees_the_readme_blocks():
    assert [b.lang for b in BLOCKS if b.lang == "python"], "README has Python examples"
    assert all(b.lang in ("python", "bash", "") for b in BLOCKS), [b.lang for b in BLOCKS]


@pytest.mark.unit
def test_every_block_that_is_not_run_says_why():
    for b in BLOCKS:
        if b.lang == "bash":
            assert b.not_run, f"README line {b.line}: a bash block needs <!-- not run here: where it is tested -->"
        if b.lang == "python":
            assert b.not_run is None, f"README line {b.line}: Python examples are run, not excused"


def test_python_blocks_run_as_is_in_order(broker_factory, tmp_path):
    broker = broker_factory()
    ran = 0
    for b in BLOCKS:
        if b.lang != "python":
            continue
        code = b.code.replace(DEFAULT, broker.bootstrap)
        script = tmp_path / f"readme_line_{b.line}.py"
        script.write_text(code)
        if re.search(r"^def test_", code, re.MULTILINE):
            cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--rootdir", str(tmp_path),
                   "-o", "asyncio_default_fixture_loop_scope=function", str(script)]
        else:
            cmd = [sys.executable, str(script)]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=120, cwd=tmp_path)
        assert r.returncode == 0, f"README line {b.line} failed:\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}"
        ran += 1
    assert ran >= 3


def test_make_run_starts_the_broker(tmp_path):
    """`make run`'s command (as make would run it), on a free port and a temporary data dir."""
    if shutil.which("make") is None or not (REPO / "Makefile").exists():
        pytest.skip("needs make and the repository's Makefile (not in the tests image)")
    dry = subprocess.run(["make", "-s", "-n", "run"], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert dry.returncode == 0, dry.stderr
    serve = [line for line in dry.stdout.splitlines() if " -m minikafka serve " in line]
    assert len(serve) == 1, dry.stdout
    argv = shlex.split(serve[0])
    assert argv[argv.index("--port") + 1] == "9092" and argv[argv.index("--data-dir") + 1] == "./data"
    port = free_port()
    argv[0] = sys.executable  # .venv/bin/python in the Makefile: the interpreter running this suite
    argv[argv.index("--port") + 1] = str(port)
    argv[argv.index("--data-dir") + 1] = str(tmp_path / "data")
    proc = subprocess.Popen(argv, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 30
        while not check("127.0.0.1", port, timeout=0.5)[0]:
            assert proc.poll() is None, proc.stdout.read().decode() if proc.stdout else ""
            assert time.monotonic() < deadline, "make run's broker did not answer in 30 s"
            time.sleep(0.05)
    finally:
        proc.terminate()
        proc.wait(30)
    assert proc.returncode == 0, "the broker stops cleanly on SIGTERM"
    assert (tmp_path / "data" / "meta.properties").exists()
