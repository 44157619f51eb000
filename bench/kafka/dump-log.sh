#!/usr/bin/env bash
# Kafka's kafka-dump-log.sh: run DumpLogSegments (org.apache.kafka.tools.DumpLogSegments, in the
# kafka-tools artifact since Kafka 4.x; the old kafka.tools.DumpLogSegments is gone from core).
# Usage:
#   dump-log.sh --files a.log,b.index [--deep-iteration ...]   all arguments passed through
#   dump-log.sh a.log b.index [--deep-iteration ...]          leading file names become --files a.log,b.index
# It only reads files: run it on a stopped broker's data (or a copy).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
files=()
while [ $# -gt 0 ] && [ "${1#-}" = "$1" ]; do files+=("$1"); shift; done
if [ ${#files[@]} -gt 0 ]; then
  joined=$(IFS=,; echo "${files[*]}")
  set -- --files "$joined" "$@"
fi
exec "$HERE/run-tool.sh" org.apache.kafka.tools.DumpLogSegments "$@"
