"""A point run several times on fresh JVMs (REPEAT=N): its figure is the median of its runs, its
range the lowest to the highest, and two points are told apart only when their ranges do not
overlap. With three runs a point's range holds its true median with 75% probability (each run
falls on either side of it with even odds: 1 - 2 x 0.5^3); with one run there is no range and
nothing is "not distinguishable": the figures are compared as measured, and say so."""

from __future__ import annotations

import argparse
import statistics
from collections.abc import Sequence
from dataclasses import dataclass


# REPEAT=N's bound: a typo must not queue hours of runs.
MAX_REPEAT = 20


def parse_repeat(text: str) -> int:
    """REPEAT= as bench, compare and sweep take it: a whole number of runs from 1 to MAX_REPEAT."""
    if not text.isdigit() or not 1 <= int(text) <= MAX_REPEAT:
        raise argparse.ArgumentTypeError(f"REPEAT must be a whole number of runs from 1 to {MAX_REPEAT}, got {text!r}")
    return int(text)


@dataclass(frozen=True)
class Spread:
    """The runs' figures of one point: median, lowest, highest, how many runs had the figure."""

    median: float
    low: float
    high: float
    runs: int

    def overlaps(self, other: Spread) -> bool:
        """Whether the two ranges share a value: neither point is known to be better."""
        return self.low <= other.high and other.low <= self.high

    def text(self) -> str:
        """'12.3' for one run, '12.3 [11.9-13]' for several (whole numbers from 100 up, else three digits)."""
        if self.runs < 2:
            return _number(self.median)
        return f"{_number(self.median)} [{_number(self.low)}-{_number(self.high)}]"


def _number(value: float) -> str:
    return f"{value:.0f}" if abs(value) >= 100 else f"{value:.3g}"


def spread(values: Sequence[float | None]) -> Spread | None:
    """The spread of the figures that were recorded; None when no run recorded it."""
    known = [v for v in values if v is not None]
    if not known:
        return None
    return Spread(statistics.median(known), min(known), max(known), len(known))


def indistinguishable(a: Spread | None, b: Spread | None) -> bool:
    """Two points made of several runs each whose ranges overlap: "not distinguishable". Single
    runs are never called that (they have no range: REPEAT=N gives one)."""
    return a is not None and b is not None and a.runs > 1 and b.runs > 1 and a.overlaps(b)
