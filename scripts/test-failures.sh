#!/bin/sh
# The failures of a pytest log, short: each failed test's header and its first and last "E" lines. make test
# prints them again at its end for what ran beside the local lab (the SSH lab's share, the checks),
# whose own summaries scrolled by long before: a log cut to its last lines still says what failed.
#   scripts/test-failures.sh NAME LOG
set -eu
name=$1 log=$2
[ -f "$log" ] || { echo "$name: no log at $log"; exit 0; }
echo "$name: what failed (the whole output is above, and in $log):"
awk '
  function flush() { if (header == "") return; print header
    for (i = 1; i <= n; i++) if (i <= 2 || i > n - 4) print substr(lines[i], 1, 400); else if (i == 3) print "E       ..."
    header = ""; n = 0 }
  /^___+ .* ___+$/ { flush(); header = $0; next }  # no {3,}: mawk, the awk of Debian, has no intervals
  /^E   / && header != "" && $0 !~ /^E +$/ { lines[++n] = $0; next }
  /^(FAILED|ERROR) / { flush(); print substr($0, 1, 400) }
  END { flush() }
' "$log" | head -120
