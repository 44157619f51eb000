"""Which batches of a cleaning pass belong to aborted transactions, and which markers may go
(Kafka's CleanedTransactionMetadata), pure.

The pass reads batches in offset order. The aborted transactions of the range (from the
transaction indexes) are fed in; each becomes "ongoing" once the pass reaches its first offset.
- A transactional data batch of a producer with an ongoing aborted transaction is aborted data:
  it is discarded, and the transaction remembers that the pass saw data of it.
- An ABORT marker ends the producer's aborted transaction. If the pass saw data of it, the marker
  stays (and its index entry goes to the cleaned segment): a consumer that already read those
  batches must still learn they were aborted. If it saw none (an earlier pass removed them), the
  marker may go once its delete horizon has passed.
- A COMMIT marker may go (after its horizon) when the pass saw no data of its transaction: the
  committed batches it vouches for were all cleaned away.
"""

from __future__ import annotations

import heapq

from minikafka.protocol.records import CONTROL_ABORT, CONTROL_COMMIT, BatchHeader
from minikafka.storage.txn_index import AbortedTxn


class CleanedTransactionMetadata:
    __slots__ = ("_pending", "_seen", "_ongoing_aborted", "_ongoing_committed", "kept_aborted")

    def __init__(self) -> None:
        self._pending: list[tuple[int, int, AbortedTxn]] = []  # heap by first offset
        self._seen: set[tuple[int, int]] = set()
        self._ongoing_aborted: dict[int, list] = {}  # producer id -> [AbortedTxn, saw data?]
        self._ongoing_committed: set[int] = set()
        self.kept_aborted: list[AbortedTxn] = []  # entries for the cleaned segment's .txnindex

    def add_aborted(self, aborted: list[AbortedTxn]) -> None:
        for a in aborted:
            k = (a.producer_id, a.first_offset)
            if k not in self._seen:  # a transaction spanning segments is collected once per segment
                self._seen.add(k)
                heapq.heappush(self._pending, (a.first_offset, a.producer_id, a))

    def _consume_up_to(self, offset: int) -> None:
        while self._pending and self._pending[0][0] <= offset:
            _, pid, a = heapq.heappop(self._pending)
            self._ongoing_aborted.setdefault(pid, [a, False])

    def on_batch(self, h: BatchHeader) -> bool:
        """A data batch: True when it belongs to an aborted transaction (discard it)."""
        self._consume_up_to(h.last_offset)
        if not h.is_transactional:
            return False
        ongoing = self._ongoing_aborted.get(h.producer_id)
        if ongoing is not None:
            ongoing[1] = True
            return True
        self._ongoing_committed.add(h.producer_id)
        return False

    def on_marker(self, h: BatchHeader, control_type: int | None) -> bool:
        """A control batch (its type, or None when an earlier pass emptied it): True when no data of
        its transaction is left, so it may be removed once its delete horizon has passed."""
        self._consume_up_to(h.last_offset)
        if control_type is None:
            return True
        if control_type == CONTROL_ABORT:
            ongoing = self._ongoing_aborted.pop(h.producer_id, None)
            if ongoing is not None and ongoing[1]:
                self.kept_aborted.append(ongoing[0])
                return False
            return True
        if control_type == CONTROL_COMMIT:
            if h.producer_id in self._ongoing_committed:
                self._ongoing_committed.discard(h.producer_id)
                return False
            return True
        return False
