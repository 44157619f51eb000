"""A SparkSession with Spark's Kafka source and sink, from jars resolved once into a local cache.

The connector is four jars that the pyspark wheel does not ship: spark-sql-kafka-0-10_2.13,
spark-token-provider-kafka-0-10_2.13, kafka-clients and commons-pool2. `spark/fetch-jars.sh` resolves
them from Maven Central into `.cache/spark-jars/` (or $SPARK_JARS_DIR) and the session gets them
through `spark.jars` as absolute paths. `spark.jars.packages` is never used: it resolves through Ivy
at every session start and needs the network.

    from minikafka.pipeline.spark_session import build_session
    spark = build_session("orders", master="local[2]")

Versions: pyspark 4.0.0 with the 4.0.0 connector (kafka-clients 3.9.0), pinned in spark/pom.xml and
the `spark` extra of pyproject.toml.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pyspark is an optional dependency (the `spark` extra)
    from pyspark.sql import SparkSession

REPO_ROOT = Path(__file__).resolve().parents[2]
FETCH_JARS = REPO_ROOT / "spark" / "fetch-jars.sh"
CONNECTOR_ARTIFACTS = (
    "spark-sql-kafka-0-10_2.13",
    "spark-token-provider-kafka-0-10_2.13",
    "kafka-clients",
    "commons-pool2",
)
DEFAULT_MASTER = "local[*]"

# Small, quiet, local-friendly defaults; every one can be overridden through `conf`.
DEFAULT_CONF: dict[str, str] = {
    "spark.ui.enabled": "false",
    "spark.sql.shuffle.partitions": "2",
    "spark.driver.memory": "768m",
    "spark.sql.session.timeZone": "UTC",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.streaming.forceDeleteTempCheckpointLocation": "true",
}
# Only for local masters: executors are threads of the driver, so bind everything to loopback.
LOCAL_CONF: dict[str, str] = {
    "spark.driver.host": "127.0.0.1",
    "spark.driver.bindAddress": "127.0.0.1",
}


class SparkUnavailable(RuntimeError):
    """PySpark, Java or the connector jars are missing (the message says which)."""


def jars_dir() -> Path:
    """Where the connector jars live: $SPARK_JARS_DIR, else <repo>/.cache/spark-jars."""
    env = os.environ.get("SPARK_JARS_DIR")
    return Path(env) if env else REPO_ROOT / ".cache" / "spark-jars"


def connector_jars(directory: Path | None = None) -> list[Path]:
    """Absolute paths of the four connector jars; SparkUnavailable if any is missing."""
    d = (directory or jars_dir()).resolve()
    jars = sorted(d.glob("*.jar")) if d.is_dir() else []
    found = []
    for artifact in CONNECTOR_ARTIFACTS:
        match = [j for j in jars if re.fullmatch(re.escape(artifact) + r"-\d[\w.-]*\.jar", j.name)]
        if not match:
            raise SparkUnavailable(f"Spark Kafka connector jar {artifact} not found in {d} (run spark/fetch-jars.sh)")
        found.append(match[-1])
    return found


def fetch_connector_jars(timeout: float = 900.0) -> list[Path]:
    """Run spark/fetch-jars.sh (a no-op when cached) and return the jar paths."""
    try:
        return connector_jars()
    except SparkUnavailable:
        pass
    if not FETCH_JARS.is_file():
        raise SparkUnavailable(f"{FETCH_JARS} not found (minikafka is not installed from a source checkout)")
    if shutil.which("java") is None:
        raise SparkUnavailable("Spark needs Java 17+, but `java` is not on PATH")
    if shutil.which(os.environ.get("MVN", "mvn")) is None:
        raise SparkUnavailable("the Spark Kafka connector jars are not cached and Maven (`mvn`) is not on PATH")
    proc = subprocess.run(["bash", str(FETCH_JARS)], capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0:
        raise SparkUnavailable(f"spark/fetch-jars.sh failed:\n{proc.stderr[-4000:]}")
    return connector_jars()


def ensure_connector_jars(progress: Callable[[str], None]) -> list[Path]:
    """The connector jars, fetched first (with one progress line) when they are not cached."""
    try:
        return connector_jars()
    except SparkUnavailable:
        progress("fetching the Spark Kafka connector jars from Maven Central (once, about a minute)...")
        return fetch_connector_jars()


def check_spark_available() -> None:
    """SparkUnavailable unless pyspark imports and Java is on PATH (or JAVA_HOME is set)."""
    try:
        import pyspark  # noqa: F401
    except ImportError as exc:
        raise SparkUnavailable(f"pyspark is not installed ({exc}); pip install 'minikafka[spark]'") from exc
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        raise SparkUnavailable("Spark needs Java 17+, but `java` is not on PATH and JAVA_HOME is not set")


def build_session(app_name: str = "minikafka", master: str | None = None, *,
                  jars: list[Path] | None = None, conf: Mapping[str, Any] | None = None) -> SparkSession:
    """A SparkSession (or the active one) with the Kafka connector on its classpath.

    `master` defaults to $SPARK_MASTER, else local[*]; on a cluster pass spark://..., yarn, k8s://...
    and make the jars readable at the same absolute paths (or set SPARK_JARS_DIR)."""
    check_spark_available()
    from pyspark.sql import SparkSession

    master = master or os.environ.get("SPARK_MASTER") or DEFAULT_MASTER
    paths = jars if jars is not None else connector_jars()
    settings: dict[str, str] = dict(DEFAULT_CONF)
    if master.startswith("local"):
        settings.update(LOCAL_CONF)
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")  # read by the JVM before any conf
    settings["spark.jars"] = ",".join(str(Path(p).resolve()) for p in paths)
    settings.update({k: str(v) for k, v in (conf or {}).items()})
    builder = SparkSession.builder.appName(app_name).master(master)
    for key, value in settings.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel(os.environ.get("SPARK_LOG_LEVEL", "WARN"))
    return spark
