"""The sweep view's shapes: order by run and step, the Parquet columns, the text and markdown tables
with states and totals, the plot."""

from __future__ import annotations

import dataclasses
import xml.etree.ElementTree as ET

import pyarrow.parquet as pq

from trace_assets.sweep.parquet_file import write_parquet
from trace_assets.sweep.scope_state import ScopeState
from trace_assets.sweep.view import (
    DISPLAY_COLUMNS,
    ScopeRecord,
    ScopeStatus,
    detail_text,
    display_rows,
    markdown_table,
    plot_svg,
    scope_parts,
    text_table,
)


def _record(scope: str, exported: int, mean_reward: float | None = 0.5, **excluded: int) -> ScopeRecord:
    return ScopeRecord(
        scope=scope,
        trial_dirs=exported + sum(excluded.values()) + 1,
        scored=exported + sum(excluded.values()),
        exported=exported,
        rows=exported,
        secret_verdict="clean",
        published_at="2025-01-02 03:04:05 UTC",
        published_to=f"/published/{scope}",
        excluded=dict(excluded),
        mean_reward=mean_reward,
    )


RECORDS = [
    _record("sweep-b/step-75", 30, 0.75),
    _record("sweep-b/step-25", 20, 0.25, no_trajectory=5, multimodal=1),
    _record("sweep-a", 28, None, no_trajectory=6),
]
PUBLISHED = [ScopeStatus(r.scope, ScopeState.PUBLISHED, published=r) for r in RECORDS]


def test_scope_keys_name_run_and_step():
    assert scope_parts("sweep-b/step-25") == ("sweep-b", 25)
    assert scope_parts("sweep-a") == ("sweep-a", None)
    assert scope_parts("a/b/step-3") == ("a/b", 3)


def test_parquet_has_a_row_per_scope_in_run_and_step_order(tmp_path):
    write_parquet(RECORDS, tmp_path / "sweep.parquet")
    rows = pq.read_table(tmp_path / "sweep.parquet").to_pylist()
    assert [(r["run"], r["step"]) for r in rows] == [("sweep-a", None), ("sweep-b", 25), ("sweep-b", 75)]
    assert rows[1]["export_ratio"] == round(20 / 26, 6) and rows[1]["excluded"] == 6
    assert rows[1]["excluded_by_reason"] == [("no_trajectory", 5), ("multimodal", 1)]
    assert rows[0]["mean_reward"] is None and rows[2]["mean_reward"] == 0.75


def test_display_rows_list_every_scope_with_its_state_in_narrow_fields_and_no_empty_cell():
    blocked = ScopeStatus("sweep-c", ScopeState.BLOCKED, "blocked by check no_live_secrets")
    kept = ScopeStatus("sweep-d", ScopeState.FAILED, "step failed", _record("sweep-d", 3))  # the version before
    rows = display_rows([kept, blocked, *PUBLISHED, ScopeStatus("sweep-e", ScopeState.NOT_EXPORTED)])
    assert {tuple(row) for row in rows} == {DISPLAY_COLUMNS} and len(DISPLAY_COLUMNS) == 5
    assert [(r["scope"], r["state"], r["exported"]) for r in rows] == [
        ("sweep-a", "published", 28),
        ("sweep-b/step-25", "published", 20),
        ("sweep-b/step-75", "published", 30),
        ("sweep-c", "blocked", "-"),
        ("sweep-d", "failed", 3),
        ("sweep-e", "not exported yet", "-"),
    ]
    assert rows[3]["published_at"] == rows[3]["verdict"] == "-" and rows[4]["published_at"] != "-"
    assert all(value != "" for row in rows for value in row.values())


def test_an_empty_sweep_still_writes_the_columns(tmp_path):
    write_parquet([], tmp_path / "sweep.parquet")
    table = pq.read_table(tmp_path / "sweep.parquet")
    assert table.num_rows == 0 and "export_ratio" in table.column_names
    assert text_table([]) == "no scope has been exported yet\n"


