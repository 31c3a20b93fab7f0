"""The asset graph, one partition per RL run: listing -> scored -> rows -> secret scan -> shards.

Each asset is a thin layer over `trace_assets.pipeline`; the data lives as Parquet in the
staging folder, and what a person needs to judge a run goes into materialization metadata.
"""

import json
import shutil
import tempfile
from pathlib import Path

import dagster as dg

from trace_assets.pipeline import (
    Coverage,
    build_listing,
    export_rows,
    score_trials,
)
from trace_assets.publish import build_run_folder, replace_folder
from trace_assets.resources import HuggingFaceHub, ObjectStorage, TraceAssetsConfig
from trace_assets.scanning import scan_run, secret_redactor

trace_runs = dg.DynamicPartitionsDefinition(name="trace_runs")

GROUP = "trace_export"
HUB_COMMIT_POOL = "hub_commits"  # dagster.yaml's pool limit keeps Hub commits one at a time


def _reporter(context: dg.AssetExecutionContext):
    return lambda message: context.log.info(message)


def coverage_metadata(coverage: Coverage) -> dict[str, dg.MetadataValue]:
    """Coverage as UI metadata: the numbers, and a table of why folders have no row."""
    reasons = sorted(coverage.excluded.items(), key=lambda item: -item[1])
    return {
        "trial_dirs": dg.MetadataValue.int(coverage.trial_dirs),
        "scored": dg.MetadataValue.int(coverage.scored),
        "unscored": dg.MetadataValue.int(coverage.unscored),
        "exported": dg.MetadataValue.int(coverage.exported),
        "excluded_total": dg.MetadataValue.int(sum(coverage.excluded.values())),
        "export_ratio": dg.MetadataValue.float(round(coverage.export_ratio, 6)),
        "rows": dg.MetadataValue.int(coverage.rows),
        "excluded": dg.MetadataValue.table(
            records=[dg.TableRecord({"reason": reason, "folders": count}) for reason, count in reasons],
            schema=dg.TableSchema(
                columns=[dg.TableColumn("reason", "string"), dg.TableColumn("folders", "int")]
            ),
        ),
    }


@dg.asset(partitions_def=trace_runs, group_name=GROUP, kinds={"parquet"})
def raw_trial_listing(
    context: dg.AssetExecutionContext, trace_config: TraceAssetsConfig, object_storage: ObjectStorage
) -> dg.MaterializeResult:
    """Every trial folder of the run, from one recursive listing of its trace_jobs/ prefix."""
    staging = trace_config.staging(context.partition_key)
    stats = build_listing(trace_config.store(object_storage), staging)
    context.log.info(f"listed {stats.objects} objects in {stats.trial_dirs} trial folders")
    return dg.MaterializeResult(
        metadata={
            "trial_dirs": dg.MetadataValue.int(stats.trial_dirs),
            "objects": dg.MetadataValue.int(stats.objects),
            "bytes": dg.MetadataValue.int(stats.bytes),
            "objects_outside_trials": dg.MetadataValue.int(stats.stray_objects),
            "without_result_json": dg.MetadataValue.int(stats.unscored),
            "path": dg.MetadataValue.path(str(staging.listing)),
        }
    )


@dg.asset(partitions_def=trace_runs, group_name=GROUP, kinds={"parquet"}, deps=[raw_trial_listing])
def scored_trials(
    context: dg.AssetExecutionContext, trace_config: TraceAssetsConfig, object_storage: ObjectStorage
) -> dg.MaterializeResult:
    """Each folder's result.json read as a TrialResult: task, reward, exception, agent, model."""
    staging = trace_config.staging(context.partition_key)
    stats = score_trials(trace_config.store(object_storage), staging, trace_config.batch_size, _reporter(context))
    return dg.MaterializeResult(
        metadata={
            **{f"status_{status}": dg.MetadataValue.int(count) for status, count in sorted(stats.statuses.items())},
            "result_json_read": dg.MetadataValue.int(stats.reread),
            "result_json_unchanged": dg.MetadataValue.int(stats.cached),
            "path": dg.MetadataValue.path(str(staging.scored)),
        }
    )


@dg.asset(partitions_def=trace_runs, group_name=GROUP, kinds={"parquet"}, deps=[scored_trials])
def last_episode_rows(
    context: dg.AssetExecutionContext, trace_config: TraceAssetsConfig, object_storage: ObjectStorage
) -> dg.MaterializeResult:
    """Harbor's `export --episodes last` row for every scored trial, and a status for every folder."""
    staging = trace_config.staging(context.partition_key)
    coverage, stats = export_rows(
        trace_config.store(object_storage),
        staging,
        trace_config.include_subagents,
        trace_config.batch_size,
        _reporter(context),
        rows_per_part=trace_config.max_rows_per_shard,
    )
    return dg.MaterializeResult(
        metadata={
            **coverage_metadata(coverage),
            "subagent_rows": dg.MetadataValue.int(coverage.subagent_rows),
            "trials_read": dg.MetadataValue.int(stats.reread),
            "trials_unchanged": dg.MetadataValue.int(stats.cached),
            "path": dg.MetadataValue.path(str(staging.rows)),
        }
    )


