"""Asset checks: the accounting adds up, enough of the run was exported, no live secret goes out,
and (when asked) no secret sits anywhere in the raw tree."""

import warnings
from collections.abc import Iterator

import dagster as dg

from trace_assets.core.accounting import Coverage
from trace_assets.core.run_tags import blocked_by
from trace_assets.defs.assets import RAW_TREE_CHECK, last_episode_rows, raw_trial_listing, secret_scan_report
from trace_assets.defs.metadata import counts_text, percent_text, size_text
from trace_assets.defs.partitions import scope_of, trace_runs
from trace_assets.defs.resources import TraceAssetsConfig
from trace_assets.orchestration.options import scan_options, scan_policy
from trace_assets.publishing.blocked_version import BlockDecision, PreviousVersion
from trace_assets.secret_scan.verdicts import Verdict
from trace_assets.settings import PipelineSettings, env_name
from trace_assets.steps.raw_scan import RAW_SCAN_REPORT, raw_scan
from trace_assets.steps.staging import write_json_atomically

# Checks are partitioned like their assets, so each run's check reads that run's files.
warnings.filterwarnings(
    "ignore", message="Specifying a partitions_def on an AssetCheckSpec", category=dg.PreviewWarning
)


def _coverage(trace_config: TraceAssetsConfig, context: dg.AssetCheckExecutionContext) -> Coverage:
    with trace_config.parts().staging(scope_of(context)).locked(context.log.info) as staging:  # pulls mirrored staging
        return Coverage.from_dict(staging.read_json(staging.coverage, "last_episode_rows"))


@dg.asset_check(
    asset=last_episode_rows,
    blocking=True,
    partitions_def=trace_runs,
    description="Passes when every trial folder listed ends exported or excluded with a reason: scored plus "
    "unscored, and exported plus excluded, both equal trial_dirs. Failing, it blocks publishing.",
)
def coverage_accounts_for_every_folder(
    context: dg.AssetCheckExecutionContext, trace_config: TraceAssetsConfig
) -> dg.AssetCheckResult:
    """Every trial folder ends exported or excluded with a reason: the counts add up to trial_dirs."""
    coverage = _coverage(trace_config, context)
    excluded = sum(coverage.excluded.values())
    return dg.AssetCheckResult(
        passed=coverage.accounted,
        metadata={
            "trial_dirs": coverage.trial_dirs,
            "scored_plus_unscored": coverage.scored + coverage.unscored,
            "exported_plus_excluded": coverage.exported + excluded,
        },
        description=None if coverage.accounted else "coverage counts do not add up to the trial folders listed",
    )


@dg.asset_check(
    asset=last_episode_rows,
    partitions_def=trace_runs,
    description="Passes when at least min_export_ratio (a fixed share, 90% unless set) of the scored trials "
    "were exported as rows; below it, it warns and the run still publishes.",
)
def export_ratio_above_threshold(
    context: dg.AssetCheckExecutionContext, trace_config: TraceAssetsConfig
) -> dg.AssetCheckResult:
    """Warns when fewer scored trials than `min_export_ratio` made it into rows."""
    coverage = _coverage(trace_config, context)
    passed = coverage.export_ratio >= trace_config.min_export_ratio
    return dg.AssetCheckResult(
        passed=passed,
        severity=dg.AssetCheckSeverity.WARN,
        metadata={
            "export_ratio": percent_text(coverage.export_ratio),
            "threshold": percent_text(trace_config.min_export_ratio),
        },
        description=None
        if passed
        else f"only {coverage.export_ratio:.2%} of scored trials were exported (threshold {trace_config.min_export_ratio:.0%})",
    )


NO_LIVE_SECRETS = dg.AssetCheckSpec(
    "no_live_secrets",
    asset=secret_scan_report,
    blocking=True,
    partitions_def=trace_runs,
    description="Passes when the rows hold no credential the policy blocks on (on_secret=block: live ones; "
    "on_unverified=block: unverified ones); a credential the policy redacts or allows passes, and `verdict` "
    "then says so (published without them, or with them). Failing, it blocks publishing.",
)


@dg.multi_asset_check(specs=[NO_LIVE_SECRETS], name=NO_LIVE_SECRETS.get_python_identifier())
def no_live_secrets(
    context: dg.AssetCheckExecutionContext, trace_config: TraceAssetsConfig
) -> Iterator[dg.AssetCheckResult]:
    """Blocks publishing while the rows hold a credential the policy blocks on: live ones under
    on_secret=block (the default), unverified ones under on_unverified=block. Blocking, it fails its
    step with the reason as a `Failure`'s description, so the run's page shows that line first
    rather than Dagster's "1 blocking asset check failed" and a stack trace."""
    with trace_config.parts().staging(scope_of(context)).locked(context.log.info) as staging:  # pulls mirrored staging
        report = staging.read_json(staging.scan_report, "secret_scan_report")
        report_path = staging.scan_report
    policy = scan_policy(trace_config)
    blocking = policy.blocking(report)
    live = {kind: v["live"] for kind, v in report.get("kinds", {}).items() if v.get("live")}
    metadata = {
        "verdict": dg.MetadataValue.text(policy.verdict_text(report)),
        "on_secret": policy.on_secret,
        "on_unverified": policy.on_unverified,
        "live_by_kind": counts_text(live),
        "blocking_by_kind": counts_text(blocking),
    }
    description = (
        f"credentials found ({', '.join(f'{k}: {n}' for k, n in sorted(blocking.items()))}) with verdicts "
        f"{' and '.join(sorted(policy.blocked))} blocked by policy; set on_secret (live) or on_unverified to redact, "
        "or allowlist known placeholders"
    )
    block = BlockDecision.read(report["previous_version"]) if "previous_version" in report else None
    if block is not None and block.previous != PreviousVersion.NONE:  # what it did to the version before
        description += f"; {block.line}"
    yield dg.AssetCheckResult(
        asset_key=NO_LIVE_SECRETS.asset_key,
        check_name=NO_LIVE_SECRETS.name,
        passed=not blocking,
        metadata=metadata,
        description=description if blocking else None,
    )
    if blocking:
        raise dg.Failure(
            description=blocked_by(NO_LIVE_SECRETS.name, NO_LIVE_SECRETS.asset_key.to_user_string(), description),
            metadata={**metadata, "scan_report": dg.MetadataValue.path(str(report_path))},
            allow_retries=False,
        )


