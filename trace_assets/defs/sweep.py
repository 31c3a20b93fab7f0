"""The sweep view read from the instance, so it holds even when staging is gone: what is
published from the latest `published_shards` materialization of each partition, and each
partition's state from the newest run planned to publish it (its failure: the blocking check's
description, the shrink guard's refusal, or the failed step's error). `trace-assets status`
prints it (`status_text`); the `sweep_coverage` asset (`sweep_coverage.py`) keeps it.
"""

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import dagster as dg

from trace_assets.core.roots import root_location
from trace_assets.core.run_tags import PARTITION_TAG, blocked_by, failure_line
from trace_assets.defs.partitions import TRACE_RUNS
from trace_assets.publishing.shrink_guard import ShrinkRefused
from trace_assets.secret_scan.verdicts import RunVerdict
from trace_assets.sweep.view import ScopeRecord, ScopeState, ScopeStatus, text_table

# What the view reads of the instance, by name rather than from the definitions: importing those
# loads the whole pipeline (polars, pyarrow, the secret scan: 0.8 s of `trace-assets status`).
# The assets write the metadata entries under these names; a test holds the keys to the definitions.
PUBLISHED_SHARDS = dg.AssetKey("published_shards")
RAW_TRIAL_LISTING = dg.AssetKey("raw_trial_listing")
SECRET_SCAN_REPORT = dg.AssetKey("secret_scan_report")
EXPORT_JOB = "export_trace_run"
# On a blocked scan report: whether blocking removed the scope's earlier published version.
PUBLISHED_VERSION_REMOVED = "published_version_removed"
# On a listing: the traces root it was listed from, so a view of one root leaves out another's scopes.
TRACES_ROOT = "traces_root"

PAGE = 1000  # materializations (or finished runs) read per request
_CANCELED = (dg.DagsterRunStatus.CANCELED, dg.DagsterRunStatus.CANCELING)


def latest_export_run(instance: dg.DagsterInstance, key: str) -> dg.DagsterRun | None:
    """The newest run planned to publish the scope, whoever launched it (sensor, backfill, UI or CLI):
    a run of other assets only (its listing, say) does not hide it. The scope's state is how it
    ended; the sensor requests the scope again when it failed."""
    planned = instance.get_latest_planned_materialization_info(PUBLISHED_SHARDS, partition=key)
    return instance.get_run_by_id(planned.run_id) if planned is not None else None


def scope_statuses(instance: dg.DagsterInstance, traces_root: str | None = None) -> tuple[list[ScopeStatus], int]:
    """Every scope still a partition: its newest try's state, and what is published of it; with
    `traces_root`, only the scopes of that root (one instance may serve several), and how many
    of other roots were left out. A scope never listed, or listed before listings recorded their
    root, is kept: nothing says it is another root's."""
    keys = instance.get_dynamic_partitions(TRACE_RUNS)
    hidden = 0
    if traces_root:
        roots = listed_roots(instance, set(keys))
        here = root_location(traces_root)
        ours = [key for key in keys if key not in roots or root_location(roots[key]) == here]
        hidden, keys = len(keys) - len(ours), ours
    published = {record.scope: record for record in published_records(instance)}
    runs = latest_export_runs(instance, keys)
    return [_status(instance, key, published.get(key), runs.get(key)) for key in keys], hidden


KEYS_PER_QUERY = 500  # partition keys in one run query (SQLite binds at most 999 values in old builds)


def latest_export_runs(instance: dg.DagsterInstance, keys: Sequence[str]) -> dict[str, dg.DagsterRun]:
    """`latest_export_run` of each scope, from a run query per `KEYS_PER_QUERY` scopes (their runs,
    newest first) rather than two queries a scope: `status` over thousands of scopes. A run plans to
    publish a scope when its selection holds `published_shards` (the export job's whole runs name
    none, and always do)."""
    latest: dict[str, dg.DagsterRun] = {}
    for start in range(0, len(keys), KEYS_PER_QUERY):
        chunk = keys[start : start + KEYS_PER_QUERY]
        for record in instance.get_run_records(dg.RunsFilter(tags={PARTITION_TAG: chunk})):
            run = record.dagster_run
            key = run.tags.get(PARTITION_TAG)
            if key is not None and key not in latest and _plans_publish(run):
                latest[key] = run
    return latest