@dg.asset(partitions_def=trace_runs, group_name=GROUP, kinds={"json"}, deps=[last_episode_rows])
def secret_scan_report(
    context: dg.AssetExecutionContext, trace_config: TraceAssetsConfig, object_storage: ObjectStorage, hub: HuggingFaceHub
) -> dg.MaterializeResult:
    """Credential-shaped strings in every text column of the rows, with a verdict per finding."""
    run_id = context.partition_key
    staging = trace_config.staging(run_id)
    report = scan_run(
        staging.require_rows(),
        run_id,
        trace_config.secret_patterns,
        trace_config.secret_allowlist,
    )
    staging.scan_report.write_text(json.dumps(report, indent=2) + "\n")
    context.log.info(f"secret scan verdict: {report['verdict']}")
    if report["verdict"] == "live" and trace_config.on_secret == "block":
        _publish_report_only(trace_config, object_storage, hub, run_id, staging.scan_report)
    return dg.MaterializeResult(metadata=scan_metadata(report, staging.scan_report))


def scan_metadata(report: dict, path: Path) -> dict[str, dg.MetadataValue]:
    kinds = report.get("kinds", {})
    return {
        "verdict": dg.MetadataValue.text(report["verdict"]),
        "kinds": dg.MetadataValue.table(
            records=[
                dg.TableRecord({"kind": kind, **{k: int(v.get(k, 0)) for k in ("matches", "rows", "trials", "tasks", "live")}})
                for kind, v in sorted(kinds.items())
                if v.get("matches")
            ],
            schema=dg.TableSchema(
                columns=[dg.TableColumn("kind", "string")]
                + [dg.TableColumn(k, "int") for k in ("matches", "rows", "trials", "tasks", "live")]
            ),
        ),
        "pem_blocks": dg.MetadataValue.table(
            records=[
                dg.TableRecord(
                    {
                        "trial_name": b["trial_name"],
                        "parseable": bool(b["parseable"]),
                        "placeholder": bool(b["placeholder"]),
                        "decoded_bytes": int(b["decoded_bytes"]),
                        "verdict": b["verdict"],
                        "fingerprint": b["fingerprint"],
                    }
                )
                for b in report.get("pem_blocks", [])[:200]
            ],
            schema=dg.TableSchema(
                columns=[
                    dg.TableColumn("trial_name", "string"),
                    dg.TableColumn("parseable", "bool"),
                    dg.TableColumn("placeholder", "bool"),
                    dg.TableColumn("decoded_bytes", "int"),
                    dg.TableColumn("verdict", "string"),
                    dg.TableColumn("fingerprint", "string"),
                ]
            ),
        ),
        "path": dg.MetadataValue.path(str(path)),
    }


def _publish_report_only(trace_config: TraceAssetsConfig, object_storage: ObjectStorage, hub: HuggingFaceHub, run_id: str, report_path: Path) -> None:
    """A blocked run's published folder holds the scan report and nothing else.

    On the Hub nothing is committed at all: the report stays in the staging folder.
    """
    if hub.target(trace_config.publish_root, run_id) is not None:
        return
    with tempfile.TemporaryDirectory() as folder:
        shutil.copyfile(report_path, Path(folder) / "secret_scan.json")
        target = trace_config.publish_url(run_id)
        replace_folder(Path(folder), target, object_storage.storage_options(target))


@dg.asset(
    partitions_def=trace_runs,
    group_name=GROUP,
    kinds={"parquet", "huggingface"},
    deps=[secret_scan_report],
    pool=HUB_COMMIT_POOL,
)
def published_shards(
    context: dg.AssetExecutionContext, trace_config: TraceAssetsConfig, object_storage: ObjectStorage, hub: HuggingFaceHub
) -> dg.MaterializeResult:
    """The run as a Hugging Face dataset folder: shards, card, coverage.json, trials.parquet."""
    run_id = context.partition_key
    staging = trace_config.staging(run_id)
    coverage = Coverage.from_dict(json.loads(staging.require(staging.coverage, "last_episode_rows").read_text()))
    report = json.loads(staging.require(staging.scan_report, "secret_scan_report").read_text())
    transform, redacted = secret_redactor(trace_config.on_secret, trace_config.secret_patterns, trace_config.secret_allowlist, report)
    local_dir = staging.folder / "publish"
    shards = build_run_folder(
        local_dir, staging.require_rows(), staging.statuses, coverage, report, trace_config.max_rows_per_shard, transform
    )
    hub_target = hub.target(trace_config.publish_root, run_id)
    if hub_target is None:
        target = trace_config.publish_url(run_id)
        replace_folder(local_dir, target, object_storage.storage_options(target))
    else:
        target = hub.publish(local_dir, hub_target, run_id).commit_url
    shutil.rmtree(local_dir)
    context.log.info(f"published {shards.num_examples} rows in {len(shards.files)} shard(s) to {target}")
    return dg.MaterializeResult(
        metadata={
            **coverage_metadata(coverage),
            "shards": dg.MetadataValue.int(len(shards.files)),
            "num_examples": dg.MetadataValue.int(shards.num_examples),
            "download_size": dg.MetadataValue.int(shards.download_size),
            "redacted": dg.MetadataValue.json(redacted),
            "secret_verdict": dg.MetadataValue.text(report["verdict"]),
            "published_to": dg.MetadataValue.url(target) if "://" in target else dg.MetadataValue.path(target),
        }
    )
