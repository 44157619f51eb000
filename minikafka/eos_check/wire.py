"""The exactly-once checker's reads, over the Kafka protocol with minikafka's own codec (no client
library): whole partitions as raw record batches (control batches included, which consumers never
see), a read_committed pass as the broker answers it, and which producer id is which transactional
id (ListTransactions). It works against any Kafka broker, Apache Kafka's too.
"""

from __future__ import annotations

import datetime
import time
from collections.abc import Iterator

from kio.schema.fetch.v12.request import FetchPartition, FetchRequest, FetchTopic
from kio.schema.list_offsets.v7.request import ListOffsetsPartition, ListOffsetsRequest, ListOffsetsTopic
from kio.schema.list_transactions.v0.request import ListTransactionsRequest
from kio.schema.metadata.v12.request import MetadataRequest, MetadataRequestTopic
from kio.static.primitive import i8, i32, i32Timedelta, i64

from minikafka.protocol.records import split_batches
from minikafka.tool_client import ToolClient

READ_UNCOMMITTED, READ_COMMITTED = 0, 1


class CheckError(Exception):
    """The topics cannot be read (no broker, no such topic, an error answer)."""


class Wire(ToolClient):
    """One blocking connection to a broker (the checker reads; it never writes)."""

    def __init__(self, bootstrap: str, timeout: float = 30.0) -> None:
        super().__init__(bootstrap, timeout, client_id="minikafka-check-eos", error=CheckError)
        self.timeout = timeout

    def __enter__(self) -> Wire:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ----------------------------------------------------------------------------- reads
    def partitions(self, topic: str) -> int:
        answer = self.request(MetadataRequest(topics=(MetadataRequestTopic(topic_id=None, name=topic),),
                                              allow_auto_topic_creation=False,
                                              include_topic_authorized_operations=False), 12)
        t = answer.topics[0]
        if t.error_code != 0:
            raise CheckError(f"topic {topic}: {t.error_code.name.upper()}")
        return len(t.partitions)

    def offset(self, topic: str, partition: int, which: int, isolation: int = READ_UNCOMMITTED) -> int:
        """-2: the log start offset; -1: the high watermark (read_uncommitted) or LSO (read_committed)."""
        answer = self.request(ListOffsetsRequest(
            replica_id=i32(-1), isolation_level=i8(isolation),
            topics=(ListOffsetsTopic(name=topic, partitions=(
                ListOffsetsPartition(partition_index=i32(partition), timestamp=i64(which)),)),)), 7)
        p = answer.topics[0].partitions[0]
        if p.error_code != 0:
            raise CheckError(f"{topic}-{partition}: ListOffsets {p.error_code.name.upper()}")
        return int(p.offset)

    def fetch_all(self, topic: str, partition: int, isolation: int) -> Iterator[tuple[bytes, list[tuple[int, int]]]]:
        """Every answer of a read of the partition from its start to its end at this moment (the
        high watermark, or the LSO read_committed): (record batches, aborted transactions)."""
        offset = self.offset(topic, partition, -2)
        end = self.offset(topic, partition, -1, isolation)
        deadline = time.monotonic() + self.timeout
        while offset < end:
            if time.monotonic() > deadline:
                raise CheckError(f"{topic}-{partition}: read stopped at {offset} of {end}")
            answer = self.request(FetchRequest(
                max_wait=i32Timedelta.parse(datetime.timedelta(0)), min_bytes=i32(1), isolation_level=i8(isolation),
                topics=(FetchTopic(topic=topic, partitions=(FetchPartition(
                    partition=i32(partition), fetch_offset=i64(offset), partition_max_bytes=i32(8 << 20)),)),),
                forgotten_topics_data=()), 12)
            p = answer.responses[0].partitions[0]
            if p.error_code != 0:
                raise CheckError(f"{topic}-{partition}: Fetch at {offset}: {p.error_code.name.upper()}")
            data = bytes(p.records or b"")
            if not data:
                break
            aborted = [(int(a.producer_id), int(a.first_offset)) for a in (p.aborted_transactions or ())]
            yield data, aborted
            offset = _next_offset(data, offset)

    def transactional_ids(self) -> dict[int, str]:
        """Producer id -> transactional id of every transactional id the broker knows now."""
        answer = self.request(ListTransactionsRequest(state_filters=(), producer_id_filters=()), 0)
        return {int(t.producer_id): t.transactional_id for t in answer.transaction_states}


def _next_offset(data: bytes, offset: int) -> int:
    batches = split_batches(data)
    return batches[-1][1].next_offset if batches else offset
