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
