#!/usr/bin/env bash
# Install the Debian packages a make target needs and this machine lacks, saying in one line
# what it installs and what for; nothing when every package is there.
# Usage: apt-need.sh "WHAT FOR" PACKAGE...
set -euo pipefail
what=${1:?what the packages are for}; shift
missing=()
for package in "$@"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q '^install ok installed$' || missing+=("$package")
done
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
  echo "perflab: $what needs ${missing[*]}: install them (apt-get install ${missing[*]}) or run this as root on Debian/Ubuntu" >&2
  exit 1
fi
echo "perflab: installing ${missing[*]} (for $what)" >&2
export DEBIAN_FRONTEND=noninteractive
# Another apt run (another make target's, the other lab's) may hold dpkg's lock: wait for it rather than fail.
apt-get -o DPkg::Lock::Timeout=600 update -qq
apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
