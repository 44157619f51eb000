#!/usr/bin/env bash
# `make docker`: build the broker, pipeline and test images with no image registry at all.
#
#   1. Debian base images from debootstrap + `docker import` (docker/base-image.sh, cached by label):
#      minikafka-base:py (python3, venv) and minikafka-base:py-jre (plus Java 17 for Spark);
#   2. a staged build context in .cache/docker/context: the working tree's files (tracked and
#      untracked, not git-ignored), plus docker/offline/wheels (`pip wheel` on the host: every
#      dependency and minikafka's own wheel), docker/offline/spark-jars (spark/fetch-jars.sh) and
#      docker/offline/kafka (Apache Kafka's jars, bench/kafka/fetch-jars.sh, for the tests image);
#   3. `docker build` of the targets broker, pipeline and tests with those base images (the legacy
#      builder, so Debian's docker.io 20.10 needs no buildx).
#
# Env: PYTHON (a Python 3.11 with pip for the wheels; default .venv/bin/python), DOCKER (docker),
# IMAGE_PREFIX (minikafka), DEBIAN_MIRROR (see base-image.sh).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
python=${PYTHON:-$repo/.venv/bin/python}
docker=${DOCKER:-docker}
prefix=${IMAGE_PREFIX:-minikafka}
stage=$repo/.cache/docker/context
started=$(date +%s)
step() { echo "docker: [$(( $(date +%s) - started ))s] $*"; }

"$docker" info >/dev/null 2>&1 || { echo "docker: no Docker engine answers ($docker info failed); start dockerd" >&2; exit 1; }

step "base images (debootstrap, once)"
docker/base-image.sh minikafka-base:py python3 python3-venv
docker/base-image.sh minikafka-base:py-jre python3 python3-venv openjdk-17-jre-headless procps

step "staging the build context in ${stage#$repo/}"
rm -rf "$stage.new"
mkdir -p "$stage.new"
git ls-files -z --cached --others --exclude-standard | while IFS= read -r -d '' f; do
  [ -e "$f" ] && printf '%s\0' "$f"
done | tar --null -T - -cf - | tar -C "$stage.new" -xf -
# Wheels are built from the staged copy, so nothing stale from ./build can slip into the image.
wheels=$repo/.cache/docker/wheels
mkdir -p "$wheels"
rm -f "$wheels"/minikafka-*.whl
step "wheels (pip wheel on the host; dependencies come from pip's cache after the first time)"
"$python" -m pip wheel -q --wheel-dir "$wheels" "$stage.new[spark,test]" >"$repo/.cache/docker/wheels.log" 2>&1 \
  || { cat "$repo/.cache/docker/wheels.log" >&2; exit 1; }
rm -rf "$stage.new/build" "$stage.new"/*.egg-info
mkdir -p "$stage.new/docker/offline/wheels" "$stage.new/docker/offline/spark-jars"
cp -l "$wheels"/*.whl "$stage.new/docker/offline/wheels/" 2>/dev/null || cp "$wheels"/*.whl "$stage.new/docker/offline/wheels/"
step "Spark connector jars (Maven on the host, cached)"
for jar in $(bash spark/fetch-jars.sh); do cp "$jar" "$stage.new/docker/offline/spark-jars/"; done
step "Apache Kafka's jars for the tests image (its DumpLogSegments / kafka-transactions checks)"
bash bench/kafka/fetch-jars.sh all
cp -r "${KAFKA_CACHE:-$repo/.cache/kafka}" "$stage.new/docker/offline/kafka"
rm -rf "$stage"
mv "$stage.new" "$stage"

build() {  # target tag
  step "docker build --target $1 -> $2"
  DOCKER_BUILDKIT=0 "$docker" build -f "$stage/docker/Dockerfile" --target "$1" -t "$2" \
    --build-arg BASE_IMAGE=minikafka-base:py --build-arg PIPELINE_BASE_IMAGE=minikafka-base:py-jre \
    "$stage" >"$repo/.cache/docker/build-$1.log" 2>&1 || { tail -40 "$repo/.cache/docker/build-$1.log" >&2; exit 1; }
}
build pipeline "$prefix-pipeline:latest"
build tests "$prefix-tests:latest"
build broker "$prefix:latest"
"$docker" image ls --format '{{.Repository}}:{{.Tag}} {{.Size}}' | grep -E "^($prefix|minikafka-base)" | sed 's/^/  /' || true
step "done"
