"""The log cleaner (Kafka's LogCleaner): compaction of `cleanup.policy=compact` logs.

- `offset_map`: key -> latest offset of the dirty section (Kafka's OffsetMap), bounded like
  Kafka's dedupe buffer.
- `txn_metadata`: which batches belong to aborted transactions and when a COMMIT/ABORT marker may
  go (Kafka's CleanedTransactionMetadata).
- `retention`: the pure per-batch and per-record rules (Kafka's Cleaner.cleanInto filter).
- `choose`: which log is the filthiest and what range of it may be cleaned (LogCleanerManager).
- `swap`: the `.cleaned` -> `.swap` -> final renames and their recovery after a crash.
- `cleaning`: one pass over one log, as a generator the broker's background task drives (it
  yields after each chunk so the event loop keeps serving requests).
"""
