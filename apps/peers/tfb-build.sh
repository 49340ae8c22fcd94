#!/bin/sh
# Builds one of TechEmpower's own Java implementations (FrameworkBenchmarks, BSD-3) for the lab,
# without writing into their checkout: their framework directory is copied to build/peers/<name>
# and Maven runs there. The manifests in this directory call it (artifact.build).
#
# Usage: tfb-build.sh NAME FRAMEWORK_DIR [MAVEN ARGUMENTS...]
#   NAME           the build directory under build/peers/ (the manifest's name)
#   FRAMEWORK_DIR  e.g. $TFB_DIR/frameworks/Java/quarkus
# JAVA_HOME: the newest JDK under /usr/lib/jvm when the default java is older than 21 (their
# builds target Java 21).
set -eu
name=$1 source=$2
shift 2
if [ ! -f "$source/pom.xml" ] || [ ! -f "$source/benchmark_config.json" ]; then
  echo "tfb-build: $source is not a TechEmpower framework directory (no pom.xml and benchmark_config.json):" \
       "set TFB_DIR to a checkout of TechEmpower's FrameworkBenchmarks" >&2
  exit 2
fi
feature() {  # the feature version of the JDK at $1 (its release file), 0 when unknown
  sed -n 's/^JAVA_VERSION="\([0-9]*\).*/\1/p' "$1/release" 2>/dev/null || echo 0
}
if [ -z "${JAVA_HOME:-}" ] || [ "$(feature "$JAVA_HOME")" -lt 21 ] 2>/dev/null; then
  best="" best_version=0
  for jdk in /usr/lib/jvm/*/; do
    version=$(feature "$jdk"); version=${version:-0}
    if [ "$version" -gt "$best_version" ]; then best=${jdk%/} best_version=$version; fi
  done
  if [ "$best_version" -lt 21 ]; then
    echo "tfb-build: no JDK >= 21 under /usr/lib/jvm (found $best_version); set JAVA_HOME to one" >&2
    exit 2
  fi
  export JAVA_HOME=$best
fi
target="build/peers/$name"
rm -rf "$target"
mkdir -p build/peers
cp -R "$source" "$target"
cd "$target"
echo "tfb-build: $name from $source with $JAVA_HOME"
exec "${MVN:-mvn}" -B -q -DskipTests "$@" package
