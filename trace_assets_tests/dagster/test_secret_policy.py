"""Publishing is gated on the secret scan: block (default), redact, or allow."""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import random
import shutil
import subprocess
import sys
from pathlib import Path

import dagster as dg
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from dagster._core.loader import LoadingContextForTest
from dagster._core.storage.asset_check_execution_record import AssetCheckExecutionResolvedStatus

from trace_assets.definitions import build_definitions, export_trace_run, trace_runs
from trace_assets.defs.assets import raw_trial_listing
from trace_assets.defs.resources import config_from_env
from trace_assets.defs.sweep import scope_statuses
from trace_assets_tests.support.bad_input import AGENT, USER, result_json, trajectory
from trace_assets_tests.support.helpers import PROJECT_DIR, SAMPLE_RUN, SAMPLE_TRACES, load_published
from trace_assets_tests.support.secret_framings import crc_token

RUN = "run-with-a-key"


def _private_key_pem() -> str:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()


def _run_with_live_key(traces: Path) -> str:
    """The sample run plus one trial whose terminal output shows a real private key, and an OpenAI
    key's rough shape after its variable (`unverified`, as the sample's own near misses are by default)."""
    shutil.copytree(SAMPLE_TRACES / SAMPLE_RUN, traces / RUN)
    pem = _private_key_pem()
    trial = traces / RUN / "trace_jobs" / "leaky-task__k3y"
    (trial / "agent").mkdir(parents=True)
    (trial / "result.json").write_bytes(result_json("leaky-task__k3y"))
    rough = "sk-proj-" + "".join(random.Random(3).choices("abcdefghijkLMNOPQRS0123456789", k=48))
    content = f"$ cat ~/.ssh/deploy.pem\n{pem}\n$ env\nOPENAI_API_KEY={rough}\n"
    leak = {**AGENT, "observation": {"results": [{"content": content}]}}
    (trial / "agent" / "trajectory.json").write_bytes(trajectory([USER, leak, {**AGENT, "step_id": 3}]))
    return pem


def _materialize(
    instance, tmp_path: Path, on_secret: str, on_unverified: str = "redact", **config: object
) -> dg.ExecuteInProcessResult:
    trace_config = config_from_env(
        {},
        traces_root=str(tmp_path / "traces"),
        publish_root=str(tmp_path / "published"),
        staging_root=str(tmp_path / "staging"),
        on_secret=on_secret,
        on_unverified=on_unverified,
        **config,
    )
    instance.add_dynamic_partitions(trace_runs.name, [RUN])
    job = build_definitions(trace_config).resolve_job_def(export_trace_run.name)
    return job.execute_in_process(instance=instance, partition_key=RUN, raise_on_error=False)


def test_live_key_blocks_publishing_and_only_the_report_is_written(tmp_path):
    pem = _run_with_live_key(tmp_path / "traces")
    with dg.instance_for_test() as instance:
        result = _materialize(instance, tmp_path, "block")
        assert not result.success
        [check] = [e for e in result.get_asset_check_evaluations() if e.check_name == "no_live_secrets"]
        assert not check.passed and "private_key: 2" in check.description  # in the row and in its session
        assert instance.get_latest_materialization_event(dg.AssetKey("published_shards")) is None
        # The run's failure opens with the reason (a Failure's description), not Dagster's "1 blocking
        # asset check failed": the UI shows the error's first line above its stack trace.
        [failure] = [e for e in result.all_events if e.is_step_failure]
        reason = f"blocked by check no_live_secrets on secret_scan_report: {check.description}"
        assert failure.step_failure_data.user_failure_data.description == reason
        assert (
            failure.step_failure_data.error.message.splitlines()[0]
            == f"dagster._core.definitions.events.Failure: {reason}"
        )
        assert failure.step_failure_data.user_failure_data.metadata["blocking_by_kind"].value.startswith(
            "private_key: 2"
        )
        [run_failure] = [e for e in result.all_events if e.event_type == dg.DagsterEventType.RUN_FAILURE]
        assert run_failure.event_specific_data.error.message.startswith(
            "dagster._core.definitions.events.Failure: blocked by check no_live_secrets"
        )

    folder = tmp_path / "published" / RUN
    assert [p.name for p in folder.iterdir()] == ["secret_scan.json"]
    report_text = (folder / "secret_scan.json").read_text()
    report = json.loads(report_text)
    assert report["verdict"] == "live" and report["kinds"]["private_key"]["live"] == 2
    assert [b["trial_name"] for b in report["pem_blocks"] if b["verdict"] == "live"] == ["leaky-task__k3y"]
    body = "".join(pem.splitlines()[1:-1])
    assert body[:40] not in report_text and body[-40:] not in report_text


