"""Fetch responses (v4-v18) written straight from the handler's answer, byte for byte what
downgrading it and encoding it with kio gives. v4-v12 answers name topics (the handler's own v12
shape), v13+ answers give topic ids (the v18 shape the topic-id door makes, broker/topic_ids.py).

Why: a Fetch answer carries up to max_bytes of record batches read from a segment. kio writes
them into a BytesIO that grows by copying, and the frame is copied once more into bytes: at
catch-up rates that was ~0.8 ms of copying per MB (py-spy and cProfile, read_committed catch-up,
issue 17), more than reading the file. Here the records buffer is joined into the frame once
(handing the parts to uvloop's writelines() instead stalled ~1 MB answers). An answer above
GATHER_ABOVE stays its parts (wire_write.Gathered), which the connection hands to the send thread
one by one. Anything this writer does not
handle (tagged fields set: a diverging epoch, a current leader, a snapshot id) returns None and
takes the generic path. A unit test compares the two writers over generated responses.
"""

from __future__ import annotations

import struct
from typing import Any

from minikafka.protocol import wire_write as w

MIN_VERSION, MAX_VERSION = 4, 18
FIRST_FLEXIBLE = 12
FIRST_BY_ID = 13
_ZERO_ID = bytes(16)

# partition index, error code, high watermark, last stable offset
_PARTITION_V4 = struct.Struct(">ihqq")
# ... and log start offset (v5+)
_PARTITION_V5 = struct.Struct(">ihqqq")
_ABORTED = struct.Struct(">qq")
_TOP_V7 = struct.Struct(">ihi")  # throttle time, error code, session id
# Above this size an answer is not joined. A Fetch over many partitions answers up to the client's
# fetch.max.bytes (librdkafka: 50 MB, 100 partitions x 1 MB): joined, each such answer was copied
# once more into a fresh block beyond malloc's mmap threshold (32 MiB at most), paying a page
# fault per 4 KiB, and the send thread's hand-over did the same again (it now holds such parts
# without copying them, broker/_send.c HOLD_ABOVE). Across 100 partitions of 16 KiB records that
# read at 320-750 MB/s against 1,040-1,210 with 8 MB answers (2026-11-29).
GATHER_ABOVE = 4 * 1024 * 1024


def tagged_fields_default(p: Any) -> bool:
    """True when no tagged field of the partition would be written."""
    d, c, s = p.diverging_epoch, p.current_leader, p.snapshot_id
    return (d.epoch == -1 and d.end_offset == -1 and c.leader_id == -1 and c.leader_epoch == -1
            and s.end_offset == -1 and s.epoch == -1)


def encode_fetch_response(version: int, correlation_id: int, response: Any) -> bytes | w.Gathered | None:
    """Size prefix + header + body of `response` in `version`, or None when the generic writer must
    do it. `response` is a v12 entity (topic names) for v4-v12, a v18 one (topic ids) for v13+."""
    if not MIN_VERSION <= version <= MAX_VERSION:
        return None
    by_id = version >= FIRST_BY_ID
    if by_id and getattr(response, "node_endpoints", ()):
        return None  # v16+'s tagged leader endpoints: never set on one node, kio writes them
    flexible = version >= FIRST_FLEXIBLE
    throttle_ms = w.throttle_ms(response.throttle_time)
    head = [w.I32.pack(correlation_id)]
    if flexible:
        head.append(b"\x00")  # response header v1: no tagged fields
    if version >= 7:
        head.append(_TOP_V7.pack(throttle_ms, response.error_code, response.session_id))
    else:
        head.append(w.I32.pack(throttle_ms))
    head.append(w.array_length(len(response.responses), flexible))
    parts: list[Any] = []
    for topic in response.responses:
        if by_id:  # kio reads the all-zero id as None and writes None as it
            head.append(_ZERO_ID if topic.topic_id is None else topic.topic_id.bytes)
        else:
            head.append(w.string(topic.topic, flexible))
        head.append(w.array_length(len(topic.partitions), flexible))
        for p in topic.partitions:
            if flexible and not tagged_fields_default(p):
                return None
            if version >= 5:
                head.append(_PARTITION_V5.pack(p.partition_index, p.error_code, p.high_watermark,
                                               p.last_stable_offset, p.log_start_offset))
            else:
                head.append(_PARTITION_V4.pack(p.partition_index, p.error_code, p.high_watermark,
                                               p.last_stable_offset))
            aborted = p.aborted_transactions
            if aborted is None:
                head.append(w.null_array(flexible))
            else:
                head.append(w.array_length(len(aborted), flexible))
                for a in aborted:
                    head.append(_ABORTED.pack(a.producer_id, a.first_offset))
                    if flexible:
                        head.append(b"\x00")
            if version >= 11:
                head.append(w.I32.pack(p.preferred_read_replica))
            records = p.records
            if records is None:
                head.append(w.null_array(flexible))  # a null records field has the same bytes
            else:
                head.append(w.bytes_length(len(records), flexible))
                if len(records):
                    parts.append(b"".join(head))
                    parts.append(records)
                    head = []
            if flexible:
                head.append(b"\x00")
        if flexible:
            head.append(b"\x00")
    if flexible:
        head.append(b"\x00")
    parts.append(b"".join(head))
    size = sum(len(x) for x in parts)
    if size > GATHER_ABOVE:
        return w.Gathered([w.I32.pack(size), *parts], size + 4)
    return b"".join([w.I32.pack(size), *parts])
