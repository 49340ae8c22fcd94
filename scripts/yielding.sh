#!/usr/bin/env bash
# Runs a command that is to yield the CPU to everything else on the machine: make test's SSH lab share,
# beside the local lab's, whose runs its tests judge. Usage: yielding.sh [--group-nice N] COMMAND [ARG ...]
#
# nice 19 alone does not do it where the kernel groups each session's tasks (autogroup,
# /proc/sys/kernel/sched_autogroup_enabled, on by default in Debian's kernels and in CI's): a task's
# nice then weighs only against its own session's tasks, and the session as a whole weighs as much as
# all of Docker's containers together. Measured (2026-12-01): two nice-19 busy loops in make's session
# took a spring-webflux books-orders run at 50 req/s from p99 95 ms to 1,680 ms, and with three
# containers at cpu.shares 128 beside them to 6.7 req/s achieved (p50 9.75 s); the same loops in a
# session of their own whose group is at nice 19 left it at p99 95 ms. So COMMAND runs in a session
# of its own, its group and itself at nice 19. --group-nice N starts the group at N instead (0: at
# everyone's weight), for a command that is to yield only from a later moment: it writes 19 to
# /proc/self/autogroup then (make test's SSH lab share, once its lab-up has ended: tests/conftest.py).
#
# A TERM or HUP to this script (or an INT, where it is not ignored, as in a background job of a script)
# stops COMMAND's whole process group: a session of its own is out of the reach of the terminal's Ctrl-C.
# Its exit status is COMMAND's.
set -euo pipefail
usage() { echo "usage: $0 [--group-nice N] COMMAND [ARG ...]${1:+: $1}" >&2; exit 2; }
group_nice=19
if [ "${1:-}" = --group-nice ]; then
  [[ "${2:-}" =~ ^([0-9]|1[0-9])$ ]] || usage "--group-nice takes 0 to 19, not '${2:-}'"
  group_nice=$2
  shift 2
fi
[ $# -gt 0 ] || usage

if [ "${1:-}" = --in-own-session ]; then
  group_nice=$2
  shift 2
  # The session's group (absent where the kernel has no autogroup; a no-op where it is turned off).
  if [ -w /proc/self/autogroup ]; then echo "$group_nice" > /proc/self/autogroup; fi
  exec nice -n 19 "$@"
fi

# Started in the background, setsid is no process group leader, so it runs COMMAND without forking:
# $! is the new session's id and its process group's.
setsid "$0" --in-own-session "$group_nice" "$@" &
session=$!
trap 'kill -TERM -- "-$session" 2>/dev/null || true' INT TERM HUP
while :; do
  status=0
  wait "$session" || status=$?
  kill -0 "$session" 2>/dev/null || exit "$status"
done