def test_a_block_keeps_a_version_that_replaced_the_key_and_withdraws_one_that_holds_it(tmp_path):
    """Issue 48's story "block over a published version": the decision is the failure line's, the
    scan report's, the asset's metadata's and `status`'s, and the folder shows it."""
    _run_with_live_key(tmp_path / "traces")
    folder = tmp_path / "published" / RUN
    with dg.instance_for_test() as instance:
        assert _materialize(instance, tmp_path, "redact").success
        redacted = sorted(p.name for p in folder.iterdir())
        card = (folder / "README.md").read_bytes()
        blocked = _materialize(instance, tmp_path, "block")
        assert not blocked.success and sorted(p.name for p in folder.iterdir()) == redacted  # kept
        assert (folder / "README.md").read_bytes() == card  # its card as published; its history records the block
        *_, kept = json.loads((folder / "versions.json").read_text())["versions"]
        assert kept["blocked"]["previous_version"] == "kept" and "aws_access_key_id" in kept["blocked"]["kinds"]
        [check] = [e for e in blocked.get_asset_check_evaluations() if e.check_name == "no_live_secrets"]
        assert check.description.endswith(
            "; the version published before is kept: it holds none of the 4 blocking finding(s) in the clear "
            "(replaced there, or from trials it did not publish as they are now)"
        )
        scan = instance.get_latest_materialization_event(dg.AssetKey("secret_scan_report")).asset_materialization
        assert scan.metadata["previous_version"].value == "kept"
        staged = json.loads((tmp_path / "staging" / RUN / "secret_scan.json").read_text())
        assert staged["previous_version"]["decision"] == "kept"
        [status], _, _ = scope_statuses(instance)
        assert status.state == "blocked" and status.published is not None  # the kept version, still shown
        assert "the version published before is kept" in status.reason

        assert _materialize(instance, tmp_path, "allow").success  # published with the key as it is
        withdrawn = _materialize(instance, tmp_path, "block")
        # the report, and the withdrawn version's history with the block last
        assert not withdrawn.success and sorted(p.name for p in folder.iterdir()) == [
            "secret_scan.json",
            "versions.json",
        ]
        history = json.loads((folder / "versions.json").read_text())["versions"]
        assert [entry.get("blocked", {}).get("previous_version") for entry in history] == [
            None, "kept", None, "withdrawn"
        ]  # fmt: skip
        [check] = [e for e in withdrawn.get_asset_check_evaluations() if e.check_name == "no_live_secrets"]
        assert "; the version published before is withdrawn: it holds aws_access_key_id " in check.description
        published = json.loads((folder / "secret_scan.json").read_text())
        assert published["previous_version"]["decision"] == "withdrawn"
        [status], _, _ = scope_statuses(instance)
        assert status.state == "blocked" and status.published is None  # nothing of it is published now
        assert "the version published before is withdrawn" in status.reason
        # published_shards' page: its last materialization stays (no public way to retract one), and
        # an observation after it says the version is withdrawn, by which run, and why
        [observed] = instance.fetch_observations(dg.AssetKey("published_shards"), limit=1).records
        assert observed.run_id == withdrawn.run_id and observed.partition_key == RUN
        assert observed.asset_observation.metadata["previous_version"].value == "withdrawn"
        assert observed.asset_observation.description.startswith(f"withdrawn by run {withdrawn.run_id}: the version ")

        again = _materialize(instance, tmp_path, "block")  # nothing published to decide about: the history stays
        assert not again.success and sorted(p.name for p in folder.iterdir()) == ["secret_scan.json", "versions.json"]
        [check] = [e for e in again.get_asset_check_evaluations() if e.check_name == "no_live_secrets"]
        assert "the version published before" not in check.description
        assert (
            json.loads((folder / "versions.json").read_text())["versions"][-1]["blocked"]["previous_version"] == "none"
        )

        assert _materialize(instance, tmp_path, "redact").success  # the next version's card tells the story
        card = (folder / "README.md").read_text()
        history = card[card.index("## Version history") :]
        rows = [line for line in history.splitlines() if line.startswith("| blocked |")]
        assert len(rows) == 3
        assert "the version before was withdrawn: `it holds aws_access_key_id " in rows[1]
        assert "the version before was kept: `it holds none of the 4 blocking finding(s)" in rows[2]
        assert "nothing was published then" in rows[0]


