"""The sweep view read from the instance, so it holds even when staging is gone: what is
published from the latest `published_shards` materialization of each partition, and each
partition's state (`scope_state.decided`) from the newest run planned to publish it (its failure:
the blocking check's description, the shrink guard's refusal, or the failed step's error).
`trace-assets status` prints it (`status_text`), the sensor decides from the same facts
(`ScopeFactsReader`); the `sweep_coverage` asset (`sweep_coverage.py`) keeps it.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import dagster as dg

from trace_assets.core.roots import root_location
from trace_assets.core.run_tags import PARTITION_TAG, blocked_by, failure_line
from trace_assets.defs.partitions import TRACE_RUNS
from trace_assets.publishing.blocked_version import PreviousVersion
from trace_assets.publishing.shrink_guard import ShrinkRefused
from trace_assets.secret_scan.verdicts import RunVerdict
from trace_assets.sweep.scope_state import ScopeFacts, ScopeState, decided
from trace_assets.sweep.view import ScopeRecord, ScopeStatus, text_table

if TYPE_CHECKING:
    from trace_assets.store.trace_store import TraceStore

# What the view reads of the instance, by name rather than from the definitions: importing those
# loads the whole pipeline (polars, pyarrow, the secret scan: 0.8 s of `trace-assets status`).
# The assets write the metadata entries under these names; a test holds the keys to the definitions.
PUBLISHED_SHARDS = dg.AssetKey("published_shards")
RAW_TRIAL_LISTING = dg.AssetKey("raw_trial_listing")
SECRET_SCAN_REPORT = dg.AssetKey("secret_scan_report")
EXPORT_JOB = "export_trace_run"
# On a blocked scan report: what became of the scope's version published before (`PreviousVersion`),
# and why, as the run's failure line says it; in runs before those, whether blocking removed it.
PREVIOUS_VERSION = "previous_version"
PREVIOUS_VERSION_WHY = "previous_version_why"
PUBLISHED_VERSION_REMOVED = "published_version_removed"
# On a listing: the traces root it was listed from, so a view of one root leaves out another's scopes.
TRACES_ROOT = "traces_root"

PAGE = 1000  # materializations (or finished runs) read per request
_CANCELED = (dg.DagsterRunStatus.CANCELED, dg.DagsterRunStatus.CANCELING)


def scope_statuses(
    instance: dg.DagsterInstance, traces_root: str | None = None, store: TraceStore | None = None
) -> tuple[list[ScopeStatus], int, str]:
    """Every scope still a partition: its state (`scope_state.decided`, as the sensor decides it),
    and what is published of it; with `traces_root`, only the scopes of that root (one instance may
    serve several), and how many of other roots were left out. A scope never listed, or listed
    before listings recorded their root, is kept: nothing says it is another root's. With the root's
    `store`, a scope whose traces are not there now is `gone from the traces root` (its listing's
    failure, if it failed, in the line returned last)."""
    keys = instance.get_dynamic_partitions(TRACE_RUNS)
    hidden = 0
    if traces_root:
        roots = listed_roots(instance, set(keys))
        here = root_location(traces_root)
        ours = [key for key in keys if key not in roots or root_location(roots[key]) == here]
        hidden, keys = len(keys) - len(ours), ours
    present, unlisted = _present(store, keys)
    facts = ScopeFactsReader(instance, keys, one_by_one=0)  # every scope: all at once
    statuses = []
    for key in keys:
        state, reason = decided(facts(key), present is None or key in present, key)
        statuses.append(ScopeStatus(key, state, reason, facts.published_record(key)))
    return statuses, hidden, unlisted


class ScopeFactsReader:
    """What the instance says of each scope (`ScopeFacts`), as the sensor and `status` decide from.
    The first `ONE_BY_ONE` scopes asked are read alone (two queries each: a steady tick follows a
    few exports); past them, every scope of `keys` at once, a query per `KEYS_PER_QUERY` scopes (a
    first tick, or `status`, over thousands). A failed run's events only when its scope is asked."""

    ONE_BY_ONE = 100  # about the cost of reading every scope of a 2,000-scope sweep at once

    def __init__(self, instance: dg.DagsterInstance, keys: Sequence[str], one_by_one: int = ONE_BY_ONE) -> None:
        self._instance, self._keys, self._one_by_one = instance, list(keys), one_by_one
        self._runs: dict[str, dg.DagsterRun] = {}
        self._publishes: dict[str, dg.EventLogRecord] = {}
        self._failed_at_publish: dict[str, dg.DagsterEvent] = {}
        self._read: set[str] = set()
        self._facts: dict[str, ScopeFacts] = {}

    def _load(self, key: str) -> None:
        if key in self._read:
            return
        unread = [k for k in self._keys if k not in self._read] if len(self._read) >= self._one_by_one else []
        keys = list(dict.fromkeys([key, *unread]))  # `key` itself may be no partition yet (a tick's new one)
        runs = latest_export_runs(self._instance, keys)
        self._runs.update(runs)
        self._failed_at_publish.update(failed_at_publish(self._instance, list(runs.values())))
        self._publishes.update(latest_publishes(self._instance, keys))
        self._read.update(keys)

    def __call__(self, key: str) -> ScopeFacts:
        if key not in self._facts:
            self._load(key)
            self._facts[key] = self._of(key, self._runs.get(key), self._publishes.get(key))
        return self._facts[key]

    def published_record(self, key: str) -> ScopeRecord | None:
        """What is published of the scope now (None: nothing, or a blocked run withdrew it)."""
        record = self._publishes.get(key)
        return _record(key, record) if record is not None and self(key).published_at is not None else None

    def _of(self, key: str, run: dg.DagsterRun | None, publish: dg.EventLogRecord | None) -> ScopeFacts:
        published_at = publish.timestamp if publish is not None else None
        if run is None:  # never tried, or published by a runless report
            return ScopeFacts(None, "", published_at)
        if run.status == dg.DagsterRunStatus.SUCCESS:
            return ScopeFacts(ScopeState.PUBLISHED, "", published_at)
        if run.status == dg.DagsterRunStatus.FAILURE:
            failed_step = self._failed_at_publish.get(run.run_id)
            state, reason = step_failure(failed_step) if failed_step else failure_of(self._instance, run.run_id)
            if state == ScopeState.BLOCKED and _published_version_removed(self._instance, key, run.run_id):
                published_at = None  # its folder holds the scan report alone now
            return ScopeFacts(state, reason, published_at)
        if run.status in _CANCELED:
            return ScopeFacts(ScopeState.CANCELED, f"run {run.run_id} was canceled", published_at)
        return ScopeFacts(ScopeState.EXPORTING, f"run {run.run_id} is {run.status.value.lower()}", published_at)


