#!/usr/bin/env bash
# Make sure a Docker engine answers when the inventory is the local container provider
# (lab_provider: docker). Where none runs and we are root on Debian/Ubuntu: install docker.io
# (and debootstrap, which builds the base image) and start dockerd. Otherwise print one line
# saying what to do and fail.
# Usage: ensure-docker-engine.sh INVENTORY | --docker   (--docker: whatever the inventory, e.g. for
# the tests' SSH machines, which are containers too)
set -euo pipefail
inventory=${1:?inventory}

if [ "$inventory" != --docker ]; then
  provider=$(ansible-inventory -i "$inventory" --list 2>/dev/null | python3 -c '
import json, sys
hostvars = json.load(sys.stdin).get("_meta", {}).get("hostvars", {})
print(sorted({str(v.get("lab_provider", "ssh")) for v in hostvars.values()} or {"ssh"})[0])
')
  [ "$provider" = docker ] || exit 0
fi

# One caller at a time (the tests bring up two labs at once): the second waits for the first to
# have installed and started the engine, then finds it answering.
exec 8>/var/tmp/perflab-docker-engine.lock
flock 8

engine_answers() { timeout 20 docker info >/dev/null 2>&1; }
if engine_answers; then
  # The engine may have come without debootstrap, which builds the base image.
  command -v debootstrap >/dev/null || exec "$(dirname "$0")/apt-need.sh" "the local lab's base image" debootstrap
  exit 0
fi

say() { echo "perflab: $*" >&2; }
. /etc/os-release 2>/dev/null || true
if [ "$(id -u)" != 0 ] || ! [[ " ${ID:-} ${ID_LIKE:-} " =~ [[:space:]](debian|ubuntu)[[:space:]] ]]; then
  say "no Docker engine answers: start one (e.g. 'sudo systemctl start docker'), or run 'make lab-up' as root on Debian/Ubuntu to have docker.io installed and started"
  exit 1
fi

if [ -s /var/run/docker.pid ] && kill -0 "$(cat /var/run/docker.pid)" 2>/dev/null; then
  say "dockerd runs (pid $(cat /var/run/docker.pid)) but does not answer${DOCKER_HOST:+ on DOCKER_HOST=$DOCKER_HOST}: check DOCKER_HOST and /var/log/dockerd.log"
  exit 1
fi

missing=()
command -v dockerd >/dev/null || missing+=(docker.io)
command -v debootstrap >/dev/null || missing+=(debootstrap)
if [ ${#missing[@]} -gt 0 ]; then
  say "installing ${missing[*]}"
  # Another apt run (another make target's) may hold dpkg's lock: wait for it rather than fail.
  DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 update -qq
  DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq "${missing[@]}" >/dev/null
fi

if [ -d /run/systemd/system ]; then
  say "starting docker.service"
  systemctl start docker
else
  # No systemd as PID 1 (a CI container or a sandbox): run dockerd in the background, as a service
  # manager would: in a session of its own at nice 0, whoever the caller. make test's SSH lab share,
  # which may be first here, runs at nice 19 in a session whose group is at nice 19 (scripts/yielding.sh):
  # an engine that inherited them would be starved, and every docker exec of the local lab with it.
  say "starting dockerd in the background (log: /var/log/dockerd.log)"
  # without the lock (8>&-): the next caller must get it
  nohup setsid nice -n "$((-$(nice)))" dockerd >>/var/log/dockerd.log 2>&1 8>&- &
fi
for _ in $(seq 60); do
  engine_answers && exit 0
  sleep 1
done
say "dockerd did not answer within 60 s: see /var/log/dockerd.log or 'journalctl -u docker'"
exit 1
