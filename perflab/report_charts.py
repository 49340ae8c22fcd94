"""Line charts as inline SVG for the HTML report: no script, no external file, no font to fetch.

Three kinds of axis cover what the report draws:
- `linear`: seconds into a run, cores, MiB, requests per second;
- `log`: latency, which spans microseconds to seconds between runs;
- `percentile`: the x axis of HdrHistogram's percentile plots, log10(1 / (1 - p)): 90% is 1,
  99% is 2, 99.9% is 3, so the tail gets as much room as the body. p = 100% (the maximum) has
  no place on it and is left out; the legend gives the maximum instead.
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

AxisKind = Literal["linear", "log", "percentile"]

# Colour-blind-safe categorical palette (Okabe-Ito, without yellow for contrast on white).
PALETTE = ("#0072b2", "#d55e00", "#009e73", "#cc79a7", "#56b4e9", "#e69f00", "#000000", "#999999")


@dataclass(frozen=True)
class Series:
    label: str
    points: tuple[tuple[float, float], ...]  # (x, y) in data units (x of a percentile axis: fraction p)
    color: str
    dashed: bool = False
    markers: bool = False
    hollow: frozenset[int] = frozenset()  # indexes of points drawn as open circles (e.g. a failed step)
    # Per point, the range of y its runs spanned (REPEAT=N: the point is their median), drawn as a
    # vertical bar; None where the point is one run. Empty: no point has one.
    ranges: tuple[tuple[float, float] | None, ...] = ()


@dataclass(frozen=True)
class Axis:
    title: str
    kind: AxisKind = "linear"
    minimum: float | None = None  # forced bounds, in data units
    maximum: float | None = None


@dataclass(frozen=True)
class Chart:
    title: str
    x: Axis
    y: Axis
    series: tuple[Series, ...]
    horizontal_lines: tuple[tuple[float, str], ...] = ()  # (y, label), e.g. the SLO
    width: int = 640
    height: int = 320
    css_class: str = "chart"
    notes: tuple[str, ...] = field(default=())


_MARGIN_LEFT, _MARGIN_RIGHT, _MARGIN_TOP, _MARGIN_BOTTOM = 64, 30, 28, 44


def percentile_position(fraction: float) -> float:
    """Where percentile `fraction` (0 <= p < 1) sits on a percentile axis: log10(1 / (1 - p))."""
    return math.log10(1.0 / (1.0 - fraction))


def percentile_label(position: float) -> str:
    """The percentile at a whole-number position: 0 -> "0%", 1 -> "90%", 3 -> "99.9%"."""
    if position <= 0:
        return "0%"
    digits = int(round(position))
    return f"{100 - 100 / 10**digits:.{max(0, digits - 2)}f}%"


class _Scale:
    """Maps data values of one axis to pixels."""

    def __init__(self, axis: Axis, values: Sequence[float], pixels: tuple[float, float]) -> None:
        self.axis = axis
        self.pixels = pixels
        transformed = [self._transform(v) for v in values if self._usable(v)]
        low = min(transformed) if transformed else 0.0
        high = max(transformed) if transformed else 1.0
        if axis.minimum is not None and self._usable(axis.minimum):
            low = self._transform(axis.minimum)
        if axis.maximum is not None and self._usable(axis.maximum):
            high = max(high, self._transform(axis.maximum))
        if axis.kind == "log":
            low, high = math.floor(low), math.ceil(high)
        elif axis.kind == "percentile":
            low, high = 0.0, max(1.0, math.ceil(high))
        else:
            low, high = _nice_bounds(low, high)
        if high <= low:
            high = low + 1.0
        self.low, self.high = low, high

    def _usable(self, value: float) -> bool:
        if not math.isfinite(value):
            return False
        if self.axis.kind == "log":
            return value > 0
        if self.axis.kind == "percentile":
            return 0.0 <= value < 1.0
        return True

    def _transform(self, value: float) -> float:
        if self.axis.kind == "log":
            return math.log10(value)
        if self.axis.kind == "percentile":
            return percentile_position(value)
        return value

    def usable(self, value: float) -> bool:
        return self._usable(value)

    def __call__(self, value: float) -> float:
        start, end = self.pixels
        return start + (self._transform(value) - self.low) / (self.high - self.low) * (end - start)

    def ticks(self) -> list[tuple[float, str]]:
        """(pixel, label) of each tick."""
        start, end = self.pixels
        span = self.high - self.low

        def at(position: float) -> float:
            return start + (position - self.low) / span * (end - start)

        if self.axis.kind == "percentile":
            return [(at(k), percentile_label(k)) for k in range(int(self.low), int(self.high) + 1)]
        if self.axis.kind == "log":
            decades = range(int(self.low), int(self.high) + 1)
            multiples = (1, 2, 5) if len(decades) <= 3 else (1,)
            ticks = []
            for decade in decades:
                for m in multiples:
                    position = decade + math.log10(m)
                    if position <= self.high + 1e-9:
                        ticks.append((at(position), _number(m * 10.0**decade)))
            return ticks
        step = _nice_step(span)
        first = math.ceil(self.low / step) * step
        count = int(math.floor((self.high - first) / step + 1e-9)) + 1
        return [(at(first + i * step), _number(first + i * step)) for i in range(count)]


def _nice_step(span: float) -> float:
    raw = span / 5
    magnitude = 10.0 ** math.floor(math.log10(raw))
    for m in (1, 2, 2.5, 5, 10):
        if raw <= m * magnitude:
            return m * magnitude
    return 10 * magnitude


def _nice_bounds(low: float, high: float) -> tuple[float, float]:
    if high == low:
        low, high = (low - 1, high + 1) if low != 0 else (0.0, 1.0)
    step = _nice_step(high - low)
    return math.floor(low / step) * step, math.ceil(high / step) * step


def _number(value: float) -> str:
    """A tick label: 0.001, 0.5, 20, 1.5k, 2M."""
    if value == 0:
        return "0"
    magnitude = abs(value)
    for limit, suffix in ((1e6, "M"), (1e3, "k")):
        if magnitude >= limit:
            return f"{value / limit:g}{suffix}"
    return f"{value:.6g}"


def _esc(text: str) -> str:
    return html.escape(text, quote=True)


def render(chart: Chart) -> str:
    """The chart as a <figure>: the SVG, then an HTML legend (labels wrap there, not in the SVG)."""
    width, height = chart.width, chart.height
    plot_left, plot_right = _MARGIN_LEFT, width - _MARGIN_RIGHT
    plot_top, plot_bottom = _MARGIN_TOP, height - _MARGIN_BOTTOM
    xs = [x for s in chart.series for x, _ in s.points]
    ys = ([y for s in chart.series for _, y in s.points] + [y for y, _ in chart.horizontal_lines]
          + [y for s in chart.series for spread in s.ranges if spread is not None for y in spread])
    x_scale = _Scale(chart.x, xs, (plot_left, plot_right))
    y_scale = _Scale(chart.y, ys, (plot_bottom, plot_top))

    parts = [
        f'<svg class="{_esc(chart.css_class)}" xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" aria-label="{_esc(chart.title)}">',
        f"<title>{_esc(chart.title)}</title>",
        f'<text class="chart-title" x="{plot_left}" y="18">{_esc(chart.title)}</text>',
        f'<rect class="plot-area" x="{plot_left}" y="{plot_top}" width="{plot_right - plot_left}" '
        f'height="{plot_bottom - plot_top}"/>',
    ]
    for pixel, label in x_scale.ticks():
        parts.append(f'<line class="grid" x1="{pixel:.1f}" y1="{plot_top}" x2="{pixel:.1f}" y2="{plot_bottom}"/>')
        parts.append(f'<text class="tick" x="{pixel:.1f}" y="{plot_bottom + 14}" text-anchor="middle">{_esc(label)}</text>')
    for pixel, label in y_scale.ticks():
        parts.append(f'<line class="grid" x1="{plot_left}" y1="{pixel:.1f}" x2="{plot_right}" y2="{pixel:.1f}"/>')
        parts.append(f'<text class="tick" x="{plot_left - 4}" y="{pixel + 4:.1f}" text-anchor="end">{_esc(label)}</text>')
    parts.append(
        f'<text class="axis-title" x="{(plot_left + plot_right) / 2:.1f}" y="{height - 6}" '
        f'text-anchor="middle">{_esc(chart.x.title)}</text>'
    )
    parts.append(
        f'<text class="axis-title" transform="translate(14 {(plot_top + plot_bottom) / 2:.1f}) rotate(-90)" '
        f'text-anchor="middle">{_esc(chart.y.title)}</text>'
    )
    for value, label in chart.horizontal_lines:
        if y_scale.usable(value):
            pixel = y_scale(value)
            parts.append(f'<line class="reference" x1="{plot_left}" y1="{pixel:.1f}" x2="{plot_right}" y2="{pixel:.1f}"/>')
            parts.append(f'<text class="reference-label" x="{plot_right - 4}" y="{pixel - 4:.1f}" '
                         f'text-anchor="end">{_esc(label)}</text>')
    for series in chart.series:
        points = [(x_scale(x), y_scale(y), i) for i, (x, y) in enumerate(series.points)
                  if x_scale.usable(x) and y_scale.usable(y)]
        if not points:
            continue
        dash = ' stroke-dasharray="6 4"' if series.dashed else ""
        path = " ".join(f"{px:.1f},{py:.1f}" for px, py, _ in points)
        parts.append(f'<polyline class="series" points="{path}" stroke="{series.color}"{dash}>'
                     f"<title>{_esc(series.label)}</title></polyline>")
        for px, _, i in points:
            spread = series.ranges[i] if i < len(series.ranges) else None
            if spread is not None and y_scale.usable(spread[0]) and y_scale.usable(spread[1]):
                low, high = y_scale(spread[0]), y_scale(spread[1])
                parts.append(f'<path class="range" d="M{px - 4:.1f},{low:.1f}H{px + 4:.1f}M{px:.1f},{low:.1f}V{high:.1f}'
                             f'M{px - 4:.1f},{high:.1f}H{px + 4:.1f}" stroke="{series.color}">'
                             f"<title>{_esc(series.label)}: {spread[0]:g} to {spread[1]:g}</title></path>")
        if series.markers:
            for px, py, i in points:
                fill = "white" if i in series.hollow else series.color
                x, y = series.points[i]
                parts.append(f'<circle cx="{px:.1f}" cy="{py:.1f}" r="3.5" stroke="{series.color}" fill="{fill}">'
                             f"<title>{_esc(series.label)}: {x:g}, {y:g}</title></circle>")
    parts.append("</svg>")

    legend = "".join(
        f'<li><span class="swatch{" dashed" if s.dashed else ""}" style="border-color:{s.color}"></span>'
        f"{_esc(s.label)}</li>"
        for s in chart.series
    )
    notes = "".join(f"<p class=\"note\">{_esc(n)}</p>" for n in chart.notes)
    return f'<figure class="figure">{"".join(parts)}<figcaption><ul class="legend">{legend}</ul>{notes}</figcaption></figure>'


# ---------------------------------------------------------------------------------------------
# Several quantities over one time axis: panels stacked, each with its own y axis


@dataclass(frozen=True)
class Panel:
    """One band of a TimeChart: its own y axis and series (a point whose y is NaN breaks a line)."""

    name: str  # the <g class="panel" data-panel=...> it is drawn in
    y: Axis
    series: tuple[Series, ...]
    horizontal_lines: tuple[tuple[float, str], ...] = ()


@dataclass(frozen=True)
class Band:
    """A shaded span of the time axis across every panel, e.g. the warm-up."""

    start: float
    end: float
    label: str


@dataclass(frozen=True)
class TimeChart:
    title: str
    x: Axis
    panels: tuple[Panel, ...]
    bands: tuple[Band, ...] = ()
    width: int = 920
    panel_height: int = 120
    css_class: str = "chart"
    notes: tuple[str, ...] = field(default=())


_PANEL_GAP = 14
_TIME_MARGIN_LEFT = 76


def _segments(points: Sequence[tuple[float, float]]) -> list[list[tuple[float, float]]]:
    """The runs of finite points: a NaN (no value in that interval) ends a line."""
    segments: list[list[tuple[float, float]]] = [[]]
    for x, y in points:
        if math.isfinite(x) and math.isfinite(y):
            segments[-1].append((x, y))
        elif segments[-1]:
            segments.append([])
    return [s for s in segments if s]


def render_time(chart: TimeChart) -> str:
    """The chart as a <figure>: one SVG with the panels stacked on the shared time axis (its ticks
    and title under the last panel), the bands shaded across all, then an HTML legend."""
    width = chart.width
    plot_left, plot_right = _TIME_MARGIN_LEFT, width - _MARGIN_RIGHT
    height = _MARGIN_TOP + len(chart.panels) * (chart.panel_height + _PANEL_GAP) - _PANEL_GAP + _MARGIN_BOTTOM
    xs = [x for p in chart.panels for s in p.series for x, _ in s.points] + [
        v for b in chart.bands for v in (b.start, b.end)]
    x_scale = _Scale(chart.x, xs, (plot_left, plot_right))
    plot_top = _MARGIN_TOP
    plot_bottom = height - _MARGIN_BOTTOM
    parts = [
        f'<svg class="{_esc(chart.css_class)}" xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" aria-label="{_esc(chart.title)}">',
        f"<title>{_esc(chart.title)}</title>",
        f'<text class="chart-title" x="{plot_left}" y="18">{_esc(chart.title)}</text>',
    ]
    for index, panel in enumerate(chart.panels):
        top = _MARGIN_TOP + index * (chart.panel_height + _PANEL_GAP)
        bottom = top + chart.panel_height
        ys = [y for s in panel.series for _, y in s.points] + [y for y, _ in panel.horizontal_lines]
        y_scale = _Scale(panel.y, ys, (bottom, top))
        parts.append(f'<g class="panel" data-panel="{_esc(panel.name)}">')
        parts.append(f'<rect class="plot-area" x="{plot_left}" y="{top}" width="{plot_right - plot_left}" '
                     f'height="{chart.panel_height}"/>')
        for band in chart.bands:
            left, right = (max(plot_left, min(plot_right, x_scale(v))) for v in (band.start, band.end))
            parts.append(f'<rect class="band" x="{left:.1f}" y="{top}" width="{max(0.0, right - left):.1f}" '
                         f'height="{chart.panel_height}"><title>{_esc(band.label)}</title></rect>')
            if index == 0:
                parts.append(f'<text class="band-label" x="{left + 4:.1f}" y="{top + 12}">{_esc(band.label)}</text>')
        for pixel, _ in x_scale.ticks():
            parts.append(f'<line class="grid" x1="{pixel:.1f}" y1="{top}" x2="{pixel:.1f}" y2="{bottom}"/>')
        for pixel, label in y_scale.ticks():
            parts.append(f'<line class="grid" x1="{plot_left}" y1="{pixel:.1f}" x2="{plot_right}" y2="{pixel:.1f}"/>')
            parts.append(f'<text class="tick y" x="{plot_left - 4}" y="{pixel + 4:.1f}" text-anchor="end">'
                         f"{_esc(label)}</text>")
        parts.append(f'<text class="axis-title" transform="translate(14 {(top + bottom) / 2:.1f}) rotate(-90)" '
                     f'text-anchor="middle">{_esc(panel.y.title)}</text>')
        for value, label in panel.horizontal_lines:
            if y_scale.usable(value):
                pixel = y_scale(value)
                parts.append(f'<line class="reference" x1="{plot_left}" y1="{pixel:.1f}" x2="{plot_right}" '
                             f'y2="{pixel:.1f}"/><text class="reference-label" x="{plot_right - 4}" '
                             f'y="{pixel - 4:.1f}" text-anchor="end">{_esc(label)}</text>')
        for series in panel.series:
            usable = [(x, y) if x_scale.usable(x) and y_scale.usable(y) else (math.nan, math.nan)
                      for x, y in series.points]
            dash = ' stroke-dasharray="6 4"' if series.dashed else ""
            for segment in _segments(usable):
                if len(segment) == 1:  # a value alone between two gaps: a dot, a line would have no length
                    x, y = segment[0]
                    parts.append(f'<circle class="dot" cx="{x_scale(x):.1f}" cy="{y_scale(y):.1f}" r="2.5" '
                                 f'fill="{series.color}"><title>{_esc(series.label)}: {x:g}, {y:g}</title></circle>')
                    continue
                path = " ".join(f"{x_scale(x):.1f},{y_scale(y):.1f}" for x, y in segment)
                parts.append(f'<polyline class="series" points="{path}" stroke="{series.color}"{dash}>'
                             f"<title>{_esc(series.label)}</title></polyline>")
        parts.append("</g>")
    for pixel, label in x_scale.ticks():
        parts.append(f'<text class="tick x" x="{pixel:.1f}" y="{plot_bottom + 14}" text-anchor="middle">'
                     f"{_esc(label)}</text>")
    parts.append(f'<text class="axis-title" x="{(plot_left + plot_right) / 2:.1f}" y="{height - 6}" '
                 f'text-anchor="middle">{_esc(chart.x.title)}</text>')
    parts.append("</svg>")
    legend = "".join(
        f'<li><span class="swatch{" dashed" if s.dashed else ""}" style="border-color:{s.color}"></span>'
        f"{_esc(s.label)}</li>"
        for p in chart.panels for s in p.series
    ) + "".join(f'<li><span class="swatch band"></span>{_esc(b.label)}</li>' for b in chart.bands)
    notes = "".join(f'<p class="note">{_esc(n)}</p>' for n in chart.notes)
    return (f'<figure class="figure">{"".join(parts)}<figcaption class="wide"><ul class="legend">{legend}</ul>'
            f"{notes}</figcaption></figure>")
