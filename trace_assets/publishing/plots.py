"""Small bar charts as SVG text, written by hand: the card's plots without a plotting library."""

from __future__ import annotations

import math
from collections.abc import Sequence
from html import escape

WIDTH, HEIGHT, MARGIN = 480, 220, 30


def bar_chart_svg(title: str, bars: Sequence[tuple[str, float]], width: int = WIDTH) -> str:
    """Bars with their labels under them and values over them; deterministic text for the same input.
    A value of 0 or less (a negative mean reward) has no bar, only its value. `width` grows for many
    bars (a sweep's scopes)."""
    top = max((count for _, count in bars if count > 0), default=0) or 1
    slot = (width - 2 * MARGIN) / max(len(bars), 1)
    plot_height = HEIGHT - 3 * MARGIN
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{HEIGHT}" '
        f'viewBox="0 0 {width} {HEIGHT}" font-family="sans-serif" font-size="10">',
        f'<rect width="{width}" height="{HEIGHT}" fill="white"/>',
        f'<text x="{width / 2:.0f}" y="16" text-anchor="middle" font-size="13">{escape(title)}</text>',
    ]
    for index, (label, count) in enumerate(bars):
        height = plot_height * max(0, count) / top  # max(0, -0.0) is 0
        x = MARGIN + index * slot
        y = HEIGHT - 2 * MARGIN - height
        parts.append(f'<rect x="{x + 2:.1f}" y="{y:.1f}" width="{slot - 4:.1f}" height="{height:.1f}" fill="#4f7fbf"/>')
        parts.append(f'<text x="{x + slot / 2:.1f}" y="{y - 3:.1f}" text-anchor="middle">{count}</text>')
        parts.append(
            f'<text x="{x + slot / 2:.1f}" y="{HEIGHT - 2 * MARGIN + 14}" text-anchor="middle"{_fitted(label, slot)}>'
            f"{escape(label)}</text>"
        )
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


CHAR_WIDTH = 0.6  # of a sans-serif character, in ems: a label's estimated width


def _fitted(label: str, slot: float) -> str:
    """A smaller font for a label wider than its bar's slot (`0.000–0.075`), none for one that fits."""
    size = (slot - 4) / (CHAR_WIDTH * max(len(label), 1))
    return f' font-size="{max(size, 5):.1f}"' if size < 10 else ""


def range_label(low: float, high: float, width: float) -> str:
    """A histogram bin as people read it, `0.9–1.0` (not its lower end alone, which reads the 1.0
    bin as "0.9"): as many decimals as the bins' `width` needs, `g` notation past a million or
    below a millionth, one value for a bin too narrow to tell its ends apart."""
    if 1e-6 <= width and max(abs(low), abs(high)) < 1e6:
        decimals = next((d for d in range(7) if abs(width * 10**d - round(width * 10**d)) < 1e-6), None)
        decimals = decimals if decimals is not None else min(6, max(0, math.ceil(-math.log10(width))) + 1)
        ends = [f"{value + 0.0:.{decimals}f}" for value in (low, high)]  # + 0.0: no "-0.0"
    else:
        ends = [f"{value + 0.0:.3g}" for value in (low, high)]
    return ends[0] if ends[0] == ends[1] else f"{ends[0]}–{ends[1]}"


def integer_label(low: int, high: int) -> str:
    """A bin of whole numbers, both ends included: `4–6`, or `7` alone."""
    return str(low) if low == high else f"{low}–{high}"


PALETTE = ("#4f7fbf", "#d9823b", "#4fa36b", "#c44e52", "#8172b2", "#937860", "#da8bc3", "#8c8c8c", "#ccb974", "#64b5cd")
LINES_WIDTH, LINES_HEIGHT, LEGEND_WIDTH = 720, 240, 170
LEGEND_ROWS = 14  # series named in a legend; the rest counted under them
LEGEND_CHARS = 26  # of a series' name in the legend


Extent = tuple[float, float, float, float]  # a chart's (or a line's) x low, x high, y low, y high


def points_extent(line: Sequence[tuple[float, float]]) -> Extent | None:
    """The least and greatest x and y of a line's points, None for no points."""
    if not line:
        return None
    xs, ys = [x for x, _ in line], [y for _, y in line]
    return min(xs), max(xs), min(ys), max(ys)


def chart_extent(lines: Sequence[Extent | None]) -> Extent:
    """The axes' ends over the lines' extents (`points_extent`, in series order): y from 0 or below,
    a span of 1 where every point has one value."""
    known = [extent for extent in lines if extent is not None]
    x_low, x_high = min((e[0] for e in known), default=0.0), max((e[1] for e in known), default=0.0)
    y_low, y_high = min(0.0, min((e[2] for e in known), default=0.0)), max((e[3] for e in known), default=0.0)
    return x_low, (x_high if x_high > x_low else x_low + 1), y_low, (y_high if y_high > y_low else y_low + 1)


