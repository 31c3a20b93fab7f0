"""The sweep view: one record per published scope, as a table (Parquet, text, markdown) and a plot.

Records come from wherever the last publish of each scope left its figures (the Dagster layer reads
them from `published_shards`' materializations, so the view needs no staging); this module only
shapes them. A scope key is `run` or `run/step-N`; the step is parsed for sorting and plotting.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from trace_assets.publishing.plots import HEIGHT, bar_chart_svg
from trace_assets.scope import RunScope

SWEEP_FILE = "sweep_coverage.parquet"
SWEEP_PLOT = "sweep_coverage.svg"
BAR_WIDTH = 20  # glyphs in a full markdown bar
UNKNOWN = "-"  # a whole run's step, or a mean reward not known: a viewer shows this, never an empty cell


@dataclass(frozen=True)
class ScopeRecord:
    """What the last publish of one scope said about it."""

    scope: str
    trial_dirs: int
    scored: int
    exported: int
    rows: int
    secret_verdict: str
    published_at: str  # ISO 8601, UTC
    published_to: str
    excluded: dict[str, int] = field(default_factory=dict)
    mean_reward: float | None = None  # exported trials with a finite, valid reward; None before it was recorded

    def __post_init__(self) -> None:
        # A NaN or infinite mean is no figure to show, plot or compare: unknown, in every view and the file.
        if self.mean_reward is not None and not math.isfinite(self.mean_reward):
            object.__setattr__(self, "mean_reward", None)

    @property
    def run(self) -> str:
        return scope_parts(self.scope)[0]

    @property
    def step(self) -> int | None:
        return scope_parts(self.scope)[1]

    @property
    def export_ratio(self) -> float:
        return self.exported / self.scored if self.scored else 0.0

    @property
    def step_text(self) -> str:
        return UNKNOWN if self.step is None else str(self.step)

    @property
    def reward_text(self) -> str:
        if self.mean_reward is None:
            return UNKNOWN
        return f"{self.mean_reward:.3f}" if abs(self.mean_reward) < 1e6 else f"{self.mean_reward:g}"  # not 300 digits


def scope_parts(key: str) -> tuple[str, int | None]:
    """(run, step) of a scope key, as `RunScope.from_key` reads it: `run/step-25` -> ("run", 25)."""
    scope = RunScope.from_key(key)
    return scope.run_id, None if scope.step is None else int(scope.step.removeprefix("step-"))


def sorted_records(records: list[ScopeRecord]) -> list[ScopeRecord]:
    """By run, then step (a whole run first), so a run's steps read in training order."""
    return sorted(records, key=lambda r: (r.run, -1 if r.step is None else r.step, r.scope))


SCHEMA = pa.schema(
    [
        ("scope", pa.string()),
        ("run", pa.string()),
        ("step", pa.int64()),
        ("trial_dirs", pa.int64()),
        ("scored", pa.int64()),
        ("exported", pa.int64()),
        ("export_ratio", pa.float64()),
        ("excluded", pa.int64()),
        ("excluded_by_reason", pa.map_(pa.string(), pa.int64())),
        ("secret_verdict", pa.string()),
        ("rows", pa.int64()),
        ("mean_reward", pa.float64()),
        ("published_at", pa.string()),
        ("published_to", pa.string()),
    ]
)


def as_rows(records: list[ScopeRecord]) -> list[dict[str, Any]]:
    """One plain dict per scope, in SCHEMA's columns and the view's order."""
    return [
        {
            "scope": r.scope,
            "run": r.run,
            "step": r.step,
            "trial_dirs": r.trial_dirs,
            "scored": r.scored,
            "exported": r.exported,
            "export_ratio": round(r.export_ratio, 6),
            "excluded": sum(r.excluded.values()),
            "excluded_by_reason": sorted(r.excluded.items(), key=lambda item: (-item[1], item[0])),
            "secret_verdict": r.secret_verdict,
            "rows": r.rows,
            "mean_reward": r.mean_reward,
            "published_at": r.published_at,
            "published_to": r.published_to,
        }
        for r in sorted_records(records)
    ]


