"""make bench-lab: wall time of a cold `make lab-up` (base image present, no lab containers) and
of a warm re-run, which must report changed=0 for every host. Prints figures; it is a benchmark,
not a test: it fails only when a lab-up fails. The lab is left up (make lab-down removes it)."""
from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "lab"))

from lab_helpers import base_image, play_recap, run_make, tail  # noqa: E402

COLD_TARGET_S = 300
WARM_TARGET_S = 60


def timed_lab_up() -> tuple[float, str]:
    started = time.monotonic()
    result = run_make("lab-up")
    elapsed = time.monotonic() - started
    if result.returncode != 0:
        print(tail(result.stdout, 80))
        raise SystemExit(f"bench-lab: make lab-up failed after {elapsed:.0f} s")
    return elapsed, result.stdout


def main() -> int:
    # Cold means: base image present, no containers. Building the image is excluded on purpose:
    # it happens once per recipe, not once per lab.
    print(f"bench-lab: base image {base_image()}")
    prepare = run_make("lab-down")
    if prepare.returncode != 0:
        raise SystemExit("bench-lab: make lab-down failed:\n" + tail(prepare.stdout))
    cold, _ = timed_lab_up()
    warm, warm_output = timed_lab_up()
    changed = {host: c["changed"] for host, c in play_recap(warm_output).items() if c["changed"]}
    print(f"bench-lab: cold lab-up {cold:6.1f} s (target <= {COLD_TARGET_S} s: {'ok' if cold <= COLD_TARGET_S else 'MISSED'})")
    print(f"bench-lab: warm lab-up {warm:6.1f} s (target <= {WARM_TARGET_S} s: {'ok' if warm <= WARM_TARGET_S else 'MISSED'}),"
          f" changed: {changed or 'none (changed=0 on every host)'}")
    print("bench-lab: the lab is left up; `make lab-down` removes it")
    return 1 if changed else 0


if __name__ == "__main__":
    sys.exit(main())
