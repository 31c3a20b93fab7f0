"""Step 3 in worker processes: the same staged bytes as in one process; a trial that raises is its
own exclusion; a worker that dies fails the step, naming the run and the batch."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections import deque
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from trace_assets.core.scope import RunScope
from trace_assets.harbor.options import ExportOptions
from trace_assets.runtime.process_pool import ordered_map
from trace_assets.steps import rows as rows_step
from trace_assets.steps.listing import ListedTrial, build_listing, iter_listing
from trace_assets.steps.scoring import score_trials
from trace_assets.steps.sessions import SessionWriter, staged_sessions
from trace_assets.steps.staging import RunStaging, open_parquet
from trace_assets.steps.trial_rows import SliceJob
from trace_assets.store.trace_store import FetchError, TraceStore
from trace_assets_tests.support.generate_traces import generate_run
from trace_assets_tests.support.golden_trials import make_golden_trials
from trace_assets_tests.support.worker_jobs import exit_at_once, export_slice_failing_for

RUN = "gen-run"


def _export(traces: Path, staging_root: Path, workers: int) -> RunStaging:
    store = TraceStore(str(traces))
    staging = RunStaging(staging_root, RunScope(RUN))
    build_listing(store, staging)
    score_trials(store, staging, 7, lambda _: None)
    options = ExportOptions(subagents="merged")
    writer = SessionWriter(staged_sessions(staging))
    rows_step.export_rows(store, staging, options, 7, lambda _: None, 50, sessions=writer, workers=workers)
    return staging


def _files(folder: Path) -> dict[str, bytes]:
    return {
        path.relative_to(folder).as_posix(): path.read_bytes() for path in sorted(folder.rglob("*")) if path.is_file()
    }


@pytest.fixture(scope="module")
def traces(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("traces")
    generate_run(root, RUN, trials=60, seed=5, prompt_scale=0.05, episode_prompts=False)
    make_golden_trials(root / RUN / "trace_jobs")
    return root


def test_workers_stage_the_same_bytes_as_one_process_first_run_and_rerun(traces: Path, tmp_path: Path) -> None:
    copy = tmp_path / "traces"
    shutil.copytree(traces, copy)
    staged = {count: _export(copy, tmp_path / f"staging-{count}", count) for count in (1, 2)}
    first = _files(staged[1].folder)
    assert first == _files(staged[2].folder)
    assert any(name.startswith("last_episode_rows/part-") for name in first) and "sessions.parquet" in first
    assert pq.ParquetFile(staged[1].folder / "sessions.parquet").metadata.num_row_groups > 2  # several batches
    trials = sorted(p for p in (copy / RUN / "trace_jobs").iterdir() if p.is_dir())
    shutil.rmtree(trials[3])  # a rerun: one trial gone, one changed, the rest from the cache
    trajectory = next(trials[10].rglob("trajectory.json"))
    trajectory.write_text(trajectory.read_text() + " ")
    again = {count: _export(copy, tmp_path / f"staging-{count}", count) for count in (1, 2)}
    rerun = _files(again[1].folder)
    assert rerun == _files(again[2].folder) and rerun != first
    assert json.loads(again[1].coverage.read_text())["exported"] > 0


def test_a_trial_whose_export_raises_in_a_worker_is_its_own_exclusion(traces: Path, tmp_path: Path) -> None:
    store = TraceStore(str(traces))
    staging = RunStaging(tmp_path / "staging", RunScope(RUN))
    build_listing(store, staging)
    score_trials(store, staging, 7, lambda _: None)
    records = open_parquet(staging.scored).read().to_pylist()
    scored = [record for record in records if record["status"] == "scored"][:6]
    victim = scored[2]["result_trial_name"]
    trials = []
    for record in scored:
        keys = [f"agent/{name}" for name in ("trajectory.json",)]
        blobs = store.fetch(staging.scope, [f"{record['trial_dir']}/{key}" for key in keys])
        trials.append((record["trial_dir"], record, {key: blobs[f"{record['trial_dir']}/{key}"] for key in keys}))
    job = SliceJob(RUN, None, ExportOptions(), True, "", ("instruction", "verifier_output"))
    jobs = [(None, (victim, job, trials[:3])), (None, (victim, job, trials[3:]))]
    answers = [work for _, work in ordered_map(export_slice_failing_for, jobs, workers=2)]
    works = [work for answer in answers for work in answer.trials]
    assert [work.export.exclusion is None for work in works] == [True, True, False, True, True, True]
    detail = works[2].export.detail
    assert detail == "ValueError while building rows from agent/trajectory.json: planted"
    assert works[2].rows == 0 and works[2].session_paths == []
    assert answers[0].rows.num_rows == works[0].rows + works[1].rows and answers[0].sessions.num_rows == 2


def test_a_worker_that_dies_fails_the_step_naming_the_run_and_the_batch(traces: Path, tmp_path: Path) -> None:
    store = TraceStore(str(traces))
    staging = RunStaging(tmp_path / "staging", RunScope(RUN))
    build_listing(store, staging)
    listed: list[ListedTrial] = next(iter_listing(staging.listing, 4))
    plan = rows_step._Batch(listed, [], {}, {})
    sent = deque([plan, plan])
    answers = ordered_map(exit_at_once, [((plan, False), ()), ((plan, True), ())], workers=2)
    with pytest.raises(
        RuntimeError, match=f"run '{RUN}': a worker process failed exporting the batch from {listed[0].trial_dir}"
    ):
        list(rows_step._batch_answers(answers, sent, staging.scope))


def test_a_rows_worker_imports_no_polars_fsspec_or_dagster() -> None:
    code = (
        "import sys; import trace_assets.steps.trial_rows; "
        "print(sorted(m for m in ('polars', 'fsspec', 'dagster', 'pandas') if m in sys.modules))"
    )
    env = {"PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    loaded = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True, env=env).stdout
    assert loaded.strip() == "[]"


def _copied_listed_and_scored(traces: Path, tmp_path: Path) -> tuple[Path, TraceStore, RunStaging]:
    """A copy of the traces root (for the test to change after the listing), listed and scored."""
    copy = tmp_path / "traces"
    shutil.copytree(traces, copy)
    store = TraceStore(str(copy))
    staging = RunStaging(tmp_path / "staging", RunScope(RUN))
    build_listing(store, staging)
    score_trials(store, staging, 7, lambda _: None)
    return copy, store, staging


@pytest.mark.parametrize("workers", [1, 2])
def test_a_link_swapped_in_after_the_listing_is_not_followed_by_any_reader(
    traces: Path, tmp_path: Path, workers: int
) -> None:
    copy, store, staging = _copied_listed_and_scored(traces, tmp_path)
    outside = tmp_path / "outside.json"
    outside.write_text('{"secret": "outside the root"}')
    trial = sorted(p for p in (copy / RUN / "trace_jobs").iterdir() if (p / "agent" / "trajectory.json").is_file())[4]
    (trial / "agent" / "trajectory.json").unlink()
    (trial / "agent" / "trajectory.json").symlink_to(outside)
    options = ExportOptions(subagents="merged")
    writer = SessionWriter(staged_sessions(staging))
    rows_step.export_rows(store, staging, options, 7, lambda _: None, 50, sessions=writer, workers=workers)
    statuses = {s["trial_dir"]: s for s in open_parquet(staging.statuses).read().to_pylist()}
    assert statuses[trial.name]["reason"] == "unsafe_link"
    assert "agent/trajectory.json: a symbolic link in the path, not followed" in statuses[trial.name]["detail"]
    assert sum(s["status"] == "exported" for s in statuses.values()) > 40


@pytest.mark.parametrize("workers", [1, 2])
def test_a_store_that_fails_under_the_readers_fails_the_step_naming_the_run_and_the_object(
    traces: Path, tmp_path: Path, workers: int
) -> None:
    copy, store, staging = _copied_listed_and_scored(traces, tmp_path)
    (copy / RUN / "trace_jobs").rename(copy / RUN / "moved")  # the run's folder, not one trial's
    with pytest.raises(FetchError, match=f"run '{RUN}': 1 object\\(s\\) could not be read: .*trace_jobs/"):
        rows_step.export_rows(store, staging, ExportOptions(), 7, lambda _: None, 50, workers=workers)
