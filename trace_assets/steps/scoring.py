"""Step 2, `scored_trials`: every trial's result.json read as Harbor's TrialResult.

Per-trial isolation: whatever one trial's result.json holds, or whatever stands in its place,
ends as that trial's status with a detail naming the file and the problem; the run goes on.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from trace_assets.core.accounting import SCORED, Exclusion, Reason
from trace_assets.harbor.job_result import JobResults, with_job_outcomes
from trace_assets.harbor.result import TrialSummary, parse_trial_result
from trace_assets.harbor.trial_files import RESULT_JSON
from trace_assets.runtime.ahead import mapped_ahead
from trace_assets.runtime.progress import Progress, ProgressReporter, terminal
from trace_assets.steps.incremental import fingerprint, listed_objects, previous_records
from trace_assets.steps.job_results import load_job_results
from trace_assets.steps.listing import ListedTrial, bounded_batches, iter_listing
from trace_assets.steps.staging import RunStaging, open_parquet, staged_writers
from trace_assets.steps.trial_rows import encode_per_trial
from trace_assets.store.trace_store import TraceStore

SCORED_SCHEMA = pa.schema(
    [
        ("trial_dir", pa.string()),
        ("trial_name", pa.string()),
        ("status", pa.string()),  # "scored", or the reason it is not
        ("detail", pa.string()),
        ("task", pa.string()),
        ("reward", pa.float64()),
        ("exception_type", pa.string()),
        ("result", pa.string()),
        ("started_at", pa.string()),
        ("agent", pa.string()),
        ("model", pa.string()),
        ("model_provider", pa.string()),
        ("job_id", pa.string()),
        ("result_trial_name", pa.string()),
        ("source_fingerprint", pa.string()),
        ("repaired", pa.int64()),  # lone surrogates replaced with U+FFFD in result.json
        ("success", pa.bool_()),  # Harbor's `--filter` verdict
        ("reward_valid", pa.bool_()),  # result.json's `reward_valid` (Harbor 0.26); null when it has none
        (
            "job_result",
            pa.string(),
        ),  # the job-level result.json Harbor reads for the trial (relative to the run folder)
    ]
)
# --------------------------------------------------------------------------- step 2: scored trials


def _scored_record(
    trial: ListedTrial, parsed: TrialSummary | Exclusion | None, source: str, job_result: str | None = None
) -> dict[str, Any]:
    record: dict[str, Any] = {
        "trial_dir": trial.trial_dir,
        "trial_name": trial.trial_name,
        "source_fingerprint": source,
    }
    if parsed is None:
        record.update(status=Reason.NO_RESULT_JSON.value, detail="no result.json in the trial folder")
    elif isinstance(parsed, Exclusion):
        record.update(status=parsed.reason.value, detail=parsed.detail)
    else:
        record.update(
            status=SCORED,
            task=parsed.task,
            reward=parsed.reward,
            exception_type=parsed.exception_type,
            result=parsed.result,
            started_at=parsed.started_at,
            agent=parsed.agent,
            model=parsed.model,
            model_provider=parsed.model_provider,
            job_id=parsed.job_id,
            result_trial_name=parsed.trial_name,
            repaired=parsed.repaired,
            success=parsed.success,
            reward_valid=parsed.reward_valid,
            job_result=job_result,
        )
    return record


def _parsed_result(blob: bytes | Exclusion, trial: ListedTrial) -> TrialSummary | Exclusion:
    """result.json read, or why not: anything it raises is the trial's, named, never the run's."""
    if isinstance(blob, Exclusion):
        return blob
    try:
        return parse_trial_result(blob, trial.trial_name)
    except Exception as err:  # a shape no rule foresaw: this trial's problem, not the run's
        return Exclusion(Reason.INVALID_RESULT_JSON, f"{RESULT_JSON}: {type(err).__name__}: {err}")


def rows_salt(record: dict[str, Any]) -> list[str]:
    """What a trial's rows take from a job-level result.json, for the rows' fingerprint: nothing
    (and so no change to it) for a trial with none above it."""
    if record.get("job_result") is None:
        return []
    return [f"job_result={record['job_result']}|{record['result']}|{record['success']}"]


@dataclass
class StepStats:
    statuses: Counter = field(default_factory=Counter)
    reread: int = 0  # trials whose objects were fetched this time
    cached: int = 0  # trials taken unchanged from the last materialization
    passed_over: dict[str, str] = field(default_factory=dict)  # job-level result.json files not read, why


def score_trials(store: TraceStore, staging: RunStaging, batch_size: int, progress: Progress) -> StepStats:
    """Parse every result.json, re-reading only those whose object changed since last time."""
    listing_path = staging.require(staging.listing, "raw_trial_listing")
    previous = previous_records(staging.scored, "job_result")  # a table from before job results: read afresh
    jobs = load_job_results(store, staging)
    stats = StepStats(passed_over=jobs.problems)
    total = open_parquet(listing_path).metadata.num_rows
    reporter = ProgressReporter("scored_trials", "trials", total, progress, bar=terminal())
    listed = (trial for trials in iter_listing(listing_path, batch_size) for trial in trials)
    planned = (
        _plan(trials, previous, jobs)
        for trials in bounded_batches(listed, _result_bytes, batch_size, store.fetch_batch_bytes)
    )
    with staged_writers((staging.scored, SCORED_SCHEMA)) as [writer]:
        for plan, blobs in mapped_ahead(planned, lambda p: store.fetch(staging.scope, p.keys), store.fetch_ahead):
            trials, sources, blocked, unchanged = plan.trials, plan.sources, plan.blocked, plan.unchanged
            records = []
            for trial in trials:
                source = sources[trial.trial_dir]
                if trial.trial_dir in unchanged:
                    records.append((trial.trial_dir, [previous[trial.trial_dir]]))
                    stats.cached += 1
                    continue
                blob = blobs.get(f"{trial.trial_dir}/{RESULT_JSON}")
                parsed = blocked.get(trial.trial_dir) or (None if blob is None else _parsed_result(blob, trial))
                job_result, outcomes, _ = jobs.for_trial(trial.trial_dir)
                if isinstance(parsed, TrialSummary) and job_result is not None:
                    parsed = with_job_outcomes(parsed, trial.trial_name, outcomes)
                records.append((trial.trial_dir, [_scored_record(trial, parsed, source, job_result)]))
                stats.reread += blob is not None
            table, failed = encode_per_trial(records, SCORED_SCHEMA)
            if failed:  # the same batch again, those trials excluded with the error
                table = pa.Table.from_pylist(
                    [
                        _scored_record(t, _unencodable(failed[t.trial_dir]), sources[t.trial_dir])
                        if t.trial_dir in failed
                        else record
                        for t, (_, [record]) in zip(trials, records)
                    ],
                    schema=SCORED_SCHEMA,
                )
            stats.statuses.update(table.column("status").to_pylist())
            writer.write_table(table)
            reporter.advance(len(trials), f"{stats.cached} result.json unchanged")
    reporter.finish()
    return stats


@dataclass(frozen=True)
class _Batch:
    """A batch of trials and what reading it takes, decided before its objects are fetched."""

    trials: list[ListedTrial]
    sources: dict[str, str]
    blocked: dict[str, Exclusion]
    unchanged: set[str]
    keys: list[str]


def _plan(trials: list[ListedTrial], previous: dict[str, dict[str, Any]], jobs: JobResults) -> _Batch:
    sources = {
        t.trial_dir: fingerprint(listed_objects(t, [RESULT_JSON]), *t.skipped, *jobs.for_trial(t.trial_dir)[2])
        for t in trials
    }
    blocked = {t.trial_dir: exclusion for t in trials if (exclusion := t.blocked()) is not None}
    readable = [t for t in trials if t.has(RESULT_JSON) and t.trial_dir not in blocked]
    unchanged = {
        t.trial_dir for t in readable if previous.get(t.trial_dir, {}).get("source_fingerprint") == sources[t.trial_dir]
    }
    keys = [f"{t.trial_dir}/{RESULT_JSON}" for t in readable if t.trial_dir not in unchanged]
    return _Batch(trials, sources, blocked, unchanged, keys)


def _unencodable(error: str) -> Exclusion:
    return Exclusion(Reason.INVALID_RESULT_JSON, f"{RESULT_JSON}: values that cannot be stored: {error}")


def _result_bytes(trial: ListedTrial) -> int:
    result = trial.objects.get(RESULT_JSON)
    return 0 if result is None else result.size
