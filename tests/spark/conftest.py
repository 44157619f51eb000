"""Spark fixtures: the connector jars once per session, one small SparkSession per test module.

Tests here skip with the reason when pyspark is not installed (the `spark` extra), Java is missing,
or the connector jars are neither cached nor resolvable (no Maven / no network). The jars come from
spark/fetch-jars.sh into .cache/spark-jars/ (a no-op when cached).
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from minikafka.pipeline.spark_session import (
    SparkUnavailable,
    build_session,
    check_spark_available,
    fetch_connector_jars,
)

# Two cores are shared with other work: keep sessions small.
SPARK_TEST_MASTER = os.environ.get("SPARK_TEST_MASTER", "local[2]")
SPARK_TEST_CONF: dict[str, str] = {
    "spark.driver.memory": "512m",
    "spark.sql.shuffle.partitions": "2",
    "spark.default.parallelism": "2",
    "spark.ui.enabled": "false",
    # tests start a broker each: do not keep pooled Kafka clients of finished tests alive for long
    "spark.kafka.producer.cache.timeout": "20s",
    "spark.kafka.consumer.cache.timeout": "20s",
}


@pytest.fixture(scope="session")
def spark_jars() -> list[Path]:
    """The four connector jars (resolved from Maven Central on first use)."""
    try:
        check_spark_available()
        return fetch_connector_jars()
    except SparkUnavailable as exc:
        pytest.skip(f"Spark unavailable: {str(exc).splitlines()[0]}")


@pytest.fixture(scope="module")
def spark(spark_jars: list[Path], request: pytest.FixtureRequest) -> Iterator[Any]:
    """One SparkSession for the test module, stopped at its end."""
    session = build_session(f"minikafka-tests-{request.module.__name__}", SPARK_TEST_MASTER,
                            jars=spark_jars, conf=SPARK_TEST_CONF)
    try:
        yield session
    finally:
        for q in session.streams.active:
            q.stop()
        session.stop()
        # Spark pools its Kafka producers JVM-wide beyond session.stop() (evicted only by a
        # once-a-minute thread): stop the JVM too, so no client of this module outlives it and
        # retries a broker that is gone. The next module starts a fresh one.
        from pyspark import SparkContext
        gateway = SparkContext._gateway
        if gateway is not None:
            gateway.shutdown()
            proc = getattr(gateway, "proc", None)
            if proc is not None:  # PythonGatewayServer exits when its stdin closes
                if proc.stdin is not None:
                    proc.stdin.close()
                try:
                    proc.wait(30)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait(10)
            SparkContext._gateway = None
            SparkContext._jvm = None
