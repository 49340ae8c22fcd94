"""Writing a file whole or not at all: the one way perflab replaces a file others may read.

A reader (the report, a lab test, DuckDB on history.csv, a second `perflab collect`) never sees
half a file: the text goes to `<name>.partial` beside the target, which os.replace() then puts in
its place in one step (rename(2) within a directory). A write that fails, at any point, leaves
the target as it was and no `.partial` behind.
"""

from __future__ import annotations

import os
from pathlib import Path


def write_text(path: Path, text: str, *, newline: str | None = None) -> None:
    """`text` as UTF-8 at `path`, whole or not at all; OSError (or UnicodeEncodeError) when it cannot be.

    `newline` as for open(): "" keeps "\\n" as it is (the csv module's own line ends).
    """
    partial = path.with_name(path.name + ".partial")
    try:
        with partial.open("w", encoding="utf-8", newline=newline) as stream:
            stream.write(text)
        os.replace(partial, path)
    finally:
        partial.unlink(missing_ok=True)
