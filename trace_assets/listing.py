"""Group one recursive object listing of a run's `trace_jobs/` into Harbor trial folders.

A trial folder is one that directly holds Harbor's files (`result.json`, `config.json`,
`trial.log`) or an `agent/` folder, at any depth (`trace_jobs/step-25/<trial>/`). Files
under a trial's own `agent/` or `verifier/` never make a folder of their own, and a folder
that holds trial folders (a job folder with its own `result.json`) is not a trial.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime
from functools import cached_property
from itertools import groupby

MARKER_FILES = frozenset({"result.json", "config.json", "trial.log"})
TRIAL_SUBFOLDERS = ("agent", "verifier")


def trial_name_of(trial_dir: str) -> str:
    """A trial's name is its folder's name: "step-25/task-1__abc" -> "task-1__abc"."""
    return trial_dir.rsplit("/", 1)[-1]


@dataclass(frozen=True)
class StoredObject:
    key: str  # relative to the run's trace_jobs/ folder
    size: int
    etag: str | None
    modified: datetime | None


@dataclass(frozen=True)
class TrialFolder:
    """A trial folder and its objects, with keys relative to the folder."""

    trial_dir: str  # relative to trace_jobs/, e.g. "step-25/task-1__abc"
    objects: tuple[StoredObject, ...]

    @property
    def trial_name(self) -> str:
        return trial_name_of(self.trial_dir)

    @cached_property
    def keys(self) -> frozenset[str]:
        return frozenset(o.key for o in self.objects)

    @property
    def total_bytes(self) -> int:
        return sum(o.size for o in self.objects)

    @property
    def newest_modified(self) -> datetime | None:
        return max((o.modified for o in self.objects if o.modified is not None), default=None)

    def has(self, key: str) -> bool:
        return key in self.keys

    def has_folder(self, name: str) -> bool:
        return any(o.key.startswith(name + "/") for o in self.objects)


@dataclass(frozen=True)
class Listing:
    trials: list[TrialFolder]  # sorted by (trial_name, trial_dir): the order rows are published in
    stray_objects: int  # objects in no trial folder (job-level files, strays)
    total_objects: int
    total_bytes: int


def _candidate_folder(parts: list[str]) -> str | None:
    """The trial folder a key proves exists, if any."""
    for index, part in enumerate(parts[:-1]):
        if part in TRIAL_SUBFOLDERS and index > 0:
            return "/".join(parts[:index])
    if parts[-1] in MARKER_FILES and len(parts) > 1:
        return "/".join(parts[:-1])
    return None


def group_trials(objects: Iterable[StoredObject]) -> Listing:
    objects = list(objects)
    candidates = {folder for o in objects if (folder := _candidate_folder(o.key.split("/")))}
    # A candidate with another candidate beneath it is a job folder, not a trial.
    job_folders = {parent for folder in candidates for parent in _ancestors(folder)}
    trial_dirs = candidates - job_folders

    grouped: dict[str, list[StoredObject]] = {folder: [] for folder in trial_dirs}
    owners: dict[str, str | None] = {}  # parent folder -> its trial folder; most files share a parent
    stray = 0
    for obj in objects:
        parent = obj.key.rpartition("/")[0]
        if parent not in owners:
            owners[parent] = next((a for a in _ancestors(obj.key) if a in grouped), None)
        owner = owners[parent]
        if owner is None:
            stray += 1
        else:
            grouped[owner].append(StoredObject(obj.key[len(owner) + 1 :], obj.size, obj.etag, obj.modified))
    trials = [TrialFolder(folder, tuple(sorted(items, key=lambda o: o.key))) for folder, items in grouped.items()]
    trials.sort(key=lambda t: (t.trial_name, t.trial_dir))
    return Listing(trials, stray, len(objects), sum(o.size for o in objects))


def top_level_groups(objects: Iterable[StoredObject]) -> Iterator[list[StoredObject]]:
    """Objects in runs sharing their first path segment: a listing in key order, a folder at a time.

    Every trial folder lies inside one such group, so grouping each one on its own gives the
    same trials as grouping the whole listing, with only one top-level folder in memory.
    """
    for _, group in groupby(objects, key=lambda o: o.key.split("/", 1)[0]):
        yield list(group)


def _ancestors(key: str) -> list[str]:
    """Proper ancestor folders of a key, deepest first: "a/b/c" -> ["a/b", "a"]."""
    parts = key.split("/")
    return ["/".join(parts[:i]) for i in range(len(parts) - 1, 0, -1)]
