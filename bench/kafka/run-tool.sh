#!/usr/bin/env bash
# Run a Kafka command-line tool class from the kafka-tools classpath (jar cache, fetched on demand).
# Usage: run-tool.sh <main-class> [args...]
#   run-tool.sh org.apache.kafka.tools.TransactionsCommand --bootstrap-server 127.0.0.1:19092 list
#   run-tool.sh org.apache.kafka.tools.ProducerPerformance --help
# Logging: tools-log4j2.properties (WARN+ to stderr; stdout is the tool's output).
# Env: KAFKA_TOOLS_HEAP_OPTS (default -Xmx256M, as kafka-run-class.sh), KAFKA_OPTS, KAFKA_VERSION, KAFKA_CACHE.
set -euo pipefail
. "$(cd "$(dirname "$0")" && pwd)/kafka-env.sh"
[ $# -ge 1 ] || { echo "usage: $0 <main-class> [args...]" >&2; exit 2; }
kafka_require_java
"$KAFKA_HERE/fetch-jars.sh" tools
cls=$1; shift
# shellcheck disable=SC2086
exec java ${KAFKA_TOOLS_HEAP_OPTS:--Xmx256M} ${KAFKA_OPTS:-} \
  -Dlog4j2.configurationFile="$KAFKA_HERE/tools-log4j2.properties" \
  -cp "$KAFKA_TOOLS_LIBS/*" "$cls" "$@"