def test_text_table_lines_up_and_says_exclusions_and_where():
    lines = text_table(PUBLISHED).splitlines()
    assert lines[0].split() == [
        "scope", "state", "trial_dirs", "scored", "exported", "ratio", "mean_reward", "rows", "verdict", "published_at",
    ]  # fmt: skip
    assert lines[1].split()[:7] == ["sweep-a", "published", "35", "34", "28", "82.4%", "-"]
    assert lines[2].strip() == "excluded: 6 no_trajectory; published to /published/sweep-a"
    assert lines[4].strip().startswith("excluded: 5 no_trajectory, 1 multimodal")
    assert len({len(lines[i]) for i in (1, 3)}) == 1  # aligned


def test_every_state_says_why_and_totals_sum_a_runs_steps_and_the_sweep():
    """A scope blocked, refused or failed says why under its line; one never published shows no
    figures; a failed one still shows the version published before; totals count states and sum
    only what is published."""
    [sweep_b_75, sweep_b_25, sweep_a] = RECORDS
    statuses = [
        ScopeStatus("sweep-b/step-25", ScopeState.FAILED, "step published_shards failed: disk full", sweep_b_25),
        ScopeStatus("sweep-b/step-75", ScopeState.PUBLISHED, published=sweep_b_75),
        ScopeStatus("sweep-b/step-99", ScopeState.BLOCKED, "blocked by check no_live_secrets on secret_scan_report: x"),
        ScopeStatus("sweep-a", ScopeState.REFUSED, "step published_shards failed: refusing to publish", sweep_a),
        ScopeStatus("sweep-c", ScopeState.NOT_EXPORTED),
    ]
    lines = text_table(statuses).splitlines()
    cells = {line.split()[0] + (" " + line.split()[1] if line.split()[1] == "total" else ""): line for line in lines}
    assert cells["sweep-b/step-99"].split()[1:] == ["blocked"] + ["-"] * 8
    assert cells["sweep-c"].split()[1:4] == ["not", "exported", "yet"]
    assert lines[lines.index(cells["sweep-b/step-99"]) + 1].strip() == (
        "blocked by check no_live_secrets on secret_scan_report: x"
    )
    assert lines[lines.index(cells["sweep-b/step-25"]) + 1].strip() == (
        "step published_shards failed: disk full; excluded: 5 no_trajectory, 1 multimodal; "
        "published to /published/sweep-b/step-25"
    )
    assert cells["sweep-a"].split()[1:5] == ["refused", "35", "34", "28"]
    # sweep-b's steps summed (only the published figures: step-99 never was), then the sweep's
    assert cells["sweep-b total"].split()[2:] == ["3", "scopes", "58", "56", "50", "89.3%", "-", "50", "-", "-"]
    assert lines[lines.index(cells["sweep-b total"]) + 1].strip() == "1 published, 1 blocked, 1 failed"
    assert cells["sweep total"].split()[2:10] == ["5", "scopes", "93", "90", "78", "86.7%", "-", "78"]
    assert lines[-1].strip() == "1 published, 1 blocked, 1 refused, 1 failed, 1 not exported yet"
    assert "sweep-a total" not in cells and "sweep-c total" not in cells  # one scope: no total of its own
    assert "total" not in text_table(statuses[:1]) + markdown_table(statuses[:1])  # nor a sweep of one

    # Two tables, so that each fits the page: the figures, then each scope's why and exclusions.
    figures, details = (table.splitlines() for table in markdown_table(statuses).split("\n\n"))
    assert figures[0].count("|") == figures[2].count("|") == 7 and details[0] == "| scope | why, exclusions |"
    [blocked] = [row for row in figures if row.startswith("| sweep-b/step-99 |")]
    assert blocked.split(" | ")[1] == "blocked"
    assert "| sweep-b/step-99 | blocked by check no_live_secrets on secret_scan_report: x |" in details
    assert figures[-1] == "| **sweep total** | 5 scopes | 78 / 90 | 86.7% | - | 78 |"
    assert any(row.startswith("| **sweep-b total** | 3 scopes |") for row in figures)
    assert details[-1] == "| **sweep total** | 1 published, 1 blocked, 1 refused, 1 failed, 1 not exported yet |"


