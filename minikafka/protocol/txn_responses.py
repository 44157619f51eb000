"""AddPartitionsToTxn (v0-v3) and EndTxn (v0-v5) responses written straight from the handler's
answer, byte for byte what downgrading it and encoding it with kio gives.

Why: a transactional producer's every transaction is answered by one of each, and kio's generic
writer (convert the canonical entity to the request's version, then a BytesIO per flexible entity
for its tagged fields) was ~6 % of the broker's time with 1,000 producers committing small
transactions (py-spy, issue 17). Neither answer has tagged fields of its own. A unit test compares
these writers with kio's over generated answers of every version.
"""

from __future__ import annotations

import struct
from typing import Any

from minikafka.protocol.wire_write import I32 as _I32
from minikafka.protocol.wire_write import array_length as _array_length
from minikafka.protocol.wire_write import string as _string
from minikafka.protocol.wire_write import throttle_ms as _throttle_ms

ADD_PARTITIONS_VERSIONS = range(0, 4)  # v4+ (the brokers' batched form) is not served
ADD_PARTITIONS_FIRST_FLEXIBLE = 3
END_TXN_VERSIONS = range(0, 6)
END_TXN_FIRST_FLEXIBLE = 3
END_TXN_WITH_PRODUCER = 5  # transactions v2: the producer id and epoch to go on with

_PARTITION = struct.Struct(">ih")  # partition index, error code
_THROTTLE_ERROR = struct.Struct(">ih")  # throttle time, error code
_PRODUCER = struct.Struct(">qh")  # producer id, producer epoch


def encode_add_partitions_to_txn_response(version: int, correlation_id: int, response: Any) -> bytes | None:
    """Size prefix + header + body of the canonical (v3) answer in `version`; None for a version
    this writer does not know (kio writes it)."""
    if version not in ADD_PARTITIONS_VERSIONS:
        return None
    flexible = version >= ADD_PARTITIONS_FIRST_FLEXIBLE
    no_tags = b"\x00" if flexible else b""  # each flexible struct ends in its (empty) tagged fields
    out = [_I32.pack(correlation_id), no_tags,  # the response header v1's, when flexible
           _I32.pack(_throttle_ms(response.throttle_time)),
           _array_length(len(response.results_by_topic_v3_and_below), flexible)]
    for topic in response.results_by_topic_v3_and_below:
        out.append(_string(topic.name, flexible))
        out.append(_array_length(len(topic.results_by_partition), flexible))
        for p in topic.results_by_partition:
            out.append(_PARTITION.pack(p.partition_index, p.partition_error_code))
            out.append(no_tags)
        out.append(no_tags)
    out.append(no_tags)
    data = b"".join(out)
    return _I32.pack(len(data)) + data


def encode_end_txn_response(version: int, correlation_id: int, response: Any) -> bytes | None:
    """Size prefix + header + body of the canonical (v5) answer in `version`; None for a version
    this writer does not know (kio writes it)."""
    if version not in END_TXN_VERSIONS:
        return None
    no_tags = b"\x00" if version >= END_TXN_FIRST_FLEXIBLE else b""
    data = b"".join((_I32.pack(correlation_id), no_tags,  # the response header v1's, when flexible
                     _THROTTLE_ERROR.pack(_throttle_ms(response.throttle_time), response.error_code),
                     _PRODUCER.pack(response.producer_id, response.producer_epoch)
                     if version >= END_TXN_WITH_PRODUCER else b"",
                     no_tags))
    return _I32.pack(len(data)) + data