FAILURES_BETWEEN = 10  # other runs' failures a page may meet before the wanted ones, ending within that second
KEYS_PER_QUERY = 500  # partition keys in one run query (SQLite binds at most 999 values in old builds)


def latest_export_runs(instance: dg.DagsterInstance, keys: Sequence[str]) -> dict[str, dg.DagsterRun]:
    """Each scope's newest run planned to publish it, whoever launched it (sensor, backfill, UI or
    CLI): a run of other assets only (its listing, say) does not hide it. From a run query per
    `KEYS_PER_QUERY` scopes (their runs, newest first) rather than two queries a scope: thousands of
    scopes. A run plans to publish a scope when its selection holds `published_shards` (the export
    job's whole runs name none, and always do)."""
    latest: dict[str, dg.DagsterRun] = {}
    for start in range(0, len(keys), KEYS_PER_QUERY):
        chunk = keys[start : start + KEYS_PER_QUERY]
        for record in instance.get_run_records(dg.RunsFilter(tags={PARTITION_TAG: chunk})):
            run = record.dagster_run
            key = run.tags.get(PARTITION_TAG)
            if key is not None and key not in latest and _plans_publish(run):
                latest[key] = run
    return latest


def scopes_tried_since(instance: dg.DagsterInstance, since: float) -> set[str]:
    """The scopes whose export run (planned to publish them, whoever launched it) was created,
    started or ended after `since` (a timestamp): one query, whatever the sweep's size."""
    records = instance.get_run_records(dg.RunsFilter(updated_after=datetime.fromtimestamp(since, UTC)))
    return {
        record.dagster_run.tags[PARTITION_TAG]
        for record in records
        if PARTITION_TAG in record.dagster_run.tags and _plans_publish(record.dagster_run)
    }


def _plans_publish(run: dg.DagsterRun) -> bool:
    if not run.asset_selection:  # the whole job
        return run.job_name == EXPORT_JOB
    return PUBLISHED_SHARDS in run.asset_selection


