"""Run tags: `trace_assets/sweep`, which sweep a run belongs to, for tag concurrency limits per
sweep (deploy/k8s/dagster.yaml), set on every run the sensor, the CLI and backfills launch;
`trace_assets/failure`, a failed export's one-line reason, shown in the UI's run list;
Dagster's own partition tag, by which a scope's runs are found; and the code location's tag, by
which the UI lists a job's runs."""

from __future__ import annotations

import re
from urllib.parse import urlsplit

SWEEP_TAG = "trace_assets/sweep"
FAILURE_TAG = "trace_assets/failure"  # set by sweep_coverage_after_export once the run has failed
PARTITION_TAG = "dagster/partition"  # Dagster sets it on every partitioned run (its public name is private)
# The code location's name, as pyproject.toml (`dg dev`, `dagster dev`), workspace.yaml and the CLI's
# private webserver name it. Dagster tags every run it launches from the location with
# `.dagster/repository` (a job's page lists only runs so tagged) and `dagster/code_location` (the
# Runs page's filter by location, tag concurrency limits): the CLI's runs, executed in its own
# process, carry both, so that they are listed and counted beside the UI's. What they cannot carry
# is the launch's origin in the location, which Dagster's API gives no in-process run: the Overview
# timeline draws only runs with one (docs/operations.md says where the CLI's runs are).
CODE_LOCATION = "trace_assets"
CODE_LOCATION_TAG = "dagster/code_location"
REPOSITORY_TAG = ".dagster/repository"
REPOSITORY_LABEL = f"__repository__@{CODE_LOCATION}"  # a Definitions object's repository, in that location
# Kept to a Kubernetes label value's syntax (at most 63 characters of letters, digits, '-', '_'
# and '.', starting and ending with a letter or digit), so a deployment may copy it to pod labels
# (dagster-k8s does not by itself) or metrics labels, and UI tag filters read it plainly.
SWEEP_LABEL = r"^$|^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$"
_NOT_IN_LABEL = re.compile(r"[^-A-Za-z0-9_.]+")
DEFAULT_SWEEP = "traces"
# Dagster's "module.Class: " before an error's message; the class says nothing to a reader.
_EXCEPTION_CLASS = re.compile(r"^(?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*: ")


def failure_line(message: str | None) -> str:
    """An error's one-line reason, as the failure tag, the CLI, `backfill --wait` and the sweep view
    say it: its first line without the exception's class path ("failed" if it has none)."""
    text = (message or "").strip()
    return _EXCEPTION_CLASS.sub("", text.splitlines()[0]) if text else "failed"


def blocked_by(check_name: str, asset: str, description: str) -> str:
    """A blocked run's one-line reason: the run's failure, its `trace_assets/failure` tag, the CLI's
    line and the sweep view all say it so."""
    return f"blocked by check {check_name} on {asset}: {description}"


def sweep_label(traces_root: str) -> str:
    """The traces root's last path segment (`s3://bucket/sweeps/lr-3e4` -> `lr-3e4`; a bucket
    root: the bucket) as a valid label value: other characters become '-', cut to 63."""
    parts = urlsplit(traces_root)
    path = parts.path if parts.scheme else traces_root
    last = path.rstrip("/").rsplit("/", 1)[-1] or parts.netloc
    label = _NOT_IN_LABEL.sub("-", last)[:63].strip("-_.")
    return label or DEFAULT_SWEEP
