"""The broker process's allocator settings (broker/allocator.py): large buffers come from the heap,
and the heap keeps its free top. Each case runs in a fresh interpreter, since the settings are the
whole process's and cannot be undone. The heap tests run with both ways of calling glibc: the
compiled helper (broker/_malloc.c) and ctypes, the reference."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from minikafka.broker import allocator
from minikafka.broker.allocator import user_has_settings

pytestmark = pytest.mark.unit

# Both probes call the allocator through this: "ctypes" (the reference), or "compiled", where an
# import of ctypes fails, so that a fallback to it cannot pass.
_CALLING = textwrap.dedent("""
    def calling(mode, fn, *args, **kwargs):
        if mode == "ctypes":
            allocator._compiled = None
            return fn(*args, **kwargs)
        saved, sys.modules["ctypes"] = sys.modules["ctypes"], None
        try:
            return fn(*args, **kwargs)
        finally:
            sys.modules["ctypes"] = saved
""")

# What a process reports about its heap: mapped blocks (hblks) and the heap's size (arena), around
# a 1 MiB buffer (a Fetch answer's partition), and after an 8 MiB one (a queued answer) was freed.
_PROBE = textwrap.dedent("""
    import ctypes, json, os, sys
    from minikafka.broker import allocator

    {calling}
    class MallInfo2(ctypes.Structure):
        _fields_ = [(n, ctypes.c_size_t) for n in ("arena", "ordblks", "smblks", "hblks", "hblkhd",
                                                   "usmblks", "fsmblks", "uordblks", "fordblks", "keepcost")]

    libc = ctypes.CDLL(None)
    if not hasattr(libc, "mallinfo2"):
        print(json.dumps(None)); sys.exit()
    libc.mallinfo2.restype = MallInfo2
    tuned = calling(sys.argv[2], allocator.keep_large_buffers_in_heap, os.environ) if sys.argv[1] == "tune" else False
    start = libc.mallinfo2()
    mapped_before = start.hblks
    buffer = os.urandom(1 << 20)
    mapped = libc.mallinfo2().hblks - mapped_before
    del buffer
    big = bytearray(8 << 20)
    del big
    grown = libc.mallinfo2().arena - start.arena  # the heap still holds the freed 8 MiB
    print(json.dumps({"tuned": tuned, "mapped": mapped, "kept": grown >= (7 << 20),
                      "compiled": allocator._compiled is not None}))
