"""`RunScope`: what one partition key denotes, and every path derived from it, in one place.

Today a scope is one RL run (`<traces_root>/<run_id>/trace_jobs/`). Its traces prefix, staging
folder and publish path are all derived here, so a new kind of scope (a run's step) or the
validation of partition keys changes this module and nothing that uses it.

A key is validated when a scope is made, so no path is ever derived from an unchecked key: it is
relative, `/`-separated segments (a run's step will be `run/step`) of a safe character set, each
starting with a letter or digit. Segments never start with `.`, so the hidden temp names the
pipeline writes beside a scope's folders can never be another scope's folder.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

TRACE_JOBS = "trace_jobs"
MAX_KEY_LENGTH = 200  # leaves room under NAME_MAX (255) for the temp names beside a folder
_SEGMENT = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


class InvalidScopeKey(ValueError):
    """A partition key that does not name a scope; the message says which part is wrong."""


def validate_scope_key(key: str) -> str:
    """`key` unchanged if it is a usable partition key, else `InvalidScopeKey` saying why."""
    if not isinstance(key, str) or not key:
        raise InvalidScopeKey("run id is empty")
    if len(key) > MAX_KEY_LENGTH:
        raise InvalidScopeKey(f"run id {key[:40]!r}... is {len(key)} characters long; at most {MAX_KEY_LENGTH}")
    if key.startswith("/"):
        raise InvalidScopeKey(f"run id {key!r} is an absolute path; give it relative to the traces root")
    for segment in key.split("/"):
        if segment in ("", ".", ".."):
            raise InvalidScopeKey(f"run id {key!r} has an empty, '.' or '..' segment")
        if not _SEGMENT.fullmatch(segment):
            raise InvalidScopeKey(
                f"run id {key!r}: segment {segment!r} must be letters, digits, '.', '_' or '-', "
                "starting with a letter or digit (no spaces, backslashes or control characters)"
            )
    return key


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
    """One run's trials: the unit that is listed, staged and published as one dataset."""

    run_id: str

    def __post_init__(self) -> None:
        validate_scope_key(self.run_id)

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
