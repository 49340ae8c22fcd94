"""Whether a results directory can take a run (roles/bench/tasks/check_results_dir.yml, on the controller,
before the run takes the lab): created where it is not there, a file written in it and removed, and the room
left in it.

    python3 -c <this file> DIR

Prints one JSON object: {"unwritable": why it cannot be written, or null; "avail_bytes": the bytes free in it
for an unprivileged user, or null when it cannot be written}. One process for what took four module runs.
"""
from __future__ import annotations

import json
import os
import sys
import tempfile


def room(directory: str) -> dict[str, object]:
    try:
        os.makedirs(directory, mode=0o755, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=directory, prefix=".perflab-write-check-"):
            pass
        found = os.statvfs(directory)
    except OSError as exc:
        return {"unwritable": f"{exc.strerror}: {exc.filename or directory}", "avail_bytes": None}
    return {"unwritable": None, "avail_bytes": found.f_bavail * found.f_frsize}


if __name__ == "__main__":
    print(json.dumps(room(sys.argv[1])))
