"""OpenFiles: a bounded cache of open file descriptors for every segment and index file.

Kafka keeps every segment file of every partition open and asks operators for a high `ulimit -n`;
with the common default of 1024, a few hundred partitions exhaust it, and what fails then is
whatever opens a file or accepts a socket next. minikafka opens files on demand through one cache
per data directory: at most `capacity` are open at once, the least recently used is closed first,
and a file is reopened the next time it is touched. The fd cost of a partition is then zero while
it is idle, so 10,000 partitions fit a 1024 limit.

Why closing is safe: storage is single-threaded (the event loop), and callers look a descriptor up
for each system call (`os.pread(seg.fd, ...)`), never keep one across a call that may evict; fsync
of a reopened descriptor flushes the file's pages whoever wrote them (Linux fsync is per inode).
Running out anyway (other processes, sockets) evicts half the cache and retries once; failing again
raises KafkaStorageError with one warning.
"""

from __future__ import annotations

import errno
import os
import resource
from collections import OrderedDict

import structlog

from minikafka.storage.errors import KafkaStorageError

log = structlog.get_logger("minikafka.storage")

# Descriptors kept free for everything else than segment files: sockets are bounded separately
# (max.connections, see broker/server.py); these cover the listener, epoll, pipes, log output,
# the .lock file and small files written with open/close (checkpoints, snapshots).
RESERVED_FDS = 64


def raise_fd_limit() -> tuple[int, int]:
    """Raise the soft RLIMIT_NOFILE to the hard limit (as `ulimit -n $(ulimit -Hn)`); returns the
    (soft, hard) pair in force afterwards."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = hard if hard != resource.RLIM_INFINITY else max(soft, 1 << 20)
    if soft < target:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
            soft = target
        except (ValueError, OSError):
            pass  # a container may refuse: the cache sizes itself to what is allowed
    return soft, hard


def default_capacity(fd_limit: int) -> int:
    """Half of the descriptors for segment and index files, the other half for sockets and the rest."""
    return max(16, (fd_limit - RESERVED_FDS) // 2)


class OpenFiles:
    __slots__ = ("capacity", "_fds", "opens", "_exhausted")

    def __init__(self, capacity: int) -> None:
        self.capacity = max(1, capacity)
        self._fds: OrderedDict[str, int] = OrderedDict()  # path -> fd, least recently used first
        self.opens = 0  # files opened so far (a measure of churn, for tests and metrics)
        self._exhausted = False

    def __len__(self) -> int:
        return len(self._fds)

    def fd(self, path: str, flags: int) -> int:
        """An open descriptor for path (each path is always opened with the same flags)."""
        fd = self._fds.get(path)
        if fd is not None:
            self._fds.move_to_end(path)
            return fd
        fd = self._open(path, flags)
        self._fds[path] = fd
        if len(self._fds) > self.capacity:
            self._evict(len(self._fds) - self.capacity)
        return fd

    def is_open(self, path: str) -> bool:
        return path in self._fds

    def close(self, path: str) -> None:
        """Close the file if it is open (before it is deleted, truncated by name or replaced)."""
        fd = self._fds.pop(path, None)
        if fd is not None:
            os.close(fd)

    def close_all(self) -> None:
        while self._fds:
            _, fd = self._fds.popitem(last=False)
            os.close(fd)

    def _evict(self, n: int) -> None:
        for _ in range(min(n, len(self._fds))):
            _, fd = self._fds.popitem(last=False)
            os.close(fd)

    def _open(self, path: str, flags: int) -> int:
        try:
            fd = os.open(path, flags, 0o644)
        except OSError as exc:
            if exc.errno not in (errno.EMFILE, errno.ENFILE):
                raise
            self._evict(max(1, len(self._fds) // 2))
            try:
                fd = os.open(path, flags, 0o644)
            except OSError as again:
                if again.errno not in (errno.EMFILE, errno.ENFILE):
                    raise
                if not self._exhausted:
                    log.warning("out_of_file_descriptors", path=path, open_files=len(self._fds),
                                hint="raise `ulimit -n` or lower max.connections")
                self._exhausted = True
                raise KafkaStorageError(f"cannot open {path}: no file descriptors left") from None
        self._exhausted = False
        self.opens += 1
        return fd


# For segments built outside a LogManager (tools, tests): generous, but still bounded.
SHARED = OpenFiles(default_capacity(resource.getrlimit(resource.RLIMIT_NOFILE)[0]))