def test_a_block_withdraws_a_version_whose_trial_list_does_not_parse(tmp_path):
    """What that version holds cannot be shown: withdrawn, saying why, rather than a failed step."""
    _run_with_live_key(tmp_path / "traces")
    folder = tmp_path / "published" / RUN
    with dg.instance_for_test() as instance:
        assert _materialize(instance, tmp_path, "redact").success
        (folder / "trials.parquet").write_bytes(b"not parquet")
        blocked = _materialize(instance, tmp_path, "block")
        assert not blocked.success and sorted(p.name for p in folder.iterdir()) == ["secret_scan.json", "versions.json"]
        [check] = [e for e in blocked.get_asset_check_evaluations() if e.check_name == "no_live_secrets"]
        assert "; the version published before is withdrawn: its scan report or trial list could not be read (" in (
            check.description
        )


def test_redact_publishes_with_the_key_replaced(tmp_path):
    pem = _run_with_live_key(tmp_path / "traces")
    with dg.instance_for_test() as instance:
        assert _materialize(instance, tmp_path, "redact").success
    folder = tmp_path / "published" / RUN
    rows = list(load_published(folder, tmp_path / "hf_cache"))
    leaky = next(r for r in rows if r["trial_name"] == "leaky-task__k3y")
    text = json.dumps(rows)
    assert "[REDACTED:private_key]" in json.dumps(leaky["conversations"])
    assert pem.splitlines()[1] not in text
    report = json.loads((folder / "secret_scan.json").read_text())
    assert (report["verdict"], report["verdict_as_read"]) == ("redacted", "live")
    assert report["kinds"]["private_key"]["live"] == 2  # the counts describe the rows and sessions as read
    assert report["redacted"]["private_key"] == 2  # the row's and the session file's
    # the rough key in its row and session file, and the sample's bare key whose marker is missing (a
    # near miss with a generated body: unverified, redacted by default) in its own
    assert report["redacted"]["openai_api_key"] == 4
    assert report["redacted"]["jwt"] == 2  # the sample's bare JWT whose payload is no JSON, likewise
    sessions = "".join(p.read_text() for p in (folder / "sessions").rglob("*.jsonl"))
    assert "[REDACTED:private_key]" in sessions and pem.splitlines()[1] not in sessions
    assert "were replaced by `[REDACTED:<kind>]`" in (folder / "README.md").read_text()


def test_near_misses_can_be_kept(tmp_path):
    _run_with_live_key(tmp_path / "traces")
    with dg.instance_for_test() as instance:
        assert _materialize(instance, tmp_path, "redact", on_near_miss="keep").success
    report = json.loads((tmp_path / "published" / RUN / "secret_scan.json").read_text())
    assert report["redacted"]["openai_api_key"] == 2  # only the planted key: the sample's near miss is kept
    assert "jwt" not in report["redacted"] and report["kinds"]["jwt"]["near_miss"] == 2


