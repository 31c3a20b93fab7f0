"""The sweep view's shapes: order by run and step, the Parquet columns, the text and markdown tables, the plot."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pyarrow.parquet as pq

from trace_assets.sweep import (
    ScopeRecord,
    display_rows,
    markdown_table,
    plot_svg,
    scope_parts,
    text_table,
    write_parquet,
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


def test_display_rows_have_the_same_fields_and_no_empty_cell():
    rows = display_rows([*RECORDS, _record("sweep-c", 3)])  # sweep-c excluded nothing
    assert len({tuple(row) for row in rows}) == 1
    assert [(r["step"], r["mean_reward"]) for r in rows] == [
        ("-", "-"),
        ("25", "0.250"),
        ("75", "0.750"),
        ("-", "0.500"),
    ]
    assert rows[0]["excluded_by_reason"] == "6 no_trajectory" and rows[3]["excluded_by_reason"] == "none"


def test_an_empty_sweep_still_writes_the_columns(tmp_path):
    write_parquet([], tmp_path / "sweep.parquet")
    table = pq.read_table(tmp_path / "sweep.parquet")
    assert table.num_rows == 0 and "export_ratio" in table.column_names
    assert text_table([]) == "no scope has been published yet\n"


def test_text_table_lines_up_and_says_exclusions_and_where():
    lines = text_table(RECORDS).splitlines()
    assert lines[0].split() == [
        "scope", "trial_dirs", "scored", "exported", "ratio", "mean_reward", "rows", "verdict", "published_at",
    ]  # fmt: skip
    assert lines[1].split()[:6] == ["sweep-a", "35", "34", "28", "82.4%", "-"]
    assert lines[2].strip() == "excluded: 6 no_trajectory; published to /published/sweep-a"
    assert lines[4].strip().startswith("excluded: 5 no_trajectory, 1 multimodal")
    assert len({len(lines[i]) for i in (1, 3)}) == 1  # aligned


def test_markdown_bars_follow_the_figures():
    rows = markdown_table(RECORDS).splitlines()[2:]
    assert rows[0].startswith("| sweep-a | - | `") and rows[0].split(" | ")[3] == "-"  # a whole run, no reward
    assert "`" + "█" * 15 + "░" * 5 + "` 0.750" in rows[2]


def test_plot_is_one_svg_with_both_charts():
    root = ET.fromstring(plot_svg(RECORDS))
    titles = [t.text for t in root.iter("{http://www.w3.org/2000/svg}text")]
    assert "export ratio (% of scored)" in titles and "mean reward of exported trials" in titles
    assert "sweep-b s25" in titles and "82.4" in titles


def test_a_non_finite_mean_reward_reads_as_unknown(tmp_path):
    records = [_record("odd/step-1", 10, float("nan")), _record("odd/step-2", 10, float("inf"))]
    records.append(_record("odd/step-3", 10, float("-inf")))
    for line in text_table(records).splitlines()[1::2]:
        assert line.split()[5] == "-"
    for row in markdown_table(records).splitlines()[2:]:
        assert row.split(" | ")[3] == "-"
    svg = plot_svg(records)
    ET.fromstring(svg)
    assert "nan" not in svg and "inf" not in svg
    write_parquet(records, tmp_path / "sweep.parquet")
    assert [r["mean_reward"] for r in pq.read_table(tmp_path / "sweep.parquet").to_pylist()] == [None] * 3


def test_a_huge_mean_reward_reads_in_a_few_digits():
    [line] = text_table([_record("huge", 10, 1e308)]).splitlines()[1::2]
    assert line.split()[5] == "1e+308"
