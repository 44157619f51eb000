"""Kafka's on-disk log: segments, indexes, checkpoints, producer state. Synchronous; no asyncio."""
