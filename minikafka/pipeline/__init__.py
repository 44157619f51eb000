"""An exactly-once data pipeline on Spark Structured Streaming over the Kafka protocol.

`python -m minikafka.pipeline run` (or `minikafka pipeline run`) writes order events with a
transactional producer (some transactions aborted), runs a streaming job that reads them
read_committed and keeps per-customer totals in a checkpoint, writes the totals to a topic and to
Parquet, and verifies that every committed event was counted exactly once and no aborted one.
The same commands run on a Spark cluster against Apache Kafka (`--master`, `--bootstrap-servers`).

Modules: `orders` (events and the transactional producer), `job` (the streaming query), `verify`
(the checker), `spark_session` (a SparkSession with the Kafka connector jars), `cli` (commands).
Importing this package does not import pyspark (the optional `spark` extra).
"""

from minikafka.pipeline.cli import main

__all__ = ["main"]
