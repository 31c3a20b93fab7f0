"""The sweep view: one record per published scope (a plot; the Parquet file is `parquet_file.py`'s),
and every scope tried with its state and what is published of it (text and markdown tables, with
per-run and sweep totals).

Records come from wherever the last publish of each scope left its figures, states from the newest
run planned to publish it (the Dagster layer reads both from the instance, so the view needs no
staging); this module only shapes them. A scope key is `run` or `run/step-N`; the step is parsed
for sorting and plotting.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

from trace_assets.core.scope import RunScope
from trace_assets.publishing.plots import sweep_progress_svg
from trace_assets.sweep.scope_state import ScopeState

SWEEP_FILE = "sweep_coverage.parquet"
SWEEP_PLOT = "sweep_coverage.svg"
BAR_WIDTH = 10  # glyphs in a full markdown bar: two bars and the state still fit the UI's page
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
    # Private values (`email: 3, home_path: 1`, or "none") the scan found and publishing replaced,
    # as recorded (counts by category, never a value); "" before publishes recorded them.
    private_found: str = ""
    private_replaced: str = ""

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


def exclusions_text(excluded: dict[str, int]) -> str:
    return ", ".join(f"{n} {reason}" for reason, n in sorted(excluded.items(), key=lambda i: (-i[1], i[0])))


DISPLAY_COLUMNS = ("scope", "state", "exported", "verdict", "published_at")
UTC_SUFFIX, DISPLAY_TIME = " UTC", len("2026-01-31 23:59")  # the page's published_at: to the minute


def display_rows(statuses: list[ScopeStatus]) -> list[dict[str, str | int]]:
    """Every scope tried, for the UI's page, in `grouped`'s order and `DISPLAY_COLUMNS`: its state,
    then what is published of it (`UNKNOWN` when nothing is): trials exported, the verdict and when,
    to the minute. Five short columns fit the asset's Overview tab (where it opens, beside its
    definition) in a 1,600 px window; scored, ratio, mean reward, rows and exclusions are in the
    Markdown table, where it went (a long path) in the Parquet file."""
    rows: list[dict[str, str | int]] = []
    for scopes, _ in grouped(statuses):
        for status in scopes:
            r = status.published
            rows.append(
                {
                    "scope": status.scope,
                    "state": str(status.state),
                    "exported": UNKNOWN if r is None else r.exported,
                    "verdict": UNKNOWN if r is None else r.secret_verdict,
                    # UTC: the column says so
                    "published_at": UNKNOWN if r is None else r.published_at.removesuffix(UTC_SUFFIX)[:DISPLAY_TIME],
                }
            )
    return rows


@dataclass(frozen=True)
class ScopeStatus:
    """A scope's newest try and what is published of it: a failed try leaves the version before it
    published, so `published` may be set whatever the state, except after a blocked scan that
    removed it (a folder, S3 or a Hub repo per sweep keep the scan report alone). `reason`: one
    line, why it did not publish."""

    scope: str
    state: ScopeState
    reason: str = ""
    published: ScopeRecord | None = None

    @property
    def run(self) -> str:
        return scope_parts(self.scope)[0]


@dataclass(frozen=True)
class Totals:
    """Published figures summed over scopes (a run's steps, or the sweep), and their states counted.
    No mean reward: a scope's count of rewarded trials is not recorded, so means cannot be weighed."""

    label: str
    states: Counter[ScopeState]
    trial_dirs: int = 0
    scored: int = 0
    exported: int = 0
    rows: int = 0

    @classmethod
    def of(cls, label: str, statuses: Iterable[ScopeStatus]) -> Totals:
        statuses = list(statuses)
        published = [s.published for s in statuses if s.published is not None]
        return cls(
            label,
            Counter(s.state for s in statuses),
            *(sum(getattr(r, name) for r in published) for name in ("trial_dirs", "scored", "exported", "rows")),
        )

    @property
    def scopes_text(self) -> str:
        count = sum(self.states.values())
        return f"{count} scope{'s' if count != 1 else ''}"

    @property
    def states_text(self) -> str:
        return ", ".join(f"{self.states[state]} {state}" for state in ScopeState if self.states[state])

    @property
    def ratio_text(self) -> str:
        return f"{self.exported / self.scored:.1%}" if self.scored else UNKNOWN


def grouped(statuses: list[ScopeStatus]) -> list[tuple[list[ScopeStatus], Totals | None]]:
    """Each run's scopes in `sorted_records`' order, with the run's totals when it has more than one
    scope (one scope's totals would repeat its line)."""

    def order(status: ScopeStatus) -> tuple[str, int]:
        run, step = scope_parts(status.scope)
        return run, -1 if step is None else step

    runs: dict[str, list[ScopeStatus]] = {}
    for status in sorted(statuses, key=order):
        runs.setdefault(status.run, []).append(status)
    return [(scopes, Totals.of(f"{run} total", scopes) if len(scopes) > 1 else None) for run, scopes in runs.items()]


def detail_text(status: ScopeStatus, where: bool = True) -> str:
    """The line under a scope: why its try did not publish, then what is published (and where)."""
    parts = [status.reason] if status.reason else []
    record = status.published
    if record is not None:
        parts.append(f"excluded: {exclusions_text(record.excluded) or 'none'}")
        if record.private_found not in ("", "none"):
            parts.append(f"private values found: {record.private_found}, replaced: {record.private_replaced or 'none'}")
        if where:
            parts.append(f"published to {record.published_to}")
    return "; ".join(parts) or "no run has tried to publish it"


TEXT_COLUMNS = (
    "scope", "state", "trial_dirs", "scored", "exported", "ratio", "mean_reward", "rows", "verdict", "published_at",
)  # fmt: skip
LEFT_ALIGNED = {0, 1, 8, 9}


def _scope_cells(status: ScopeStatus) -> list[str]:
    r = status.published
    if r is None:
        return [status.scope, str(status.state), *[UNKNOWN] * 8]
    figures = [str(r.trial_dirs), str(r.scored), str(r.exported), f"{r.export_ratio:.1%}", r.reward_text, str(r.rows)]
    return [status.scope, str(status.state), *figures, r.secret_verdict, r.published_at]


def _total_cells(totals: Totals) -> list[str]:
    figures = [str(totals.trial_dirs), str(totals.scored), str(totals.exported), totals.ratio_text]
    return [totals.label, totals.scopes_text, *figures, UNKNOWN, str(totals.rows), UNKNOWN, UNKNOWN]


def text_table(statuses: list[ScopeStatus]) -> str:
    """The view for a terminal: aligned columns; under each scope why it did not publish, its
    exclusions and where; totals per run of several scopes, and for a sweep of several."""
    if not statuses:
        return "no scope has been exported yet\n"
    lines: list[tuple[list[str], str]] = []
    for scopes, totals in grouped(statuses):
        lines += [(_scope_cells(s), detail_text(s)) for s in scopes]
        if totals is not None:
            lines.append((_total_cells(totals), totals.states_text))
    if len(statuses) > 1:
        sweep = Totals.of("sweep total", statuses)
        lines.append((_total_cells(sweep), sweep.states_text))
    widths = [
        max(len(row[i]) for row in [list(TEXT_COLUMNS), *(c for c, _ in lines)]) for i in range(len(TEXT_COLUMNS))
    ]

    def line(row: list[str]) -> str:
        return "  ".join(c.ljust(w) if i in LEFT_ALIGNED else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths)))

    out = [line(list(TEXT_COLUMNS)).rstrip()]
    for cells, detail in lines:
        out += [line(cells).rstrip(), f"    {detail}"]
    return "\n".join(out) + "\n"


