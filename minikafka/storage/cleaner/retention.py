"""The cleaner's rules for one batch and one record (Kafka's Cleaner.cleanInto filter), pure.

A batch is read in offset order by a pass that has built its offset map. Its fate:
- DELETE: gone, header and all (aborted data; a marker past its delete horizon with no data left;
  a batch whose every record was superseded).
- kept as it is, when every record stays and no delete horizon is to be set;
- rebuilt with the records that stay (batch_rewrite.rebuild_batch), setting the delete horizon
  (now + delete.retention.ms) the first time a kept batch holds a tombstone or is a marker whose
  transaction has no data left;
- RETAIN_EMPTY: the header alone when no record stays but the batch must: it is one of the batches
  of an active producer's last five sequences (their sequences and epoch are the producer state
  idempotence needs; Kafka keeps the last one), or the last batch below the pass's upper bound (so
  the log's last offset there is not lost). A marker therefore outlives its transaction's data for
  as long as that data is among the producer's last five batches: until the producer writes five
  more or expires (producer.id.expiration.ms).
A record stays when it is the latest of its key in the dirty section (or past what the map covers),
and, for a tombstone, until the batch's delete horizon has passed. Records without a key go.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

from minikafka.protocol import records
from minikafka.protocol.batch_rewrite import (
    delete_horizon_ms,
    empty_batch,
    rebuild_batch,
    record_spans,
    records_section,
    stored_record,
)
from minikafka.protocol.records import BatchHeader
from minikafka.storage.cleaner.offset_map import OffsetMap
from minikafka.storage.cleaner.txn_metadata import CleanedTransactionMetadata


class ProducerTail(NamedTuple):
    """What cleaning must keep of an active producer (Kafka's LastRecord)."""

    data_offsets: frozenset[int]  # last offsets of its newest data batches (empty: none known)
    producer_epoch: int


@dataclass
class CleanerStats:
    batches_read: int = 0
    records_read: int = 0
    bytes_read: int = 0
    records_kept: int = 0
    bytes_written: int = 0
    invalid_records: int = 0  # records without a key (compacted topics reject them on produce)
    aborted_batches_removed: int = 0
    markers_removed: int = 0


@dataclass
class PassContext:
    offset_map: OffsetMap
    txns: CleanedTransactionMetadata
    producers: dict[int, ProducerTail]
    upper_bound: int        # the pass's first uncleanable offset
    now_ms: int
    delete_retention_ms: int
    stats: CleanerStats = field(default_factory=CleanerStats)


def control_type_of(batch: bytes | memoryview, h: BatchHeader) -> int | None:
    """COMMIT/ABORT of a control batch, or None when an earlier pass left it without records."""
    if h.records_count == 0:
        return None
    return records.control_type(batch)


def is_producer_tail(h: BatchHeader, producers: dict[int, ProducerTail]) -> bool:
    tail = producers.get(h.producer_id)
    if tail is None:
        return False
    if tail.data_offsets:
        return h.last_offset in tail.data_offsets
    # No data batch known: the newest marker carries the producer's epoch (fencing).
    return h.is_control and h.producer_epoch == tail.producer_epoch


def should_retain_record(offset: int, key: bytes | None, has_value: bool, h: BatchHeader, offset_map: OffsetMap,
                         now_ms: int, stats: CleanerStats) -> bool:
    if offset > offset_map.latest_offset:
        return True
    if key is None:
        stats.invalid_records += 1
        return False
    latest_for_key = offset >= offset_map.get(key)
    horizon = delete_horizon_ms(h)
    retain_tombstone = horizon is None or now_ms < horizon
    return latest_for_key and (has_value or retain_tombstone)


def filter_batch(batch: bytes | memoryview, h: BatchHeader, ctx: PassContext) -> bytes | bytearray | None:
    """What the cleaned segment gets for this batch (its bytes as they are, rebuilt, or an empty
    header), or None when it goes."""
    stats = ctx.stats
    stats.batches_read += 1
    stats.bytes_read += h.size
    if h.is_control:
        can_discard = ctx.txns.on_marker(h, control_type_of(batch, h))
        horizon = delete_horizon_ms(h)
        discard_records = can_discard and horizon is not None and horizon <= ctx.now_ms
    else:
        can_discard = ctx.txns.on_batch(h)
        discard_records = can_discard
    retain_empty = (h.producer_id >= 0 and is_producer_tail(h, ctx.producers)) or h.next_offset == ctx.upper_bound
    if discard_records and not retain_empty:
        if h.is_control:
            stats.markers_removed += 1
        elif h.is_transactional:
            stats.aborted_batches_removed += 1
        return None

    data = records_section(batch, h)
    spans = record_spans(data, h.records_count)
    stats.records_read += len(spans)
    kept: list[tuple[int, int, int, int, int, int, int]] = []
    tombstones = False
    if not discard_records:
        base, offset_map, now_ms = h.base_offset, ctx.offset_map, ctx.now_ms
        for span in spans:
            klen, vlen = span[3], span[4]
            if h.is_control or should_retain_record(base + span[0], None if klen < 0 else data[span[2]:span[2] + klen],
                                                    vlen >= 0, h, offset_map, now_ms, stats):
                kept.append(span)
                if vlen < 0:
                    tombstones = True
    if kept:
        stats.records_kept += len(kept)
        set_horizon = (tombstones or (can_discard and h.is_control)) and delete_horizon_ms(h) is None
        if len(kept) == len(spans) and not set_horizon:
            out: bytes | bytearray = bytes(batch[: h.size])
        else:
            horizon_ms = ctx.now_ms + ctx.delete_retention_ms if set_horizon else delete_horizon_ms(h)
            out = rebuild_batch(h, [stored_record(data, h, span) for span in kept], horizon_ms)
    elif retain_empty:
        out = empty_batch(h)
    else:
        if h.is_control:
            stats.markers_removed += 1
        return None
    stats.bytes_written += len(out)
    return out


def map_batch(batch: bytes | memoryview, h: BatchHeader, start_offset: int, offset_map: OffsetMap,
              txns: CleanedTransactionMetadata) -> bool:
    """Add one batch of the dirty section to the offset map (Kafka's buildOffsetMapForSegment);
    aborted data is skipped. True when the map filled up before the batch was done: the pass
    stops mapping there."""
    if h.is_control:
        txns.on_marker(h, control_type_of(batch, h))
    elif not txns.on_batch(h):
        data = records_section(batch, h)
        base = h.base_offset
        for off_delta, _, key, klen, _, _, _ in record_spans(data, h.records_count):
            offset = base + off_delta
            if klen >= 0 and offset >= start_offset:
                if offset_map.full:
                    return True
                offset_map.put(data[key : key + klen], offset)
    if h.last_offset >= start_offset:
        offset_map.update_latest_offset(h.last_offset)
    return False
