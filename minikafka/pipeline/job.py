"""The Structured Streaming job: order totals per customer, exactly once from committed events.

    orders topic --(read_committed)--> parse JSON --> groupBy(customer): count, sum(amount)
        --(update mode, foreachBatch)--> results topic (key = customer, JSON value)
                                     --> Parquet: <output>/results/batch_id=<n>/

State (the running totals) and source offsets live in the checkpoint, so a stopped job restarted on
the same checkpoint continues where it left off. Each micro-batch writes the new absolute totals of
the customers it touched, tagged with its batch id; a batch replayed after a failure rewrites the same
totals (the Parquet directory of a batch is overwritten, the topic gets the same values again), so the
latest row per customer counts every committed event exactly once. The Kafka source option
`kafka.isolation.level=read_committed` keeps aborted records out; `failOnDataLoss=true` (the default)
still holds because transaction markers and aborted records are offsets Spark skips, not lost data.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

ORDER_SCHEMA = "order_id STRING, customer STRING, amount DECIMAL(12,2), txn INT"


@dataclass(frozen=True, slots=True)
class JobConfig:
    bootstrap: str
    topic: str
    results_topic: str
    output: str            # directory (local path or any Hadoop URI): results/ and checkpoint/ below it
    starting_offsets: str = "earliest"
    fail_on_data_loss: bool = True
    max_offsets_per_trigger: int | None = None

    @property
    def results_path(self) -> str:
        return self.output.rstrip("/") + "/results"

    @property
    def checkpoint_path(self) -> str:
        return self.output.rstrip("/") + "/checkpoint"


def totals(spark: Any, cfg: JobConfig) -> Any:
    """The streaming DataFrame of (customer, orders, amount) totals."""
    from pyspark.sql import functions as F

    reader = (spark.readStream.format("kafka")
              .option("kafka.bootstrap.servers", cfg.bootstrap)
              .option("subscribe", cfg.topic)
              .option("startingOffsets", cfg.starting_offsets)
              .option("kafka.isolation.level", "read_committed")
              .option("failOnDataLoss", str(cfg.fail_on_data_loss).lower()))
    if cfg.max_offsets_per_trigger:
        reader = reader.option("maxOffsetsPerTrigger", str(cfg.max_offsets_per_trigger))
    orders = reader.load().select(
        F.col("key").cast("string").alias("customer"),
        F.from_json(F.col("value").cast("string"), ORDER_SCHEMA).alias("order"))
    return orders.groupBy("customer").agg(F.count(F.lit(1)).alias("orders"),
                                          F.sum("order.amount").alias("amount"))


def _batch_writer(cfg: JobConfig) -> Any:
    def write_batch(batch: Any, batch_id: int) -> None:
        from pyspark.sql import functions as F

        batch.persist()
        try:
            batch.write.mode("overwrite").parquet(f"{cfg.results_path}/batch_id={batch_id}")
            (batch.select(F.col("customer").alias("key"),
                          F.to_json(F.struct("customer", "orders", "amount",
                                             F.lit(batch_id).alias("batch_id"))).alias("value"))
             .write.format("kafka")
             .option("kafka.bootstrap.servers", cfg.bootstrap)
             .option("topic", cfg.results_topic)
             .save())
            print(f"job: micro-batch {batch_id} written", flush=True)  # progress of a long step
        finally:
            batch.unpersist()

    return write_batch


def start(spark: Any, cfg: JobConfig, query_name: str = "order_totals") -> Any:
    """Start (or resume from the checkpoint) the streaming query."""
    return (totals(spark, cfg).writeStream
            .queryName(query_name)
            .outputMode("update")
            .foreachBatch(_batch_writer(cfg))
            .option("checkpointLocation", cfg.checkpoint_path)
            .start())


@dataclass(frozen=True, slots=True)
class JobRun:
    batches: int
    input_rows: int
    seconds: float


def run_until_caught_up(spark: Any, cfg: JobConfig) -> JobRun:
    """Start the query, process everything committed so far, stop it. Uses the checkpoint, so
    calling it again later processes only what arrived since."""
    t0 = time.monotonic()
    query = start(spark, cfg)
    try:
        query.processAllAvailable()
        if query.exception() is not None:
            raise RuntimeError(f"streaming query failed: {query.exception()}")
        progress = query.recentProgress
    finally:
        query.stop()
    rows = sum(int(p.get("numInputRows", 0)) for p in progress)
    batches = len({p.get("batchId") for p in progress if int(p.get("numInputRows", 0)) > 0})
    return JobRun(batches, rows, time.monotonic() - t0)


def run_forever(spark: Any, cfg: JobConfig, timeout_s: float | None = None) -> None:
    """Run until stopped (Ctrl-C) or until timeout_s."""
    query = start(spark, cfg)
    try:
        if timeout_s is None:
            query.awaitTermination()
        else:
            query.awaitTermination(timeout_s)
    finally:
        query.stop()
