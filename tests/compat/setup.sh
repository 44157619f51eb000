#!/usr/bin/env bash
# Install what `make compat` runs, each from its ecosystem's own registry: the Go programs (franz-go,
# sarama) from the Go module proxy, KafkaJS and @platformatic/kafka from npm, kcat from Debian, Kafka
# 4.3.1's jars (Java clients, command-line tools, Streams, Connect, MirrorMaker 2) from Maven Central. The Python clients come with the test extras.
# A toolchain that is missing is reported; run.py then lists its client as not installed.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
if command -v go >/dev/null; then
  (cd "$here/go" && go build -o bin/franz ./franz && go build -o bin/sarama ./sarama) || echo "compat: Go programs did not build"
else
  echo "compat: no Go toolchain: franz-go and sarama are not run"
fi
if command -v npm >/dev/null; then
  (cd "$here/node" && npm install --no-audit --no-fund --silent) || echo "compat: npm install failed"
else
  echo "compat: no npm: the Node clients (KafkaJS, @platformatic/kafka) are not run"
fi
if ! command -v kcat >/dev/null; then
  if command -v apt-get >/dev/null && [ "$(id -u)" = 0 ]; then
    apt-get install -y -q kcat >/dev/null || echo "compat: apt-get install kcat failed"
  else
    echo "compat: kcat is not installed (Debian: apt-get install kcat)"
  fi
fi
if command -v java >/dev/null; then
  "$repo/bench/kafka/fetch-jars.sh" tools && "$repo/bench/kafka/fetch-jars.sh" broker || echo "compat: Kafka jars not fetched"
  "$repo/bench/kafka/fetch-jars.sh" apps || echo "compat: Kafka Streams / Connect / MirrorMaker jars not fetched"
else
  echo "compat: no Java: the Java clients and Kafka's tools are not run"
fi
exit 0
