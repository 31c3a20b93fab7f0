"""A first day's mistakes through the real CLI, each told apart in one line: a wrong traces root, a
mistyped run id, a step the run does not have, a folder that is no run, and a run the secret scan
blocks (what to type instead, and where its report is)."""

from __future__ import annotations

import json
from pathlib import Path

from trace_assets_tests.support.cli_processes import run_cli
from trace_assets_tests.support.helpers import SAMPLE_RUN, SAMPLE_TRACES


def _traces(tmp_path: Path) -> Path:
    traces = tmp_path / "traces"
    for step in ("step-1", "step-2", "step-10"):
        (traces / "sweep-run" / "trace_jobs" / step).mkdir(parents=True)
    (traces / "notes").mkdir()  # a folder without trace_jobs/
    return traces


def _reasons(stdout: str) -> dict[str, str]:
    return {line["run_id"]: line["reason"] for line in map(json.loads, stdout.splitlines())}


def test_materialize_and_dry_run_tell_a_wrong_root_a_typo_and_a_missing_step_apart(tmp_path):
    traces = _traces(tmp_path)
    asked = ["swep-run", "sweep-run/step-3", "notes", "zzz"]
    expected = {
        "swep-run": f"no run 'swep-run' under {traces}; did you mean 'sweep-run'?",
        "sweep-run/step-3": f"run 'sweep-run' under {traces} has no step 'step-3' (its steps: step-1, step-2, step-10)",
        "notes": f"the folder 'notes' under {traces} has no trace_jobs/ folder, so it is not a run",
        "zzz": f"no run 'zzz' under {traces}; folders there: notes, sweep-run (`trace-assets runs` lists the runs)",
    }
    for dry_run in ([], ["--dry-run"]):
        done = run_cli(["materialize", *asked, *dry_run, "--traces-root", str(traces)], tmp_path)
        assert done.returncode == 1 and "Traceback" not in done.stderr
        assert _reasons(done.stdout) == expected
        for run_id, reason in expected.items():
            assert f"{run_id}: {reason}" in done.stderr

    wrong_root = tmp_path / "trace"  # one letter short
    done = run_cli(["materialize", "sweep-run", "--dry-run", "--traces-root", str(wrong_root)], tmp_path)
    assert done.returncode == 1
    assert _reasons(done.stdout) == {
        "sweep-run": f"the traces root {wrong_root} (TRACE_ASSETS_TRACES_ROOT, --traces-root) does not exist"
    }
    (tmp_path / "empty").mkdir()
    done = run_cli(["materialize", "sweep-run", "--traces-root", str(tmp_path / "empty")], tmp_path)
    assert done.returncode == 1 and _reasons(done.stdout)["sweep-run"].endswith("--traces-root) is empty")


def test_backfill_and_runs_say_the_same_in_one_line(tmp_path):
    traces = _traces(tmp_path)
    done = run_cli(["backfill", "swep-run", "sweep-run/step-3", "--traces-root", str(traces)], tmp_path)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr == (
        f"trace-assets: swep-run: no run 'swep-run' under {traces}; did you mean 'sweep-run'?; "
        f"sweep-run/step-3: run 'sweep-run' under {traces} has no step 'step-3' (its steps: step-1, step-2, step-10)\n"
    )
    missing = tmp_path / "missing"
    for command in (["backfill", "--all"], ["runs"]):
        done = run_cli([*command, "--traces-root", str(missing)], tmp_path)
        assert done.returncode == 2
        assert done.stderr == (
            f"trace-assets: the traces root {missing} (TRACE_ASSETS_TRACES_ROOT, --traces-root) does not exist\n"
        )
    (tmp_path / "empty").mkdir()
    done = run_cli(["backfill", "--all", "--traces-root", str(tmp_path / "empty")], tmp_path)
    assert done.returncode == 2 and done.stderr.endswith("--traces-root) is empty\n")


def test_a_blocked_run_says_which_option_publishes_it_and_where_its_scan_report_is(tmp_path):
    out = tmp_path / "out"
    report = tmp_path / "staging" / SAMPLE_RUN / "secret_scan.json"
    how = f"to publish, run again with --on-secret redact (or allow); scan report: {report}"
    run = ["materialize", SAMPLE_RUN, "--traces-root", str(SAMPLE_TRACES), "--publish-root", str(out)]

    done = run_cli(run, tmp_path)
    assert done.returncode == 1
    [line] = map(json.loads, done.stdout.splitlines())
    assert line["reason"].startswith("blocked by check no_live_secrets") and line["reason"].endswith(how)
    assert f"{SAMPLE_RUN}: {line['reason']}\n" in done.stderr
    assert json.loads(report.read_text())["verdict"] == "live"

    report.unlink()
    done = run_cli([*run, "--dry-run"], tmp_path)
    assert done.returncode == 1
    assert json.loads(done.stdout)["would_publish"]["blocked"].endswith(how)
    assert json.loads(report.read_text())["verdict"] == "live"
