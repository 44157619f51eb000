#!/usr/bin/env bash
# Resolve Apache Kafka's jars from Maven Central into the jar cache, and nothing else.
# Usage: fetch-jars.sh [all|broker|tools|apps]     (default: all = broker and tools)
#   broker: kafka_2.13 + deps  -> kafka.Kafka, kafka.tools.StorageTool
#   tools:  kafka-tools + deps -> org.apache.kafka.tools.DumpLogSegments, TransactionsCommand, perf tools
#   apps:   kafka-streams, connect-runtime/-file/-mirror -> the compat matrix's Streams, Connect, MM2
# Env: KAFKA_VERSION (default from pom-broker.xml), KAFKA_CACHE (default <repo>/.cache/kafka),
#      MVN (default mvn). Idempotent: a complete cache dir is reused without running Maven
#      (a stamp holding a copy of the POM marks it complete; editing the POM refetches).
# Prints nothing on success; on failure prints Maven's log to stderr and exits non-zero.
set -euo pipefail
. "$(cd "$(dirname "$0")" && pwd)/kafka-env.sh"

what=${1:-all}
case "$what" in
  all) parts="broker tools" ;;
  broker|tools|apps) parts=$what ;;
  *) echo "usage: $0 [all|broker|tools|apps]" >&2; exit 2 ;;
esac

fetch_one() {  # $1 = broker|tools|apps
  local part=$1 pom="$KAFKA_HERE/pom-$1.xml" dir="$KAFKA_CACHE/$KAFKA_VERSION/$1"
  local stamp="$dir/.complete"
  if [ -f "$stamp" ] && cmp -s "$pom" "$stamp"; then return 0; fi
  mkdir -p "$KAFKA_CACHE/$KAFKA_VERSION"
  # keep the cache out of git wherever it lives (a .gitignore of "*" ignores the whole folder)
  [ -f "$KAFKA_CACHE/.gitignore" ] || printf '*\n' >"$KAFKA_CACHE/.gitignore"
  (
    flock 9   # concurrent callers (parallel test workers) wait here, then find the stamp
    if [ -f "$stamp" ] && cmp -s "$pom" "$stamp"; then exit 0; fi
    command -v "${MVN:-mvn}" >/dev/null 2>&1 || { echo "fetch-jars: '${MVN:-mvn}' not found" >&2; exit 1; }
    local tmp log
    tmp=$(mktemp -d "$KAFKA_CACHE/$KAFKA_VERSION/.$part.XXXXXX")
    log="$tmp.mvn.log"
    if ! "${MVN:-mvn}" -B -q -Dstyle.color=never -f "$pom" -Dkafka.version="$KAFKA_VERSION" -Dkafka.libs.dir="$tmp" \
         dependency:copy-dependencies >"$log" 2>&1; then
      echo "fetch-jars: resolving Kafka $KAFKA_VERSION ($part) from Maven Central failed:" >&2
      cat "$log" >&2
      rm -rf "$tmp" "$log"
      exit 1
    fi
    if ! ls "$tmp"/*.jar >/dev/null 2>&1; then
      echo "fetch-jars: Maven succeeded but copied no jars into $tmp" >&2
      rm -rf "$tmp" "$log"; exit 1
    fi
    chmod 755 "$tmp"
    cp "$pom" "$tmp/.complete"
    rm -rf "$dir" "$log"
    mv "$tmp" "$dir"
  ) 9>"$KAFKA_CACHE/$KAFKA_VERSION/.$part.lock"
}

for p in $parts; do fetch_one "$p"; done
