"""`RunScope`: what one partition key denotes, and every path derived from it, in one place.

A scope is one RL run (`<traces_root>/<run_id>/trace_jobs/`), or one training step of a run
(`<traces_root>/<run_id>/trace_jobs/step-N/`, key `<run_id>/step-N`). Its traces prefix, staging
folder, publish path and config name are all derived here, and nowhere else.

Which one a run gets is configuration (`ScopeUnit`): by default a run whose `trace_jobs/` holds
step folders and no other folder is one scope per step, and any other run is one scope. A key whose
last segment is a step folder's name (`step-N`) is a step scope; so a run that has step scopes is
never a scope itself (the key `x` would nest with `x/step-1`, which `refuse_nesting` refuses).

A key is validated when a scope is made, so no path is ever derived from an unchecked key: it is
relative, `/`-separated segments (a run's step will be `run/step`) of a safe character set, each
starting with a letter or digit. Segments never start with `.`, so the hidden temp names the
pipeline writes beside a scope's folders can never be another scope's folder.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable
from dataclasses import dataclass
from enum import StrEnum
from functools import lru_cache
from pathlib import Path

TRACE_JOBS = "trace_jobs"
MAX_KEY_LENGTH = 200  # leaves room under NAME_MAX (255) for the temp names beside a folder
_SEGMENT = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
STEP_FOLDER = re.compile(r"step-[0-9]+")
CONFIG_SEPARATOR = "--"  # stands for `/` in config names: `datasets` refuses `/` in a config name
# Files a publish root holds beside its scopes' folders (the root card, the sweep view): no run may
# be named so, or its folder and the file would collide. `unit/test_scope.py` keeps the list whole.
PUBLISH_ROOT_FILES = frozenset(
    {"README.md", "sweep_index.json", "sweep_progress.svg", "sweep_coverage.parquet", "sweep_coverage.svg"}
)


class ScopeUnit(StrEnum):
    """What one partition (one published dataset) holds."""

    STEP = "step"  # a step folder of a run whose trace_jobs/ holds only step folders; else the run
    RUN = "run"  # the whole run, step folders and all


class InvalidScopeKey(ValueError):
    """A partition key that does not name a scope; the message says which part is wrong."""


def validate_scope_key(key: str) -> str:
    """`key` unchanged if it is a usable partition key, else `InvalidScopeKey` saying why."""
    if not isinstance(key, str) or not key:
        raise InvalidScopeKey("run id is empty")
    return _validated(key)


@lru_cache(maxsize=1 << 16)  # a key is checked twice a scope made, and a sweep's index holds thousands
def _validated(key: str) -> str:
    if len(key) > MAX_KEY_LENGTH:
        raise InvalidScopeKey(f"run id {key[:40]!r}... is {len(key)} characters long; at most {MAX_KEY_LENGTH}")
    if key.startswith("/"):
        raise InvalidScopeKey(f"run id {key!r} is an absolute path; give it relative to the traces root")
    if key.split("/")[0] in PUBLISH_ROOT_FILES:
        raise InvalidScopeKey(f"run id {key!r} is the name of a file the publish root holds")
    for segment in key.split("/"):
        if segment in ("", ".", ".."):
            raise InvalidScopeKey(f"run id {key!r} has an empty, '.' or '..' segment")
        if not _SEGMENT.fullmatch(segment):
            raise InvalidScopeKey(
                f"run id {key!r}: segment {segment!r} must be letters, digits, '.', '_' or '-', "
                "starting with a letter or digit (no spaces, backslashes or control characters)"
            )
    return key


def validate_scope_keys(keys: Iterable[str]) -> list[str]:
    """Every key checked before anything is registered or written, all bad ones named at once;
    the keys in order, without repeats."""
    keys = list(keys)
    problems = []
    for key in keys:
        try:
            validate_scope_key(key)
        except InvalidScopeKey as error:
            problems.append(str(error))
    if problems:
        raise InvalidScopeKey("; ".join(problems) + " (nothing was registered or written)")
    return list(dict.fromkeys(keys))


def partitions_named(key: str, known: Collection[str]) -> list[str]:
    """The known partitions a key names: itself, or for a run split into steps its step partitions."""
    return [key] if key in known else sorted(k for k in known if k.startswith(key + "/"))


def is_scope_key(key: str) -> bool:
    try:
        validate_scope_key(key)
    except InvalidScopeKey:
        return False
    return True


def nests(key: str, other: str) -> bool:
    """True when one key's folders would lie inside the other's (`x` and `x/y`)."""
    return key != other and (other.startswith(key + "/") or key.startswith(other + "/"))


def nesting_conflicts(keys: Iterable[str], known: Iterable[str]) -> list[tuple[str, str]]:
    """Pairs (new key, key it nests with) among `keys` and the already `known` ones."""
    new = list(dict.fromkeys(keys))
    everyone = list(dict.fromkeys([*known, *new]))
    return [(key, other) for key in new for other in everyone if nests(key, other)]


def refuse_nesting(keys: Iterable[str], known: Iterable[str]) -> None:
    """No scope's published or staging folder may hold another's: refuse such keys together."""
    conflicts = nesting_conflicts(keys, known)
    if conflicts:
        key, other = conflicts[0]
        raise InvalidScopeKey(
            f"run id {key!r} nests with run id {other!r}: one's published and staging folders would hold the other's"
        )


@dataclass(frozen=True)
class RunScope:
    """One run's trials, or one step's: the unit that is listed, staged and published as one dataset."""

    run_id: str
    step: str | None = None  # a step folder's name under the run's trace_jobs/, e.g. "step-25"

    def __post_init__(self) -> None:
        validate_scope_key(self.key)
        parent, _, last = self.run_id.rpartition("/")
        if parent and STEP_FOLDER.fullmatch(last):  # its key would name a step of `parent`
            raise InvalidScopeKey(f"run id {self.run_id!r} ends in a step folder's name: it names a step of {parent!r}")
        if self.step is not None and not STEP_FOLDER.fullmatch(self.step):
            raise InvalidScopeKey(f"step {self.step!r} of run {self.run_id!r} is not a step folder (step-N)")

    @classmethod
    def from_key(cls, key: str) -> RunScope:
        """The scope a partition key names: `run/step-N` is a step of `run`, any other key a run."""
        run_id, _, last = validate_scope_key(key).rpartition("/")
        return cls(run_id, last) if run_id and STEP_FOLDER.fullmatch(last) else cls(key)

    @property
    def key(self) -> str:
        """The partition key naming this scope."""
        return f"{self.run_id}/{self.step}" if self.step else self.run_id

    @property
    def config_name(self) -> str:
        """The scope's config in a card listing many scopes: its key with `/` as `--`."""
        return self.key.replace("/", CONFIG_SEPARATOR)

    @property
    def source_prefix(self) -> str:
        """The scope's trial folders, relative to the traces root."""
        return "/".join(part for part in (self.run_id, TRACE_JOBS, self.step) if part)

    def staging_folder(self, staging_root: Path) -> Path:
        return staging_root / self.key

    def publish_url(self, publish_root: str) -> str:
        return f"{publish_root.rstrip('/')}/{self.key}"

    def hub_path(self, path_in_repo: str) -> str:
        """Where the scope goes inside a Hub repo shared by many scopes."""
        return "/".join(part for part in (path_in_repo, self.key) if part)


def run_scopes(
    run_id: str, subfolders: Iterable[str], unit: ScopeUnit = ScopeUnit.STEP, keep_whole: bool = False
) -> list[RunScope]:
    """A run's scopes, from the names of the folders right under its trace_jobs/: one per step
    folder when `unit` is STEP and every folder there is a step folder, else the run as one.
    Folders of any other name beside step folders keep the run whole, so no trial is left out;
    so does `keep_whole` (the store saw a link there, which must stay inside a walked folder)."""
    names = sorted(set(subfolders), key=_step_order)
    if unit is ScopeUnit.STEP and not keep_whole and names and all(STEP_FOLDER.fullmatch(name) for name in names):
        return [RunScope(run_id, name) for name in names]
    return [RunScope(run_id)]


def _step_order(name: str) -> tuple[int, str]:
    return (int(name[5:]), name) if STEP_FOLDER.fullmatch(name) else (-1, name)
