"""One broker per data directory: an exclusive lock on `<data_dir>/.lock` for the broker's life.

Kafka's LogManager locks every log dir through a `.lock` file and refuses to start when another
process holds it. minikafka does the same with flock(2) (per open file, so two brokers in one
test process also exclude each other) and writes its pid into the file, so the refusal can name
the holder. The lock dies with the process, even after kill -9: a stale `.lock` file on its own
never blocks a start. Readers (`minikafka inspect`) never take it.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

from minikafka.storage.errors import StartupError

LOCK_FILE = ".lock"


class DataDirLock:
    def __init__(self, data_dir: Path) -> None:
        self.path = data_dir / LOCK_FILE
        self._fd = -1

    @property
    def held(self) -> bool:
        return self._fd >= 0

    def acquire(self) -> None:
        """Take the lock or raise StartupError naming the directory and the holder's pid."""
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _read_pid(fd)
            os.close(fd)
            who = f"pid {holder}" if holder else "another process"
            raise StartupError(
                f"data directory {self.path.parent} is in use by another broker ({who} holds {self.path}); "
                "stop that broker or choose another log.dirs") from None
        except OSError:
            os.close(fd)
            raise
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        self._fd = fd

    def release(self) -> None:
        """Unlock and close; the file stays, as Kafka's does."""
        if self._fd >= 0:
            try:
                os.ftruncate(self._fd, 0)
            except OSError:
                pass  # a full or read-only disk must not stop the unlock
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = -1


def _read_pid(fd: int) -> int | None:
    try:
        text = os.pread(fd, 32, 0).decode("ascii").strip()
        return int(text) if text else None
    except (OSError, ValueError):
        return None