""").replace("{calling}", _CALLING)


@pytest.fixture(params=["compiled", "ctypes"])
def calls(request) -> str:
    """How the allocator calls glibc: its compiled helper, or ctypes (the reference)."""
    if request.param == "compiled" and allocator._compiled is None:
        pytest.skip("the compiled helper (broker/_malloc.c) is not built")
    return request.param


def _heap(mode: str, calls: str, env: dict[str, str] | None = None) -> dict[str, object]:
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    base = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_") and k != "GLIBC_TUNABLES"}
    out = subprocess.run([sys.executable, "-c", _PROBE, mode, calls], capture_output=True, text=True, timeout=60,
                         env={**base, "PYTHONPATH": repo, **(env or {})}, check=True).stdout
    result = json.loads(out)
    if result is None:
        pytest.skip("not glibc (no mallinfo2)")
    return result


def test_the_tuned_broker_takes_large_buffers_from_the_heap_and_keeps_it(calls):
    assert _heap("tune", calls) == {"tuned": True, "mapped": 0, "kept": True, "compiled": calls == "compiled"}


def test_untuned_a_large_buffer_is_a_mapping_of_its_own_and_the_heap_keeps_nothing():
    # The probe itself tells the two apart: glibc's defaults, in the same probe.
    result = _heap("default", "ctypes")
    assert (result["tuned"], result["mapped"], result["kept"]) == (False, 1, False)


def test_the_users_own_glibc_settings_win(calls):
    assert _heap("tune", calls, {"MALLOC_ARENA_MAX": "2"})["tuned"] is False


@pytest.mark.parametrize("environ, expected", [
    ({}, False),
    ({"PATH": "/bin", "GLIBC_TUNABLES": "glibc.rtld.optional_static_tls=4096"}, False),
    ({"GLIBC_TUNABLES": "glibc.malloc.trim_threshold=0"}, True),
    ({"MALLOC_TRIM_THRESHOLD_": "0"}, True),
    ({"MALLOC_MMAP_THRESHOLD_": "131072"}, True),
])
def test_user_has_settings(environ, expected):
    assert user_has_settings(environ) is expected


# Around 120 blocks of 1 MiB freed at once (two 50 MiB answers, read and queued): what stays in
# memory, and what stays after give_back_free_heap; then the broker's periodic look, which gives
# back only after an idle period.
_GIVE_BACK_PROBE = textwrap.dedent("""
    import asyncio, ctypes, json, os, sys
    from minikafka.broker import allocator

    {calling}
    if not hasattr(ctypes.CDLL(None), "malloc_trim"):
        print(json.dumps(None)); sys.exit()
    calls = []
    PAGE = os.sysconf("SC_PAGE_SIZE")

    def resident():  # bytes of the process in memory (RSS)
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * PAGE

    async def main():
        busy = False  # the process's CPU clock as the broker's look sees it: idle, then busy
        cpu = [0.0]
        reads = [0]  # two per look

        def cpu_seconds():
            reads[0] += 1
            cpu[0] += 1.0 if busy else 0.0
            return cpu[0]

        async def until(cond):  # bounded: the period is 10 ms, 5 s is hundreds of them
            for _ in range(500):
                if cond():
                    return
                await asyncio.sleep(0.01)

        tuned = calling(sys.argv[1], allocator.tune_broker_process, {allocator.FREE_HEAP_RETURN_ENV: "0.01"},
                        cpu_seconds=cpu_seconds)
        start = resident()
        blocks = [bytearray(1 << 20) for _ in range(120)]  # zero-filled: every page touched
        del blocks
        kept = resident() - start
        gave_back = calling(sys.argv[1], allocator.give_back_free_heap)
        left = resident() - start
        allocator.give_back_free_heap = lambda: calls.append(1) or True
        await until(lambda: len(calls) >= 3)
        idle_calls = len(calls)
        busy = True  # a second of CPU per look: not idle, nothing given back
        busy_from = reads[0]
        await until(lambda: reads[0] >= busy_from + 20)  # ten busy looks
        return {"tuned": tuned, "compiled": allocator._compiled is not None, "kept_mib": kept >> 20,
                "gave_back": gave_back, "left_mib": left >> 20,
                "idle_calls": idle_calls, "busy_calls": len(calls) - idle_calls,
                "busy_looks": (reads[0] - busy_from) // 2}

    print(json.dumps(asyncio.run(main())))
""").replace("{calling}", _CALLING)


def test_a_burst_of_large_buffers_is_given_back_and_the_broker_does_it_when_idle(calls):
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    base = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_") and k != "GLIBC_TUNABLES"}
    out = subprocess.run([sys.executable, "-c", _GIVE_BACK_PROBE, calls], capture_output=True, text=True, timeout=60,
                         env={**base, "PYTHONPATH": repo}, check=True).stdout
    result = json.loads(out)
    if result is None:
        pytest.skip("not glibc (no malloc_trim)")
    assert result["tuned"] is True and result["compiled"] is (calls == "compiled")
    # How much of the burst stays before the give-back depends on where the interpreter's own small
    # blocks land in the heap; tests/integration/test_large_answers.py measures the threshold's effect.
    assert result["kept_mib"] >= 40, result
    assert result["gave_back"] is True and result["left_mib"] < 10, result
    assert result["idle_calls"] >= 3, result
    assert result["busy_looks"] >= 10 and result["busy_calls"] <= 1, result  # at most the look that straddled the change
