"""Step 2, `scored_trials`: every trial's result.json read as Harbor's TrialResult."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from trace_assets.accounting import SCORED, Exclusion, Reason
from trace_assets.harbor.result import TrialSummary, parse_trial_result
from trace_assets.harbor.trial_files import RESULT_JSON
from trace_assets.steps.incremental import fingerprint, listed_objects, previous_records
from trace_assets.steps.listing import ListedTrial, iter_listing
from trace_assets.steps.staging import RunStaging, staged_writers
from trace_assets.store.trace_store import TraceStore

Progress = Callable[[str], None]

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
    ]
)
# --------------------------------------------------------------------------- step 2: scored trials


def _scored_record(trial: ListedTrial, parsed: TrialSummary | Exclusion | None, source: str) -> dict[str, Any]:
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
        )
    return record


def summary_from_scored(record: dict[str, Any]) -> TrialSummary:
    return TrialSummary(
        trial_name=record["result_trial_name"],
        task=record["task"],
        agent=record["agent"],
        model=record["model"],
        model_provider=record["model_provider"],
        started_at=record["started_at"],
        job_id=record["job_id"],
        reward=record["reward"],
        exception_type=record["exception_type"],
        result=record["result"],
    )


@dataclass
class StepStats:
    statuses: Counter = field(default_factory=Counter)
    reread: int = 0  # trials whose objects were fetched this time
    cached: int = 0  # trials taken unchanged from the last materialization


def score_trials(store: TraceStore, staging: RunStaging, batch_size: int, progress: Progress) -> StepStats:
    """Parse every result.json, re-reading only those whose object changed since last time."""
    listing_path = staging.require(staging.listing, "raw_trial_listing")
    previous = previous_records(staging.scored, "source_fingerprint")
    stats = StepStats()
    with staged_writers((staging.scored, SCORED_SCHEMA)) as [writer]:
        for trials in iter_listing(listing_path, batch_size):
            sources = {t.trial_dir: fingerprint(listed_objects(t, [RESULT_JSON])) for t in trials}
            unchanged = {
                t.trial_dir
                for t in trials
                if t.has(RESULT_JSON)
                and previous.get(t.trial_dir, {}).get("source_fingerprint") == sources[t.trial_dir]
            }
            stale = [t for t in trials if t.has(RESULT_JSON) and t.trial_dir not in unchanged]
            blobs = store.fetch(staging.scope, [f"{t.trial_dir}/{RESULT_JSON}" for t in stale])
            records = []
            for trial in trials:
                source = sources[trial.trial_dir]
                if trial.trial_dir in unchanged:
                    records.append(previous[trial.trial_dir])
                    stats.cached += 1
                    continue
                blob = blobs.get(f"{trial.trial_dir}/{RESULT_JSON}")
                records.append(
                    _scored_record(trial, None if blob is None else parse_trial_result(blob, trial.trial_name), source)
                )
                stats.reread += blob is not None
            stats.statuses.update(r["status"] for r in records)
            writer.write_table(pa.Table.from_pylist(records, schema=SCORED_SCHEMA))
            progress(f"scored_trials: {stats.reread + stats.cached} result.json files ({stats.cached} unchanged)")
    return stats