def _plans_publish(run: dg.DagsterRun) -> bool:
    if not run.asset_selection:  # the whole job
        return run.job_name == EXPORT_JOB
    return PUBLISHED_SHARDS in run.asset_selection


def hidden_text(hidden: int) -> str:
    """The line under the view saying what it left out."""
    return f"{hidden} scope(s) of other traces roots on this instance not shown\n" if hidden else ""


def status_text(instance: dg.DagsterInstance, traces_root: str | None = None) -> str:
    """`trace-assets status`: the sweep view as a terminal table (of `traces_root`'s scopes, if given)."""
    statuses, hidden = scope_statuses(instance, traces_root)
    return text_table(statuses) + hidden_text(hidden)


def listed_roots(instance: dg.DagsterInstance, scopes: set[str]) -> dict[str, str]:
    """The traces root each scope was last listed from (`raw_trial_listing`'s `traces_root`), newest
    listing first from the event log."""
    roots: dict[str, str] = {}
    seen: set[str] = set()
    cursor = None
    while seen != scopes:
        page = instance.fetch_materializations(RAW_TRIAL_LISTING, limit=PAGE, cursor=cursor, ascending=False)
        for record in page.records:
            key = record.partition_key
            if key in scopes and key not in seen and record.asset_materialization is not None:
                seen.add(key)
                root = record.asset_materialization.metadata.get(TRACES_ROOT)
                if isinstance(root, dg.TextMetadataValue) and root.value:
                    roots[key] = root.value
        if not page.has_more:
            break
        cursor = page.cursor
    return roots


def _status(
    instance: dg.DagsterInstance, key: str, published: ScopeRecord | None, run: dg.DagsterRun | None
) -> ScopeStatus:
    if run is None:  # never tried, or published by a runless report
        return ScopeStatus(key, ScopeState.PUBLISHED if published else ScopeState.NOT_EXPORTED, published=published)
    if run.status == dg.DagsterRunStatus.SUCCESS:
        return ScopeStatus(key, ScopeState.PUBLISHED, published=published)
    if run.status == dg.DagsterRunStatus.FAILURE:
        state, reason = failure_of(instance, run.run_id)
        if state == ScopeState.BLOCKED and _published_version_removed(instance, key, run.run_id):
            published = None  # its folder holds the scan report alone now
        return ScopeStatus(key, state, reason, published)
    if run.status in _CANCELED:
        return ScopeStatus(key, ScopeState.CANCELED, f"run {run.run_id} was canceled", published)
    return ScopeStatus(key, ScopeState.EXPORTING, f"run {run.run_id} is {run.status.value.lower()}", published)


def _published_version_removed(instance: dg.DagsterInstance, key: str, run_id: str) -> bool:
    """Whether the run's blocked scan removed the scope's earlier version (a folder, S3 or a Hub repo
    per sweep): what `published_shards` last recorded is then no longer published."""
    records = instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=SECRET_SCAN_REPORT, asset_partitions=[key]), limit=1
    ).records
    if not records or records[0].run_id != run_id or records[0].asset_materialization is None:
        return False
    removed = records[0].asset_materialization.metadata.get(PUBLISHED_VERSION_REMOVED)
    return isinstance(removed, dg.BoolMetadataValue) and bool(removed.value)


