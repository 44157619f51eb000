#!/usr/bin/env bash
# `make compose-test`: the images (built by `make docker`) under docker-compose, end to end.
#
#   1. the broker service starts and turns healthy (its HEALTHCHECK);
#   2. the integration tests run in the tests container against broker:9092 (tests that must start
#      or restart a broker of their own skip there; they run in `make test`);
#   3. kill -9 mid-stream: tests/compose/restart_check.py produces at a bounded rate while this
#      script kills the broker container with SIGKILL and starts it again; every acknowledged
#      record must be read back exactly once;
#   4. the Spark pipeline service runs end to end (exactly-once verified by the pipeline itself);
#   5. everything is torn down (containers, network, volumes), also on failure.
#
# Uses `docker compose` (v2) when present, else Debian's docker-compose 1.29. A project name of its
# own and a free host port, so it never touches a `make run` broker or another compose project.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
if docker compose version >/dev/null 2>&1; then dc=(docker compose); else dc=(docker-compose); fi
project=minikafka-test-$$
export MINIKAFKA_PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
compose=("${dc[@]}" -p "$project" -f docker/docker-compose.yml --profile test)
started=$(date +%s)
step() { echo "compose-test: [$(( $(date +%s) - started ))s] $*"; }
logdir=$(mktemp -d "${TMPDIR:-/tmp}/minikafka-compose-test.XXXXXX")
teardown() {
  rc=$?
  if [ $rc -ne 0 ]; then
    echo "compose-test: FAILED (exit $rc); the broker's log:" >&2
    "${compose[@]}" logs --no-color --tail 80 broker >&2 2>/dev/null || true
  fi
  "${compose[@]}" down -v --remove-orphans >/dev/null 2>&1 || true
  rm -rf "$logdir"
  exit $rc
}
trap teardown EXIT

wait_healthy() {  # seconds
  local id status
  id=$("${compose[@]}" ps -q broker)
  for _ in $(seq 1 "$1"); do
    status=$(docker inspect -f '{{.State.Health.Status}}' "$id" 2>/dev/null || echo missing)
    [ "$status" = healthy ] && return 0
    sleep 1
  done
  echo "compose-test: the broker did not turn healthy in $1 s (status: $status)" >&2
  return 1
}

step "using ${dc[*]} ($("${dc[@]}" version --short 2>/dev/null || "${dc[@]}" version | head -1)), project $project, host port 127.0.0.1:$MINIKAFKA_PORT"
"${compose[@]}" up -d --no-build broker
wait_healthy 60
step "broker healthy; runs as uid $(docker exec "$("${compose[@]}" ps -q broker)" id -u)"

step "integration tests in the tests container against broker:9092"
"${compose[@]}" run --rm -T tests python -m pytest -q -rs -m integration tests/integration \
  | tee "$logdir/tests.log" | grep -E "passed|failed|error" || true
grep -qE "^[0-9]+ passed" "$logdir/tests.log" && ! grep -qE "[0-9]+ (failed|error)" "$logdir/tests.log" \
  || { tail -60 "$logdir/tests.log" >&2; exit 1; }

step "kill -9 of the broker container mid-stream"
"${compose[@]}" run --rm -T tests python tests/compose/restart_check.py --bootstrap-servers broker:9092 \
  >"$logdir/restart.log" 2>&1 &
checker=$!
acked_now() { grep -oE '^acked [0-9]+' "$logdir/restart.log" | tail -1 | cut -d' ' -f2; }
for _ in $(seq 1 120); do
  n=$(acked_now || true)
  [ "${n:-0}" -ge 5000 ] && break
  kill -0 $checker 2>/dev/null || break
  sleep 0.5
done
before=$(acked_now || echo 0)
[ "${before:-0}" -ge 5000 ] || { cat "$logdir/restart.log" >&2; echo "compose-test: the producer did not get going" >&2; exit 1; }
broker_id=$("${compose[@]}" ps -q broker)   # while it runs (v2 lists only running containers)
"${compose[@]}" kill -s SIGKILL broker >/dev/null 2>&1
exit_code=$(docker inspect -f '{{.State.ExitCode}}' "$broker_id")
step "killed the broker (exit code $exit_code) at $before records acknowledged"
sleep 2   # an outage the producer has to ride out, not a blink
"${compose[@]}" start broker >/dev/null 2>&1
wait_healthy 60
step "broker restarted and healthy"
rc=0
wait $checker || rc=$?
after=$(acked_now || echo 0)
tail -1 "$logdir/restart.log"
[ $rc -eq 0 ] && grep -q '^PASS' "$logdir/restart.log" && [ "$exit_code" = 137 ] && [ "$after" -gt "$before" ] \
  || { cat "$logdir/restart.log" >&2; exit 1; }
step "kill -9 survived: $before acknowledged before the kill, $after in all, all read back once"

step "the Spark pipeline service against broker:9092"
"${compose[@]}" run --rm -T pipeline >"$logdir/pipeline.log" 2>&1 || { tail -60 "$logdir/pipeline.log" >&2; exit 1; }
grep -E "PASSED|FAILED|verify" "$logdir/pipeline.log" | tail -3
grep -q "PASSED" "$logdir/pipeline.log" || { tail -60 "$logdir/pipeline.log" >&2; exit 1; }
step "all passed"
