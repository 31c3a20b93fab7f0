"""Re-materializing a grown run re-reads only changed trials, and gives what a full re-read gives."""

from __future__ import annotations

import json
import shutil

import pyarrow.parquet as pq

from trace_assets.core.scope import RunScope
from trace_assets.harbor.options import ExportOptions
from trace_assets.runtime.progress import Progress, quiet
from trace_assets.steps.staged_rows import iter_rows
from trace_assets.steps.staging import RunStaging
from trace_assets.store.trace_store import TraceStore
from trace_assets_tests.support.helpers import SAMPLE_RUN, SAMPLE_TRACES, stage_rows


def _steps(store: TraceStore, staging: RunStaging, progress: Progress = quiet):
    steps = stage_rows(store, staging, ExportOptions(subagents="merged"), batch_size=5, progress=progress)
    coverage, exported = steps["last_episode_rows"]
    return steps["scored_trials"], coverage, exported


def _rows(staging: RunStaging) -> list[dict]:
    return [row for table in iter_rows(staging.require_rows()) for row in table.to_pylist()]


def test_only_changed_trials_are_reread_and_results_equal_a_full_read(tmp_path):
    traces = tmp_path / "traces"
    shutil.copytree(SAMPLE_TRACES / SAMPLE_RUN, traces / SAMPLE_RUN)
    store = TraceStore(str(traces))
    incremental = RunStaging(tmp_path / "incremental", RunScope(SAMPLE_RUN))
    _, first, exported = _steps(store, incremental)
    assert exported.reread == 33 and exported.cached == 0  # the 33 readable result.json files

    trace_jobs = traces / SAMPLE_RUN / "trace_jobs"
    # The run grows: one trial's trajectory is rewritten, one trial appears, one unscored trial gets scored.
    trajectory = trace_jobs / "stack-bash-30__oaZPnEw" / "agent" / "trajectory.json"
    data = json.loads(trajectory.read_text())
    data["steps"][-1]["message"] = "rewritten last turn"
    trajectory.write_text(json.dumps(data))
    shutil.copytree(trace_jobs / "swesmith-1745__xHOcsMc", trace_jobs / "swesmith-9999__newTrial")
    shutil.copyfile(
        trace_jobs / "stack-bash-804__Lnr1DXP" / "result.json",
        trace_jobs / "pymethods2test-2559__RwyxITh" / "result.json",
    )

    lines: list[str] = []
    scored, second, exported = _steps(store, incremental, lines.append)
    assert scored.reread == 2 and scored.cached == 34  # only the new trial's and the newly scored one's result.json
    assert exported.reread == 3 and exported.cached == 32
    # More unchanged than exported: excluded trials are taken from the last run too, as the line says.
    excluded = second.trial_dirs - second.exported
    assert second.exported < exported.cached < second.exported + excluded
    assert lines[-1].endswith(
        f"; {second.exported} exported, {excluded} excluded, of which 32 unchanged since the last run"
    )

    full = RunStaging(tmp_path / "full", RunScope(SAMPLE_RUN))
    _, from_scratch, _ = _steps(store, full)
    assert second == from_scratch and second.trial_dirs == first.trial_dirs + 1
    for name in ("trials.parquet", "scored_trials.parquet"):
        assert pq.read_table(incremental.folder / name).equals(pq.read_table(full.folder / name)), name
    rows = _rows(incremental)
    assert rows == _rows(full)
    assert next(r for r in rows if r["trial_name"] == "stack-bash-30__oaZPnEw")["conversations"][-1][
        "content"
    ].endswith("\nrewritten last turn")