def write_parquet(records: list[ScopeRecord], path: Path) -> None:
    pq.write_table(pa.Table.from_pylist(as_rows(records), schema=SCHEMA), path)


def exclusions_text(excluded: dict[str, int]) -> str:
    return ", ".join(f"{n} {reason}" for reason, n in sorted(excluded.items(), key=lambda i: (-i[1], i[0])))


def display_rows(records: list[ScopeRecord]) -> list[dict[str, str | int | float]]:
    """`as_rows` for a viewer without nulls (Dagster's table metadata wants the same fields in every
    record, and shows a missing value as an empty cell): step and mean reward as text, "-" where
    unknown; exclusions on one line."""
    return [
        {
            **row,
            "step": record.step_text,
            "mean_reward": record.reward_text,
            "excluded_by_reason": exclusions_text(record.excluded) or "none",
        }
        for row, record in zip(as_rows(records), sorted_records(records))
    ]


TEXT_COLUMNS = ("scope", "trial_dirs", "scored", "exported", "ratio", "mean_reward", "rows", "verdict", "published_at")


def text_table(records: list[ScopeRecord]) -> str:
    """The view for a terminal: aligned columns, exclusions and where on a line under each scope."""
    if not records:
        return "no scope has been published yet\n"
    cells = [
        [
            r.scope,
            str(r.trial_dirs),
            str(r.scored),
            str(r.exported),
            f"{r.export_ratio:.1%}",
            r.reward_text,
            str(r.rows),
            r.secret_verdict,
            r.published_at,
        ]
        for r in sorted_records(records)
    ]
    widths = [max(len(row[i]) for row in [list(TEXT_COLUMNS), *cells]) for i in range(len(TEXT_COLUMNS))]

    def line(row: list[str]) -> str:
        return "  ".join(c.ljust(w) if i in (0, 7, 8) else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths)))

    out = [line(list(TEXT_COLUMNS)).rstrip()]
    for record, row in zip(sorted_records(records), cells):
        out.append(line(row).rstrip())
        excluded = exclusions_text(record.excluded)
        out.append(f"    excluded: {excluded or 'none'}; published to {record.published_to}")
    return "\n".join(out) + "\n"


def _bar(fraction: float) -> str:
    filled = round(max(0.0, min(1.0, fraction)) * BAR_WIDTH)
    return "█" * filled + "░" * (BAR_WIDTH - filled)


def markdown_table(records: list[ScopeRecord]) -> str:
    """Dagster has no chart metadata: export ratio and mean reward as bars of glyphs, per run and step."""
    out = ["| run | step | export ratio | mean reward | exported / scored | verdict |", "|---|---|---|---|---|---|"]
    for r in sorted_records(records):
        reward = UNKNOWN if r.mean_reward is None else f"`{_bar(r.mean_reward)}` {r.reward_text}"
        out.append(
            f"| {r.run} | {r.step_text} | `{_bar(r.export_ratio)}` {r.export_ratio:.1%} | {reward} "
            f"| {r.exported} / {r.scored} | {r.secret_verdict} |"
        )
    return "\n".join(out) + "\n"


def plot_svg(records: list[ScopeRecord]) -> str:
    """Export ratio (%) and mean reward by run and step: two bar charts, one above the other."""
    ordered = sorted_records(records)
    labels = [r.run if r.step is None else f"{r.run} s{r.step}" for r in ordered]
    width = max(480, 60 * len(ordered) + 60)
    ratio = bar_chart_svg(
        "export ratio (% of scored)",
        [(label, round(100 * r.export_ratio, 1)) for label, r in zip(labels, ordered)],
        width=width,
    )
    reward = bar_chart_svg(
        "mean reward of exported trials",
        [(label, round(r.mean_reward or 0.0, 3)) for label, r in zip(labels, ordered)],
        width=width,
    )
    height = 2 * HEIGHT
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}">\n'
        f'<g>{ratio}</g>\n<g transform="translate(0,{HEIGHT})">{reward}</g>\n</svg>\n'
    )
