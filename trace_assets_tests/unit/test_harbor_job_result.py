"""A trial's `result` and `--filter` verdict from the job-level result.json above it, as Harbor 0.25/0.26's
`_extract_trial_result_value` and `_trial_is_success` take them, within the run's folder only."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from trace_assets.core.scope import RunScope
from trace_assets.harbor import job_result
from trace_assets.harbor.job_result import job_outcomes, job_result_keys, parse_job_file
from trace_assets.harbor.options import ExportOptions
from trace_assets.steps.staging import RunStaging
from trace_assets.store.trace_store import TraceStore
from trace_assets_tests.support.golden_trials import DATA, make_job_trials
from trace_assets_tests.support.helpers import run_steps

TRAJECTORY = DATA / "hello-world-invalid-json.trajectory.json"


def _trial(folder: Path, reward: float | None = 1.0, exception: str | None = None, name: str | None = None) -> None:
    """A terminus-2 trial folder whose own result.json says `reward` (and `exception`)."""
    (folder / "agent").mkdir(parents=True)
    shutil.copyfile(TRAJECTORY, folder / "agent" / "trajectory.json")
    result = {
        "task_name": "hello-world",
        "trial_name": name or folder.name,
        "config": {"agent": {"name": "terminus-2", "model_name": "openai/gpt-4o"}},
        "verifier_result": None if reward is None else {"rewards": {"reward": reward}},
        "exception_info": None if exception is None else {"exception_type": exception},
    }
    (folder / "result.json").write_text(json.dumps(result))


def _stats(*evals: dict[str, Any]) -> dict[str, Any]:
    return {"stats": {"evals": {f"eval-{i}": e for i, e in enumerate(evals)}}}


def _write(path: Path, content: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content if isinstance(content, bytes) else json.dumps(content).encode())


def _scored(tmp_path: Path, run: str, **options: Any) -> tuple[dict[str, dict[str, Any]], list[dict[str, Any]]]:
    """Scored records by trial folder name, and the rows, of `run` under tmp_path/traces."""
    staging_root = tmp_path / "staging"
    rows, coverage, _ = run_steps(
        TraceStore(str(tmp_path / "traces")), run, staging_root, options=ExportOptions(**options)
    )
    assert coverage.accounted
    scored = pq.read_table(RunStaging(staging_root, RunScope.from_key(run)).scored).to_pylist()
    return {r["trial_name"]: r for r in scored}, rows


def test_outcomes_follow_harbors_order_and_skip_what_it_cannot_match():
    stats = _stats(
        {"reward_stats": {"reward": {"1": ["a", "b"]}}, "exception_stats": {"AgentTimeoutError": ["b", "c"]}},
        {"exception_stats": {"ApiError": ["a", "d"], "Odd": "d"}, "reward_stats": {"reward": {"x": ["e", 5, None]}}},
        {"exception_stats": {"Late": ["e"]}, "reward_stats": {"reward": {"1e400": ["f"], "nan": ["g"]}}},
        "not an eval",
    )["stats"]
    assert job_outcomes(stats) == {
        "a": "1.0",  # the first eval lists it: its reward, though a later eval has an exception
        "b": "AgentTimeoutError",  # within an eval, exception_stats come first
        "c": "AgentTimeoutError",
        "d": "ApiError",
        "e": "x",  # a key that is no number is kept as it is
        "f": "inf",
        "g": "nan",
    }
    assert job_outcomes({"evals": ["a list"]}) == job_outcomes("text") == {}


def test_a_job_file_is_an_object_with_stats_and_anything_else_is_passed_over():
    assert parse_job_file(json.dumps(_stats({"exception_stats": {"E": ["t"]}})).encode(), "r").outcomes == {"t": "E"}
    assert parse_job_file(b'{"stats": null}', "r").outcomes == {}  # Harbor stops here and uses the trial's own file
    assert parse_job_file(b'{"trial_name": "t"}', "r") == job_result.NOT_A_JOB_RESULT
    assert parse_job_file(b"[1, 2]", "r") == job_result.NOT_A_JOB_RESULT
    assert "not valid JSON" in (parse_job_file(b"{", "r").problem or "")
    assert "not UTF-8" in (parse_job_file(b'{"stats": "\xff"}', "r").problem or "")
    assert "nested too deeply" in (parse_job_file(b"[" * 100_000 + b"]" * 100_000, "r").problem or "")


def test_the_walk_starts_at_the_trials_parent_and_stops_at_six_folders_or_the_run_folder():
    assert job_result_keys("trace_jobs", "t") == ["trace_jobs/result.json", "result.json"]
    assert job_result_keys("trace_jobs/step-3", "job/t") == [
        "trace_jobs/step-3/job/result.json",
        "trace_jobs/step-3/result.json",
        "trace_jobs/result.json",
        "result.json",
    ]
    assert job_result_keys("trace_jobs", "a/b/c/d/e/f/t") == [
        "trace_jobs/a/b/c/d/e/f/result.json",
        "trace_jobs/a/b/c/d/e/result.json",
        "trace_jobs/a/b/c/d/result.json",
        "trace_jobs/a/b/c/result.json",
        "trace_jobs/a/b/result.json",
        "trace_jobs/a/result.json",
    ]


def test_the_nearest_result_json_with_stats_gives_result_and_filter(tmp_path):
    jobs = tmp_path / "traces" / "run" / "trace_jobs"
    _trial(jobs / "job" / "inner" / "t-inner", reward=1.0)
    _trial(jobs / "job" / "t-outer", reward=1.0)
    _trial(jobs / "job" / "t-unlisted", reward=0.5)
    _trial(jobs / "job" / "folder-name", reward=0.0, name="result-name")
    _write(jobs / "job" / "inner" / "result.json", {"not": "a job result"})  # passed over, as Harbor does
    _write(jobs / "job" / "result.json", _stats({"exception_stats": {"AgentTimeoutError": ["t-inner", "t-outer"]}}))
    _write(
        jobs / "result.json",  # farther up: never reached, the job folder's file has stats
        _stats({"reward_stats": {"reward": {"1.0": ["t-inner", "t-outer", "t-unlisted"]}}}),
    )
    # Harbor looks the result column up by result.json's trial name, the filter by the folder's name.
    with (jobs / "job" / "result.json").open("w") as handle:
        json.dump(
            _stats(
                {"exception_stats": {"AgentTimeoutError": ["t-inner", "t-outer"], "ApiError": ["result-name"]}},
                {"reward_stats": {"reward": {"1.0": ["folder-name"]}}},
            ),
            handle,
        )

    scored, rows = _scored(tmp_path, "run")
    assert {name: (r["result"], r["success"], r["job_result"]) for name, r in scored.items()} == {
        "t-inner": ("AgentTimeoutError", False, "trace_jobs/job/result.json"),
        "t-outer": ("AgentTimeoutError", False, "trace_jobs/job/result.json"),
        "t-unlisted": ("0.5", True, "trace_jobs/job/result.json"),  # not listed: its own file
        "folder-name": ("ApiError", True, "trace_jobs/job/result.json"),
    }
    assert {r["trial_name"]: r["result"] for r in rows}["result-name"] == "ApiError"
    assert scored["t-inner"]["reward"] == 1.0  # the reward column stays the trial's own

    success, rows = _scored(tmp_path, "run", success_filter="success")
    assert sorted(r["trial_name"] for r in rows) == ["result-name", "t-unlisted"]


def test_nothing_above_the_run_folder_or_six_folders_up_is_read(tmp_path):
    traces = tmp_path / "traces"
    _trial(traces / "run" / "trace_jobs" / "t", reward=1.0)
    _trial(traces / "deep" / "trace_jobs" / "a" / "b" / "c" / "d" / "e" / "t-deep", reward=1.0)
    listing = _stats({"exception_stats": {"Above": ["t", "t-deep"]}})
    _write(traces / "result.json", listing)  # the traces root's: above every run
    _write(traces / "deep" / "result.json", listing)  # the 7th folder up from t-deep

    assert _scored(tmp_path, "run")[0]["t"]["result"] == "1.0"
    assert _scored(tmp_path, "deep")[0]["t-deep"]["result"] == "1.0"
    _write(traces / "run" / "result.json", listing)  # the run's folder itself is in reach
    assert _scored(tmp_path, "run")[0]["t"]["result"] == "Above"


def test_a_step_scope_reads_the_job_file_above_its_folder_once(tmp_path, monkeypatch):
    jobs = tmp_path / "traces" / "run" / "trace_jobs"
    for step in ("step-1", "step-2"):
        for trial in ("a", "b", "c"):
            _trial(jobs / step / f"{trial}-{step}", reward=1.0)
    _write(jobs / "result.json", _stats({"exception_stats": {"ApiError": ["a-step-1", "a-step-2"]}}))
    reads: list[str] = []
    read_run_file = TraceStore.read_run_file

    def counted(self: TraceStore, scope: RunScope, key: str, limit: int) -> Any:
        reads.append(key)
        return read_run_file(self, scope, key, limit)

    monkeypatch.setattr(TraceStore, "read_run_file", counted)
    scored, _ = _scored(tmp_path, "run/step-1")
    assert {name: r["result"] for name, r in scored.items()} == {
        "a-step-1": "ApiError",
        "b-step-1": "1.0",
        "c-step-1": "1.0",
    }
    assert reads == ["trace_jobs/result.json", "result.json"]  # once each for the scope, not once per trial


def test_hostile_job_files_are_passed_over_named_never_a_crash(tmp_path, monkeypatch):
    monkeypatch.setattr(job_result, "MAX_JOB_RESULT_BYTES", 10_000)
    monkeypatch.setattr("trace_assets.steps.job_results.MAX_JOB_RESULT_BYTES", 10_000)
    jobs = tmp_path / "traces" / "run" / "trace_jobs"
    for job in ("huge", "binary", "deep", "linked", "shapeless"):
        _trial(jobs / job / f"t-{job}", reward=1.0)
    _write(jobs / "huge" / "result.json", _stats({"exception_stats": {"E": ["t-huge"] + ["x" * 50] * 200}}))
    _write(jobs / "binary" / "result.json", b'{"stats": "\xff\xfe"}')
    _write(jobs / "deep" / "result.json", b'{"stats": ' + b"[" * 4000 + b"]" * 4000 + b"}")
    _write(tmp_path / "outside.json", _stats({"exception_stats": {"Outside": ["t-linked"]}}))
    os.symlink(tmp_path / "outside.json", jobs / "linked" / "result.json")
    _write(jobs / "shapeless" / "result.json", {"stats": {"evals": {"e": {"exception_stats": [["t-shapeless"]]}}}})
    _write(tmp_path / "traces" / "run" / "result.json", b"\x00" * 10_001)  # above the scope: too large as well

    staging_root = tmp_path / "staging"
    store = TraceStore(str(tmp_path / "traces"))
    rows, coverage, statuses = run_steps(store, "run", staging_root)
    scored = pq.read_table(RunStaging(staging_root, RunScope("run")).scored).to_pylist()
    by_name = {r["trial_name"]: r for r in scored}
    for job in ("huge", "binary", "deep", "shapeless"):
        assert by_name[f"t-{job}"]["result"] == "1.0", job
    assert by_name["t-linked"]["result"] == "1.0"  # a link is never read
    assert coverage.exported == 5 and coverage.accounted

    from trace_assets.steps.scoring import score_trials

    stats = score_trials(store, RunStaging(staging_root, RunScope("run")), 7, lambda _: None)
    assert sorted(stats.passed_over) == [
        "result.json",
        "trace_jobs/binary/result.json",
        "trace_jobs/deep/result.json",
        "trace_jobs/huge/result.json",
    ]
    assert "larger than" in stats.passed_over["trace_jobs/huge/result.json"]
    assert "not UTF-8" in stats.passed_over["trace_jobs/binary/result.json"]
    assert "nested too deeply" in stats.passed_over["trace_jobs/deep/result.json"]


def test_a_changed_job_file_changes_the_rows_of_the_trials_below_it(tmp_path):
    jobs = tmp_path / "traces" / "run" / "trace_jobs"
    _trial(jobs / "t", reward=1.0)
    _trial(jobs / "u", reward=0.0)
    scored, rows = _scored(tmp_path, "run")
    assert [(r["trial_name"], r["result"]) for r in rows] == [("t", "1.0"), ("u", "0.0")]
    assert scored["t"]["job_result"] is None

    _write(jobs / "result.json", _stats({"exception_stats": {"VerifierTimeoutError": ["t"]}}))
    _, rows = _scored(tmp_path, "run")
    assert [(r["trial_name"], r["result"]) for r in rows] == [("t", "VerifierTimeoutError"), ("u", "0.0")]

    _write(jobs / "result.json", _stats({"exception_stats": {"ApiError": ["t"]}}))
    _, rows = _scored(tmp_path, "run")
    assert rows[0]["result"] == "ApiError"
    (jobs / "result.json").unlink()
    _, rows = _scored(tmp_path, "run")
    assert rows[0]["result"] == "1.0"


def test_reward_valid_is_recorded_from_harbor_026_results(tmp_path):
    make_job_trials(tmp_path / "traces" / "job" / "trace_jobs")
    scored, _ = _scored(tmp_path, "job")
    assert {name: r["reward_valid"] for name, r in scored.items() if not r["reward_valid"]} == {
        "hello-world-api-error__job": False  # ApiError: Harbor's policy says its reward is not valid
    }
    assert scored["hello-world-timeout-then-pass__job"]["reward_valid"] is True
    assert scored["hello-world-timeout-then-pass__job"]["result"] == "AgentTimeoutError"

    _trial(tmp_path / "traces" / "old" / "trace_jobs" / "t", reward=1.0)  # written before 0.26: unknown
    assert _scored(tmp_path, "old")[0]["t"]["reward_valid"] is None


@pytest.mark.parametrize("combo", ["last", "success", "failure"])
def test_job_tree_filter_counts_match_harbor(tmp_path, combo):
    """Harbor 0.26 kept 3 trials with `--filter success` and 5 with `failure` (the golden files)."""
    from trace_assets_tests.support.make_harbor_goldens import read_golden

    make_job_trials(tmp_path / "traces" / "job" / "trace_jobs")
    _, rows = _scored(tmp_path, "job", success_filter="all" if combo == "last" else combo)
    assert sorted(r["trial_name"] for r in rows) == [r["trial_name"] for r in read_golden("job", combo)["main"]]


def test_card_facts_leave_rewards_harbor_marks_invalid_out(tmp_path):
    from trace_assets.publishing.card_facts import gather_facts

    make_job_trials(tmp_path / "traces" / "job" / "trace_jobs")
    run_steps(TraceStore(str(tmp_path / "traces")), "job", tmp_path / "staging")
    staging = RunStaging(tmp_path / "staging", RunScope("job"))
    facts = gather_facts(staging, staging.require_rows())

    assert facts.invalid_rewards == 1  # the ApiError trial's 1.0
    assert sorted(facts.rewards) == [0.0, 0.0, 0.5, 1.0, 1.0, 1.0, 1.0]

    from trace_assets.core.accounting import Coverage
    from trace_assets.defs.metadata import reward_metadata
    from trace_assets.publishing.card import CardContext, rewards_prose

    coverage = Coverage.from_dict(json.loads(staging.coverage.read_text()))
    assert "1 whose reward Harbor marks invalid (`reward_valid: false`" in rewards_prose(
        coverage, CardContext(facts=facts)
    )
    assert reward_metadata(facts)["rewards_invalid"].value == 1
