"""Putting a cleaned segment in place of the segments it replaces, crash-safe (Kafka's
LocalLog.replaceSegments and LogLoader's swap recovery).

A cleaned segment is written as `<base>.log.cleaned` with its `.index.cleaned`, `.timeindex.cleaned`
and (when it has entries) `.txnindex.cleaned`, all fsynced. Then:
1. each index file `.cleaned` -> `.swap`, then the log `.cleaned` -> `.swap`, and the directory is
   fsynced: `<base>.log.swap` existing is the commit point;
2. the old segments' files (every suffix, including the old files of the same base) are deleted;
3. the log `.swap` -> final name, then each index `.swap` -> final; the directory is fsynced.
At start-up, before the segments are listed, `recover()` finishes or undoes what a crash left:
- `<base>.log.cleaned` exists: the swap never committed: every `.cleaned`/`.swap` file of that base
  goes, and the old segments (untouched) stay;
- `<base>.log.swap` exists: committed: the old segments whose base offsets fall in the swap
  segment's offset range go (step 2), then step 3;
- only index `.swap` files of a base: step 3 was under way after the log's rename: they are renamed.
Any other `.cleaned` file (an index of a pass that never reached step 1) is deleted.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import structlog

from minikafka.protocol.records import HEADER_SIZE, LOG_OVERHEAD, read_header
from minikafka.storage import files

log = structlog.get_logger("minikafka.storage")

CLEANED = ".cleaned"
SWAP = ".swap"
INDEX_SUFFIXES = (files.INDEX_SUFFIX, files.TIME_INDEX_SUFFIX, files.TXN_INDEX_SUFFIX)
ALL_SUFFIXES = (files.LOG_SUFFIX, *INDEX_SUFFIXES)

# Steps a crash test can stop at (minikafka/faults.py lists the same names).
AFTER_CLEANED = "cleaner.after_cleaned"        # .cleaned files complete and fsynced
MID_SWAP_RENAME = "cleaner.mid_swap_rename"    # indexes are .swap, the log still .cleaned
AFTER_SWAP = "cleaner.after_swap"              # committed: the log is .swap, old segments intact
AFTER_OLD_DELETED = "cleaner.after_old_deleted"  # old segments gone, new files still .swap
MID_FINAL_RENAME = "cleaner.mid_final_rename"  # the log has its final name, indexes still .swap
STEPS = (AFTER_CLEANED, MID_SWAP_RENAME, AFTER_SWAP, AFTER_OLD_DELETED, MID_FINAL_RENAME)


def _name(base: int, suffix: str, extra: str = "") -> str:
    return files.segment_name(base, suffix) + extra


def remove(path: Path) -> None:
    """Delete a file that may already be gone."""
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def discard(directory: Path, base: int) -> None:
    """Delete the `.cleaned` files of a group whose pass stopped before step 1."""
    for suffix in ALL_SUFFIXES:
        remove(directory / _name(base, suffix, CLEANED))


def commit(directory: Path, base: int, delete_old: Callable[[], None],
           reach: Callable[[str], None] = lambda step: None) -> None:
    """Steps 1-3 for the cleaned segment of `base`; `delete_old` deletes the replaced segments."""
    reach(AFTER_CLEANED)
    for suffix in INDEX_SUFFIXES:
        src = directory / _name(base, suffix, CLEANED)
        if src.exists():
            os.replace(src, directory / _name(base, suffix, SWAP))
    reach(MID_SWAP_RENAME)
    os.replace(directory / _name(base, files.LOG_SUFFIX, CLEANED), directory / _name(base, files.LOG_SUFFIX, SWAP))
    files.fsync_dir(directory)
    reach(AFTER_SWAP)
    delete_old()
    reach(AFTER_OLD_DELETED)
    _finish(directory, base, reach)


def _finish(directory: Path, base: int, reach: Callable[[str], None] = lambda step: None) -> None:
    log_swap = directory / _name(base, files.LOG_SUFFIX, SWAP)
    if log_swap.exists():
        os.replace(log_swap, directory / _name(base, files.LOG_SUFFIX))
    reach(MID_FINAL_RENAME)
    for suffix in INDEX_SUFFIXES:
        src = directory / _name(base, suffix, SWAP)
        if src.exists():
            os.replace(src, directory / _name(base, suffix))
    files.fsync_dir(directory)


def _next_offset(path: Path) -> int:
    """The offset after the last whole batch of a log file (its base offset if it has none)."""
    base = files.offset_from_name(path.name)
    fd = os.open(path, os.O_RDONLY)
    try:
        size = os.fstat(fd).st_size
        pos, nxt = 0, base
        while pos + HEADER_SIZE <= size:
            head = os.pread(fd, HEADER_SIZE, pos)
            h = read_header(head)
            if h.batch_length + LOG_OVERHEAD < HEADER_SIZE or pos + h.size > size:
                break
            nxt = h.next_offset
            pos += h.size
        return nxt
    finally:
        os.close(fd)


def recover(directory: Path) -> None:
    """Finish or undo an interrupted swap (see the module docstring); call before listing segments."""
    names = os.listdir(directory)
    if not any(n.endswith((CLEANED, SWAP)) for n in names):
        return  # the usual case: one listdir, nothing to fsync (start-up over 10,000 partitions)
    uncommitted = {files.offset_from_name(n) for n in names if n.endswith(files.LOG_SUFFIX + CLEANED)}
    for n in names:
        if not n[:20].isdigit():
            continue
        base = files.offset_from_name(n)
        if n.endswith(CLEANED) or (n.endswith(SWAP) and base in uncommitted):
            log.warning("cleaner_file_deleted", path=str(directory / n), reason="cleaning did not complete")
            remove(directory / n)
    names = os.listdir(directory)
    swaps = sorted(files.offset_from_name(n) for n in names if n.endswith(files.LOG_SUFFIX + SWAP))
    for base in swaps:
        end = _next_offset(directory / _name(base, files.LOG_SUFFIX, SWAP))
        old = sorted(files.offset_from_name(n) for n in os.listdir(directory)
                     if n.endswith(files.LOG_SUFFIX) and n[:20].isdigit())
        for b in old:
            if base <= b < max(end, base + 1):
                for suffix in ALL_SUFFIXES:
                    remove(directory / _name(b, suffix))
        log.warning("cleaner_swap_completed", path=str(directory / _name(base, files.LOG_SUFFIX)),
                    replaced_segments=[b for b in old if base <= b < max(end, base + 1)])
        _finish(directory, base)
    # Index .swap files whose log already has its final name: step 3 was under way.
    for n in os.listdir(directory):
        if n.endswith(SWAP) and n[:20].isdigit():
            base = files.offset_from_name(n)
            final = n[: -len(SWAP)]
            os.replace(directory / n, directory / final)
            log.warning("cleaner_swap_completed", path=str(directory / final), replaced_segments=[base])
    files.fsync_dir(directory)
