#!/usr/bin/env bash
# Resolve the Spark Kafka connector jars (spark-sql-kafka-0-10, spark-token-provider-kafka-0-10,
# kafka-clients, commons-pool2) from Maven Central into the jar cache, and print their absolute paths,
# one per line.
# Env: SPARK_JARS_DIR (default <repo>/.cache/spark-jars), MVN (default mvn).
# Idempotent and fast when cached: a complete cache dir (a stamp holding a copy of pom.xml) is reused
# without running Maven; editing the POM refetches. On failure prints Maven's log to stderr, exits 1.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
dir=${SPARK_JARS_DIR:-$repo/.cache/spark-jars}
pom="$here/pom.xml"
stamp="$dir/.complete"

list_jars() { ls "$dir"/*.jar; }

if [ -f "$stamp" ] && cmp -s "$pom" "$stamp"; then list_jars; exit 0; fi
parent=$(dirname "$dir")
mkdir -p "$parent"
# keep the cache out of git wherever it lives
[ "$parent" != "$repo/.cache" ] || [ -f "$parent/.gitignore" ] || printf '*\n' >"$parent/.gitignore"
(
  flock 9   # concurrent callers wait here, then find the stamp
  if [ -f "$stamp" ] && cmp -s "$pom" "$stamp"; then exit 0; fi
  command -v "${MVN:-mvn}" >/dev/null 2>&1 || { echo "fetch-jars: '${MVN:-mvn}' not found" >&2; exit 1; }
  tmp=$(mktemp -d "$parent/.spark-jars.XXXXXX")
  log="$tmp.mvn.log"
  if ! "${MVN:-mvn}" -B -q -Dstyle.color=never -s "$here/maven-settings.xml" -f "$pom" \
       -Dspark.jars.dir="$tmp" dependency:copy-dependencies >"$log" 2>&1; then
    echo "fetch-jars: resolving the Spark Kafka connector from Maven Central failed:" >&2
    cat "$log" >&2
    rm -rf "$tmp" "$log"
    exit 1
  fi
  n=$(ls "$tmp"/*.jar 2>/dev/null | wc -l)
  if [ "$n" -ne 4 ]; then
    echo "fetch-jars: expected 4 jars, Maven copied $n into $tmp:" >&2
    ls "$tmp" >&2 || true
    rm -rf "$tmp" "$log"; exit 1
  fi
  chmod 755 "$tmp"
  cp "$pom" "$tmp/.complete"
  rm -rf "$dir" "$log"
  mv "$tmp" "$dir"
) 9>"$parent/.spark-jars.lock"
list_jars
