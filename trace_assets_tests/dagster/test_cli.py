"""The `trace-assets` console script, run as a user runs it, on a temporary Dagster home."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import dagster as dg
import pyarrow.parquet as pq

from trace_assets_tests.support.helpers import PROJECT_DIR, SAMPLE_RUN, SAMPLE_TRACES

CLI = str(Path(sys.executable).with_name("trace-assets"))


def _run(args: list[str], tmp_path: Path, **env: str) -> subprocess.CompletedProcess:
    home = tmp_path / "dagster_home"
    home.mkdir(exist_ok=True)
    shutil.copyfile(PROJECT_DIR / "dagster.yaml", home / "dagster.yaml")
    environment = {k: v for k, v in os.environ.items() if not k.startswith("TRACE_ASSETS_")}
    environment.update(DAGSTER_HOME=str(home), TRACE_ASSETS_STAGING_ROOT=str(tmp_path / "staging"))
    environment.update({"TRACE_ASSETS_PUBLISH_ROOT": str(tmp_path / "published"), **env})
    return subprocess.run([CLI, *args], capture_output=True, text=True, env=environment, timeout=600)


def test_runs_lists_run_ids(tmp_path):
    traces = tmp_path / "traces"
    for run in ("run-b", "run-a"):
        (traces / run / "trace_jobs").mkdir(parents=True)
    (traces / "not-a-run").mkdir()
    done = _run(["runs", "--traces-root", str(traces)], tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["run-a", "run-b"]


def test_materialize_prints_coverage_and_records_the_run(tmp_path):
    traces = tmp_path / "traces"
    shutil.copytree(SAMPLE_TRACES / SAMPLE_RUN, traces / "copy-of-sample")
    done = _run(
        ["materialize", "copy-of-sample", "--traces-root", str(traces), "--publish-root", str(tmp_path / "out")],
        tmp_path,
        TRACE_ASSETS_ON_SECRET="allow",
    )
    assert done.returncode == 0, done.stderr
    [line] = [json.loads(line) for line in done.stdout.splitlines()]
    assert line["run_id"] == "copy-of-sample" and line["status"] == "published"
    assert (line["trial_dirs"], line["scored"], line["exported"]) == (36, 34, 28)
    assert "last_episode_rows" in done.stderr  # progress goes to stderr, with done/total and rate
    for step, unit in [("raw_trial_listing", "objects"), ("scored_trials", "trials"), ("last_episode_rows", "trials")]:
        assert re.search(rf"{step}: ([\d,]+)/\1 {unit} \(100%\), [\d.,]+ {unit}/s, took", done.stderr), step
    assert re.search(r"secret_scan_report: ([\d,]+)/\1 rows \(100%\)", done.stderr)
    assert re.search(
        r"published_shards: ([\d.,]+ [KMG]?i?B)/\1 \(100%\), [\d.,]+ [KMG]?i?B/s, took .*; (\d+)/\2 files", done.stderr
    )
    assert (tmp_path / "out" / "copy-of-sample" / "coverage.json").exists()

    with dg.DagsterInstance.from_config(str(tmp_path / "dagster_home")) as instance:
        assert "copy-of-sample" in instance.get_dynamic_partitions("trace_runs")
        run = instance.get_run_by_id(line["dagster_run_id"])
        assert run.status == dg.DagsterRunStatus.SUCCESS
        assert run.tags["trace_assets/sweep"] == "traces"  # the traces root's last segment


def test_materialize_fails_clearly_for_a_missing_run(tmp_path):
    done = _run(
        ["materialize", "no-such-run", "--traces-root", str(SAMPLE_TRACES), "--publish-root", str(tmp_path / "out")],
        tmp_path,
    )
    assert done.returncode != 0
    [line] = [json.loads(line) for line in done.stdout.splitlines()]
    assert line["status"] == "failed"
    assert f"no-such-run: no run 'no-such-run' under {SAMPLE_TRACES}; folders there: rl-sample-run" in done.stderr


def test_materialize_takes_harbors_export_flags(tmp_path):
    out = tmp_path / "out"
    flags = ["--episodes", "all", "--filter", "success", "--no-verifier-metadata", "--subagents", "separate"]
    done = _run(
        ["materialize", SAMPLE_RUN, "--traces-root", str(SAMPLE_TRACES), "--publish-root", str(out), *flags],
        tmp_path,
        TRACE_ASSETS_ON_SECRET="allow",
    )
    assert done.returncode == 0, done.stderr
    [line] = [json.loads(line) for line in done.stdout.splitlines()]
    assert line["excluded"]["filtered_out"] > 0 and line["rows"] > line["exported"]  # a row per episode
    published = out / SAMPLE_RUN
    folders = sorted(p for p in (published / "data").iterdir() if p.is_dir())
    kinds = [p.name for p in folders if not re.fullmatch(r"[0-9a-f]{16}", p.name)]  # the rest: main's version
    assert kinds == ["summarization-1-answers", "summarization-1-questions", "summarization-1-summary"]
    assert len(folders) == 4 and all(len(list((published / "data" / kind).iterdir())) == 1 for kind in kinds)
    card = (published / "README.md").read_text()
    assert "`--episodes all`, `--filter success`, `--instruction-metadata`, `--no-verifier-metadata`" in card
    assert "verifier_output" not in card.split("## Coverage")[0]


def test_card_flags_reach_the_published_card(tmp_path):
    """Each `--card-*` flag overrides its environment variable (TRACE_ASSETS_CARD_LICENSE here)."""
    out = tmp_path / "out"
    flags = ["--card-framework", "SkyRL", "--card-task-source", "terminal-bench 2", "--card-license", "mit"]
    flags += ["--card-pretty-name", "Step traces of a sample run", "--card-model", "Qwen/Qwen3-30B-A3B"]
    done = _run(
        ["materialize", SAMPLE_RUN, "--traces-root", str(SAMPLE_TRACES), "--publish-root", str(out), *flags],
        tmp_path,
        TRACE_ASSETS_ON_SECRET="allow",
        TRACE_ASSETS_CARD_LICENSE="apache-2.0",
    )
    assert done.returncode == 0, done.stderr
    card = (out / SAMPLE_RUN / "README.md").read_text()
    assert "license: mit\n" in card and "apache-2.0" not in card
    assert "pretty_name: Step traces of a sample run\n" in card and "\n# Step traces of a sample run\n" in card
    assert "- **Framework**: SkyRL; **Trained model**: `Qwen/Qwen3-30B-A3B`\n" in card
    assert "- **Task source**: terminal-bench 2\n" in card


def test_unknown_export_choices_are_refused(tmp_path):
    done = _run(["runs", "--traces-root", str(SAMPLE_TRACES)], tmp_path, TRACE_ASSETS_EPISODES="first")
    assert done.returncode == 2
    assert "TRACE_ASSETS_EPISODES='first': must be one of last, all" in done.stderr
    done = _run(["materialize", SAMPLE_RUN, "--episodes", "first"], tmp_path)
    assert done.returncode == 2 and "invalid choice: 'first'" in done.stderr


def test_dry_run_prints_what_would_be_published_and_publishes_nothing(tmp_path):
    out = tmp_path / "out"
    done = _run(
        ["materialize", "--dry-run", SAMPLE_RUN, "--publish-root", str(out)],
        tmp_path,
        TRACE_ASSETS_TRACES_ROOT=str(SAMPLE_TRACES),
    )
    assert done.returncode == 1, done.stderr  # the sample's live keys would block it, as the real run
    [line] = [json.loads(line) for line in done.stdout.splitlines()]
    assert (line["status"], line["verdict"], line["exported"]) == ("dry_run", "live", 28)
    assert line["would_publish"]["to"] == str(out / SAMPLE_RUN) and "blocked" in line["would_publish"]
    assert "would publish to" in done.stderr
    assert not out.exists()

    done = _run(
        ["materialize", "--dry-run", SAMPLE_RUN, "--publish-root", str(out), "--on-secret", "allow"],
        tmp_path,
        TRACE_ASSETS_TRACES_ROOT=str(SAMPLE_TRACES),
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["would_publish"] == {"to": str(out / SAMPLE_RUN), "rows": 28, "shards": 1}
    assert not out.exists()
    with dg.DagsterInstance.from_config(str(tmp_path / "dagster_home")) as instance:
        assert instance.get_run_records() == []


def test_dry_run_takes_a_runs_steps_and_the_raw_tree_scan(tmp_path):
    traces = tmp_path / "traces"
    shutil.copytree(SAMPLE_TRACES / SAMPLE_RUN / "trace_jobs", traces / "sweep-run" / "trace_jobs" / "step-3")
    args = [
        "materialize",
        "--dry-run",
        "sweep-run",
        "--traces-root",
        str(traces),
        "--publish-root",
        str(tmp_path / "o"),
    ]
    done = _run([*args, "--on-secret", "allow", "--on-unverified", "keep"], tmp_path)
    assert done.returncode == 0, done.stderr
    [line] = [json.loads(line) for line in done.stdout.splitlines()]
    assert (line["run_id"], line["exported"]) == ("sweep-run/step-3", 28) and "raw_scan" not in line

    done = _run([*args, "--raw-scan", "--on-secret", "allow", "--on-unverified", "keep"], tmp_path)
    assert done.returncode == 0, done.stderr
    raw = json.loads(done.stdout)["raw_scan"]
    assert raw["verdict"] == "live" and raw["objects_with_findings"] > 0  # the sample's planted keys
    assert raw["acted_on"] == {}  # allow and keep: nothing would be blocked or redacted
    assert "raw tree: live in" in done.stderr
    assert (tmp_path / "staging" / "sweep-run" / "step-3" / "raw_secret_scan.json").is_file()
    assert not (tmp_path / "o").exists()


def test_secret_flags_choose_the_unverified_policy_and_the_raw_tree_scan(tmp_path):
    out, traces = tmp_path / "out", tmp_path / "traces"
    shutil.copytree(SAMPLE_TRACES / SAMPLE_RUN, traces / SAMPLE_RUN)
    for stdout in (traces / SAMPLE_RUN / "trace_jobs").glob("*/verifier/test-stdout.txt"):
        # an OpenAI key's rough shape after its variable: unverified
        stdout.write_text(stdout.read_text() + "\nOPENAI_API_KEY=sk-proj-" + "aB3dE5fG7hJ9kL1m" * 3 + "\n")
    run = ["materialize", SAMPLE_RUN, "--traces-root", str(traces), "--publish-root", str(out)]
    blocked = _run([*run, "--on-secret", "allow", "--on-unverified", "block"], tmp_path)
    assert blocked.returncode == 1  # the planted unverified key
    assert "blocked by check no_live_secrets on secret_scan_report" in blocked.stderr
    assert "to publish, run again with --on-unverified redact (or keep); scan report: " in blocked.stderr
    assert not list((tmp_path / "staging").rglob("raw_secret_scan.json"))  # off by default
    # Off, raw_tree_secrets is in no run: not run, not warned about.
    assert "raw_tree_secrets" not in blocked.stderr
    assert "did not yield" not in blocked.stderr
    assert [w.split(":")[0] for w in json.loads(blocked.stdout)["warnings"]] == [
        "check export_ratio_above_threshold on last_episode_rows"
    ]

    # The flag overrides the environment, as --on-secret does; --raw-scan runs the raw-tree check.
    kept = _run(
        [*run, "--on-secret", "allow", "--on-unverified", "keep", "--raw-scan"],
        tmp_path,
        TRACE_ASSETS_ON_UNVERIFIED="block",
    )
    assert kept.returncode == 0, kept.stderr
    [report] = (tmp_path / "staging").rglob("raw_secret_scan.json")
    assert json.loads(report.read_text())["objects_scanned"] > 1000  # every object, episode prompts included

    refused = _run(["materialize", SAMPLE_RUN, "--on-unverified", "sometimes"], tmp_path)
    assert refused.returncode == 2 and "invalid choice: 'sometimes'" in refused.stderr


def test_near_misses_are_kept_by_the_variable_and_redacted_by_the_flag_over_it(tmp_path):
    """The sample's bare JWT whose payload is no JSON and `sk-proj-` key without OpenAI's marker are
    near misses with generated bodies: `TRACE_ASSETS_ON_NEAR_MISS=keep` publishes them as read and
    reports them as near misses; `--on-near-miss redact` overrides the variable, as every flag does."""

    def published(out: Path) -> tuple[dict, str]:
        report = json.loads((out / SAMPLE_RUN / "secret_scan.json").read_text())
        rows = [pq.read_table(path).to_pylist() for path in sorted((out / SAMPLE_RUN / "data").rglob("*.parquet"))]
        return report, json.dumps(rows)

    run = ["materialize", SAMPLE_RUN, "--traces-root", str(SAMPLE_TRACES), "--on-secret", "redact"]
    kept = _run([*run, "--publish-root", str(tmp_path / "kept")], tmp_path, TRACE_ASSETS_ON_NEAR_MISS="keep")
    assert kept.returncode == 0, kept.stderr
    report, rows = published(tmp_path / "kept")
    assert report["kinds"]["jwt"]["near_miss"] == report["kinds"]["openai_api_key"]["near_miss"] == 2
    assert "jwt" not in report["redacted"] and "[REDACTED:jwt]" not in rows

    redacted = _run(
        [*run, "--publish-root", str(tmp_path / "redacted"), "--on-near-miss", "redact"],
        tmp_path,
        TRACE_ASSETS_ON_NEAR_MISS="keep",
    )
    assert redacted.returncode == 0, redacted.stderr
    report, rows = published(tmp_path / "redacted")
    assert report["kinds"]["jwt"]["unverified"] == 2 and report["redacted"]["jwt"] == 2
    assert "[REDACTED:jwt]" in rows and "[REDACTED:openai_api_key]" in rows
