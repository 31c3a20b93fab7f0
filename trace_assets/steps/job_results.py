"""A scope's job-level `result.json` files, each read once, for the scoring step (see `harbor.job_result`).

Those inside the scope's folder are the ones the listing saw outside any trial folder
(`staging.job_results`): no extra listing. Those above it, up to the run's folder
(`trace_jobs/result.json` above a step's folder, the run folder's `result.json`), are asked for
by name, one request each. Every read is bounded: a file larger than `MAX_JOB_RESULT_BYTES` is
passed over with a reason, never read whole.
"""

from __future__ import annotations

import hashlib

import pyarrow.parquet as pq

from trace_assets.core.accounting import Exclusion
from trace_assets.harbor.job_result import (
    MAX_JOB_RESULT_BYTES,
    JobFile,
    JobResults,
    job_result_keys,
    parse_job_file,
    too_large,
)
from trace_assets.steps.staging import RunStaging
from trace_assets.store.trace_store import TraceStore


def _job_file(data: bytes | Exclusion, key: str) -> JobFile:
    if isinstance(data, Exclusion):
        return JobFile(problem=data.detail)
    return parse_job_file(data, key)


def load_job_results(store: TraceStore, staging: RunStaging) -> JobResults:
    """Every job-level result.json a trial of the scope can take its `result` from, read and parsed."""
    scope = staging.scope
    scope_prefix = scope.source_prefix.removeprefix(f"{scope.run_id}/")
    jobs = JobResults(scope_prefix)
    listed = pq.read_table(staging.require(staging.job_results, "raw_trial_listing")).to_pylist()
    for obj in listed:
        key = f"{scope_prefix}/{obj['key']}"
        modified = obj["modified"].isoformat() if obj["modified"] else ""
        jobs.identities[key] = f"{key}|{obj['size']}|{obj['etag'] or ''}|{modified}"
        if obj["size"] > MAX_JOB_RESULT_BYTES:
            jobs.files[key] = too_large(key)
            continue
        jobs.files[key] = _job_file(store.fetch_range(scope, obj["key"], 0, MAX_JOB_RESULT_BYTES + 1), key)
    for key in job_result_keys(scope_prefix, ""):  # above the scope's folder, up to the run's
        data = store.read_run_file(scope, key, MAX_JOB_RESULT_BYTES)
        if data is None:
            continue
        digest = data.detail if isinstance(data, Exclusion) else hashlib.sha256(data).hexdigest()
        jobs.identities[key] = f"{key}|{digest}"
        jobs.files[key] = _job_file(data, key)
    return jobs
