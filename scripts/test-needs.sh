#!/usr/bin/env bash
# What `make test` (and `make test-bench`) needs and cannot install, checked before it installs or runs
# anything: a refusal is one line naming what to set, not a test failing half an hour later.
# Usage: test-needs.sh LOADGEN_DEFAULTS [TFB_DIR]
#   LOADGEN_DEFAULTS  roles/loadgen/defaults/main.yml: wrk2's upstream git repository, its pinned commit
#   TFB_DIR           TechEmpower's FrameworkBenchmarks checkout the matrix measures ours beside
#                     (make test-bench, which runs tests/matrix_lab); not checked when not given
# wrk2's source, in the loadgen role's order: PERFLAB_WRK2_ARCHIVE (the role reads it as its archive
# on the controller) must name a file when set; unset, upstream git must answer from here. The role's
# mirror URL (loadgen_wrk2_archive_url) is an inventory variable, which the tests' inventories leave
# empty, so it is no source for them.
set -euo pipefail
defaults=${1:?the defaults file of the loadgen role}
tfb=${2:-}
setting() { sed -n "s/^$1: *//p" "$defaults" | tr -d '"'; }
commit=$(setting loadgen_wrk2_version)
timeout_s=$(setting loadgen_wrk2_fetch_timeout)

if [ -n "${PERFLAB_WRK2_ARCHIVE:-}" ]; then
  [ -f "$PERFLAB_WRK2_ARCHIVE" ] || {
    echo "perflab: make test: PERFLAB_WRK2_ARCHIVE=$PERFLAB_WRK2_ARCHIVE is not a file: set it to wrk2-$commit.tar.gz (git archive --format=tar.gz --prefix=wrk2-$commit/ $commit)" >&2
    exit 2
  }
else
  repo=$(setting loadgen_wrk2_git_repo)
  GIT_TERMINAL_PROMPT=0 timeout "${timeout_s:-20}" git ls-remote --quiet "$repo" HEAD >/dev/null 2>&1 || {
    echo "perflab: make test runs wrk2 and has no source for it: $repo does not answer from here; set PERFLAB_WRK2_ARCHIVE=/path/wrk2-$commit.tar.gz (git archive --format=tar.gz --prefix=wrk2-$commit/ $commit)" >&2
    exit 2
  }
fi

[ -z "$tfb" ] || [ -f "$tfb/frameworks/Java/quarkus/pom.xml" ] || {
  echo "perflab: make test-bench measures TechEmpower's Quarkus beside ours (tests/matrix_lab) and has no checkout of theirs at $tfb: set PERFLAB_TFB_DIR=/path/to/FrameworkBenchmarks" >&2
  exit 2
}
