#!/usr/bin/env bash
# Build the perflab base image (Debian 12 with systemd and python3) with debootstrap and
# `docker import`: no registry is needed. The tag is a hash of this recipe, so an image is
# built once and reused until the recipe (this file, the mirror or the package list) changes.
# Usage: build-base-image.sh [--print-ref] REPOSITORY MIRROR PACKAGES
#   prints the image reference; with --print-ref it only prints it (builds nothing).
set -euo pipefail
print_ref_only=false
if [ "${1:-}" = "--print-ref" ]; then
  print_ref_only=true
  shift
fi
repository=${1:?repository}
mirror=${2:?mirror}
packages=${3:?packages}
recipe_hash=$( { cat "$0"; echo "$mirror"; echo "$packages"; } | sha256sum | cut -c1-12)
image="$repository:$recipe_hash"
if $print_ref_only; then
  echo "$image"
  exit 0
fi

if docker image inspect "$image" >/dev/null 2>&1; then
  echo "$image"
  exit 0
fi
# One build at a time on this machine (two labs coming up at once, e.g. the tests' local and SSH
# labs): the second waits for the first, then finds the image built.
exec 9>"/var/tmp/perflab-base-image.lock"
flock 9
if docker image inspect "$image" >/dev/null 2>&1; then
  echo "$image"
  exit 0
fi

rootfs=$(mktemp -d /var/tmp/perflab-rootfs.XXXXXX)
trap 'rm -rf "$rootfs"' EXIT
echo "building $image with debootstrap from $mirror (a few minutes, once)" >&2
debootstrap --variant=minbase --include="$packages" bookworm "$rootfs" "$mirror" >&2
# docker import takes no STOPSIGNAL: the container is run with stop signal SIGRTMIN+3 for systemd.
# Keep the image small and its apt usable; systemd in a container needs no getty or udev.
rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/cache/apt/*.bin "$rootfs"/var/lib/apt/lists/*
# apt's cache_valid_time reads the lists directory's mtime: make the emptied lists look stale,
# so the first `apt update` in a container really runs.
touch -d @0 "$rootfs/var/lib/apt/lists"
echo "deb $mirror bookworm main" > "$rootfs/etc/apt/sources.list"
echo "deb $mirror bookworm-updates main" >> "$rootfs/etc/apt/sources.list"
: > "$rootfs/etc/machine-id"
# `docker import --change` accepts no STOPSIGNAL: the container play sets stop_signal SIGRTMIN+3
# (systemd's clean shutdown) on every container instead.
tar -C "$rootfs" -c . | docker import \
  --change 'CMD ["/lib/systemd/systemd"]' \
  --change 'ENV container=docker' \
  - "$image" >&2
echo "$image"