def failure_of(instance: dg.DagsterInstance, run_id: str) -> tuple[ScopeState, str]:
    """How a failed run failed, in one line: the blocking check that stopped it (its description),
    the shrink guard's refusal, the first failed step's root error, or the run's own message."""
    kinds = {
        dg.DagsterEventType.ASSET_CHECK_EVALUATION,
        dg.DagsterEventType.STEP_FAILURE,
        dg.DagsterEventType.RUN_FAILURE,
    }
    events = [entry.dagster_event for entry in instance.all_logs(run_id, of_type=kinds) if entry.dagster_event]
    for event in events:
        evaluation = event.event_specific_data
        if isinstance(evaluation, dg.AssetCheckEvaluation) and not evaluation.passed and evaluation.blocking:
            description = failure_line(evaluation.description or "failed")
            return ScopeState.BLOCKED, blocked_by(
                evaluation.check_name, evaluation.asset_key.to_user_string(), description
            )
    for event in events:
        if event.is_step_failure:
            data = event.step_failure_data
            error = data.error
            while error is not None and error.cause is not None:
                error = error.cause
            if data.user_failure_data is not None and data.user_failure_data.description:
                message = data.user_failure_data.description
            else:
                message = error.message if error else "failed"
            refused = error is not None and error.cls_name == ShrinkRefused.__name__
            state = ScopeState.REFUSED if refused else ScopeState.FAILED
            return state, f"step {event.step_key} failed: {failure_line(message)}"
    for event in events:
        if event.event_type == dg.DagsterEventType.RUN_FAILURE:
            return ScopeState.FAILED, failure_line(event.message or "run failed")
    return ScopeState.FAILED, "run failed"


def published_records(instance: dg.DagsterInstance) -> list[ScopeRecord]:
    """The latest publish of every scope still a partition, newest first from the event log: a
    forgotten run's partitions are gone, its materializations are not."""
    scopes = set(instance.get_dynamic_partitions(TRACE_RUNS))
    latest: dict[str, dg.EventLogRecord] = {}
    cursor = None
    while True:
        page = instance.fetch_materializations(PUBLISHED_SHARDS, limit=PAGE, cursor=cursor, ascending=False)
        for record in page.records:
            if record.partition_key in scopes:
                latest.setdefault(record.partition_key, record)
        if not page.has_more:
            break
        cursor = page.cursor
    return [_record(key, record) for key, record in latest.items()]


def _record(scope: str, record: dg.EventLogRecord) -> ScopeRecord:
    materialization = record.asset_materialization
    assert materialization is not None  # fetch_materializations returns only materializations
    values: dict[str, Any] = {name: value.value for name, value in materialization.metadata.items()}
    excluded = values.get("excluded")
    mean_reward = values.get("mean_reward")
    return ScopeRecord(
        scope=scope,
        trial_dirs=int(values.get("trial_dirs", 0)),
        scored=int(values.get("scored", 0)),
        exported=int(values.get("exported", 0)),
        rows=int(values.get("dagster/row_count", values.get("rows", 0))),  # `rows` until it went (a duplicate)
        secret_verdict=_published_verdict(values),
        published_at=datetime.fromtimestamp(record.timestamp, UTC).strftime("%Y-%m-%d %H:%M:%S UTC"),
        published_to=str(values.get("published_to", "")),
        excluded={str(r.data["reason"]): int(r.data["folders"] or 0) for r in excluded.records}
        if isinstance(excluded, dg.TableMetadataValue)
        else {},
        mean_reward=float(mean_reward) if isinstance(mean_reward, int | float) else None,
        private_found=str(values.get("private_found", "")),
        private_replaced=str(values.get("private_replaced", "")),
    )


def _published_verdict(values: dict[str, Any]) -> str:
    """The verdict of what went out: `redacted` once anything was, which publishes recorded before
    `secret_verdict` said so (it held the scan's verdict, `live`) tell by their `redacted` counts."""
    redacted = values.get("redacted")
    if isinstance(redacted, dict) and any(redacted.values()):
        return RunVerdict.REDACTED.value
    return str(values.get("secret_verdict", ""))
