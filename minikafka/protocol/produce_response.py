"""Produce responses (v3-v13) written straight from the handler's answer, byte for byte what
downgrading it and encoding it with kio gives: v3-v12 from the by-name (v12) answer, v13 (topics
named by id) from the v13 answer the topic-id door makes (broker/topic_ids.py).

Why: a Produce answer is written for every acknowledged batch, and the generic path (convert the
v12 entity to the request's version, then kio's writer, which opens a BytesIO per flexible entity
for its tagged fields) was a quarter of the broker's time per small Produce request (py-spy, 100
connections in closed loops, issue 17). This writer handles what minikafka answers; anything else
(tagged fields set: a current leader, node endpoints) returns None and takes the generic path.
A unit test compares the two writers over generated responses of every version.
"""

from __future__ import annotations

import functools
import struct
from typing import Any

from minikafka.protocol.types import ZERO_MS
from minikafka.protocol.wire_write import I32 as _I32
from minikafka.protocol.wire_write import array_length as _array_length
from minikafka.protocol.wire_write import nullable_string as _nullable_string
from minikafka.protocol.wire_write import string as _string
from minikafka.protocol.wire_write import throttle_ms as _throttle_ms

# index, error code, base offset, log append time
_PARTITION_V3 = struct.Struct(">ihqq")
# ... and log start offset (v5+)
_PARTITION_V5 = struct.Struct(">ihqqq")

FIRST_FLEXIBLE = 9
MIN_VERSION, MAX_VERSION = 3, 13
FIRST_BY_ID = 13
_ZERO_ID = bytes(16)


# An empty record-errors array and a null error message (v8+), then, flexible, the partition's
# empty tagged-field section.
_NO_ERRORS = _I32.pack(0) + b"\xff\xff"
_NO_ERRORS_FLEXIBLE = b"\x01\x00\x00"


@functools.lru_cache(maxsize=4096)
def _name(name: str, flexible: bool) -> bytes:
    """A topic name as written (a few topics answer most requests)."""
    return _string(name, flexible)


def _millis(dt: Any) -> int:
    return -1 if dt is None else round(dt.timestamp() * 1000)


@functools.lru_cache(maxsize=4096)
def _one_partition(version: int, name: str) -> tuple[struct.Struct, bytes, bytes]:
    """The whole answer of one topic's one partition (no record errors, no message, no throttle)
    as one struct: size prefix, correlation id, the bytes before the partition's fields (its
    first 's'), the fields, the bytes after them (its second 's'); and those two byte strings."""
    flexible = version >= FIRST_FLEXIBLE
    one = _array_length(1, flexible)
    before = (b"\x00" if flexible else b"") + one + _name(name, flexible) + one
    errors = (_NO_ERRORS_FLEXIBLE if flexible else _NO_ERRORS) if version >= 8 else b""
    tags = b"\x00" if flexible else b""
    after = errors + tags + _I32.pack(0) + tags  # the topic's tags, no throttle, the body's tags
    fields = "ihqqq" if version >= 5 else "ihqq"
    return struct.Struct(f">ii{len(before)}s{fields}{len(after)}s"), before, after


def encode_produce_response(version: int, correlation_id: int, response: Any) -> bytes | None:
    """Size prefix + header + body of `response` in `version`, or None when the generic writer must
    do it. `response` is a v12 entity (topic names) up to v12, a v13 one (topic ids) for v13."""
    if not MIN_VERSION <= version <= MAX_VERSION or response.node_endpoints:
        return None
    topics = response.responses
    if len(topics) == 1 and version < FIRST_BY_ID and response.throttle_time is ZERO_MS:
        # The usual answer, one partition acknowledged, in one pack of a struct made once per
        # version and topic: the loop below took ~8 % of the broker's time per small Produce at
        # 100 connections (py-spy, issue 17).
        parts = topics[0].partition_responses
        if len(parts) == 1:
            p = parts[0]
            leader = p.current_leader
            if not p.record_errors and p.error_message is None and leader.leader_id == -1 \
                    and leader.leader_epoch == -1:
                shape, before, after = _one_partition(version, topics[0].name)
                if version >= 5:
                    return shape.pack(shape.size - 4, correlation_id, before, p.index, p.error_code, p.base_offset,
                                      _millis(p.log_append_time), p.log_start_offset, after)
                return shape.pack(shape.size - 4, correlation_id, before, p.index, p.error_code, p.base_offset,
                                  _millis(p.log_append_time), after)
    flexible = version >= FIRST_FLEXIBLE
    with_start = version >= 5
    with_errors = version >= 8
    out = [_I32.pack(correlation_id)]
    if flexible:
        out.append(b"\x00")  # response header v1: no tagged fields
    out.append(_array_length(len(response.responses), flexible))
    by_id = version >= FIRST_BY_ID
    for topic in response.responses:
        if by_id:  # kio reads the all-zero id as None and writes None as it
            out.append(_ZERO_ID if topic.topic_id is None else topic.topic_id.bytes)
        else:
            out.append(_name(topic.name, flexible))
        out.append(_array_length(len(topic.partition_responses), flexible))
        for p in topic.partition_responses:
            leader = p.current_leader
            if leader.leader_id != -1 or leader.leader_epoch != -1:
                return None  # a tagged field to write: the generic path
            if with_start:
                out.append(_PARTITION_V5.pack(p.index, p.error_code, p.base_offset, _millis(p.log_append_time),
                                              p.log_start_offset))
            else:
                out.append(_PARTITION_V3.pack(p.index, p.error_code, p.base_offset, _millis(p.log_append_time)))
            if with_errors and not p.record_errors and p.error_message is None:
                # Nearly every partition's answer: no record errors, no message (and, flexible,
                # no tagged fields), written as one constant.
                out.append(_NO_ERRORS_FLEXIBLE if flexible else _NO_ERRORS)
                continue
            if with_errors:
                out.append(_array_length(len(p.record_errors), flexible))
                for e in p.record_errors:
                    out.append(_I32.pack(e.batch_index))
                    out.append(_nullable_string(e.batch_index_error_message, flexible))
                    if flexible:
                        out.append(b"\x00")
                out.append(_nullable_string(p.error_message, flexible))
            if flexible:
                out.append(b"\x00")
        if flexible:
            out.append(b"\x00")
    throttle = response.throttle_time  # nearly always the one ZERO_MS: no arithmetic then
    out.append(_I32.pack(0 if throttle is ZERO_MS else _throttle_ms(throttle)))
    if flexible:
        out.append(b"\x00")
    data = b"".join(out)
    return _I32.pack(len(data)) + data