RAW_OBJECTS_SHOWN = 200


RAW_TREE_SECRETS = dg.AssetCheckSpec(
    RAW_TREE_CHECK,
    asset=raw_trial_listing,
    partitions_def=trace_runs,
    description=f"Defined while the raw-tree scan is on ({env_name(PipelineSettings, 'raw_scan')}=1 where the code "
    "location runs, or --raw-scan). It scans every "
    "object under the scope's prefix (episode prompts and logs the rows leave out) and passes when none holds a "
    "credential the policy would block or redact in published fields; else it warns (the raw objects themselves "
    "are never redacted).",
)


@dg.multi_asset_check(specs=[RAW_TREE_SECRETS], name=RAW_TREE_SECRETS.get_python_identifier(), can_subset=True)
def raw_tree_secrets(
    context: dg.AssetCheckExecutionContext, trace_config: TraceAssetsConfig
) -> Iterator[dg.AssetCheckResult]:
    """Defined only while the raw-tree scan is on (see `build_definitions`). A run whose config turns
    it off records no result, which Dagster shows as "Skipped" once the run succeeds ("Execution
    failed" if the run fails, as for every check of a failed run left without a result), and its
    log says why."""
    if not trace_config.raw_scan:
        skipped = (
            f"skipped: the raw-tree scan is off ({env_name(PipelineSettings, 'raw_scan')}=1 or --raw-scan turns it on)"
        )
        context.log.info(f"raw_tree_secrets {skipped}")
        return
    yield _raw_tree_result(context, trace_config)


def _raw_tree_result(context: dg.AssetCheckExecutionContext, trace_config: TraceAssetsConfig) -> dg.AssetCheckResult:
    scope, parts = scope_of(context), trace_config.parts()
    report = raw_scan(parts.store(), scope, scan_options(trace_config), context.log.info)
    with parts.staging(scope).locked(context.log.info) as staging:  # only to write
        path = staging.folder / RAW_SCAN_REPORT
        write_json_atomically(path, report)
    flagged = scan_policy(trace_config).acted_on(report)
    found = {kind: counts for kind, counts in report["kinds"].items() if counts["matches"]}
    return dg.AssetCheckResult(
        asset_key=RAW_TREE_SECRETS.asset_key,
        check_name=RAW_TREE_SECRETS.name,
        passed=not flagged,
        severity=dg.AssetCheckSeverity.WARN,
        metadata={
            "verdict": report["verdict"],
            "objects_scanned": report["objects_scanned"],
            "bytes_scanned": size_text(report["bytes_scanned"]),
            "skipped": counts_text(report["skipped"]),
            "partially_scanned": counts_text(report["partially_scanned"]),
            "objects_with_findings": report["objects_with_findings"],
            "kinds": dg.MetadataValue.json(
                {kind: {str(v): counts[v] for v in Verdict} for kind, counts in found.items()}
            )
            if found
            else dg.MetadataValue.text("none"),
            "objects": dg.MetadataValue.table(
                records=[
                    dg.TableRecord(
                        {
                            "object": entry["object"],
                            "kinds": ", ".join(sorted(entry["kinds"])),
                            "fingerprints": ", ".join(entry["fingerprints"]),
                        }
                    )
                    for entry in report["objects"][:RAW_OBJECTS_SHOWN]
                ],
                schema=dg.TableSchema(
                    columns=[dg.TableColumn(name, "string") for name in ("object", "kinds", "fingerprints")]
                ),
            ),
            "path": dg.MetadataValue.path(str(path)),
        },
        description=_raw_scan_description(report, flagged),
    )


def _raw_scan_description(report: dict, flagged: dict[str, int]) -> str | None:
    """What to look at: credentials the policy acts on, and objects read only in part (their rest unscanned)."""
    parts = []
    if flagged:
        parts.append(
            f"raw tree holds credentials ({', '.join(f'{k}: {n}' for k, n in sorted(flagged.items()))}) "
            f"the policy blocks or redacts, in {report['objects_with_findings']} object(s)"
        )
    if report["partially_scanned"]:
        reasons = ", ".join(f"{n} {reason}" for reason, n in sorted(report["partially_scanned"].items()))
        parts.append(f"objects scanned only in part: {reasons}")
    return f"{'; '.join(parts)}; see {RAW_SCAN_REPORT}" if parts else None