def line_path(line: Sequence[tuple[float, float]], extent: Extent) -> str:
    """A line's points on a chart of `extent` (`x,y` pairs, a space between): a polyline's, or a dot's
    centre for one point."""
    x_low, x_high, y_low, y_high = extent
    left, right, top, bottom = 2 * MARGIN, LINES_WIDTH - LEGEND_WIDTH, MARGIN, LINES_HEIGHT - MARGIN
    return " ".join(
        f"{left + _share(x, x_low, x_high) * (right - left):.1f},{bottom - _share(y, y_low, y_high) * (bottom - top):.1f}"
        for x, y in line
    )


def line_chart_svg(title: str, series: Sequence[tuple[str, str]], extent: Extent, x_name: str) -> str:
    """A line per series (a run's steps: its name and `line_path` on `extent`), of a fixed size however
    many points: a sweep of thousands of scopes reads as its runs' curves, not as a bar per scope. A
    series of one point is a dot; a legend names the first `LEGEND_ROWS` series in their colours.
    Deterministic text for the same input."""
    x_low, x_high, y_low, y_high = extent
    left, right, top, bottom = 2 * MARGIN, LINES_WIDTH - LEGEND_WIDTH, MARGIN, LINES_HEIGHT - MARGIN
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{LINES_WIDTH}" height="{LINES_HEIGHT}" '
        f'viewBox="0 0 {LINES_WIDTH} {LINES_HEIGHT}" font-family="sans-serif" font-size="10">',
        f'<rect width="{LINES_WIDTH}" height="{LINES_HEIGHT}" fill="white"/>',
        f'<text x="{(left + right) / 2:.0f}" y="16" text-anchor="middle" font-size="13">{escape(title)}</text>',
        f'<polyline points="{left},{top} {left},{bottom} {right},{bottom}" fill="none" stroke="#444"/>',
        f'<text x="{left - 4}" y="{top + 4}" text-anchor="end">{_tick(y_high)}</text>',
        f'<text x="{left - 4}" y="{bottom + 4}" text-anchor="end">{_tick(y_low)}</text>',
        f'<text x="{left}" y="{bottom + 14}" text-anchor="middle">{_tick(x_low)}</text>',
        f'<text x="{right}" y="{bottom + 14}" text-anchor="middle">{_tick(x_high)}</text>',
        f'<text x="{(left + right) / 2:.0f}" y="{bottom + 14}" text-anchor="middle">{escape(x_name)}</text>',
    ]
    for index, (name, path) in enumerate(series):
        colour = PALETTE[index % len(PALETTE)]
        if " " in path:
            parts.append(f'<polyline points="{path}" fill="none" stroke="{colour}" stroke-width="1.5"/>')
        elif path:
            cx, cy = path.split(",")
            parts.append(f'<circle cx="{cx}" cy="{cy}" r="2.5" fill="{colour}"/>')
        if index < LEGEND_ROWS:
            row = top + 12 * index
            label = name if len(name) <= LEGEND_CHARS else name[: LEGEND_CHARS - 1] + "…"
            parts.append(f'<rect x="{right + 10}" y="{row - 4}" width="12" height="3" fill="{colour}"/>')
            parts.append(f'<text x="{right + 26}" y="{row}">{escape(label)}</text>')
    if len(series) > LEGEND_ROWS:
        parts.append(f'<text x="{right + 10}" y="{top + 12 * LEGEND_ROWS}">and {len(series) - LEGEND_ROWS} more</text>')
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


def _share(value: float, low: float, high: float) -> float:
    """Where `value` lies from `low` (0) to `high` (1), halved first so that -1e308..1e308 spans a finite range."""
    return (value / 2 - low / 2) / (high / 2 - low / 2)


def _tick(value: float) -> str:
    return f"{value:.3g}"


REWARD_TITLE, RATIO_TITLE = "mean reward of exported trials, by step", "export ratio (% of scored), by step"


def sweep_progress_svg(runs: Sequence[tuple[str, Sequence[tuple[int, float | None, float | None]]]]) -> str:
    """A sweep's picture: per run, the mean reward and the export ratio (% of scored) of each of
    its steps (step, mean reward, ratio; None where unknown), a line per run, one chart above the
    other. A run published whole is its one point at step 0."""
    reward = [(run, [(step, value) for step, value, _ in points if value is not None]) for run, points in runs]
    ratio = [(run, [(step, 100 * value) for step, _, value in points if value is not None]) for run, points in runs]
    charts = []
    for title, series in ((REWARD_TITLE, reward), (RATIO_TITLE, ratio)):
        extent = chart_extent([points_extent(line) for _, line in series])
        charts.append(line_chart_svg(title, [(run, line_path(line, extent)) for run, line in series], extent, "step"))
    return stacked_svg(charts[0], charts[1])


def stacked_svg(upper: str, lower: str) -> str:
    """Two charts of `line_chart_svg`'s size, one above the other."""
    height = 2 * LINES_HEIGHT
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{LINES_WIDTH}" height="{height}" '
        f'viewBox="0 0 {LINES_WIDTH} {height}">\n'
        f'<g>{upper}</g>\n<g transform="translate(0,{LINES_HEIGHT})">{lower}</g>\n</svg>\n'
    )
