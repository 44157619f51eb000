"""Compaction of the internal topics writes the live state in batches bounded by count and bytes, so
no rewritten batch can exceed max.message.bytes, whatever the records' sizes (offset metadata may be
4 KiB per partition)."""

from __future__ import annotations

import pytest

from minikafka.broker import internal_topic

pytestmark = pytest.mark.unit


def test_chunks_are_bounded_by_bytes_and_count_and_keep_order() -> None:
    big = [(b"k%d" % i, b"m" * 4096) for i in range(600)]
    small = [(b"s%d" % i, None) for i in range(1200)]
    records = big + small
    chunks = list(internal_topic._chunks(records))
    assert [r for chunk in chunks for r in chunk] == records
    for chunk in chunks:
        assert len(chunk) <= internal_topic._COMPACTION_BATCH
        assert sum(len(k) + len(v or b"") for k, v in chunk) <= internal_topic._COMPACTION_BATCH_BYTES
    assert len(chunks) >= 600 * 4096 // internal_topic._COMPACTION_BATCH_BYTES


def test_one_record_larger_than_the_byte_bound_is_a_chunk_of_its_own() -> None:
    records = [(b"a", b"x" * 10), (b"b", b"y" * (internal_topic._COMPACTION_BATCH_BYTES + 1)), (b"c", b"z")]
    assert [len(c) for c in internal_topic._chunks(records)] == [1, 1, 1]
