"""Every bad trial folder gets a status and a named reason; nothing crashes, nothing is dropped."""

from __future__ import annotations

import pytest

from trace_assets.store.trace_store import TraceStore
from trace_assets_tests.support.bad_input import CASES, RUN_ID, write_bad_input_run
from trace_assets_tests.support.helpers import run_steps


@pytest.mark.parametrize("include_subagents", [False, True], ids=["main-only", "with-subagents"])
def test_every_bad_folder_gets_its_reason(tmp_path, include_subagents):
    write_bad_input_run(tmp_path / "traces")
    rows, coverage, statuses = run_steps(
        TraceStore(str(tmp_path / "traces")), RUN_ID, tmp_path / "staging", include_subagents
    )

    by_dir = {s["trial_dir"]: s for s in statuses}
    assert set(by_dir) == set(CASES)
    for folder, (_, reason) in CASES.items():
        assert by_dir[folder]["reason"] == reason, (folder, by_dir[folder]["detail"])
        assert by_dir[folder]["status"] == ("exported" if reason is None else "excluded")
        if reason is not None:
            assert by_dir[folder]["detail"], folder

    assert coverage.accounted
    assert coverage.trial_dirs == len(CASES)
    exported = [folder for folder, (_, reason) in CASES.items() if reason is None]
    assert coverage.exported == len(exported)
    assert {r["trial_name"] for r in rows} == {folder.rsplit("/", 1)[-1] for folder in exported}
    reasons = {
        "no_result_json",
        "invalid_result_json",
        "no_trajectory",
        "invalid_trajectory",
        "no_agent_turns",
        "multimodal",
    }
    assert set(coverage.excluded) == reasons


def test_row_values_for_odd_but_valid_input(tmp_path):
    write_bad_input_run(tmp_path / "traces")
    rows, _, statuses = run_steps(
        TraceStore(str(tmp_path / "traces")), RUN_ID, tmp_path / "staging", include_subagents=True
    )
    by_trial = {r["trial_name"]: r for r in rows}
    assert by_trial["odd-reward__g1"]["result"] == "pass"  # Harbor keeps a non-numeric reward as text
    assert by_trial["non-utf8-verifier__g2"]["verifier_output"] == "ok \ufffd\nwarn\n"
    broken = next(s for s in statuses if s["trial_dir"] == "broken-subagent__g4")
    assert "trajectory.summarization-1-summary.json is not valid JSON" in broken["detail"]
    assert [r.get("trace_source") for r in rows if r["trial_name"] == "broken-subagent__g4"] == ["main"]
