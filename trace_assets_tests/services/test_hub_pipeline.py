"""published_shards to a Hub repo: the real huggingface_hub client against the local stand-in."""

from __future__ import annotations

import io
import json

import dagster as dg
import pyarrow.parquet as pq

from trace_assets.definitions import build_definitions, export_trace_run, trace_runs
from trace_assets.defs.resources import config_from_env, hub_from_env
from trace_assets_tests.support.helpers import SAMPLE_RUN, SAMPLE_TRACES
from trace_assets_tests.support.hub_server import STAND_IN_TOKEN

REPO = "rl-org/sweep-traces"


def _materialize(
    instance, tmp_path, hub_url: str, rows_per_shard: int, on_secret: str = "allow"
) -> dg.ExecuteInProcessResult:
    trace_config = config_from_env(
        {},
        traces_root=str(SAMPLE_TRACES),
        publish_root=f"hf://datasets/{REPO}",
        staging_root=str(tmp_path / "staging"),
        on_secret=on_secret,
        max_rows_per_shard=rows_per_shard,
        hub=hub_from_env({"HF_TOKEN": "set", "HF_ENDPOINT": hub_url}),  # the token itself comes through EnvVar
    )
    if SAMPLE_RUN not in instance.get_dynamic_partitions(trace_runs.name):
        instance.add_dynamic_partitions(trace_runs.name, [SAMPLE_RUN])
    job = build_definitions(trace_config).resolve_job_def(export_trace_run.name)
    return job.execute_in_process(instance=instance, partition_key=SAMPLE_RUN, raise_on_error=False)


def test_publishing_to_the_hub_is_one_commit_that_replaces_the_runs_shards(hub_server, tmp_path, monkeypatch):
    monkeypatch.setenv("HF_TOKEN", STAND_IN_TOKEN)
    with dg.instance_for_test() as instance:
        assert _materialize(instance, tmp_path, hub_server.url, rows_per_shard=10).success
        files = hub_server.files(REPO)
        prefix = f"{SAMPLE_RUN}/"
        shards = sorted(f for f in files if f.startswith(prefix + "data/"))
        version = shards[0].split("/")[2]  # the shards' folder, named by their content
        assert shards == [f"{prefix}data/{version}/train-0000{i}-of-00003.parquet" for i in range(3)]
        for name in ("README.md", "coverage.json", "secret_scan.json", "trials.parquet"):
            assert prefix + name in files
        assert hub_server.is_private(REPO)
        assert {f for f in hub_server.lfs_files(REPO) if f.endswith(".parquet")} == {
            f for f in files if f.endswith(".parquet")
        }
        assert len(hub_server.commits(REPO)) == 2  # the repo's first commit, then one for the whole run
        published = instance.get_latest_materialization_event(dg.AssetKey("published_shards"))
        assert "rl-org/sweep-traces" in published.asset_materialization.metadata["published_to"].value

        assert _materialize(instance, tmp_path, hub_server.url, rows_per_shard=1000).success
        files = hub_server.files(REPO)
        [shard_path] = sorted(f for f in files if f.startswith(prefix + "data/"))
        assert shard_path.endswith("/train-00000-of-00001.parquet") and version not in shard_path
        assert len(hub_server.commits(REPO)) == 3  # the shrink guard read coverage.json, committed nothing
        shard = pq.read_table(io.BytesIO(files[shard_path]))
        assert shard.num_rows == 28

        for asset in (
            "raw_trial_listing",
            "scored_trials",
            "last_episode_rows",
            "secret_scan_report",
            "published_shards",
        ):
            records = instance.fetch_materializations(dg.AssetKey(asset), limit=10).records
            assert records and all(STAND_IN_TOKEN not in str(r.event_log_entry) for r in records)


def test_a_blocked_run_leaves_its_scan_report_and_a_row_in_the_sweeps_repo(hub_server, tmp_path, monkeypatch):
    """The sample's planted live keys under on_secret=block: no rows go up, the scope's folder holds
    the scan report (fingerprints, never the strings) and the root card lists it as blocked."""
    monkeypatch.setenv("HF_TOKEN", STAND_IN_TOKEN)
    trace_config = config_from_env(
        {},
        traces_root=str(SAMPLE_TRACES),
        publish_root=f"hf://datasets/{REPO}",
        staging_root=str(tmp_path / "staging"),
        on_secret="block",
        hub=hub_from_env({"HF_TOKEN": "set", "HF_ENDPOINT": hub_server.url}),
    )
    with dg.instance_for_test() as instance:
        instance.add_dynamic_partitions(trace_runs.name, [SAMPLE_RUN])
        job = build_definitions(trace_config).resolve_job_def(export_trace_run.name)
        result = job.execute_in_process(instance=instance, partition_key=SAMPLE_RUN, raise_on_error=False)
    assert not result.success
    files = hub_server.files(REPO)
    assert sorted(f for f in files if f.startswith(f"{SAMPLE_RUN}/")) == [f"{SAMPLE_RUN}/secret_scan.json"]
    assert json.loads(files[f"{SAMPLE_RUN}/secret_scan.json"])["verdict"] == "live"
    card = files["README.md"].decode()
    row = f"| `{SAMPLE_RUN}` | - | - | - | - | - | - | blocked: live | [scan report]({SAMPLE_RUN}/secret_scan.json) |"
    assert row in card
    assert "configs: []" in card


def test_a_block_over_a_published_version_is_in_its_history_on_the_hub(hub_server, tmp_path, monkeypatch):
    """Kept: one commit of the scope's `versions.json`, its card and shards as they were. Withdrawn:
    the folder keeps the scan report and that history, in the block's one commit."""
    monkeypatch.setenv("HF_TOKEN", STAND_IN_TOKEN)
    prefix = f"{SAMPLE_RUN}/"
    with dg.instance_for_test() as instance:
        assert _materialize(instance, tmp_path, hub_server.url, 1000, "redact").success
        published = hub_server.files(REPO)
        commits = len(hub_server.commits(REPO))
        assert not _materialize(instance, tmp_path, hub_server.url, 1000, "block").success
        files = hub_server.files(REPO)
        assert len(hub_server.commits(REPO)) == commits + 1
        assert {path: data for path, data in files.items() if path != prefix + "versions.json"} == {
            path: data for path, data in published.items() if path != prefix + "versions.json"
        }
        *_, kept = json.loads(files[prefix + "versions.json"])["versions"]
        assert kept["blocked"]["previous_version"] == "kept"

        assert _materialize(instance, tmp_path, hub_server.url, 1000, "allow").success
        assert not _materialize(instance, tmp_path, hub_server.url, 1000, "block").success
        files = hub_server.files(REPO)
        assert sorted(f for f in files if f.startswith(prefix)) == [
            prefix + "secret_scan.json",
            prefix + "versions.json",
        ]
        history = json.loads(files[prefix + "versions.json"])["versions"]
        assert [entry.get("blocked", {}).get("previous_version") for entry in history] == [
            None, "kept", None, "withdrawn"
        ]  # fmt: skip
