"""`RunScope`: what one partition key denotes, and every path derived from it, in one place.

Today a scope is one RL run (`<traces_root>/<run_id>/trace_jobs/`). Its traces prefix, staging
folder and publish path are all derived here, so a new kind of scope (a run's step) or the
validation of partition keys changes this module and nothing that uses it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

TRACE_JOBS = "trace_jobs"


@dataclass(frozen=True)
class RunScope:
    """One run's trials: the unit that is listed, staged and published as one dataset."""

    run_id: str

    @property
    def key(self) -> str:
        """The partition key naming this scope."""
        return self.run_id

    @property
    def source_prefix(self) -> str:
        """The scope's trial folders, relative to the traces root."""
        return f"{self.run_id}/{TRACE_JOBS}"

    def staging_folder(self, staging_root: Path) -> Path:
        return staging_root / self.run_id

    def publish_url(self, publish_root: str) -> str:
        return f"{publish_root.rstrip('/')}/{self.run_id}"

    def hub_path(self, path_in_repo: str) -> str:
        """Where the scope goes inside a Hub repo shared by many scopes."""
        return "/".join(part for part in (path_in_repo, self.run_id) if part)
