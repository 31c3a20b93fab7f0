"""A run's steps as scopes: keys, discovery, paths, and a step's published folder."""

from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest

from trace_assets.core.accounting import Coverage
from trace_assets.core.scope import InvalidScopeKey, RunScope, ScopeUnit, refuse_nesting, run_scopes
from trace_assets.publishing.card import CardContext
from trace_assets.publishing.card_facts import gather_facts
from trace_assets.publishing.dataset_folder import build_run_folder
from trace_assets.steps.staging import RunStaging
from trace_assets.store.trace_store import TraceStore
from trace_assets_tests.support.generate_traces import generate_run
from trace_assets_tests.support.helpers import run_steps


def test_a_step_key_names_run_and_step():
    scope = RunScope.from_key("sweep-a/step-25")
    assert (scope.run_id, scope.step, scope.key) == ("sweep-a", "step-25", "sweep-a/step-25")
    assert scope.source_prefix == "sweep-a/trace_jobs/step-25"
    assert scope.publish_url("s3://b/pub/") == "s3://b/pub/sweep-a/step-25"
    assert scope.config_name == "sweep-a--step-25"
    assert RunScope.from_key("sweep-a") == RunScope("sweep-a")
    assert RunScope.from_key("org/run").step is None  # only `step-N` last segments are steps
    assert RunScope.from_key("step-3") == RunScope("step-3")  # a run named like a step folder
    with pytest.raises(InvalidScopeKey, match="not a step folder"):
        RunScope("run", "epoch-1")


def test_a_run_with_only_step_folders_is_a_scope_per_step():
    steps = ["step-10", "step-2", "step-1"]
    assert [s.key for s in run_scopes("r", steps)] == ["r/step-1", "r/step-2", "r/step-10"]
    assert run_scopes("r", steps, ScopeUnit.RUN) == [RunScope("r")]
    assert run_scopes("r", [*steps, "task-1__abc"]) == [RunScope("r")]  # a trial beside them: whole
    assert run_scopes("r", []) == [RunScope("r")]
    assert run_scopes("r", steps, keep_whole=True) == [RunScope("r")]
    with pytest.raises(InvalidScopeKey, match="nests"):
        refuse_nesting(["r"], ["r/step-1"])


def test_step_scopes_are_listed_staged_and_published_apart(tmp_path):
    traces = tmp_path / "traces"
    generate_run(traces, "stepped", trials=12, seed=3, nested_steps=3)
    generate_run(traces, "flat", trials=4, seed=4)
    store = TraceStore(str(traces), walk_workers=1)
    assert [s.key for s in store.scopes("stepped")] == ["stepped/step-1", "stepped/step-2", "stepped/step-3"]
    assert store.scopes("flat") == [RunScope("flat")]
    (traces / "linked" / "trace_jobs").mkdir(parents=True)
    (traces / "linked" / "trace_jobs" / "step-1").symlink_to(traces / "stepped" / "trace_jobs" / "step-1")
    assert store.scopes("linked") == [RunScope("linked")]  # a link is never a scope's folder

    seen = set()
    for scope in store.scopes("stepped"):
        rows, coverage, statuses = run_steps(store, scope.key, tmp_path / "staging")
        assert coverage.run_id == scope.key
        assert {row["run_id"] for row in rows} <= {"stepped"}  # Harbor's rows: the run, no step
        assert all(s["trial_dir"].count("/") == 0 for s in statuses)  # relative to the step folder
        seen |= {s["trial_name"] for s in statuses}
        staging = RunStaging(tmp_path / "staging", scope)
        assert staging.folder == tmp_path / "staging" / "stepped" / scope.step
        out = tmp_path / "out" / scope.key
        build_run_folder(
            out,
            staging.require_rows(),
            staging.statuses,
            Coverage.from_dict(json.loads(staging.coverage.read_text())),
            {"verdict": "clean"},
            100,
            step=scope.step,
        )
        trials = pq.read_table(out / "trials.parquet").to_pylist()
        assert {t["step"] for t in trials} == {scope.step}
        assert f"# stepped step {scope.step.removeprefix('step-')} traces\n" in (out / "README.md").read_text()
    assert len(seen) == 12


def test_a_step_scopes_card_names_its_step_and_its_folder(tmp_path):
    generate_run(tmp_path / "traces", "stepped", trials=6, seed=3, nested_steps=2)
    store = TraceStore(str(tmp_path / "traces"), walk_workers=1)
    cards = {}
    for scope in [*store.scopes("stepped"), RunScope("stepped")]:  # each step, and the run as one scope
        staging_root = tmp_path / "staging" / scope.key.replace("/", "--")
        _, coverage, _ = run_steps(store, scope.key, staging_root)
        staging = RunStaging(staging_root, scope)
        out = tmp_path / "out" / scope.key.replace("/", "--")
        card = CardContext(facts=gather_facts(staging, staging.require_rows()))
        build_run_folder(
            out,
            staging.require_rows(),
            staging.statuses,
            coverage,
            {"verdict": "clean"},
            100,
            card=card,
            step=scope.step,
        )
        cards[scope.key] = (coverage.trial_dirs, (out / "README.md").read_text())
    assert list(cards) == ["stepped/step-1", "stepped/step-2", "stepped"]
    for number in (1, 2):
        folders, card = cards[f"stepped/step-{number}"]
        assert f"- **Run**: `stepped`; **training step**: {number}\n" in card
        assert f"The step folder `trace_jobs/step-{number}/` held **{folders:,}** trial folders." in card
    folders, card = cards["stepped"]
    assert folders == cards["stepped/step-1"][0] + cards["stepped/step-2"][0]
    assert "- **Run**: `stepped`; **training step**: 1 to 2 (2 steps)\n" in card
    assert f"The run's `trace_jobs/` held **{folders:,}** trial folders." in card
