"""CPU time and memory of a process from /proc (Linux)."""

from __future__ import annotations

import os
import threading

CLK_TCK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """utime + stime (fields 14 and 15 of /proc/<pid>/stat) in seconds: all threads of the process."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def memory_mb(pid: int) -> dict[str, float]:
    out: dict[str, float] = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(("VmRSS:", "VmHWM:")):
                out[line.split(":")[0].lower() + "_mb"] = int(line.split()[1]) / 1024
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                if line.startswith("Pss:"):
                    out["pss_mb"] = int(line.split()[1]) / 1024
    except OSError:
        pass
    return out


class RssSampler:
    """Samples VmRSS at `hz` in a thread; `peak_mb` is the highest sample."""

    def __init__(self, pid: int, hz: float = 10.0) -> None:
        self.pid, self.period = pid, 1.0 / hz
        self.peak_mb = 0.0
        self.samples = 0
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(self.period):
            try:
                rss = memory_mb(self.pid).get("vmrss_mb", 0.0)
            except OSError:
                return
            self.samples += 1
            self.peak_mb = max(self.peak_mb, rss)

    def __enter__(self) -> RssSampler:
        self._t.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._t.join(2)