def failed_at_publish(instance: dg.DagsterInstance, runs: Sequence[dg.DagsterRun]) -> dict[str, dg.DagsterEvent]:
    """The failed step of each of `runs` that failed at `published_shards` (by run id), from the run
    failures the event log keeps across runs, a query a page: a run's own events are in its own
    database under SQLite, whose opening (its schema checked) took about 40 ms a failed run. A run
    reaches `published_shards` once every blocking check before it passed, so its failure there
    is the run's only one; a run that failed before it is read whole (`failure_of`)."""
    failed = [run.run_id for run in runs if run.status == dg.DagsterRunStatus.FAILURE]
    found: dict[str, dg.DagsterEvent] = {}
    for start in range(0, len(failed), KEYS_PER_QUERY):
        chunk = set(failed[start : start + KEYS_PER_QUERY])
        records = instance.get_run_records(dg.RunsFilter(run_ids=list(chunk)))
        if not records:
            continue
        # A run's failure is stored as it ends (the event sets its record's end time): read from the
        # earliest end on, a page the size of what is still missing, where reading from the earliest
        # creation (a page of 1,000) read every later failure for each run a sensor tick follows
        # (80 followed in a sweep of 2,000: 3.6 s a tick).
        since = min(record.end_time or record.create_timestamp.timestamp() for record in records) - 1
        wanted = dg.RunStatusChangeRecordsFilter(dg.DagsterEventType.RUN_FAILURE, after_timestamp=since)
        cursor, unseen = None, set(chunk)
        while unseen:
            page = instance.fetch_run_status_changes(
                wanted, limit=min(PAGE, len(unseen) + FAILURES_BETWEEN), cursor=cursor, ascending=True
            )
            for record in page.records:
                event = record.event_log_entry.dagster_event
                if record.run_id in unseen and event is not None:
                    unseen.discard(record.run_id)
                    step = event.job_failure_data.first_step_failure_event
                    if step is not None and step.step_key == PUBLISHED_SHARDS.to_python_identifier():
                        found[record.run_id] = step
            if not page.has_more:
                break
            cursor = page.cursor
    return found


def hidden_text(hidden: int) -> str:
    """The line under the view saying what it left out."""
    return f"{hidden} scope(s) of other traces roots on this instance not shown\n" if hidden else ""


def status_text(instance: dg.DagsterInstance, traces_root: str | None = None, store: TraceStore | None = None) -> str:
    """`trace-assets status`: the sweep view as a terminal table (of `traces_root`'s scopes, if
    given; with its `store`, those whose traces are gone said so)."""
    statuses, hidden, unlisted = scope_statuses(instance, traces_root, store)
    return text_table(statuses) + hidden_text(hidden) + unlisted


def _present(store: TraceStore | None, keys: Collection[str]) -> tuple[set[str] | None, str]:
    """The scopes whose traces are under the root now (None: no store, or its listing failed, then
    said in the line returned)."""
    if store is None:
        return None, ""
    try:
        return store.present(keys), ""
    except Exception as error:  # the view still shows what the instance says
        return None, f"could not list the traces root, so scopes whose traces are gone are not marked: {error!r}\n"


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


def _published_version_removed(instance: dg.DagsterInstance, key: str, run_id: str) -> bool:
    """Whether the run's blocked scan withdrew the scope's earlier version (`PreviousVersion`; a
    bool in runs before it): what `published_shards` last recorded is then no longer published."""
    records = instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=SECRET_SCAN_REPORT, asset_partitions=[key]), limit=1
    ).records
    if not records or records[0].run_id != run_id or records[0].asset_materialization is None:
        return False
    metadata = records[0].asset_materialization.metadata
    previous, removed = metadata.get(PREVIOUS_VERSION), metadata.get(PUBLISHED_VERSION_REMOVED)
    if isinstance(previous, dg.TextMetadataValue):
        return previous.value == PreviousVersion.WITHDRAWN
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
            return step_failure(event)
    for event in events:
        if event.event_type == dg.DagsterEventType.RUN_FAILURE:
            return ScopeState.FAILED, failure_line(event.message or "run failed")
    return ScopeState.FAILED, "run failed"


def step_failure(event: dg.DagsterEvent) -> tuple[ScopeState, str]:
    """A failed step in one line: its `Failure`'s description or its root error's message (the
    shrink guard's refusal: `REFUSED`)."""
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


def published_records(instance: dg.DagsterInstance) -> list[ScopeRecord]:
    """The latest publish of every scope still a partition (a forgotten run's partitions are gone,
    its materializations are not)."""
    latest = latest_publishes(instance, instance.get_dynamic_partitions(TRACE_RUNS))
    return [_record(key, record) for key, record in latest.items()]


def latest_publishes(instance: dg.DagsterInstance, keys: Sequence[str]) -> dict[str, dg.EventLogRecord]:
    """Each scope's newest `published_shards` materialization, newest first from the event log, a
    query (or a page of `PAGE`) per `KEYS_PER_QUERY` scopes."""
    latest: dict[str, dg.EventLogRecord] = {}
    for start in range(0, len(keys), KEYS_PER_QUERY):
        chunk = list(keys[start : start + KEYS_PER_QUERY])
        wanted = dg.AssetRecordsFilter(asset_key=PUBLISHED_SHARDS, asset_partitions=chunk)
        cursor = None
        while True:  # one scope: its newest alone (the query stops at it)
            page = instance.fetch_materializations(wanted, limit=PAGE if len(chunk) > 1 else 1, cursor=cursor)
            for record in page.records:
                if record.partition_key is not None:
                    latest.setdefault(record.partition_key, record)
            if not page.has_more or len(chunk) == 1:
                break
            cursor = page.cursor
    return latest


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
