"""The broker process's memory allocator: keep large buffers in the heap, and the heap's free top.

Why: a Fetch answer is read from the segment files into buffers of up to max.partition.fetch.bytes
(1 MiB by default) per partition, and what the socket does not take at once is queued for the send
thread in buffers of up to the answer's size. glibc's malloc gives every block from 128 KiB up a
mapping of its own (its threshold grows only with blocks freed whole, and a block of the same size
is still mapped), so each of those buffers came as fresh pages: a page fault and a zeroed page per
4 KiB, then the copy. A catch-up read across ten partitions (10 MiB answers) spent a third of the
broker's CPU in page faults (perf, 2026-11-29): 1.4-1.5 CPU-s per GB, against 0.55 with one
partition, and the consumer waited on the broker (580-630 MB/s, the client's CPU at 70 %).

With blocks up to 32 MiB taken from the heap, and up to 64 MiB of free heap kept at its top rather
than given back after each answer, the same read ran at 760-920 MB/s with 0.6-0.8 CPU-s per GB.
Either setting alone changes nothing: the heap must take the blocks and keep them.

Across 100 partitions an answer reaches fetch.max.bytes (50 MiB by default): 50 MiB read and as
much queued for the send thread, so the free top passed 64 MiB after each answer and was given
back, and faults came back (129-356 per MB, 566-609 MB/s, 2026-11-30). The heap now keeps up to
256 MiB at its top, and `give_back_free_heap` (malloc_trim) returns what is free once the broker
is idle: every FREE_HEAP_RETURN_S seconds, when the process used less than IDLE_CPU_SHARE of a
core since the last look. Memory taken by a burst of large answers goes back to the system within
two periods of its end. Not while busy: malloc_trim holds the heap's lock while it works, 2 ms
with 50 MiB free and 14 ms with 200 MiB (2026-11-30), a stall of the event loop's thread, and the
pages it returns would be faulted in again by the next answers.

Only `minikafka serve` (the broker's own process) does this, once it listens: an embedded broker
lives in its user's process. glibc's two calls come from a small compiled helper (_malloc.c),
since importing ctypes for them took ~2 ms while a client waited; ctypes is the fallback.
glibc's own settings win: nothing is changed when the environment sets any of them (MALLOC_*_
variables, or glibc.malloc tunables). Elsewhere (musl, macOS) it does nothing.
"""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import Callable, Mapping

try:
    from minikafka.broker import _malloc as _compiled
except ImportError:  # not built (no compiler at install): ctypes makes the same calls
    _compiled = None  # type: ignore[assignment]  # (tests set it to None to run the reference)

# mallopt parameters (glibc's malloc.h)
M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3

MMAP_THRESHOLD = 32 << 20  # glibc's largest accepted value on 64-bit (HEAP_MAX_SIZE / 2)
TRIM_THRESHOLD = 256 << 20  # two 50 MiB answers read and queued at once
FREE_HEAP_RETURN_S = 10.0
# The period, from the environment: shorter in tests, which would otherwise wait up to two of 10 s.
FREE_HEAP_RETURN_ENV = "MINIKAFKA_FREE_HEAP_RETURN_S"
IDLE_CPU_SHARE = 0.05  # of one core, over a period: below it the broker is idle

_GLIBC_MALLOC_ENV = ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "MALLOC_TOP_PAD_",
                     "MALLOC_MMAP_MAX_", "MALLOC_ARENA_MAX")


def user_has_settings(environ: Mapping[str, str]) -> bool:
    """Has the environment given glibc's malloc settings of its own?"""
    return any(k in environ for k in _GLIBC_MALLOC_ENV) or "glibc.malloc." in environ.get("GLIBC_TUNABLES", "")


def keep_large_buffers_in_heap(environ: Mapping[str, str]) -> bool:
    """Set the two thresholds (see the module's text); True when both took effect."""
    if not sys.platform.startswith("linux") or user_has_settings(environ):
        return False
    mallopt = _libc("mallopt")
    if mallopt is None:
        return False
    # musl's mallopt does nothing and answers 0; glibc answers 1 for a value it took.
    return mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD) == 1 and mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD) == 1


def give_back_free_heap() -> bool:
    """Return the heap's free pages to the system (glibc's malloc_trim): True when some were."""
    trim = _libc("malloc_trim")
    return trim is not None and trim(0) == 1


def _libc(name: str) -> Callable[..., int] | None:
    """glibc's `mallopt` or `malloc_trim`: the compiled helper's (broker/_malloc.c) when it is
    built, else through ctypes, the reference. Importing ctypes took ~2 ms of the moment the broker
    starts listening, with a client already waiting for its first answer. None: not there."""
    if _compiled is not None:
        return getattr(_compiled, name)  # type: ignore[no-any-return]
    import ctypes  # here, not at import: 2 ms for a call made once

    try:
        fn = getattr(ctypes.CDLL(None), name)
    except (OSError, AttributeError):
        return None
    fn.argtypes = (ctypes.c_int, ctypes.c_int) if name == "mallopt" else (ctypes.c_size_t,)
    fn.restype = ctypes.c_int
    return fn  # type: ignore[no-any-return]


def tune_broker_process(environ: Mapping[str, str], cpu_seconds: Callable[[], float] = time.process_time) -> bool:
    """`minikafka serve`'s allocator, from its running event loop: large buffers kept in the heap,
    and its free pages given back at the end of each period (FREE_HEAP_RETURN_ENV's seconds, else
    FREE_HEAP_RETURN_S) in which the process was idle (`cpu_seconds`, all its threads), for the
    process's life. False: left as it was."""
    if not keep_large_buffers_in_heap(environ):
        return False
    period = float(environ.get(FREE_HEAP_RETURN_ENV, FREE_HEAP_RETURN_S))
    loop = asyncio.get_running_loop()
    used_at_last_look = cpu_seconds()

    def look() -> None:
        nonlocal used_at_last_look
        used = cpu_seconds()
        if used - used_at_last_look < period * IDLE_CPU_SHARE:
            give_back_free_heap()
        used_at_last_look = cpu_seconds()  # the give-back's own time is not the next period's
        loop.call_later(period, look)

    loop.call_later(period, look)
    return True
