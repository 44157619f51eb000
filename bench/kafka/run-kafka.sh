#!/usr/bin/env bash
# Run a single-node Apache Kafka 4.x broker (KRaft, broker+controller) on 127.0.0.1, in the foreground.
# Usage: run-kafka.sh <data-dir> [port] [controller-port]        (defaults 19092 19093)
#   <data-dir>/server.properties   generated from server.properties.in on every start
#   <data-dir>/kafka-logs/         log.dirs (formatted with StorageTool --standalone on first start)
#   <data-dir>/logs/server.log     broker log (INFO); WARN+ also goes to stderr
# The last step is `exec java`, so the pid of this script becomes the broker JVM's pid:
#   kill -TERM <pid> = controlled shutdown (leaves kafka-logs/.kafka_cleanshutdown), kill -9 = crash.
# Restart a data dir with the same controller port (the voter endpoint is stored at format time).
# Env:
#   KAFKA_EXTRA_PROPS   extra key=value lines appended to server.properties (later keys win).
#                       If it contains a newline, one property per line (values may contain spaces);
#                       otherwise whitespace-separated, e.g. "auto.create.topics.enable=true log.flush.interval.messages=1"
#   KAFKA_HEAP_OPTS     default "-Xms1G -Xmx1G" (tests may use "-Xmx512m")
#   KAFKA_JVM_PERFORMANCE_OPTS  default: the flags of Kafka's own kafka-run-class.sh
#   KAFKA_GC_LOG_OPTS   default: GC log to <logs>/kafkaServer-gc.log (2 x 10 MB); "" disables
#   KAFKA_OPTS          further JVM flags
#   LOG_DIR             broker log dir (default <data-dir>/logs)
#   KAFKA_VERSION, KAFKA_CACHE, MVN: see fetch-jars.sh
set -euo pipefail
. "$(cd "$(dirname "$0")" && pwd)/kafka-env.sh"

if [ $# -lt 1 ] || [ $# -gt 3 ]; then
  echo "usage: $0 <data-dir> [port] [controller-port]" >&2; exit 2
fi
DATA=$(mkdir -p "$1" && cd "$1" && pwd)
PORT=${2:-19092}
CPORT=${3:-19093}
for p in "$PORT" "$CPORT"; do
  case "$p" in ''|*[!0-9]*) echo "run-kafka: port must be a number: '$p'" >&2; exit 2 ;; esac
done
[ "$PORT" != "$CPORT" ] || { echo "run-kafka: port and controller port must differ" >&2; exit 2; }

kafka_require_java
"$KAFKA_HERE/fetch-jars.sh" broker
CP="$KAFKA_BROKER_LIBS/*"
LOGS=${LOG_DIR:-$DATA/logs}
mkdir -p "$LOGS"

# 1. config for this run
CONF=$DATA/server.properties
{
  sed -e "s#@PORT@#$PORT#g" -e "s#@CONTROLLER_PORT@#$CPORT#g" -e "s#@DATA_DIR@#$DATA/kafka-logs#g" \
      "$KAFKA_HERE/server.properties.in"
  if [ -n "${KAFKA_EXTRA_PROPS:-}" ]; then
    echo
    echo "# from KAFKA_EXTRA_PROPS"
    case "$KAFKA_EXTRA_PROPS" in
      *$'\n'*) printf '%s\n' "$KAFKA_EXTRA_PROPS" ;;
      *) for kv in $KAFKA_EXTRA_PROPS; do printf '%s\n' "$kv"; done ;;
    esac
  fi
} >"$CONF.tmp"
mv "$CONF.tmp" "$CONF"

# 2. format once per data dir (kafka.tools.StorageTool lives in the core jar kafka_2.13)
if [ ! -f "$DATA/kafka-logs/meta.properties" ]; then
  CLUSTER_ID=$(python3 -c '
import base64, uuid
while True:  # Kafka Uuid string = base64url(16 bytes) without padding; no leading "-" (CLI parsing)
    s = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
    if not s.startswith("-"):
        print(s); break' 2>/dev/null) ||
  CLUSTER_ID=$(java -Dlog4j2.configurationFile="$KAFKA_HERE/tools-log4j2.properties" -cp "$CP" \
                 kafka.tools.StorageTool random-uuid)
  java -Xmx256M -Dlog4j2.configurationFile="$KAFKA_HERE/tools-log4j2.properties" -cp "$CP" \
       kafka.tools.StorageTool format -t "$CLUSTER_ID" -c "$CONF" --standalone
fi

# 3. run in the foreground; exec makes this pid the JVM pid
HEAP=${KAFKA_HEAP_OPTS:--Xms1G -Xmx1G}
JVM_PERF=${KAFKA_JVM_PERFORMANCE_OPTS:--server -XX:+UseG1GC -XX:MaxGCPauseMillis=20 -XX:InitiatingHeapOccupancyPercent=35 -XX:+ExplicitGCInvokesConcurrent -XX:MaxInlineLevel=15 -Djava.awt.headless=true}
GC_LOG=${KAFKA_GC_LOG_OPTS-"-Xlog:gc*:file=$LOGS/kafkaServer-gc.log:time,tags:filecount=2,filesize=10M"}
# shellcheck disable=SC2086  # word splitting of the option strings is intended
exec java $HEAP $JVM_PERF $GC_LOG ${KAFKA_OPTS:-} \
  -Dkafka.logs.dir="$LOGS" -Dlog4j2.configurationFile="$KAFKA_HERE/log4j2.properties" \
  -cp "$CP" kafka.Kafka "$CONF"
