#!/usr/bin/env bash
# Build a Debian base image without any image registry: debootstrap a minimal bookworm from Debian's
# package mirror into a folder, pack it and `docker import` it. Used by `make docker` (docker/build.sh)
# on machines that reach Debian's packages but no registry; with a registry, the Dockerfile's default
# python:3.11-slim needs none of this.
#
#   docker/base-image.sh TAG PACKAGE...      e.g. docker/base-image.sh minikafka-base:py python3 python3-venv
#
# Idempotent: the image is labelled with a hash of this script and the package list and is rebuilt
# only when either changes. Env: DEBIAN_MIRROR (default http://deb.debian.org/debian), SUITE (bookworm),
# DOCKER (docker). Needs root (debootstrap, chroot).
set -euo pipefail
tag=$1; shift
packages=$(printf '%s\n' "$@" | sort -u | paste -sd, -)
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
suite=${SUITE:-bookworm}
docker=${DOCKER:-docker}
key=$( { cat "$0"; echo "$suite $mirror $packages"; } | sha256sum | cut -c1-16)

if [ "$($docker image inspect -f '{{index .Config.Labels "minikafka.base"}}' "$tag" 2>/dev/null || true)" = "$key" ]; then
  echo "base-image: $tag is current ($key)"
  exit 0
fi
command -v debootstrap >/dev/null || { echo "base-image: debootstrap not found (apt-get install debootstrap)" >&2; exit 1; }
root=$(mktemp -d "${TMPDIR:-/tmp}/minikafka-rootfs.XXXXXX")
trap 'rm -rf "$root"' EXIT
echo "base-image: debootstrap $suite ($packages) from $mirror ..."
debootstrap --variant=minbase --include="$packages" "$suite" "$root" "$mirror" >"$root.log" 2>&1 \
  || { tail -30 "$root.log" >&2; rm -f "$root.log"; exit 1; }
rm -f "$root.log"
# What the official slim images also leave out: package lists, caches, docs, man pages, locales.
chroot "$root" apt-get clean
rm -rf "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/*.bin "$root"/usr/share/doc/* \
       "$root"/usr/share/man/* "$root"/usr/share/info/* "$root"/var/log/*.log
find "$root"/usr/share/locale -mindepth 1 -maxdepth 1 ! -name 'locale.alias' -exec rm -rf {} + 2>/dev/null || true
# Point apt at the same mirror a user would reach (only used if someone runs apt-get in a container).
echo "deb $mirror $suite main" >"$root/etc/apt/sources.list"
tar -C "$root" --numeric-owner -c . | $docker import \
  -c "LABEL minikafka.base=$key" -c 'ENV LANG=C.UTF-8' -c 'CMD ["/bin/bash"]' - "$tag" >/dev/null
echo "base-image: $tag built ($(du -sh "$root" | cut -f1))"