def test_unverified_can_block(tmp_path):
    _run_with_live_key(tmp_path / "traces")
    with dg.instance_for_test() as instance:
        result = _materialize(instance, tmp_path, "allow", on_unverified="block")
        assert not result.success
        [check] = [e for e in result.get_asset_check_evaluations() if e.check_name == "no_live_secrets"]
        assert not check.passed and "openai_api_key: 4" in check.description and "unverified" in check.description


def test_allow_publishes_as_is(tmp_path):
    pem = _run_with_live_key(tmp_path / "traces")
    with dg.instance_for_test() as instance:
        assert _materialize(instance, tmp_path, "allow", on_unverified="keep").success
    rows = list(load_published(tmp_path / "published" / RUN, tmp_path / "hf_cache"))
    assert pem.splitlines()[1] in json.dumps(rows)


def test_cli_exits_non_zero_naming_the_blocking_check(tmp_path):
    _run_with_live_key(tmp_path / "traces")
    home = tmp_path / "home"
    home.mkdir()
    shutil.copyfile(PROJECT_DIR / "dagster.yaml", home / "dagster.yaml")
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRACE_ASSETS_")}
    env.update(DAGSTER_HOME=str(home), TRACE_ASSETS_STAGING_ROOT=str(tmp_path / "staging"))
    cli = str(Path(sys.executable).with_name("trace-assets"))
    done = subprocess.run(
        [cli, "materialize", RUN, "--traces-root", str(tmp_path / "traces"), "--publish-root", str(tmp_path / "out")],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert done.returncode == 1
    assert "blocked by check no_live_secrets on secret_scan_report" in done.stderr
    assert json.loads(done.stdout)["status"] == "failed"


def _plant_in_episode_prompt(traces: Path) -> tuple[str, str]:
    """A live token in an episode's prompt file, which no row or session file is made from."""
    token = crc_token(random.Random(14), "ghp_")
    key = "stack-bash-1318__pZPPTdh/agent/episode-4/prompt.txt"
    prompt = traces / RUN / "trace_jobs" / key
    prompt.write_text(prompt.read_text() + f"\nroot@sandbox:/app# cat .env\nGITHUB_TOKEN={token}\n")
    return key, hashlib.sha256(token.encode()).hexdigest()[:16]


def _raw_check(result: dg.ExecuteInProcessResult) -> dg.AssetCheckEvaluation:
    [check] = [e for e in result.get_asset_check_evaluations() if e.check_name == "raw_tree_secrets"]
    return check


CHECKED_ASSETS = (  # and raw_tree_secrets on raw_trial_listing
    (dg.AssetKey("last_episode_rows"), ["coverage_accounts_for_every_folder", "export_ratio_above_threshold"]),
    (dg.AssetKey("secret_scan_report"), ["no_live_secrets"]),
)


def _check_statuses(instance: dg.DagsterInstance, run_id: str) -> dict[str, AssetCheckExecutionResolvedStatus]:
    """Every check the run planned, by name, as the UI resolves it once the run has ended."""
    statuses = {}
    for asset_key, names in ((raw_trial_listing.key, ["raw_tree_secrets"]), *CHECKED_ASSETS):
        for name in names:
            key = dg.AssetCheckKey(asset_key, name)
            for execution in instance.event_log_storage.get_asset_check_execution_history(key, limit=5):
                if execution.run_id == run_id:
                    statuses[name] = asyncio.run(execution.resolve_status(LoadingContextForTest(instance)))
    return statuses


def test_raw_tree_scan_is_off_by_default_and_its_check_is_in_no_run(tmp_path):
    """Off, `raw_tree_secrets` is not defined, so no run plans it: nothing reads "Execution failed"
    after a blocked run. Every check of the blocked run shows what it found."""
    shutil.copytree(SAMPLE_TRACES / SAMPLE_RUN, tmp_path / "traces" / RUN)
    _plant_in_episode_prompt(tmp_path / "traces")
    succeeded, failed = AssetCheckExecutionResolvedStatus.SUCCEEDED, AssetCheckExecutionResolvedStatus.FAILED
    expected = {
        "redact": {
            "coverage_accounts_for_every_folder": succeeded,
            "export_ratio_above_threshold": failed,  # a warning: the sample exports 82% of its scored trials
            "no_live_secrets": succeeded,
        },
        "block": {
            "coverage_accounts_for_every_folder": succeeded,
            "export_ratio_above_threshold": failed,
            "no_live_secrets": failed,
        },
    }
    with dg.instance_for_test() as instance:
        for policy, published in (("redact", True), ("block", False)):
            result = _materialize(instance, tmp_path, policy)
            assert result.success is published
            assert _check_statuses(instance, result.run_id) == expected[policy], policy
    assert not list((tmp_path / "staging").rglob("raw_secret_scan.json"))


def test_raw_scan_in_run_config_without_the_check_fails_before_listing(tmp_path):
    """A run that asks for the raw-tree scan (the Launchpad's `raw_scan: true`) on a code location
    loaded without it fails at its first step, saying how to turn it on, rather than skip the scan."""
    shutil.copytree(SAMPLE_TRACES / SAMPLE_RUN, tmp_path / "traces" / RUN)
    roots = {
        "traces_root": str(tmp_path / "traces"),
        "publish_root": str(tmp_path / "p"),
        "staging_root": str(tmp_path / "s"),
    }
    trace_config = config_from_env({}, **roots)
    with dg.instance_for_test() as instance:
        instance.add_dynamic_partitions(trace_runs.name, [RUN])
        job = build_definitions(trace_config).resolve_job_def(export_trace_run.name)
        result = job.execute_in_process(
            instance=instance,
            partition_key=RUN,
            raise_on_error=False,
            run_config={"resources": {"trace_config": {"config": {**roots, "raw_scan": True}}}},
        )
    assert not result.success
    [failure] = [e for e in result.all_events if e.is_step_failure]
    assert failure.step_key == "raw_trial_listing"
    description = failure.step_failure_data.user_failure_data.description
    assert description.startswith("raw_scan is on in this run's config, but its plan has no raw_tree_secrets"), (
        description
    )
    assert "TRACE_ASSETS_RAW_SCAN=1" in description and "--raw-scan" in description
    assert not (tmp_path / "s").exists()  # before anything is written


def test_raw_tree_scan_finds_a_key_the_published_fields_never_hold(tmp_path):
    shutil.copytree(SAMPLE_TRACES / SAMPLE_RUN, tmp_path / "traces" / RUN)
    key, fingerprint = _plant_in_episode_prompt(tmp_path / "traces")
    sparse = next((tmp_path / "traces" / RUN / "trace_jobs").iterdir()) / "agent" / "sandbox.log"
    sparse.write_text("a log the sandbox was still writing\n" * 1000)  # past the 8 KiB binary sniff
    os.truncate(sparse, 6 * 2**20)  # its hole is never read, nor scanned
    with dg.instance_for_test() as instance:
        result = _materialize(instance, tmp_path, "redact", raw_scan=True)
        assert result.success  # the check warns; publishing goes on
        check = _raw_check(result)
    assert not check.passed and check.severity == dg.AssetCheckSeverity.WARN
    assert "github_token" in check.description and check.metadata["objects_with_findings"].value >= 1
    assert "objects scanned only in part: 1 binary" in check.description
    [report_path] = (tmp_path / "staging").rglob("raw_secret_scan.json")
    report = json.loads(report_path.read_text())
    [entry] = [o for o in report["objects"] if o["object"] == key]
    assert entry["kinds"] == {"github_token": {"live": 1}} and entry["fingerprints"] == [fingerprint]
    published = (tmp_path / "published" / RUN / "secret_scan.json").read_text()
    assert fingerprint not in published  # the row scan reads the published fields only
