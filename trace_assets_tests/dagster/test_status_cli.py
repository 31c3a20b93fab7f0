"""`trace-assets status` as a user meets it on their first day: after `make demo`'s publish, and
after `forget`; every scope tried, with what went wrong; the sweep view agrees with it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import dagster as dg

from trace_assets.core.run_tags import FAILURE_TAG, PARTITION_TAG
from trace_assets.definitions import build_definitions, export_trace_run
from trace_assets.defs.assets import published_shards, raw_trial_listing
from trace_assets.defs.partitions import TRACE_RUNS, register_scopes
from trace_assets.defs.resources import TraceAssetsConfig, config_from_env
from trace_assets.defs.sweep import failed_at_publish, failure_of, latest_export_runs, step_failure
from trace_assets.defs.sweep_coverage import refresh_sweep_coverage, sweep_coverage, sweep_coverage_after_export
from trace_assets.settings import DEFAULT_STAGING
from trace_assets_tests.support.cli_processes import CLI, cli_env, run_cli
from trace_assets_tests.support.generate_traces import generate_run
from trace_assets_tests.support.helpers import PROJECT_DIR, SAMPLE_RUN, SAMPLE_TRACES


def _status_scopes(tmp_path: Path) -> dict[str, list[str]]:
    """Each scope `status` lists, with the cells of its line."""
    done = run_cli(["status"], tmp_path)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].split()[0] == "scope"
    return {line.split()[0]: line.split() for line in lines[1::2] if line.split()[1] != "total"}


def test_the_demo_publish_reads_redacted(tmp_path):
    """`make demo`'s command: the sample's live credentials are redacted, so what went out, and what
    `status` says, is `redacted` (the scan's own verdict, `live`, stays on secret_scan_report)."""
    out = tmp_path / "out"
    done = run_cli(
        ["materialize", SAMPLE_RUN, "--traces-root", str(SAMPLE_TRACES), "--publish-root", str(out)]
        + ["--on-secret", "redact"],
        tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads((out / SAMPLE_RUN / "secret_scan.json").read_text())["verdict"] == "redacted"

    status = _status_scopes(tmp_path)
    assert list(status) == [SAMPLE_RUN] and status[SAMPLE_RUN][8] == "redacted"
    with dg.DagsterInstance.from_config(str(tmp_path / "dagster_home")) as instance:
        event = instance.get_latest_materialization_event(published_shards.key)
        assert event is not None and event.asset_materialization is not None
        assert event.asset_materialization.metadata["secret_verdict"].value == "redacted"


def test_a_home_the_user_created_empty_gets_no_dagster_banner(tmp_path):
    """A DAGSTER_HOME made with mkdir: `materialize --dry-run` puts the default staging root in it
    (and opens no instance), then `status` opens the instance without Dagster's set-up warning."""
    home = tmp_path / "made-by-the-user"
    home.mkdir()
    environment = {k: v for k, v in os.environ.items() if not k.startswith(("TRACE_ASSETS_", "DAGSTER_"))}
    environment.update(DAGSTER_HOME=str(home), TRACE_ASSETS_TRACES_ROOT=str(SAMPLE_TRACES))
    environment.update(TRACE_ASSETS_PUBLISH_ROOT=str(tmp_path / "published"))
    dry_run = subprocess.run(
        [CLI, "materialize", SAMPLE_RUN, "--dry-run"], capture_output=True, text=True, env=environment
    )
    assert dry_run.returncode == 1 and (home / DEFAULT_STAGING).is_dir(), dry_run.stderr  # the sample's live keys

    status = subprocess.run([CLI, "status"], capture_output=True, text=True, env=environment)
    assert status.returncode == 0, status.stderr
    assert status.stdout == "no scope has been exported yet\n" and status.stderr == "", status.stderr
    assert (home / "dagster.yaml").read_bytes() == (PROJECT_DIR / "dagster.yaml").read_bytes()


def test_status_reads_publishes_recorded_before_and_odd_figures(tmp_path):
    """A redacted publish recorded while `secret_verdict` held the scan's verdict reads `redacted` by
    its counts; a NaN or infinite mean reward reads as unknown, and nothing crashes."""
    odd = {"older-demo": ("live", {"github_token": 2}, 0.5), "nan-run": ("clean", {}, float("nan"))}
    odd["inf-run"] = ("clean", {}, float("inf"))
    cli_env(tmp_path)  # the CLI's Dagster home, with its dagster.yaml
    with dg.DagsterInstance.from_config(str(tmp_path / "dagster_home")) as instance:
        register_scopes(instance, list(odd))
        for scope, (verdict, redacted, reward) in odd.items():
            metadata = {"secret_verdict": verdict, "redacted": dg.MetadataValue.json(redacted), "mean_reward": reward}
            instance.report_runless_asset_event(
                dg.AssetMaterialization(published_shards.key, partition=scope, metadata=metadata)
            )
    status = _status_scopes(tmp_path)
    assert status["older-demo"][8] == "redacted" and status["older-demo"][6] == "0.500"
    assert status["nan-run"][6] == "-" and status["inf-run"][6] == "-"


def test_a_forgotten_run_leaves_status_and_the_sweep_view(tmp_path):
    traces, out = tmp_path / "traces", tmp_path / "out"
    for run in ("gone-run", "kept-run"):
        shutil.copytree(SAMPLE_TRACES / SAMPLE_RUN, traces / run)
    flags = ["--traces-root", str(traces), "--publish-root", str(out), "--on-secret", "redact"]
    done = run_cli(["materialize", "gone-run", "kept-run", *flags], tmp_path)
    assert done.returncode == 0, done.stderr
    assert list(_status_scopes(tmp_path)) == ["gone-run", "kept-run"]

    shutil.rmtree(traces / "gone-run")  # forget takes only runs gone from the traces root
    forgot = run_cli(["forget", "gone-run", "--traces-root", str(traces)], tmp_path)
    assert forgot.returncode == 0, forgot.stderr
    assert list(_status_scopes(tmp_path)) == ["kept-run"]

    config = config_from_env({}, traces_root=str(traces), publish_root=str(out), staging_root=str(tmp_path / "staging"))
    refresh = build_definitions(config).resolve_job_def(refresh_sweep_coverage.name)
    with dg.DagsterInstance.from_config(str(tmp_path / "dagster_home")) as instance:
        assert refresh.execute_in_process(instance=instance).success
        event = instance.get_latest_materialization_event(sweep_coverage.key)
        assert event is not None and event.asset_materialization is not None
        table = event.asset_materialization.metadata["scopes"].value
    assert [r.data["scope"] for r in table.records] == ["kept-run"]


def _status_lines(tmp_path: Path) -> tuple[dict[str, list[str]], dict[str, str]]:
    """`status`'s cells per scope (and per total: `run total`, `sweep total`), and the line under each."""
    done = run_cli(["status"], tmp_path)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].split()[:2] == ["scope", "state"]
    cells, details = {}, {}
    for line, detail in zip(lines[1::2], lines[2::2]):
        words = line.split()
        name = " ".join(words[:2]) if words[1] == "total" else words[0]
        cells[name], details[name] = words[len(name.split()) :], detail.strip()
    return cells, details


def test_status_shows_every_scope_tried_with_what_went_wrong(tmp_path):
    """The sample blocked by the default policy, a shrink refused, a failed publish, a published run
    and a run's two steps, a partition never exported, and a forgotten run (absent): each with its
    state and why, totals per run of steps and for the sweep. The sweep view's refresh follows the
    failures too, and tags each failed run with its reason."""
    traces, out = tmp_path / "traces", tmp_path / "out"
    for run in (
        "blocked-run",
        "published-run",
        "refused-run",
        "failed-run",
        "gone-run",
        "reblocked-run",
        "vanished-run",
    ):
        shutil.copytree(SAMPLE_TRACES / SAMPLE_RUN, traces / run)
    generate_run(traces, "stepped", trials=6, seed=5, nested_steps=2)
    flags = ["--traces-root", str(traces), "--publish-root", str(out)]
    blocked = run_cli(["materialize", "blocked-run", *flags], tmp_path)  # the default: --on-secret block
    assert blocked.returncode == 1, blocked.stderr
    redact = [*flags, "--on-secret", "redact"]
    published = run_cli(
        [
            "materialize",
            "published-run",
            "refused-run",
            "gone-run",
            "stepped",
            "reblocked-run",
            "vanished-run",
            *redact,
        ],
        tmp_path,
    )
    assert published.returncode == 0, published.stderr
    kept = sorted(p.name for p in (out / "reblocked-run").iterdir())
    reblocked = run_cli(["materialize", "reblocked-run", *flags], tmp_path)  # blocked after a redacted publish
    assert reblocked.returncode == 1 and sorted(p.name for p in (out / "reblocked-run").iterdir()) == kept
    assert "; the version published before is kept: it holds none of the " in reblocked.stderr
    refused = run_cli(["materialize", "refused-run", *redact, "--filter", "success"], tmp_path)
    assert refused.returncode == 1 and "refusing to publish" in refused.stderr, refused.stderr
    shutil.rmtree(traces / "gone-run")
    assert run_cli(["forget", "gone-run", "--traces-root", str(traces)], tmp_path).returncode == 0
    shutil.rmtree(traces / "vanished-run")  # its traces deleted, its partition not forgotten

    (tmp_path / "a-file").write_text("not a folder")  # a publish root no folder can be made under

    def config(publish_root: Path) -> TraceAssetsConfig:
        return config_from_env(
            {},
            traces_root=str(traces),
            publish_root=str(publish_root),
            staging_root=str(tmp_path / "staging"),
            on_secret="redact",
        )

    with dg.DagsterInstance.from_config(str(tmp_path / "dagster_home")) as instance:
        register_scopes(instance, ["failed-run", "waiting-run"])  # waiting-run: a partition no run tried
        export = build_definitions(config(tmp_path / "a-file" / "out")).resolve_job_def(export_trace_run.name)
        assert not export.execute_in_process(
            instance=instance, partition_key="failed-run", raise_on_error=False
        ).success

    cells, details = _status_lines(tmp_path)
    assert list(cells) == [
        "blocked-run", "failed-run", "published-run", "reblocked-run", "refused-run",
        "stepped/step-1", "stepped/step-2", "stepped total", "vanished-run", "waiting-run", "sweep total",
    ]  # fmt: skip
    assert cells["blocked-run"] == ["blocked"] + ["-"] * 8
    assert details["blocked-run"].startswith(
        "blocked by check no_live_secrets on secret_scan_report: credentials found (aws_access_key_id: 1, hf_token: 1)"
    )
    # blocked after a publish that replaced the credentials: that version is kept, and shown
    assert cells["reblocked-run"][:4] == ["blocked", "36", "34", "28"]
    assert "; the version published before is kept: " in details["reblocked-run"]
    assert details["reblocked-run"].endswith(f"published to {out / 'reblocked-run'}")
    assert cells["failed-run"][0] == "failed" and details["failed-run"].startswith("step published_shards failed: ")
    assert "Not a directory" in details["failed-run"]  # the root error, without its class
    assert cells["published-run"][:5] == ["published", "36", "34", "28", "82.4%"]
    assert details["published-run"].startswith("excluded: 3 no_trajectory")
    # refused: the version published before still stands, and says so
    assert cells["refused-run"][:4] == ["refused", "36", "34", "28"]
    assert details["refused-run"].startswith("step published_shards failed: refusing to publish run 'refused-run'")
    assert details["refused-run"].endswith(f"published to {out / 'refused-run'}")
    assert cells["waiting-run"][:3] == ["not", "exported", "yet"]
    steps = [cells[f"stepped/step-{n}"] for n in (1, 2)]
    assert cells["stepped total"][:2] == ["2", "scopes"]
    assert [int(n) for n in cells["stepped total"][2:5]] == [sum(int(s[i]) for s in steps) for i in (1, 2, 3)]
    assert details["stepped total"] == "2 published"
    # published-run, refused-run's earlier version and the steps: what is published, summed
    assert cells["sweep total"][:2] == ["9", "scopes"]
    assert [int(n) for n in cells["sweep total"][2:5]] == [
        4 * figure + int(cells["stepped total"][i]) for figure, i in ((36, 2), (34, 3), (28, 4))
    ]
    assert details["sweep total"] == "4 published, 2 blocked, 1 refused, 1 failed, 1 not exported yet"
    # with its traces root, `status` lists it (a listing of the root, one of each run's step folders):
    # a scope whose traces are gone says so, and what removes it
    rooted = run_cli(["status", "--traces-root", str(traces)], tmp_path)
    lines = rooted.stdout.splitlines()
    [at] = [i for i, line in enumerate(lines) if line.startswith("vanished-run ")]
    assert "gone from the traces root" in lines[at] and lines[at].split()[1:3] != ["published"]
    assert (
        lines[at + 1]
        .strip()
        .startswith(
            "no traces under the traces root (deleted, moved, or never there); `trace-assets forget vanished-run` "
            "removes it; excluded: "
        )
    )
    assert [line.split()[1] for line in lines if line.startswith("published-run ")] == ["published"]

    defs = build_definitions(config(out))
    with dg.DagsterInstance.from_config(str(tmp_path / "dagster_home")) as instance:
        tick = sweep_coverage_after_export.evaluate_tick(dg.build_sensor_context(instance=instance, definitions=defs))
        assert len(tick.run_requests or []) == 1  # one refresh, however many runs ended
        again = sweep_coverage_after_export.evaluate_tick(
            dg.build_sensor_context(instance=instance, definitions=defs, cursor=tick.cursor)
        )
        assert again.run_requests == []  # tagging the failed runs ended none of them again
        reasons = {
            record.dagster_run.tags[PARTITION_TAG]: record.dagster_run.tags.get(FAILURE_TAG)
            for record in instance.get_run_records(dg.RunsFilter(statuses=[dg.DagsterRunStatus.FAILURE]))
        }
        assert reasons["blocked-run"] == details["blocked-run"] and reasons["failed-run"] == details["failed-run"]
        assert reasons["refused-run"] is not None and reasons["refused-run"].startswith("step published_shards failed")
        refresh = defs.resolve_job_def(refresh_sweep_coverage.name)
        assert refresh.execute_in_process(instance=instance).success
        event = instance.get_latest_materialization_event(sweep_coverage.key)
        assert event is not None and event.asset_materialization is not None
        view = str(event.asset_materialization.metadata["status"].value)
        # status reads every scope's newest export run from a query per 500 scopes: the same run as
        # the scope's newest planned publish, a later run of its listing alone not taken for one
        listing = defs.resolve_implicit_global_asset_job_def()
        assert listing.execute_in_process(
            instance=instance, partition_key="published-run", asset_selection=[raw_trial_listing.key]
        ).success
        keys = instance.get_dynamic_partitions(TRACE_RUNS)
        planned = {
            key: instance.get_latest_planned_materialization_info(published_shards.key, partition=key) for key in keys
        }
        one_by_one = {key: info.run_id for key, info in planned.items() if info is not None}
        latest = latest_export_runs(instance, keys)
        assert {key: run.run_id for key, run in latest.items()} == one_by_one
        assert len(one_by_one) == len(keys) - 1  # waiting-run: none
        # the runs that failed at published_shards are read from the run failures' index, as their own
        # events say; the blocked ones (a check's step failed) from their own events
        at_publish = failed_at_publish(instance, list(latest.values()))
        assert sorted(key for key, run in latest.items() if run.run_id in at_publish) == ["failed-run", "refused-run"]
        for key in ("failed-run", "refused-run"):
            assert step_failure(at_publish[latest[key].run_id]) == failure_of(instance, latest[key].run_id)
    # the view lists the traces root: the partitions with no traces there say so
    assert "| blocked-run | blocked | - |" in view and "| waiting-run | gone from the traces root |" in view
    assert "| vanished-run | gone from the traces root | 28 / 34 |" in view
    assert "| **sweep total** | 9 scopes |" in view


def test_one_instance_two_traces_roots_each_view_shows_its_own(tmp_path):
    """Scopes listed from another traces root on the same instance are left out of `status` and the
    sweep view when a root is set, and counted; without a root `status` shows every scope."""
    out = tmp_path / "out"
    roots = {"a-run": tmp_path / "traces-a", "b-run": tmp_path / "traces-b"}
    for run, root in roots.items():
        shutil.copytree(SAMPLE_TRACES / SAMPLE_RUN, root / run)
        flags = ["--traces-root", str(root), "--publish-root", str(out), "--on-secret", "redact"]
        done = run_cli(["materialize", run, *flags], tmp_path)
        assert done.returncode == 0, done.stderr
    register = run_cli(["status"], tmp_path)  # no root: every scope, nothing said hidden
    assert [line.split()[0] for line in register.stdout.splitlines()[1::2]][:2] == ["a-run", "b-run"]
    assert "not shown" not in register.stdout

    # The root as given another way (a trailing slash, `..`) is the same root.
    mine = run_cli(["status", "--traces-root", f"{roots['a-run']}/../traces-a/"], tmp_path)
    assert mine.returncode == 0, mine.stderr
    lines = mine.stdout.splitlines()
    assert [line.split()[0] for line in lines[1:]] == ["a-run", "excluded:", "1"], mine.stdout
    assert lines[-1] == "1 scope(s) of other traces roots on this instance not shown"
    from_env = run_cli(["status"], tmp_path, TRACE_ASSETS_TRACES_ROOT=str(roots["b-run"]))
    assert from_env.stdout.splitlines()[1].split()[0] == "b-run" and "a-run" not in from_env.stdout

    config = config_from_env(
        {}, traces_root=str(roots["a-run"]), publish_root=str(out), staging_root=str(tmp_path / "staging")
    )
    refresh = build_definitions(config).resolve_job_def(refresh_sweep_coverage.name)
    with dg.DagsterInstance.from_config(str(tmp_path / "dagster_home")) as instance:
        assert refresh.execute_in_process(instance=instance).success
        event = instance.get_latest_materialization_event(sweep_coverage.key)
        assert event is not None and event.asset_materialization is not None
        metadata = event.asset_materialization.metadata
    assert [r.data["scope"] for r in metadata["scopes"].value.records] == ["a-run"]
    assert metadata["other_roots_hidden"].value == 1 and "b-run" not in metadata["status"].value
    assert metadata["status"].value.endswith("1 scope(s) of other traces roots on this instance not shown\n")
