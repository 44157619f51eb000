#!/usr/bin/env bash
# librdkafka's own test suite against a single broker: minikafka or Apache Kafka 4.3.1 (by hand; the
# suite's source is not on a package registry, so it is not part of CI or `make compat`).
# Usage: tests/compat/librdkafka/run.sh <librdkafka-source-dir> minikafka|kafka [test-runner args...]
#   The source dir must be adapted (adapt.py) and built first (with OpenSSL, which 0064 configures):
#     ./configure --disable-gssapi --disable-zstd --disable-curl && make libs && make -C tests build
#   Default test-runner args: -Q -L -p1 (quick mode, broker tests only, one at a time), with the default
#   scenario's broker settings (auto-created topics with 4 partitions). TESTS=0081 etc. narrow the run.
# Writes <out>/reports/<test>.json (test-runner -r, one per test id) and <out>/output.log,
# out = ${OUT:-/tmp/rdk-<broker>}; tests/compat/librdkafka/table.py compares two such runs.
set -euo pipefail
SRC=$(cd "$1" && pwd)
BROKER=$2
shift 2
ARGS=("$@")
[ ${#ARGS[@]} -gt 0 ] || ARGS=(-Q -L -p1)
ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
OUT=${OUT:-/tmp/rdk-$BROKER}
rm -rf "$OUT" && mkdir -p "$OUT"
PORT=$("$ROOT/.venv/bin/python" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
case "$BROKER" in
  minikafka)
    "$ROOT/.venv/bin/minikafka" serve --port "$PORT" --data-dir "$OUT/data" --log-level WARNING \
      --override auto.create.topics.enable=true --override num.partitions=4 \
      --override group.initial.rebalance.delay.ms=0 > "$OUT/broker.log" 2>&1 &
    ;;
  kafka)
    CPORT=$((PORT + 1))
    KAFKA_EXTRA_PROPS="auto.create.topics.enable=true num.partitions=4" \
      "$ROOT/bench/kafka/run-kafka.sh" "$OUT/data" "$PORT" "$CPORT" > "$OUT/broker.log" 2>&1 &
    ;;
  *) echo "broker must be minikafka or kafka" >&2; exit 2 ;;
esac
BPID=$!
trap 'kill $BPID 2>/dev/null; wait $BPID 2>/dev/null || true' EXIT
for _ in $(seq 1 600); do
  (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null && break
  kill -0 $BPID 2>/dev/null || { cat "$OUT/broker.log" >&2; exit 1; }
  sleep 0.1
done
printf 'metadata.broker.list=127.0.0.1:%s\n' "$PORT" > "$OUT/test.conf"
# Tests that run kafka-topics.sh (test_kafka_cmd) find it under $KAFKA_PATH/bin: the Maven-fetched tools.
mkdir -p "$OUT/kafka/bin"
printf '#!/bin/sh\nexec %s org.apache.kafka.tools.TopicCommand "$@"\n' "$ROOT/bench/kafka/run-tool.sh" \
  > "$OUT/kafka/bin/kafka-topics.sh"
chmod +x "$OUT/kafka/bin/kafka-topics.sh"
export KAFKA_PATH="$OUT/kafka" BROKERS="127.0.0.1:$PORT"
cd "$SRC/tests"
export RDKAFKA_TEST_CONF="$OUT/test.conf" TEST_KAFKA_VERSION=4.3.1
# One test-runner per test id: a test that times out aborts its runner, and with it every test after it.
# The ids come from a first, one-test run's report (it lists the whole suite).
mkdir -p "$OUT/reports"
TESTS=0001_multiobj ./run-test.sh -r "${ARGS[@]}" > /dev/null 2>&1 || true
mv -f test_report_*.json "$OUT/all.json"
WANTED=${TESTS:-}
unset TESTS
for name in $("$ROOT/.venv/bin/python" -c 'import json,sys; print(*sorted(json.load(open(sys.argv[1]))["tests"]))' "$OUT/all.json"); do
  case "$name" in "<MAIN>") continue ;; esac
  [ -z "$WANTED" ] || [[ "$name" == *"$WANTED"* ]] || continue
  TESTS=$name timeout 900 ./run-test.sh -r "${ARGS[@]}" >> "$OUT/output.log" 2>&1 || true
  mv -f test_report_*.json "$OUT/reports/$name.json" 2>/dev/null || echo "{\"tests\": {}}" > "$OUT/reports/$name.json"
done
echo "librdkafka tests against $BROKER: reports in $OUT/reports, log $OUT/output.log"
