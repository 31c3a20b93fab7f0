"""Rows equal what Harbor 0.25's and 0.26's own exporter makes, field for field (run_id aside)."""

from __future__ import annotations

import json

import pytest

from trace_assets.store.trace_store import TraceStore
from trace_assets_tests.support.golden_trials import make_golden_trials
from trace_assets_tests.support.helpers import DATA, SAMPLE_RUN, SAMPLE_TRACES, comparable, harbor_rows, run_steps


@pytest.mark.parametrize("include_subagents", [False, True], ids=["main-only", "with-subagents"])
def test_sample_run_rows_match_harbor_export(tmp_path, include_subagents):
    rows, _, _ = run_steps(TraceStore(str(SAMPLE_TRACES)), SAMPLE_RUN, tmp_path, include_subagents)
    expected = harbor_rows(DATA / "harbor_sample" / "harbor-export-last.jsonl", include_subagents)

    assert [(r["trial_name"], r.get("trace_source")) for r in rows] == [
        (r["trial_name"], r.get("trace_source")) for r in expected
    ]
    for ours, theirs in zip(comparable(rows), comparable(expected)):
        assert list(ours) == list(theirs)
        assert ours == theirs, ours["trial_name"]
    assert {r["run_id"] for r in rows} == {SAMPLE_RUN}


@pytest.mark.parametrize("include_subagents", [False, True], ids=["main-only", "with-subagents"])
def test_golden_trajectories_match_harbor_export(tmp_path, include_subagents):
    """Summarization subagents, a linear-history continuation, invalid-JSON replies, a timeout."""
    make_golden_trials(tmp_path / "traces" / "golden" / "trace_jobs")
    rows, coverage, _ = run_steps(
        TraceStore(str(tmp_path / "traces")), "golden", tmp_path / "staging", include_subagents
    )
    name = "expected-subagents.jsonl" if include_subagents else "expected-main.jsonl"
    expected = [json.loads(line) for line in (DATA / "harbor_golden" / name).read_text().splitlines()]
    if not include_subagents:
        expected = [{k: v for k, v in r.items() if k != "trace_source"} for r in expected]

    assert comparable(rows) == comparable(expected)
    assert coverage.exported == 4
    continued = next(r for r in rows if r["trial_name"].endswith("linear-history__golden"))
    assert continued["episode"] == "episode-6"  # numbered across trajectory.json and trajectory.cont-1.json


def test_sample_coverage_matches_truth(tmp_path):
    truth = json.loads((DATA / "harbor_sample" / "truth.json").read_text())
    _, coverage, statuses = run_steps(TraceStore(str(SAMPLE_TRACES)), SAMPLE_RUN, tmp_path)
    expected_reason = {
        "normal": None,
        "exception": None,
        "continued": None,
        "summarized": None,
        "unscored": "no_result_json",
        "corrupt_result": "invalid_result_json",
        "no_trajectory": "no_trajectory",
        "no_agent_turns": "no_agent_turns",
    }
    by_name = {s["trial_name"]: s for s in statuses}
    assert set(by_name) == {t["trial_name"] for t in truth["trials"]}
    for trial in truth["trials"]:
        status = by_name[trial["trial_name"]]
        assert status["reason"] == expected_reason[trial["kind"]], trial["trial_name"]
        assert status["status"] == ("exported" if expected_reason[trial["kind"]] is None else "excluded")
        assert status["trial_dir"] == trial["dir"].removeprefix("trace_jobs/")

    kinds = [t["kind"] for t in truth["trials"]]
    assert coverage.trial_dirs == len(kinds) == 36
    assert coverage.unscored == kinds.count("unscored")
    assert coverage.scored == len(kinds) - kinds.count("unscored")
    assert coverage.exported == sum(expected_reason[k] is None for k in kinds)
    assert coverage.excluded == {
        "no_result_json": 2,
        "invalid_result_json": 1,
        "no_trajectory": 3,
        "no_agent_turns": 2,
    }
    assert coverage.accounted
