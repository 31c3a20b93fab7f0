"""The ordinary mistakes of people running sweeps, through the real CLI: each is refused with one
clear line, and what is on disk (other runs' datasets, the source traces) is left byte for byte."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import dagster as dg

from trace_assets_tests.support.cli_processes import run_cli
from trace_assets_tests.support.helpers import SAMPLE_RUN, SAMPLE_TRACES


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def _partitions(tmp_path: Path) -> list[str]:
    with dg.DagsterInstance.from_config(str(tmp_path / "dagster_home")) as instance:
        return instance.get_dynamic_partitions("trace_runs")


def _one_line_error(done) -> str:
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert "Traceback" not in done.stderr and len(lines) == 1, done.stderr
    return lines[0]


def test_bad_run_ids_and_roots_are_refused_before_anything_is_written(tmp_path):
    traces = tmp_path / "traces"
    shutil.copytree(SAMPLE_TRACES / SAMPLE_RUN, traces / SAMPLE_RUN)
    published = tmp_path / "published"
    (published / "other-run").mkdir(parents=True)
    (published / "other-run" / "README.md").write_text("another run's dataset\n")
    before = (_snapshot(traces), _snapshot(published))
    roots = ["--traces-root", str(traces), "--publish-root", str(published)]

    done = run_cli(["materialize", SAMPLE_RUN, "../escape", "", "x" * 300, ".", *roots], tmp_path)
    assert done.returncode == 2
    line = _one_line_error(done)
    assert "'../escape' has an empty, '.' or '..' segment" in line and "run id is empty" in line
    assert "300 characters long; at most 200" in line and "nothing was registered or written" in line

    done = run_cli(["materialize", SAMPLE_RUN, "--traces-root", str(traces), "--publish-root", str(traces)], tmp_path)
    assert done.returncode == 2 and "is the same folder as publish_root" in _one_line_error(done)
    done = run_cli(
        ["materialize", SAMPLE_RUN, "--traces-root", str(traces), "--publish-root", f"{traces}/out"], tmp_path
    )
    assert done.returncode == 2 and "overlaps publish_root" in _one_line_error(done)
    done = run_cli(["materialize", SAMPLE_RUN, *roots], tmp_path, TRACE_ASSETS_MAX_ROWS_PER_SHARD="0")
    assert done.returncode == 2
    assert "TRACE_ASSETS_MAX_ROWS_PER_SHARD='0': must be a whole number above 0" in _one_line_error(done)

    assert (_snapshot(traces), _snapshot(published)) == before
    assert not (tmp_path / "staging").exists()
    assert [p.name for p in (tmp_path / "dagster_home").iterdir()] == ["dagster.yaml"]  # not even opened
    assert _partitions(tmp_path) == []


def test_a_missing_run_is_not_registered_and_nesting_runs_are_refused(tmp_path):
    traces = tmp_path / "traces"
    # a run id inside another run's folder (`sweep/part-1`; a `step-N` last segment would name a step)
    shutil.copytree(SAMPLE_TRACES / SAMPLE_RUN / "trace_jobs", traces / "sweep" / "part-1" / "trace_jobs")
    (traces / "sweep" / "trace_jobs").mkdir()
    roots = ["--traces-root", str(traces), "--publish-root", str(tmp_path / "published")]

    done = run_cli(["materialize", "sweep/part-1", "no-such-run", *roots], tmp_path, TRACE_ASSETS_ON_SECRET="allow")
    assert done.returncode == 1
    lines = {line["run_id"]: line for line in map(json.loads, done.stdout.splitlines())}
    assert lines["sweep/part-1"]["status"] == "published" and lines["sweep/part-1"]["rows"] == 28
    assert lines["no-such-run"] == {
        "run_id": "no-such-run",
        "status": "failed",
        "reason": f"no run 'no-such-run' under {traces}; folders there: sweep (`trace-assets runs` lists the runs)",
    }
    assert _partitions(tmp_path) == ["sweep/part-1"]
    published = _snapshot(tmp_path / "published")

    done = run_cli(["materialize", "sweep", *roots], tmp_path)
    assert done.returncode == 2
    assert "run id 'sweep' nests with run id 'sweep/part-1'" in _one_line_error(done)
    assert _snapshot(tmp_path / "published") == published and _partitions(tmp_path) == ["sweep/part-1"]


def test_an_emptied_run_never_replaces_its_good_dataset(tmp_path):
    traces = tmp_path / "traces"
    shutil.copytree(SAMPLE_TRACES / SAMPLE_RUN, traces / SAMPLE_RUN)
    roots = ["--traces-root", str(traces), "--publish-root", str(tmp_path / "published")]
    done = run_cli(["materialize", SAMPLE_RUN, *roots], tmp_path, TRACE_ASSETS_ON_SECRET="allow")
    assert done.returncode == 0, done.stderr
    [line] = map(json.loads, done.stdout.splitlines())
    assert line["warnings"] == [
        "check export_ratio_above_threshold on last_episode_rows: "
        "only 82.35% of scored trials were exported (threshold 90%)"
    ]
    assert "warning: check export_ratio_above_threshold" in done.stderr
    # a quick step's lines, stored as one message, are each a line of their own on stderr
    assert "\n[trace-assets] raw_trial_listing: 1,516/1,516 objects (100%)" in done.stderr
    assert "\n[trace-assets] raw_trial_listing: listed 1516 objects in 36 trial folders\n" in done.stderr
    published = _snapshot(tmp_path / "published")

    # A corrupt staged file (a full disk, a hand edit) is discarded and rebuilt, never fatal.
    (tmp_path / "staging" / SAMPLE_RUN / "trials.parquet").write_bytes(b"PAR1 truncated")
    shutil.rmtree(traces / SAMPLE_RUN / "trace_jobs")
    (traces / SAMPLE_RUN / "trace_jobs").mkdir()  # an unmounted volume, a lifecycle rule
    done = run_cli(["materialize", SAMPLE_RUN, *roots], tmp_path, TRACE_ASSETS_ON_SECRET="allow")
    assert done.returncode == 1
    [line] = map(json.loads, done.stdout.splitlines())
    assert line["status"] == "failed" and line["rows"] == 0 and line["trial_dirs"] == 0  # this attempt's figures
    assert "refusing to publish run 'rl-sample-run' with 0 rows" in line["reason"]
    assert "published version at" in line["reason"] and "36 trial folders, 28 rows" in line["reason"]
    assert "discarded unreadable staged file" in done.stderr and "Traceback" not in done.stderr
    assert _snapshot(tmp_path / "published") == published

    # The run is gone for good: forget it; its published dataset stays.
    shutil.rmtree(traces / SAMPLE_RUN)
    done = run_cli(["forget", SAMPLE_RUN, "--traces-root", str(traces)], tmp_path)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"run_id": SAMPLE_RUN, "status": "forgotten"}
    assert _partitions(tmp_path) == [] and not (tmp_path / "staging" / SAMPLE_RUN).exists()
    assert _snapshot(tmp_path / "published") == published


def test_verbose_shows_the_trace(tmp_path):
    traces = tmp_path / "traces"
    (traces / "empty-run" / "trace_jobs").mkdir(parents=True)
    roots = ["--traces-root", str(traces), "--publish-root", str(tmp_path / "published")]
    quiet = run_cli(["materialize", "empty-run", *roots], tmp_path)
    loud = run_cli(["-v", "materialize", "empty-run", *roots], tmp_path)
    assert quiet.returncode == loud.returncode == 1
    assert "Stack Trace" not in quiet.stderr and "Stack Trace" in loud.stderr
    assert "shrink_guard.ShrinkRefused" in loud.stderr
