#!/usr/bin/env bash
# Build the lab's JDK: a jlink image of a JDK on the controller, packed as a tar.gz under OUT_DIR.
# The archive name carries a hash of its inputs (this script, the JDK's `release` file, the
# modules), so it is built once and reused until one of them changes.
# Usage: build-jlink-image.sh JAVA_HOME|auto OUT_DIR MODULES
#   JAVA_HOME  a JDK with bin/jlink, or `auto`: the newest JDK under /usr/lib/jvm (>= 21)
#   MODULES    comma-separated module names
# Prints the archive's path on stdout; prints `building ...` on stderr only when it builds.
set -euo pipefail
java_home=${1:?JAVA_HOME or auto}
out_dir=${2:?OUT_DIR}
modules=${3:?MODULES}
min_feature=21

release_version() {
  sed -n 's/^JAVA_VERSION="\(.*\)"$/\1/p' "$1/release"
}

if [ "$java_home" = auto ]; then
  java_home=$(
    for release in /usr/lib/jvm/*/release; do
      home=$(dirname "$release")
      [ -x "$home/bin/jlink" ] || continue
      echo "$(release_version "$home") $home"
    done | sort -V | tail -n 1 | cut -d' ' -f2
  )
  if [ -z "$java_home" ]; then
    echo "no JDK with bin/jlink under /usr/lib/jvm on the controller: install one (>= $min_feature) or set app_jdk_source" >&2
    exit 2
  fi
fi
if [ ! -x "$java_home/bin/jlink" ] || [ ! -f "$java_home/release" ]; then
  echo "$java_home is not a JDK with bin/jlink and a release file" >&2
  exit 2
fi
version=$(release_version "$java_home")
feature=${version%%.*}
if [ "$feature" -lt "$min_feature" ]; then
  echo "$java_home is JDK $version: the lab needs >= $min_feature (virtual threads)" >&2
  exit 2
fi

inputs_hash=$( { cat "$0" "$java_home/release"; echo "$modules"; } | sha256sum | cut -c1-12)
name="perflab-jdk-$version-$inputs_hash"
archive="$out_dir/$name.tar.gz"
if [ -f "$archive" ]; then
  echo "$archive"
  exit 0
fi

echo "building $archive with $java_home/bin/jlink (once)" >&2
mkdir -p "$out_dir"
work=$(mktemp -d "$out_dir/.jlink.XXXXXX")
trap 'rm -rf "$work"' EXIT
# --generate-cds-archive: the JDK's default class data sharing archive, as a full JDK ships it;
# without it every JVM start loads and verifies the JDK's classes again (slower start to ready).
"$java_home/bin/jlink" --add-modules "$modules" --strip-debug --no-man-pages --no-header-files \
  --generate-cds-archive --output "$work/$name" >&2
"$work/$name/bin/java" -version >&2
tar -C "$work" -czf "$work/$name.tar.gz" "$name"
mv "$work/$name.tar.gz" "$archive"
# Older images (other inputs) are never used again.
find "$out_dir" -maxdepth 1 -name 'perflab-jdk-*.tar.gz' ! -name "$name.tar.gz" -delete
echo "$archive"
