"""Harbor's job-level `result.json` (JobResult), read the way Harbor's exporter reads it.

Harbor's `_extract_trial_result_value` walks up from a trial's parent folder, at most 6 folders,
to the nearest `result.json` that is a JSON object with a `stats` key, and takes the trial's
`result` from it: for each eval in file order, the first `exception_stats` entry listing the
trial, else the first `reward_stats.reward` value listing it (as `str(float(key))`); only when
no eval lists the trial does the trial's own `result.json` count. `_trial_is_success` (`--filter`)
looks the trial up the same way, but by its folder's name.

Here the walk stops at the run's folder: nothing above `<traces_root>/<run_id>/` is read. A file
that is not JSON, or too large to read (`MAX_JOB_RESULT_BYTES`), is passed over as Harbor passes
over a file it cannot parse, with a reason (`JobFile.problem`) for the step to count.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from trace_assets.harbor.decoding import decode_json
from trace_assets.harbor.result import TrialSummary, above_zero
from trace_assets.harbor.trial_files import RESULT_JSON

JOB_RESULT_LEVELS = 6  # folders Harbor looks in, from the trial's parent up
MAX_JOB_RESULT_BYTES = 64 * 2**20  # a job file listing ~1M trials; a larger one is passed over, counted


@dataclass(frozen=True)
class JobFile:
    """One `result.json` above a trial folder: Harbor's result per trial name when it is a job
    result (an object with `stats`), else None, with the reason when it could not be read."""

    outcomes: dict[str, str] | None = None
    problem: str | None = None


NOT_A_JOB_RESULT = JobFile()


def _reward_text(key: str) -> str:
    """Harbor's `_coerce_reward_value` of a `reward_stats` key: `str(float(key))`, else the key."""
    try:
        return str(float(key))
    except ValueError:
        return key


def _listed(entries: Any) -> Iterator[str]:
    if isinstance(entries, list):
        yield from (entry for entry in entries if isinstance(entry, str))


def job_outcomes(stats: Any) -> dict[str, str]:
    """Trial name -> the value Harbor's first match gives: evals in file order, each eval's
    exception types before its rewards, each in file order."""
    outcomes: dict[str, str] = {}
    evals = stats.get("evals") if isinstance(stats, dict) else None
    if not isinstance(evals, dict):
        return outcomes
    for eval_stats in evals.values():
        if not isinstance(eval_stats, dict):
            continue
        exception_stats = eval_stats.get("exception_stats")
        if isinstance(exception_stats, dict):
            for exception_type, entries in exception_stats.items():
                for name in _listed(entries):
                    outcomes.setdefault(name, exception_type)
        reward_stats = eval_stats.get("reward_stats")
        rewards = reward_stats.get("reward") if isinstance(reward_stats, dict) else None
        if isinstance(rewards, dict):
            for reward, entries in rewards.items():
                text = _reward_text(reward)
                for name in _listed(entries):
                    outcomes.setdefault(name, text)
    return outcomes


def too_large(where: str) -> JobFile:
    return JobFile(problem=f"{where} is larger than {MAX_JOB_RESULT_BYTES // 2**20} MiB, not read")


def parse_job_file(data: bytes, where: str) -> JobFile:
    """A `result.json` above a trial: a job result, or not one (Harbor then looks further up)."""
    if len(data) > MAX_JOB_RESULT_BYTES:
        return too_large(where)
    decoded = decode_json(data, where)
    if isinstance(decoded, str):
        return JobFile(problem=decoded)
    raw, _ = decoded
    if not isinstance(raw, dict) or "stats" not in raw:
        return NOT_A_JOB_RESULT
    return JobFile(outcomes=job_outcomes(raw["stats"]))


def job_result_keys(scope_prefix: str, trial_dir: str) -> list[str]:
    """The `result.json` keys Harbor looks at for a trial, nearest first, relative to the run's
    folder: from the trial's parent up, at most `JOB_RESULT_LEVELS`, never above the run's folder.

    `scope_prefix` is the scope's folder relative to the run's (`trace_jobs`, `trace_jobs/step-3`),
    `trial_dir` the trial's folder relative to the scope."""
    folder = "/".join(part for part in (scope_prefix, trial_dir) if part)
    keys: list[str] = []
    while folder and len(keys) < JOB_RESULT_LEVELS:
        folder = folder.rpartition("/")[0]
        keys.append(f"{folder}/{RESULT_JSON}" if folder else RESULT_JSON)
    return keys


@dataclass
class JobResults:
    """The job files of one scope, each read once, by key relative to the run's folder.

    `files` holds the keys that exist (any key absent from it has no file); `identities` says
    what each one was read from, for the incremental fingerprints."""

    scope_prefix: str
    files: dict[str, JobFile] = field(default_factory=dict)
    identities: dict[str, str] = field(default_factory=dict)

    def for_trial(self, trial_dir: str) -> tuple[str | None, dict[str, str], list[str]]:
        """(the job file Harbor takes the trial's result from, its outcomes, the identities of the
        files the choice depends on: every existing file up to and including that one)."""
        seen: list[str] = []
        for key in job_result_keys(self.scope_prefix, trial_dir):
            job_file = self.files.get(key)
            if job_file is None:
                continue
            seen.append(self.identities[key])
            if job_file.outcomes is not None:
                return key, job_file.outcomes, seen
        return None, {}, seen

    @property
    def problems(self) -> dict[str, str]:
        """Files passed over because they could not be read, with the reason."""
        return {key: job_file.problem for key, job_file in self.files.items() if job_file.problem}


def with_job_outcomes(summary: TrialSummary, folder_name: str, outcomes: Mapping[str, str]) -> TrialSummary:
    """The trial's `result` and `--filter` verdict as Harbor gives them with a job result above it:
    `result` looked up by result.json's trial name, success by the folder's name (Harbor's
    `_trial_is_success` is called without the trial's metadata)."""
    result = outcomes.get(summary.trial_name, summary.result)
    value = outcomes.get(folder_name)
    success = summary.success if value is None else above_zero(value)
    return dataclasses.replace(summary, result=result, success=success)