def test_markdown_bars_follow_the_figures():
    rows = markdown_table(PUBLISHED).splitlines()[2:]
    assert rows[0].startswith("| sweep-a | published | 28 / 34 | `") and rows[0].split(" | ")[4] == "-"  # no reward
    assert "`" + "█" * 8 + "░" * 2 + "` 0.750" in rows[2]
    assert "published to" not in markdown_table(PUBLISHED)  # a path is one long word: it would not wrap


def test_plot_is_one_svg_with_a_line_per_run_over_its_steps():
    root = ET.fromstring(plot_svg(RECORDS))
    titles = [t.text for t in root.iter("{http://www.w3.org/2000/svg}text")]
    assert "export ratio (% of scored), by step" in titles and "mean reward of exported trials, by step" in titles
    assert {"sweep-a", "sweep-b"} <= set(titles)  # the legend: a colour per run
    lines = list(root.iter("{http://www.w3.org/2000/svg}polyline")) + list(
        root.iter("{http://www.w3.org/2000/svg}circle")
    )
    assert len(lines) > 2


def test_the_plot_of_thousands_of_steps_keeps_its_size():
    """20 runs of 100 steps: a fixed-size picture, a line per run, 14 named and the rest counted."""
    records = [_record(f"run-{r:02d}/step-{s}", 10, s / 100) for r in range(20) for s in range(1, 101)]
    root = ET.fromstring(plot_svg(records))
    assert root.get("width") == "720"
    assert len(list(root.iter("{http://www.w3.org/2000/svg}polyline"))) == 2 * 20 + 2  # and two axes
    assert "and 6 more" in [t.text for t in root.iter("{http://www.w3.org/2000/svg}text")]


def test_a_non_finite_mean_reward_reads_as_unknown(tmp_path):
    records = [_record("odd/step-1", 10, float("nan")), _record("odd/step-2", 10, float("inf"))]
    records.append(_record("odd/step-3", 10, float("-inf")))
    statuses = [ScopeStatus(r.scope, ScopeState.PUBLISHED, published=r) for r in records]
    for line in text_table(statuses).splitlines()[1:7:2]:
        assert line.split()[6] == "-"
    for row in markdown_table(statuses).splitlines()[2:5]:
        assert row.split(" | ")[4] == "-"
    svg = plot_svg(records)
    ET.fromstring(svg)
    assert "nan" not in svg and "inf" not in svg
    write_parquet(records, tmp_path / "sweep.parquet")
    assert [r["mean_reward"] for r in pq.read_table(tmp_path / "sweep.parquet").to_pylist()] == [None] * 3


def test_a_huge_mean_reward_reads_in_a_few_digits():
    huge = _record("huge", 10, 1e308)
    line = text_table([ScopeStatus(huge.scope, ScopeState.PUBLISHED, published=huge)]).splitlines()[1]
    assert line.split()[6] == "1e+308"


def test_a_scope_with_private_values_says_per_category_what_was_found_and_replaced():
    found = dataclasses.replace(
        _record("sweep-a", 5), private_found="email: 3, home_path: 1", private_replaced="email: 3, home_path: 1"
    )
    kept = dataclasses.replace(_record("sweep-b", 5), private_found="email: 2", private_replaced="none")
    assert "private values found: email: 3, home_path: 1, replaced: email: 3, home_path: 1" in detail_text(
        ScopeStatus("sweep-a", ScopeState.PUBLISHED, published=found)
    )
    assert detail_text(ScopeStatus("sweep-b", ScopeState.PUBLISHED, published=kept), where=False) == (
        "excluded: none; private values found: email: 2, replaced: none"
    )
    for clean in (_record("sweep-c", 5), dataclasses.replace(_record("sweep-c", 5), private_found="none")):
        assert "private" not in detail_text(ScopeStatus("sweep-c", ScopeState.PUBLISHED, published=clean))