def _bar(fraction: float) -> str:
    filled = round(max(0.0, min(1.0, fraction)) * BAR_WIDTH)
    return "█" * filled + "░" * (BAR_WIDTH - filled)


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def markdown_table(statuses: list[ScopeStatus]) -> str:
    """The UI's view (Dagster has no chart metadata), as two tables that fit a 1,600 px window: the
    figures, export ratio and mean reward as short bars of glyphs, totals as in `text_table` in
    bold; then each scope's (and total's) why and exclusions, plain text the page wraps, on a row
    of its own rather than in a narrow last column."""
    figures = [
        "| scope | state | exported / scored | export ratio | mean reward | rows |",
        "|---|---|---|---|---|---|",
    ]
    details = ["| scope | why, exclusions |", "|---|---|"]

    def add_total(totals: Totals) -> None:
        label = f"**{totals.label}**"
        figures.append(
            f"| {label} | {totals.scopes_text} | {totals.exported} / {totals.scored} "
            f"| {totals.ratio_text} | {UNKNOWN} | {totals.rows} |"
        )
        details.append(f"| {label} | {totals.states_text} |")

    for scopes, totals in grouped(statuses):
        for status in scopes:
            r = status.published
            details.append(f"| {status.scope} | {_cell(detail_text(status, where=False))} |")
            if r is None:
                figures.append(f"| {status.scope} | {status.state} | {UNKNOWN} | {UNKNOWN} | {UNKNOWN} | {UNKNOWN} |")
                continue
            reward = UNKNOWN if r.mean_reward is None else f"`{_bar(r.mean_reward)}` {r.reward_text}"
            figures.append(
                f"| {status.scope} | {status.state} | {r.exported} / {r.scored} "
                f"| `{_bar(r.export_ratio)}` {r.export_ratio:.1%} | {reward} | {r.rows} |"
            )
        if totals is not None:
            add_total(totals)
    if len(statuses) > 1:
        add_total(Totals.of("sweep total", statuses))
    return "\n".join(figures) + "\n\n" + "\n".join(details) + "\n"


def plot_svg(records: list[ScopeRecord]) -> str:
    """Per run, mean reward and export ratio over its steps: a line per run (`sweep_progress_svg`),
    as the root card draws them from the publish root's index."""
    runs: dict[str, list[tuple[int, float | None, float | None]]] = {}
    for r in sorted_records(records):
        runs.setdefault(r.run, []).append((r.step or 0, r.mean_reward, r.export_ratio if r.scored else None))
    return sweep_progress_svg(list(runs.items()))
